//! recall's judgment: the rules that decide a verdict, kept apart from everything that reads or
//! writes (the store, the lexical index, the dense scan, Python). The compiler keeps it pure:
//! this crate depends on no I/O library, and the core crate depends on it, never the reverse.
//!
//! - `trust`: verdicts, their precedence, windows, confidence and the abstention boundary;
//! - `graph`: declared supersession, resolution of references, chains, cycles and ambiguity;
//! - `corpus`: documents and declared edges as stored, turned into the graph and the windows;
//! - `evidence`: what a query asks (identifiers, measures) and whether a passage holds it;
//! - `answer`: whether a passage holds an answer to what is asked;
//! - `fusion`: the dense and lexical legs fused by reciprocal rank;
//! - `shortlist`: from the fused legs to one judged candidate per document;
//! - `explanation`: why one document gets its verdict (`explain`).

pub mod answer;
pub mod corpus;
pub mod evidence;
pub mod explanation;
pub mod fusion;
pub mod graph;
pub mod shortlist;
pub mod trust;
