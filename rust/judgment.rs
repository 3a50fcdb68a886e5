//! A query's judgment over any backend (SPEC §4–§5): the corpus the trust layer reasons over,
//! built from rows as a backend reads them, and the step from the fused legs to judged hits.
//!
//! Owns: turning document and edge rows into the graph and validity windows (the vocabulary
//! setting applied), a candidate's lexical evidence read from its text, and the shortlist of one
//! candidate per document that the trust layer judges. The single-file store (store/) and the
//! PostgreSQL backend (Python, through `Corpus` in py_corpus.rs) both go through here, so a
//! verdict never depends on where the notes are stored. Does not own: reading rows (each
//! backend), scoring inside a leg, fusion (fusion.rs) or the rules (trust.rs).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::evidence::QueryEvidence;
use crate::fusion::Fused;
use crate::graph::{Declared, Graph, Node, Resolution};
use crate::lexical;
use crate::trust::{Candidate, Window};

/// One stored document as the trust layer needs it.
#[derive(Debug, Clone, Default)]
pub struct DocumentRecord {
    pub id: i64,
    /// The corpus root: one per indexed folder, shared by its documents.
    pub source: Arc<str>,
    pub path: String,
    pub key: String,
    /// First indexing time in µs since the epoch; None: undated (SPEC §2.4).
    pub first_indexed_us: Option<i64>,
    pub valid_from_raw: Option<String>,
    pub valid_until_raw: Option<String>,
    pub metadata_error: bool,
    /// A text field could not be read: the document fails closed as invalid metadata.
    pub unreadable: bool,
    pub alias: Option<String>,
    pub retired_state: Option<String>,
    pub retired_since: Option<String>,
    pub retired_vocabulary: Option<String>,
    pub retired_overridden: bool,
}

/// One declared edge as stored, overridden ones included.
#[derive(Debug, Clone, Default)]
pub struct EdgeRecord {
    pub doc_id: i64,
    pub key: String,
    pub raw: String,
    pub reversed: bool,
    pub vocabulary: String,
    pub line: Option<i64>,
    pub statement: String,
    pub overridden: bool,
    /// None: a full edge. `partial` (SPEC §2.5 "partly superseded": never a full edge) or
    /// `unread` (a status-like statement the reader could not classify): kept for explain,
    /// stats and the hit's mark, never in force.
    pub standing: Option<String>,
}

/// Where an edge in force was written (SPEC §8.4), for explain.
#[derive(Debug, Clone, Default)]
pub struct EdgeMeta {
    pub raw: String,
    pub vocabulary: String,
    pub line: Option<i64>,
    pub statement: String,
}

/// SPEC §8.4 `--vocabularies`: which vocabularies' declarations are in force for a store.
pub fn vocabulary_in_force(setting: &str, vocabulary: &str) -> bool {
    match setting {
        "none" => false,
        "frontmatter" => vocabulary == "frontmatter",
        _ => true,
    }
}

/// What a store's declarations amount to under its vocabulary setting, as `stats` reports
/// them (SPEC §2.3, §2.5, §8.4), counted once for every backend.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tally {
    /// Edges in force by how they resolve: (resolved, dangling, ambiguous, self-reference).
    pub claims: (i64, i64, i64, i64),
    /// Per vocabulary, in name order: (vocabulary, full edges in force, edges overridden by
    /// frontmatter).
    pub by_vocabulary: Vec<(String, i64, i64)>,
    /// Partial statements ("partly superseded by X") in force: never full edges.
    pub partial: i64,
    /// Statements in force the reader could not classify.
    pub unread: i64,
    /// Documents with a terminal state in force.
    pub retired: i64,
}

/// Documents, their windows and the graph of the edges in force: one generation's view.
#[derive(Debug, Clone, Default)]
pub struct Corpus {
    pub doc_ids: Vec<i64>,
    pub index_of: FxHashMap<i64, usize>,
    pub graph: Graph,
    pub windows: Vec<Window>,
    /// Per document: the root its path is relative to (the path is its graph node's);
    /// `location` gives both.
    pub sources: Vec<Arc<str>>,
    /// Per edge in force (as given to the graph): where it was written.
    pub edge_meta: Vec<EdgeMeta>,
    /// Per document: its statements the reader could not classify, in force under the setting
    /// (vocabulary, line, statement), for the hit's `validity.unread` (SPEC §2.5).
    pub unread: Vec<Vec<EdgeMeta>>,
    /// Per vocabulary: (full edges in force, overridden), and the partial statements in force.
    by_vocabulary: std::collections::BTreeMap<String, (i64, i64)>,
    partial: i64,
}

impl Corpus {
    /// The corpus under vocabulary `setting` (none|frontmatter|all): declarations of the
    /// vocabularies left out and header statements frontmatter overrode are not in force.
    pub fn build(docs: Vec<DocumentRecord>, edges: Vec<EdgeRecord>, setting: &str) -> Corpus {
        let count = docs.len();
        Corpus::build_from(docs, || edges, setting, count)
    }

    /// `build` from documents as they arrive (another thread may still be reading them) and
    /// then the edges; `expected` documents are made room for.
    pub fn build_from(
        docs: impl IntoIterator<Item = DocumentRecord>,
        edges: impl FnOnce() -> Vec<EdgeRecord>,
        setting: &str,
        expected: usize,
    ) -> Corpus {
        let frontmatter = vocabulary_in_force(setting, "frontmatter");
        let mut c = Corpus::default();
        c.index_of.reserve(expected);
        c.doc_ids.reserve(expected);
        c.windows.reserve(expected);
        c.sources.reserve(expected);
        let mut nodes = Vec::with_capacity(expected);
        // SPEC §2.5: a dated retirement dates the successor edges its note declares.
        let mut retired_since: Vec<Option<i64>> = Vec::with_capacity(expected);
        for d in docs {
            retired_since.push(
                d.retired_since
                    .as_deref()
                    .filter(|_| !d.retired_overridden)
                    .and_then(crate::trust::parse_day_start_us),
            );
            c.index_of.insert(d.id, c.doc_ids.len());
            c.doc_ids.push(d.id);
            c.windows.push(Window {
                valid_from_raw: d.valid_from_raw.filter(|_| frontmatter),
                valid_until_raw: d.valid_until_raw.filter(|_| frontmatter),
                metadata_error: d.unreadable || (frontmatter && d.metadata_error),
                retired: d.retired_state.is_some()
                    && !d.retired_overridden
                    && d.retired_vocabulary
                        .as_deref()
                        .is_some_and(|v| vocabulary_in_force(setting, v)),
                retired_since_raw: d.retired_since,
            });
            nodes.push(Node {
                key: d.key,
                path: d.path,
                first_indexed_us: d.first_indexed_us,
                alias: d.alias,
                // Set below, when a declaration needs folders.
                folder: String::new(),
            });
            c.sources.push(d.source);
        }
        c.unread = vec![Vec::new(); c.doc_ids.len()];
        let mut declared = Vec::new();
        for e in edges() {
            let counted = c.by_vocabulary.entry(e.vocabulary.clone()).or_default();
            if e.overridden {
                counted.1 += 1;
                continue;
            }
            if !vocabulary_in_force(setting, &e.vocabulary) {
                continue;
            }
            match e.standing.as_deref() {
                None => counted.0 += 1,
                Some("partial") => c.partial += 1,
                Some(_) => {}
            }
            let Some(&d) = c.index_of.get(&e.doc_id) else {
                continue;
            };
            match e.standing.as_deref() {
                None => {}
                Some("unread") => {
                    c.unread[d].push(EdgeMeta {
                        raw: e.raw,
                        vocabulary: e.vocabulary,
                        line: e.line,
                        statement: e.statement,
                    });
                    continue;
                }
                Some(_) => continue,
            }
            {
                let scoped = e.vocabulary != "frontmatter";
                declared.push(Declared {
                    declarer: d,
                    key: e.key,
                    reversed: e.reversed,
                    scoped,
                    since_us: retired_since[d].filter(|_| scoped && e.reversed),
                });
                c.edge_meta.push(EdgeMeta {
                    raw: e.raw,
                    vocabulary: e.vocabulary,
                    line: e.line,
                    statement: e.statement,
                });
            }
        }
        // Declarations in a note's own words resolve nearest first, by folder.
        if declared.iter().any(|d| d.scoped) {
            for (node, source) in nodes.iter_mut().zip(&c.sources) {
                node.folder = folder_of(source, &node.path);
            }
        }
        c.graph = Graph::build_declared(nodes, &declared);
        c
    }

    /// Claims in force by how they resolved: (resolved, dangling, ambiguous, self-reference).
    pub fn claim_counts(&self) -> (i64, i64, i64, i64) {
        let mut counts = (0, 0, 0, 0);
        for d in 0..self.graph.len() {
            for &id in self.graph.outgoing(d) {
                match self.graph.claim(id).resolution {
                    Resolution::Resolved(_) => counts.0 += 1,
                    Resolution::Dangling => counts.1 += 1,
                    Resolution::Ambiguous(_) => counts.2 += 1,
                    Resolution::SelfReference => counts.3 += 1,
                }
            }
        }
        counts
    }

    /// The declarations counted as `stats` reports them.
    pub fn tally(&self) -> Tally {
        Tally {
            claims: self.claim_counts(),
            by_vocabulary: self
                .by_vocabulary
                .iter()
                .map(|(v, &(in_force, overridden))| (v.clone(), in_force, overridden))
                .collect(),
            partial: self.partial,
            unread: self.unread.iter().map(|u| u.len() as i64).sum(),
            retired: self.windows.iter().filter(|w| w.retired).count() as i64,
        }
    }

    /// SPEC §2.5: what document `d` says about itself that the reader could not act on, as
    /// (vocabulary, line, statement): statements it could not classify, and references in a
    /// note's own words (not frontmatter) that name no document.
    pub fn unread_of(&self, d: usize) -> Vec<(String, Option<i64>, String)> {
        let mut found: Vec<(String, Option<i64>, String)> = self.unread[d]
            .iter()
            .map(|m| (m.vocabulary.clone(), m.line, m.statement.clone()))
            .collect();
        for &id in self.graph.outgoing(d) {
            let c = self.graph.claim(id);
            let meta = &self.edge_meta[c.edge];
            if c.resolution == Resolution::Dangling && meta.vocabulary != "frontmatter" {
                let statement = format!("{} (names no note: {})", meta.statement, meta.raw);
                found.push((meta.vocabulary.clone(), meta.line, statement));
            }
        }
        found
    }

    /// The documents (source, path) whose edges in force name document `d`, sorted.
    pub fn declarers_toward(&self, d: usize) -> Vec<(String, String)> {
        let names_d = |r: &Resolution| match r {
            Resolution::Resolved(t) => *t == d,
            Resolution::Ambiguous(ts) => ts.contains(&d),
            _ => false,
        };
        let mut found: Vec<(String, String)> = (0..self.graph.len())
            .filter(|&declarer| declarer != d)
            .filter(|&declarer| {
                self.graph
                    .outgoing(declarer)
                    .iter()
                    .any(|&id| names_d(&self.graph.claim(id).resolution))
            })
            .map(|declarer| {
                let (source, path) = self.location(declarer);
                (source.to_string(), path.to_string())
            })
            .collect();
        found.sort();
        found.dedup();
        found
    }

    /// The document `file` names: a stored path, or an absolute path under an indexed root.
    pub fn locate(&self, file: &str) -> Option<usize> {
        (0..self.sources.len()).find(|&d| {
            let (source, path) = self.location(d);
            path == file || std::path::Path::new(source).join(path) == std::path::Path::new(file)
        })
    }

    /// Document `d`'s (source, path).
    pub fn location(&self, d: usize) -> (&str, &str) {
        (&self.sources[d], &self.graph.node(d).path)
    }
}

/// The folder a document lives in: its source joined with its path's parent.
pub fn folder_of(source: &str, path: &str) -> String {
    let parent = path.rsplit_once(['/', '\\']).map_or("", |(p, _)| p);
    format!("{source}/{parent}")
}

/// The text a chunk's lexical evidence is read from: title, heading path and body, as indexed.
pub fn lexical_body(title: &str, heading_path: &str, text: &str) -> String {
    format!("{title}\n{heading_path}\n{text}")
}

/// A candidate chunk with its lexical evidence (SPEC §7): the share of the query's IDF mass its
/// indexed text holds, and whether it holds the asked identifiers. `body` None: a chunk a
/// concurrent writer removed, with no evidence.
pub fn candidate(
    ev: &QueryEvidence,
    doc: usize,
    chunk: i64,
    score: f32,
    body: Option<&str>,
) -> Candidate {
    let mut c = Candidate::dense(doc, chunk, score);
    match body {
        Some(body) => {
            c.lexical = ev.lexical_share(|visit| lexical::each_term(body, visit));
            c.identifiers_held = ev.identifiers_held(body);
            c.identifier_match = c.identifiers_held && !ev.identifiers().is_empty();
            c.lacks = ev.answer().lacks(body);
        }
        None => {
            c.identifiers_held = ev.identifiers().is_empty();
            c.lacks = ev.answer().lacks("");
        }
    }
    c
}

/// SPEC §4–§5: walk the fused list best first and keep each document's best chunk until `k`
/// documents are held; `candidate(f, doc)` builds the candidate of a kept chunk. A chunk
/// `doc_of` does not know (a concurrent writer removed it) is skipped. What the question asks for
/// beyond its topic (answer.rs) is the document's to hold: a best chunk that lacks it does not
/// when another retrieved chunk of its document holds it (the answer may sit in another section
/// of the note); the document is still judged and shown by its best chunk. So are the
/// identifiers it asks for (SPEC §7), but a lookup is judged on the passage that holds them: a
/// best chunk without them gives way to the document's best retrieved chunk with them. Returns
/// the candidates and the retrieval of each kept chunk.
pub fn shortlist(
    fused: &[Fused],
    k: usize,
    doc_of: impl Fn(i64) -> Option<usize>,
    mut candidate: impl FnMut(&Fused, usize) -> Candidate,
) -> (Vec<Candidate>, HashMap<i64, Fused>) {
    let mut retrieval = HashMap::new();
    let mut seen = HashSet::new();
    let mut cands = Vec::with_capacity(k);
    for (i, f) in fused.iter().enumerate() {
        if cands.len() >= k {
            break;
        }
        let Some(doc) = doc_of(f.chunk) else { continue };
        if !seen.insert(doc) {
            continue;
        }
        let mut kept = candidate(f, doc);
        let mut shown = f;
        // SPEC §7: the identifiers a question asks for are the document's to hold. A best chunk
        // without them gives way to the document's best retrieved chunk that holds them, which
        // is then judged and shown in the document's place.
        if !kept.identifiers_held {
            if let Some((g, held)) = fused[i + 1..]
                .iter()
                .filter(|g| doc_of(g.chunk) == Some(doc))
                .map(|g| (g, candidate(g, doc)))
                .find(|(_, c)| c.identifiers_held)
            {
                kept = held;
                shown = g;
            }
        }
        if kept.lacks.is_some()
            && fused[i..]
                .iter()
                .filter(|g| g.chunk != shown.chunk && doc_of(g.chunk) == Some(doc))
                .any(|g| candidate(g, doc).lacks.is_none())
        {
            kept.lacks = None;
        }
        cands.push(kept);
        retrieval.insert(shown.chunk, shown.clone());
    }
    (cands, retrieval)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(id: i64, path: &str) -> DocumentRecord {
        DocumentRecord {
            id,
            source: "/notes".into(),
            path: path.into(),
            key: crate::graph::resolution_key(path),
            first_indexed_us: crate::store::parse_instant_us("2026-01-01T00:00:00.000000Z"),
            ..DocumentRecord::default()
        }
    }

    fn edge(doc_id: i64, key: &str, vocabulary: &str, overridden: bool) -> EdgeRecord {
        EdgeRecord {
            doc_id,
            key: key.into(),
            raw: key.into(),
            vocabulary: vocabulary.into(),
            overridden,
            ..EdgeRecord::default()
        }
    }

    #[test]
    fn the_setting_decides_which_edges_are_in_force() {
        let docs = || vec![doc(10, "a.md"), doc(20, "b.md"), doc(30, "c.md")];
        let edges = || {
            vec![
                edge(20, "a", "frontmatter", false),
                edge(30, "b", "pep", false),
                edge(30, "a", "pep", true),
            ]
        };
        let all = Corpus::build(docs(), edges(), "all");
        assert_eq!(all.edge_meta.len(), 2);
        assert_eq!(
            all.graph.successor_at(0, crate::graph::At::known(None)),
            Some(1)
        );
        assert_eq!(
            all.graph.successor_at(1, crate::graph::At::known(None)),
            Some(2)
        );
        let front = Corpus::build(docs(), edges(), "frontmatter");
        assert_eq!(front.edge_meta.len(), 1);
        assert_eq!(
            front.graph.successor_at(1, crate::graph::At::known(None)),
            None
        );
        let none = Corpus::build(docs(), edges(), "none");
        assert!(none.edge_meta.is_empty());
        assert_eq!(all.locate("b.md"), Some(1));
        assert_eq!(all.locate("/notes/c.md"), Some(2));
        assert_eq!(all.locate("/elsewhere/c.md"), None);
        assert_eq!(all.index_of[&30], 2);
    }

    #[test]
    fn standing_statements_are_kept_out_of_the_graph_and_dated_edges_hold_from_their_date() {
        let mut old = doc(1, "adr/0001-a.md");
        old.alias = Some("#:1".into());
        old.retired_state = Some("superseded".into());
        old.retired_since = Some("2026-05-01".into());
        old.retired_vocabulary = Some("nygard".into());
        let mut new = doc(2, "adr/0002-b.md");
        new.alias = Some("#:2".into());
        let mut partial = edge(2, "#adr:1", "nygard", false);
        partial.standing = Some("partial".into());
        let mut unread = edge(2, "", "nygard", false);
        unread.standing = Some("unread".into());
        unread.statement = "Parked pending legal".into();
        let mut successor = edge(1, "#adr:2", "nygard", false);
        successor.reversed = true;
        let mut gone = edge(2, "#adr:9", "prose", false);
        gone.reversed = true;
        let c = Corpus::build(
            vec![old, new],
            vec![partial, unread, successor, gone],
            "all",
        );
        assert_eq!(
            c.claim_counts(),
            (1, 1, 0, 0),
            "partial and unread are no claims"
        );
        let at = |day: &str| crate::graph::At {
            known_us: None,
            now_us: crate::trust::parse_day_start_us(day),
        };
        assert_eq!(c.graph.terminal_at(0, at("2026-04-30")), None, "as it was");
        assert_eq!(c.graph.terminal_at(0, at("2026-05-01")), Some(1));
        let unread: Vec<_> = c.unread_of(1).into_iter().map(|u| u.2).collect();
        assert_eq!(unread.len(), 2, "{unread:?}");
        assert_eq!(unread[0], "Parked pending legal");
        assert!(unread[1].contains("names no note"));
        assert_eq!(
            c.declarers_toward(1),
            vec![("/notes".into(), "adr/0001-a.md".into())]
        );
    }

    #[test]
    fn unreadable_or_broken_metadata_fails_closed() {
        let mut d = doc(1, "a.md");
        d.metadata_error = true;
        let mut u = doc(2, "b.md");
        u.unreadable = true;
        let c = Corpus::build(vec![d.clone(), u.clone()], vec![], "all");
        assert!(c.windows[0].metadata_error && c.windows[1].metadata_error);
        let c = Corpus::build(vec![d, u], vec![], "none");
        assert!(!c.windows[0].metadata_error && c.windows[1].metadata_error);
    }

    #[test]
    fn shortlist_keeps_one_chunk_per_document_up_to_k() {
        let fused = crate::fusion::rrf(&[1, 2, 3, 4], &[5, 2]);
        let doc_of = |c: i64| match c {
            1 | 2 => Some(0),
            3 => Some(1),
            5 => Some(2),
            _ => None,
        };
        let (cands, retrieval) =
            shortlist(&fused, 2, doc_of, |f, d| Candidate::dense(d, f.chunk, 0.5));
        let docs: Vec<usize> = cands.iter().map(|c| c.doc).collect();
        assert_eq!(docs, vec![0, 2]);
        assert_eq!(retrieval.len(), 2);
    }

    #[test]
    fn the_asked_value_is_held_by_any_retrieved_chunk_of_the_document() {
        use crate::answer::{Asked, Lack};
        // Doc 0's best chunk (1) lacks the asked value and its later chunk (3) holds it: doc 0
        // holds it, shown by chunk 1. Doc 1's only chunk (2) lacks it.
        let fused = crate::fusion::rrf(&[1, 2, 3], &[]);
        let doc_of = |c: i64| Some(if c == 2 { 1 } else { 0 });
        let lacking = Some(Lack::Kind(Asked::Money));
        let (cands, retrieval) = shortlist(&fused, 5, doc_of, |f, d| Candidate {
            lacks: if f.chunk == 3 { None } else { lacking },
            ..Candidate::dense(d, f.chunk, 0.5)
        });
        let got: Vec<(usize, i64, bool)> = cands
            .iter()
            .map(|c| (c.doc, c.chunk, c.lacks.is_some()))
            .collect();
        assert_eq!(got, vec![(0, 1, false), (1, 2, true)]);
        assert!(retrieval.contains_key(&1) && !retrieval.contains_key(&3));
    }

    #[test]
    fn a_lookup_is_judged_on_the_chunk_of_the_document_that_holds_the_identifier() {
        // Doc 0's best chunk (1) lacks the asked identifier and its later chunk (3) holds it:
        // doc 0 is judged and shown by chunk 3, in chunk 1's place. Doc 1's only chunk (2)
        // lacks it and stays as it is.
        let fused = crate::fusion::rrf(&[1, 2, 3], &[]);
        let doc_of = |c: i64| Some(if c == 2 { 1 } else { 0 });
        let (cands, retrieval) = shortlist(&fused, 5, doc_of, |f, d| Candidate {
            identifiers_held: f.chunk == 3,
            identifier_match: f.chunk == 3,
            ..Candidate::dense(d, f.chunk, 0.5)
        });
        let got: Vec<(usize, i64, bool)> = cands
            .iter()
            .map(|c| (c.doc, c.chunk, c.identifiers_held))
            .collect();
        assert_eq!(got, vec![(0, 3, true), (1, 2, false)]);
        assert!(retrieval.contains_key(&3) && !retrieval.contains_key(&1));
    }

    #[test]
    fn evidence_reads_the_chunk_text() {
        let ev = QueryEvidence::new(
            vec![("retri".into(), 2.0), ("ref".into(), 1.0)],
            "REF-7 retries",
        );
        let c = candidate(&ev, 0, 1, 0.4, Some("Retries for REF-7"));
        assert!(c.identifiers_held && c.identifier_match && c.lexical > 0.6);
        let gone = candidate(&ev, 0, 1, 0.4, None);
        assert!(!gone.identifiers_held && gone.lexical == 0.0);
    }
}
