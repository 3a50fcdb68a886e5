//! The trust layer (SPEC §5): verdicts, their precedence, logistic confidence, successor
//! promotion and ordering.
//!
//! Owns: every rule that decides whether a hit may be relied on. Pure: candidates, the graph,
//! the calibration and the clock come in as arguments; no I/O, no clock reads. Does not own:
//! retrieval (dense.rs), resolution (graph.rs) or wording reasons for people (Python).

use crate::answer::Lack;
use crate::graph::{At, Graph};

/// SPEC §5.2 verdicts (plus the `unverified` development-mode extension).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Ok,
    Superseded,
    Expired,
    NotYetValid,
    LowConfidence,
    InvalidMetadata,
    AmbiguousSupersession,
    NotYetKnown,
    NotEntailed,
    Unverified,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::Superseded => "superseded",
            Verdict::Expired => "expired",
            Verdict::NotYetValid => "not_yet_valid",
            Verdict::LowConfidence => "low_confidence",
            Verdict::InvalidMetadata => "invalid_metadata",
            Verdict::AmbiguousSupersession => "ambiguous_supersession",
            Verdict::NotYetKnown => "not_yet_known",
            Verdict::NotEntailed => "not_entailed",
            Verdict::Unverified => "unverified",
        }
    }
}

const DAY_US: i64 = 86_400_000_000;

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// SPEC §2.2: exactly `YYYY-MM-DD`, zero-padded ASCII digits, a real calendar date (year ≥ 1).
/// Returns the instant the day starts (00:00:00.000000 UTC) in µs since the epoch.
pub fn parse_day_start_us(raw: &str) -> Option<i64> {
    let b = raw.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        b[r].iter().try_fold(0i64, |acc, c| {
            c.is_ascii_digit().then(|| acc * 10 + i64::from(c - b'0'))
        })
    };
    let (y, m, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let month_len = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return None,
    };
    if y < 1 || d < 1 || d > month_len {
        return None;
    }
    Some(days_from_civil(y, m, d) * DAY_US)
}

/// A validity window as stored: raw frontmatter text, whether the store recorded an error, and
/// a retirement a header declared (SPEC §8.4).
#[derive(Debug, Clone, Default)]
pub struct Window {
    pub valid_from_raw: Option<Box<str>>,
    pub valid_until_raw: Option<Box<str>>,
    pub metadata_error: bool,
    /// A terminal state (withdrawn, rejected, deprecated, superseded) is in force.
    pub retired: bool,
    /// `YYYY-MM-DD` the terminal state holds from; None: at every instant.
    pub retired_since_raw: Option<Box<str>>,
}

impl Window {
    /// Whether a declared terminal state holds at `now_us`: from the start of its day, or at
    /// every instant when undated (or unreadable, failing closed).
    pub fn retired_at(&self, now_us: i64) -> bool {
        self.retired
            && self
                .retired_since_raw
                .as_deref()
                .and_then(parse_day_start_us)
                .is_none_or(|since| now_us >= since)
    }
}

/// The window in µs: [from, until] inclusive, or None when unparseable or empty.
pub fn window_bounds(w: &Window) -> Option<(Option<i64>, Option<i64>)> {
    if w.metadata_error {
        return None;
    }
    let from = match &w.valid_from_raw {
        Some(raw) => Some(parse_day_start_us(raw)?),
        None => None,
    };
    // SPEC §2.2: valid_until runs to 23:59:59.999999 UTC of that day.
    let until = match &w.valid_until_raw {
        Some(raw) => Some(parse_day_start_us(raw)? + DAY_US - 1),
        None => None,
    };
    if let (Some(f), Some(u)) = (from, until) {
        if f > u {
            return None;
        }
    }
    Some((from, until))
}

/// The inputs every verdict depends on besides the hit itself (SPEC §5.5).
#[derive(Debug, Clone, Copy)]
pub struct Policy {
    pub now_us: i64,
    pub known_as_of_us: Option<i64>,
    pub threshold: f64,
    pub scale: f64,
    /// Development mode without calibration: ok / low_confidence become `unverified`.
    pub unverified: bool,
    /// SPEC §7: weight of the lexical share in a hit's relevance (0 for a dense-only fit).
    pub lexical_weight: f64,
    /// SPEC §7: weight of holding the identifiers a query asks for (0 for a dense-only fit).
    pub identifier_weight: f64,
}

impl Policy {
    /// The instant graph questions are asked at: the knowledge instant, and `now` for dated
    /// declarations (SPEC §2.4, §2.5).
    pub fn at(&self) -> At {
        At {
            known_us: self.known_as_of_us,
            now_us: Some(self.now_us),
        }
    }
}

/// SPEC §7: sigmoid(clamp((cos − threshold) / scale, ±60)); exactly 0.5 on the threshold.
pub fn confidence(score: f64, threshold: f64, scale: f64) -> f64 {
    let z = ((score - threshold) / scale).clamp(-60.0, 60.0);
    1.0 / (1.0 + (-z).exp())
}

/// One retrieval candidate: a chunk of a document, its dense cosine and its lexical evidence.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Candidate {
    pub doc: usize,
    pub chunk: i64,
    pub score: f32,
    /// Share of the query's IDF mass the chunk matches, in [0, 1] (evidence.rs).
    pub lexical: f32,
    /// The chunk holds every identifier the query asks for (true when it asks for none).
    pub identifiers_held: bool,
    /// The query asks for identifiers and the chunk holds them all.
    pub identifier_match: bool,
    /// What the chunk lacks of the value or numbers the question asks for (answer.rs).
    pub lacks: Option<Lack>,
}

impl Candidate {
    /// A candidate with no lexical evidence: dense only, no identifier asked for.
    pub fn dense(doc: usize, chunk: i64, score: f32) -> Candidate {
        Candidate {
            doc,
            chunk,
            score,
            lexical: 0.0,
            identifiers_held: true,
            identifier_match: false,
            lacks: None,
        }
    }

    /// SPEC §7: the relevance the calibration's threshold applies to, monotone in each feature:
    /// the dense cosine plus the weighted lexical share and identifier match.
    pub fn relevance(&self, policy: &Policy) -> f64 {
        let id = if self.identifier_match { 1.0 } else { 0.0 };
        f64::from(self.score)
            + policy.lexical_weight * f64::from(self.lexical)
            + policy.identifier_weight * id
    }

    /// The calibrated confidence, exactly 0.5 at the threshold. A hit that lacks an identifier
    /// the query asks for is never `ok` (SPEC §7), so its confidence is halved below 0.5.
    pub fn confidence(&self, policy: &Policy) -> f64 {
        let c = confidence(self.relevance(policy), policy.threshold, policy.scale);
        if self.identifiers_held {
            c
        } else {
            c / 2.0
        }
    }

    /// Relevance proven: at or above the threshold and holding the asked identifiers.
    pub fn proven(&self, policy: &Policy) -> bool {
        self.identifiers_held && self.relevance(policy) >= policy.threshold
    }
}

/// A judged hit.
#[derive(Debug, Clone, PartialEq)]
pub struct Judged {
    pub doc: usize,
    pub chunk: i64,
    pub score: f32,
    pub verdict: Verdict,
    pub confidence: f64,
    pub superseded_by: Option<usize>,
    pub promoted: bool,
    pub fetched: bool,
    /// SPEC §5.3: the superseded hit whose place (and confidence) this successor took.
    pub promoted_from: Option<usize>,
    /// SPEC §6: the retired best match that turned this hit `not_entailed`.
    pub displaced_by: Option<usize>,
    pub lexical: f32,
    pub identifiers_held: bool,
    pub identifier_match: bool,
    /// What the passage lacks of what the question asks for; an `ok` hit that lacks something
    /// is `not_entailed` (`lacking_answer`).
    pub lacks: Option<Lack>,
    /// Relevance proven (`Candidate::proven`): what a stale hit needs to promote its successor.
    pub proven: bool,
}

/// SPEC §5.2: the verdict of one document at `policy`, first match wins.
pub fn verdict(
    graph: &Graph,
    windows: &[Window],
    doc: usize,
    proven: bool,
    policy: &Policy,
) -> (Verdict, Option<usize>) {
    let k = policy.known_as_of_us;
    let at = policy.at();
    let successor = graph.terminal_at(doc, at);
    let node = graph.node(doc);
    let v = match window_bounds(&windows[doc]) {
        None => Verdict::InvalidMetadata,
        Some(_) if matches!((k, node.first_indexed_us), (Some(k), Some(t)) if t > k) => {
            Verdict::NotYetKnown
        }
        Some(_) if graph.is_ambiguous_at(doc, at) => Verdict::AmbiguousSupersession,
        Some(_) if successor.is_some() => Verdict::Superseded,
        Some((_, Some(until))) if policy.now_us > until => Verdict::Expired,
        // SPEC §8.4, §9: a retired note (withdrawn, rejected, deprecated, superseded with no
        // successor in the store) is expired.
        Some(_) if windows[doc].retired_at(policy.now_us) => Verdict::Expired,
        Some((Some(from), _)) if policy.now_us < from => Verdict::NotYetValid,
        Some(_) if !proven => Verdict::LowConfidence,
        Some(_) => Verdict::Ok,
    };
    let v = match v {
        Verdict::Ok | Verdict::LowConfidence if policy.unverified => Verdict::Unverified,
        other => other,
    };
    (v, successor)
}

fn judge_one(
    graph: &Graph,
    windows: &[Window],
    c: Candidate,
    policy: &Policy,
    fetched: bool,
) -> Judged {
    let proven = c.proven(policy);
    let (verdict, superseded_by) = verdict(graph, windows, c.doc, proven, policy);
    Judged {
        doc: c.doc,
        chunk: c.chunk,
        score: c.score,
        verdict,
        confidence: c.confidence(policy),
        superseded_by,
        promoted: false,
        fetched,
        promoted_from: None,
        displaced_by: None,
        lexical: c.lexical,
        identifiers_held: c.identifiers_held,
        identifier_match: c.identifier_match,
        lacks: c.lacks,
        proven,
    }
}

/// SPEC §6: a near miss the question's words show. An `ok` hit whose passage lacks the kind of
/// value the question asks for (no amount of money for "what do we charge…") or a number it
/// names ("…for 50,000 orders?") is on topic and does not answer: it becomes `not_entailed`.
fn lacking_answer(hits: &mut [Judged]) {
    for h in hits.iter_mut() {
        h.verdict = answered(h.verdict, h.lacks);
    }
}

/// The rule of `lacking_answer` for one verdict: `ok` becomes `not_entailed` when the passage
/// lacks what the question asks for; any other verdict stands. Explain reads a document by it.
pub fn answered(verdict: Verdict, lacks: Option<Lack>) -> Verdict {
    match verdict {
        Verdict::Ok if lacks.is_some() => Verdict::NotEntailed,
        v => v,
    }
}

/// SPEC §6: how far a retired note's cosine must lead every `ok` hit's for the question to be
/// about it. On the shipped set the questions about a retired note lead by 0.24 and 0.26 with
/// minilm-l6, and no answerable question of the three evaluation sets loses its answer at this
/// margin with either embedder (at 0.05, two did with token hashing).
pub const RETIRED_LEAD: f32 = 0.10;

/// SPEC §6: a question about a retired note. When a note retired with no successor (rejected,
/// withdrawn, deprecated, ...) is proven relevant and leads every `ok` hit by `RETIRED_LEAD`,
/// the question is about it and its on-topic neighbours do not answer it: every `ok` hit
/// becomes `not_entailed`, and the retired note goes first, the best match the result names.
fn retired_best_match(hits: &mut Vec<Judged>, windows: &[Window], policy: &Policy) {
    let retired = hits
        .iter()
        .enumerate()
        .filter(|(_, h)| {
            h.verdict == Verdict::Expired
                && h.proven
                && h.superseded_by.is_none()
                && windows[h.doc].retired_at(policy.now_us)
        })
        .max_by(|a, b| a.1.score.total_cmp(&b.1.score))
        .map(|(i, h)| (i, h.score));
    let best_ok = hits
        .iter()
        .filter(|h| h.verdict == Verdict::Ok)
        .map(|h| h.score)
        .reduce(f32::max);
    let (Some((at, lead)), Some(best_ok)) = (retired, best_ok) else {
        return;
    };
    if lead < best_ok + RETIRED_LEAD {
        return;
    }
    let subject = hits[at].doc;
    for h in hits.iter_mut().filter(|h| h.verdict == Verdict::Ok) {
        h.verdict = Verdict::NotEntailed;
        h.displaced_by = Some(subject);
    }
    let subject = hits.remove(at);
    hits.insert(0, subject);
}

/// Judge candidates (retrieval order, possibly several chunks per document) into the final hit
/// list: one hit per document, successor promotion and fetch (SPEC §5.3), a passage lacking the
/// asked value (`lacking_answer`), a retired best match (`retired_best_match`), `ok` first.
/// `fetch(doc)` returns the best chunk of a document that was not retrieved.
pub fn judge(
    graph: &Graph,
    windows: &[Window],
    candidates: &[Candidate],
    policy: &Policy,
    mut fetch: impl FnMut(usize) -> Option<Candidate>,
) -> Vec<Judged> {
    let mut seen = vec![false; graph.len()];
    let mut hits: Vec<Judged> = Vec::new();
    for c in candidates {
        if c.doc < graph.len() && !seen[c.doc] {
            seen[c.doc] = true;
            hits.push(judge_one(graph, windows, *c, policy, false));
        }
    }
    // SPEC §5.3: a stale memo that cleared the threshold transfers its relevance to its terminal
    // successor: a low-confidence successor is promoted, one that was not retrieved is fetched
    // and judged, and an `ok` successor takes the place and the confidence of the best-ranked
    // stale hit that named it. Walk by index: a stale hit that moved down one behind its
    // successor is looked at again, and finds its successor placed.
    let mut i = 0;
    while i < hits.len() {
        let h = &hits[i];
        let qualifies = h.verdict == Verdict::Superseded && h.proven;
        if let (true, Some(t)) = (qualifies, h.superseded_by) {
            let (from, confidence) = (h.doc, h.confidence);
            let at = if seen[t] {
                hits.iter().position(|x| x.doc == t)
            } else if let Some(c) = fetch(t).filter(|c| c.doc == t) {
                seen[t] = true;
                hits.push(judge_one(graph, windows, c, policy, true));
                Some(hits.len() - 1)
            } else {
                None
            };
            if let Some(j) = at {
                let s = &mut hits[j];
                // SPEC §5.3, §7: the stale hit proved the question, identifiers included; its
                // declared successor is the current statement on that subject, so it answers
                // for what the stale hit held (`v1.0` named by the question, held by v1 only).
                if s.verdict == Verdict::LowConfidence {
                    s.verdict = Verdict::Ok;
                    s.promoted = true;
                }
                let takes_place = s.verdict == Verdict::Ok && (j > i || s.promoted);
                if takes_place && s.promoted_from.is_none() {
                    s.promoted_from = Some(from);
                    s.confidence = s.confidence.max(confidence);
                }
                // An ok successor stands in the stale hit's place; a fetched one that is not
                // ok follows it; a retrieved one that is not ok keeps its own place.
                let to = match (j > i, s.verdict == Verdict::Ok, s.fetched) {
                    (true, true, _) => Some(i),
                    (true, false, true) => Some(i + 1),
                    _ => None,
                };
                if let Some(to) = to {
                    let moved = hits.remove(j);
                    hits.insert(to, moved);
                }
            }
        }
        i += 1;
    }
    lacking_answer(&mut hits);
    retired_best_match(&mut hits, windows, policy);
    // Stable partition: ok first, each group in retrieval order.
    let (mut ok, rest): (Vec<_>, Vec<_>) = hits.into_iter().partition(|h| h.verdict == Verdict::Ok);
    ok.extend(rest);
    ok
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::{resolution_key, Node};

    fn day(raw: &str) -> i64 {
        parse_day_start_us(raw).unwrap()
    }

    fn policy(now: &str, threshold: f64) -> Policy {
        Policy {
            now_us: day(now),
            known_as_of_us: None,
            threshold,
            scale: 0.05,
            unverified: false,
            lexical_weight: 0.0,
            identifier_weight: 0.0,
        }
    }

    fn setup(
        docs: &[(&str, Option<&str>, Option<&str>)],
        edges: &[(usize, &str)],
    ) -> (Graph, Vec<Window>) {
        let nodes = docs
            .iter()
            .map(|(p, _, _)| Node {
                key: resolution_key(p),
                path: p.to_string(),
                first_indexed_us: Some(0),
                alias: None,
                folder: String::new(),
            })
            .collect();
        let edges: Vec<(usize, String)> =
            edges.iter().map(|(d, r)| (*d, resolution_key(r))).collect();
        let windows = docs
            .iter()
            .map(|(_, f, u)| Window {
                valid_from_raw: f.map(Into::into),
                valid_until_raw: u.map(Into::into),
                ..Window::default()
            })
            .collect();
        (Graph::build(nodes, &edges), windows)
    }

    #[test]
    fn ambiguity_wins_over_a_successor() {
        // SPEC §5.2: `x/run.md` is named ambiguously (with `y/run.md`) by one note and
        // superseded by another: ambiguous_supersession, never a successor promoted.
        let node = |path: &str, alias: Option<&str>| Node {
            key: resolution_key(path),
            path: path.into(),
            first_indexed_us: Some(0),
            alias: alias.map(str::to_string),
            folder: String::new(),
        };
        let nodes = vec![
            node("x/run.md", Some("#adr:1")),
            node("y/run.md", None),
            node("new.md", None),
            node("next.md", None),
        ];
        let g = Graph::build(nodes, &[(2, "run".into()), (3, "#adr:1".into())]);
        let w = vec![Window::default(); 4];
        let p = policy("2026-01-01", 0.5);
        assert_eq!(g.terminal(0, None), Some(3), "the edge itself resolves");
        assert_eq!(
            verdict(&g, &w, 0, true, &p),
            (Verdict::AmbiguousSupersession, Some(3))
        );
    }

    /// v2 supersedes v1; `other` is unrelated.
    fn versions() -> (Graph, Vec<Window>) {
        setup(
            &[
                ("v1.md", None, None),
                ("v2.md", None, None),
                ("other.md", None, None),
            ],
            &[(1, "v1")],
        )
    }

    fn cand(doc: usize, score: f32) -> Candidate {
        Candidate::dense(doc, doc as i64, score)
    }

    #[test]
    fn verdicts_are_named_as_the_spec_names_them() {
        let all = [
            (Verdict::Ok, "ok"),
            (Verdict::Superseded, "superseded"),
            (Verdict::Expired, "expired"),
            (Verdict::NotYetValid, "not_yet_valid"),
            (Verdict::LowConfidence, "low_confidence"),
            (Verdict::InvalidMetadata, "invalid_metadata"),
            (Verdict::AmbiguousSupersession, "ambiguous_supersession"),
            (Verdict::NotYetKnown, "not_yet_known"),
            (Verdict::NotEntailed, "not_entailed"),
            (Verdict::Unverified, "unverified"),
        ];
        for (v, name) in all {
            assert_eq!(v.as_str(), name);
        }
    }

    #[test]
    fn a_candidate_of_no_document_is_left_out() {
        let (g, w) = versions();
        let p = policy("2026-01-01", 0.5);
        let hits = judge(&g, &w, &[cand(3, 0.9), cand(2, 0.9)], &p, |_| None);
        let docs: Vec<usize> = hits.iter().map(|h| h.doc).collect();
        assert_eq!(docs, vec![2]);
    }

    #[test]
    fn dates_are_strict() {
        assert_eq!(parse_day_start_us("1970-01-02"), Some(DAY_US));
        assert_eq!(parse_day_start_us("2024-02-29").map(|_| ()), Some(()));
        // The Gregorian leap rule at its edges, and the first year there is.
        for good in ["2000-02-29", "2400-02-29", "0004-02-29", "0001-01-01"] {
            assert!(parse_day_start_us(good).is_some(), "{good:?}");
        }
        assert_eq!(
            parse_day_start_us("0001-01-01"),
            Some(-719_162 * DAY_US),
            "day one of year one"
        );
        for bad in [
            "1900-02-29",
            "2100-02-29",
            "0300-02-29",
            "2026-01x01",
            "2026x01-01",
            "2023-02-29",
            "2026-2-03",
            "2026-02-30",
            "0000-01-01",
            "2026-13-01",
            " 2026-01-01",
            "２０２６-01-01",
            "",
        ] {
            assert_eq!(parse_day_start_us(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_retired_best_match_by_a_clear_margin_turns_its_neighbours_not_entailed() {
        // 0 is rejected, 1 and 2 are on-topic neighbours, 3 a note below the threshold.
        let (g, mut w) = setup(
            &[
                ("adr-44.md", None, None),
                ("neighbour.md", None, None),
                ("other.md", None, None),
                ("far.md", None, None),
            ],
            &[],
        );
        w[0].retired = true;
        let p = policy("2026-03-31", 0.5);
        let judged = |w: &[Window], retired: f32| {
            let cands = [
                cand(1, 0.70),
                cand(0, retired),
                cand(2, 0.60),
                cand(3, 0.40),
            ];
            judge(&g, w, &cands, &p, |_| None)
        };
        let hits = judged(&w, 0.80);
        let seen: Vec<(usize, Verdict)> = hits.iter().map(|h| (h.doc, h.verdict)).collect();
        assert_eq!(
            seen,
            vec![
                (0, Verdict::Expired), // first: the note the question is about
                (1, Verdict::NotEntailed),
                (2, Verdict::NotEntailed),
                (3, Verdict::LowConfidence), // only `ok` hits are demoted
            ]
        );
        let displaced: Vec<Option<usize>> = hits.iter().map(|h| h.displaced_by).collect();
        assert_eq!(displaced, vec![None, Some(0), Some(0), None]);
        // Within the margin the neighbours answer, as before.
        let hits = judged(&w, 0.70 + RETIRED_LEAD / 2.0);
        assert_eq!(hits[0].doc, 1);
        assert_eq!(hits[0].verdict, Verdict::Ok);
        // Never proven relevant (it lacks an asked identifier): however far it leads, it
        // displaces nothing.
        let mut unproven = cand(0, 0.80);
        unproven.identifiers_held = false;
        let hits = judge(
            &g,
            &w,
            &[cand(1, 0.70), unproven, cand(2, 0.60)],
            &p,
            |_| None,
        );
        assert_eq!((hits[0].doc, hits[0].verdict), (1, Verdict::Ok));
        assert!(hits.iter().all(|h| h.displaced_by.is_none()));
        // Not retired (an expired window) or retired since a later date: no effect.
        w[0].retired_since_raw = Some("2027-01-01".into());
        assert_eq!(judged(&w, 0.80)[0].verdict, Verdict::Ok);
        w[0].retired = false;
        w[0].retired_since_raw = None;
        w[0].valid_until_raw = Some("2026-01-01".into());
        assert_eq!(judged(&w, 0.80)[0].verdict, Verdict::Ok);
    }

    #[test]
    fn a_retired_note_with_a_successor_leaves_the_successor_ok() {
        // v2 supersedes v1, which also says it is superseded: v2 is the answer.
        let (g, mut w) = versions();
        w[0].retired = true;
        let p = policy("2026-03-31", 0.5);
        let hits = judge(&g, &w, &[cand(0, 0.90), cand(1, 0.60)], &p, |_| None);
        assert_eq!(hits[0].doc, 1);
        assert_eq!(hits[0].verdict, Verdict::Ok);
    }

    #[test]
    fn retirement_is_expired_after_supersession() {
        let (g, mut w) = versions();
        let p = policy("2026-03-31", 0.0);
        // Undated: expired at every instant.
        w[2].retired = true;
        assert_eq!(verdict(&g, &w, 2, true, &p).0, Verdict::Expired);
        // A superseded note with a successor in the store stays `superseded`.
        w[0].retired = true;
        assert_eq!(verdict(&g, &w, 0, true, &p).0, Verdict::Superseded);
        // Dated: in force up to the day before the state change.
        w[2].retired_since_raw = Some("2026-04-01".into());
        assert_eq!(verdict(&g, &w, 2, true, &p).0, Verdict::Ok);
        let later = policy("2026-04-01", 0.0);
        assert_eq!(verdict(&g, &w, 2, true, &later).0, Verdict::Expired);
        // An empty window still fails closed first.
        w[2].valid_from_raw = Some("2026-05-01".into());
        w[2].valid_until_raw = Some("2026-04-01".into());
        assert_eq!(verdict(&g, &w, 2, true, &p).0, Verdict::InvalidMetadata);
    }

    #[test]
    fn window_edges_are_inclusive() {
        let (g, w) = setup(&[("a.md", Some("2026-03-01"), Some("2026-03-31"))], &[]);
        let mut p = policy("2026-03-31", 0.0);
        p.now_us = day("2026-04-01") - 1;
        assert_eq!(verdict(&g, &w, 0, 0.9 >= p.threshold, &p).0, Verdict::Ok);
        p.now_us += 1;
        assert_eq!(
            verdict(&g, &w, 0, 0.9 >= p.threshold, &p).0,
            Verdict::Expired
        );
        p.now_us = day("2026-03-01") - 1;
        assert_eq!(
            verdict(&g, &w, 0, 0.9 >= p.threshold, &p).0,
            Verdict::NotYetValid
        );
    }

    #[test]
    fn precedence() {
        let (g, w) = setup(
            &[
                ("bad.md", Some("2026-02-30"), None),
                ("empty.md", Some("2026-05-01"), Some("2026-04-01")),
                ("old.md", None, Some("2020-01-01")),
                ("new.md", None, None),
            ],
            &[(3, "old")],
        );
        let p = policy("2026-06-01", 0.5);
        assert_eq!(
            verdict(&g, &w, 0, 0.9 >= p.threshold, &p).0,
            Verdict::InvalidMetadata
        );
        assert_eq!(
            verdict(&g, &w, 1, 0.9 >= p.threshold, &p).0,
            Verdict::InvalidMetadata
        );
        // Superseded outranks expired.
        assert_eq!(
            verdict(&g, &w, 2, 0.9 >= p.threshold, &p),
            (Verdict::Superseded, Some(3))
        );
        assert_eq!(
            verdict(&g, &w, 3, 0.4 >= p.threshold, &p).0,
            Verdict::LowConfidence
        );
        assert_eq!(verdict(&g, &w, 3, 0.5 >= p.threshold, &p).0, Verdict::Ok);
    }

    #[test]
    fn promotion_fetch_and_order() {
        let (g, w) = versions();
        let p = policy("2026-01-01", 0.5);
        // v2 retrieved but below threshold: promoted, and listed first.
        let out = judge(
            &g,
            &w,
            &[cand(2, 0.45), cand(0, 0.8), cand(1, 0.3)],
            &p,
            |_| None,
        );
        let got: Vec<_> = out.iter().map(|h| (h.doc, h.verdict, h.promoted)).collect();
        assert_eq!(
            got,
            vec![
                (1, Verdict::Ok, true),
                (2, Verdict::LowConfidence, false),
                (0, Verdict::Superseded, false)
            ]
        );
        // v2 not retrieved: fetched, judged, promoted.
        let out = judge(&g, &w, &[cand(0, 0.8)], &p, |d| Some(cand(d, 0.2)));
        assert_eq!(
            (out[0].doc, out[0].verdict, out[0].fetched, out[0].promoted),
            (1, Verdict::Ok, true, true)
        );
        // Below threshold the stale memo proves nothing: no promotion.
        let out = judge(&g, &w, &[cand(0, 0.4), cand(1, 0.3)], &p, |_| None);
        assert!(out.iter().all(|h| h.verdict != Verdict::Ok));
    }

    #[test]
    fn successor_takes_the_stale_hits_place_and_confidence() {
        let (g, w) = versions();
        let p = policy("2026-01-01", 0.5);
        // v1 (0.8) outranks an unrelated ok hit (0.6), which outranks v2 (0.3).
        let out = judge(
            &g,
            &w,
            &[cand(0, 0.8), cand(2, 0.6), cand(1, 0.3)],
            &p,
            |_| None,
        );
        let got: Vec<_> = out.iter().map(|h| (h.doc, h.verdict)).collect();
        assert_eq!(
            got,
            vec![(1, Verdict::Ok), (2, Verdict::Ok), (0, Verdict::Superseded)]
        );
        assert_eq!(
            out[0].confidence, out[2].confidence,
            "v2 carries v1's confidence"
        );
        assert_eq!((out[0].promoted, out[0].promoted_from), (true, Some(0)));
        assert_eq!(out[1].promoted_from, None);
        // Already ok on its own but retrieved later: it still takes v1's place.
        let out = judge(
            &g,
            &w,
            &[cand(0, 0.9), cand(2, 0.7), cand(1, 0.55)],
            &p,
            |_| None,
        );
        assert_eq!(out.iter().map(|h| h.doc).collect::<Vec<_>>(), vec![1, 2, 0]);
        assert_eq!((out[0].promoted, out[0].promoted_from), (false, Some(0)));
        assert!(out[0].confidence > confidence(0.7, 0.5, p.scale));
        // Fetched: placed where v1 was, ahead of the unrelated ok hit.
        let out = judge(&g, &w, &[cand(0, 0.8), cand(2, 0.6)], &p, |d| {
            Some(cand(d, 0.1))
        });
        let got: Vec<_> = out.iter().map(|h| (h.doc, h.fetched)).collect();
        assert_eq!(got, vec![(1, true), (2, false), (0, false)]);
    }

    #[test]
    fn lexical_evidence_and_the_identifier_rule() {
        let (g, w) = setup(&[("ref-1.md", None, None), ("ref-2.md", None, None)], &[]);
        let mut p = policy("2026-01-01", 0.5);
        p.lexical_weight = 0.4;
        let with = |doc, score, lexical, held| Candidate {
            lexical,
            identifiers_held: held,
            ..Candidate::dense(doc, doc as i64, score)
        };
        // The right note: low cosine, but it holds the rare identifier; the wrong one is close
        // in cosine and lacks it.
        let right = with(0, 0.2, 1.0, true);
        let wrong = with(1, 0.9, 0.6, false);
        assert!((right.relevance(&p) - 0.6).abs() < 1e-6 && right.proven(&p));
        assert!(!wrong.proven(&p) && wrong.confidence(&p) < 0.5);
        let out = judge(&g, &w, &[wrong, right], &p, |_| None);
        let got: Vec<_> = out.iter().map(|h| (h.doc, h.verdict)).collect();
        assert_eq!(got, vec![(0, Verdict::Ok), (1, Verdict::LowConfidence)]);
        // Exactly 0.5 on the boundary, monotone in each feature.
        p.lexical_weight = 0.5; // exact in binary
        assert_eq!(with(0, 0.25, 0.5, true).confidence(&p), 0.5);
        let base = with(0, 0.3, 0.3, true);
        assert!(with(0, 0.31, 0.3, true).confidence(&p) > base.confidence(&p));
        assert!(with(0, 0.3, 0.31, true).confidence(&p) > base.confidence(&p));
        assert!(with(0, 0.3, 0.3, false).confidence(&p) < base.confidence(&p));
        // A dense-only fit ignores the lexical share.
        p.lexical_weight = 0.0;
        assert!(!with(0, 0.2, 1.0, true).proven(&p));
        // Holding an asked identifier counts with its own weight.
        p.identifier_weight = 0.25;
        let id = Candidate {
            identifier_match: true,
            ..with(0, 0.25, 0.0, true)
        };
        assert_eq!(id.confidence(&p), 0.5);
        assert!(id.confidence(&p) > with(0, 0.25, 0.0, true).confidence(&p));
    }

    #[test]
    fn a_passage_lacking_the_asked_value_is_not_entailed() {
        use crate::answer::Asked;
        // a and b are on topic and clear the threshold; only b names the asked kind of value.
        let (g, w) = setup(&[("a.md", None, None), ("b.md", None, None)], &[]);
        let p = policy("2026-01-01", 0.5);
        let lacking = Candidate {
            lacks: Some(Lack::Kind(Asked::Money)),
            ..Candidate::dense(0, 0, 0.8)
        };
        let holding = Candidate::dense(1, 1, 0.6);
        let out = judge(&g, &w, &[lacking, holding], &p, |_| None);
        let got: Vec<_> = out.iter().map(|h| (h.doc, h.verdict)).collect();
        assert_eq!(got, vec![(1, Verdict::Ok), (0, Verdict::NotEntailed)]);
        // The rule only turns `ok` hits: one below the threshold stays low_confidence.
        let below = Candidate {
            lacks: Some(Lack::Number(0)),
            ..Candidate::dense(0, 0, 0.3)
        };
        let out = judge(&g, &w, &[below], &p, |_| None);
        assert_eq!(out[0].verdict, Verdict::LowConfidence);
        // A successor promoted in a stale hit's place is held to it too.
        let (g, w) = setup(&[("a.md", None, None), ("b.md", None, None)], &[(1, "a")]);
        let stale = Candidate::dense(0, 0, 0.8);
        let successor = Candidate {
            lacks: Some(Lack::Kind(Asked::Size)),
            ..Candidate::dense(1, 1, 0.3)
        };
        let out = judge(&g, &w, &[stale, successor], &p, |_| None);
        assert!(out.iter().all(|h| h.verdict != Verdict::Ok));
        assert!(out
            .iter()
            .any(|h| h.doc == 1 && h.verdict == Verdict::NotEntailed && h.promoted));
    }

    #[test]
    fn a_successor_answers_for_the_identifier_its_predecessor_proved() {
        // b supersedes a; the query asks for an identifier (`v1.0`) only a holds. a proved
        // the question, and b is by declaration the current statement on that subject.
        let (g, w) = setup(
            &[
                ("a.md", None, None),
                ("b.md", None, None),
                ("c.md", None, None),
            ],
            &[(1, "a")],
        );
        let p = policy("2026-01-01", 0.5);
        let stale = Candidate::dense(0, 0, 0.8);
        let lacking = |doc, chunk, score| Candidate {
            identifiers_held: false,
            ..Candidate::dense(doc, chunk, score)
        };
        let out = judge(&g, &w, &[stale, lacking(1, 1, 0.3)], &p, |_| None);
        let got: Vec<_> = out
            .iter()
            .map(|h| (h.doc, h.verdict, h.promoted, h.promoted_from))
            .collect();
        assert_eq!(
            got,
            vec![
                (1, Verdict::Ok, true, Some(0)),
                (0, Verdict::Superseded, false, None)
            ]
        );
        assert!(
            out[0].confidence >= 0.5,
            "it takes the stale hit's confidence"
        );
        // Fetched (not retrieved) and lacking it: promoted all the same.
        let out = judge(&g, &w, &[stale], &p, |d| Some(lacking(d, 9, 0.3)));
        assert_eq!(
            (out[0].doc, out[0].verdict, out[0].fetched),
            (1, Verdict::Ok, true)
        );
        // A hit reached by no edge stays under the identifier rule, however close it is.
        let out = judge(&g, &w, &[lacking(2, 2, 0.9)], &p, |_| None);
        assert_eq!((out[0].doc, out[0].verdict), (2, Verdict::LowConfidence));
        // A stale hit that did not prove the question (it lacks the identifier) transfers
        // nothing.
        let out = judge(
            &g,
            &w,
            &[lacking(0, 0, 0.9), lacking(1, 1, 0.3)],
            &p,
            |_| None,
        );
        assert!(out.iter().all(|h| h.verdict != Verdict::Ok));
    }

    #[test]
    fn confidence_is_monotone_in_each_feature() {
        let grid = [0.0f32, 0.1, 0.25, 0.4, 0.5, 0.75, 1.0];
        for (lw, iw, t) in [
            (0.0, 0.0, 0.3),
            (0.3, 0.0, 0.5),
            (0.5, 0.25, 0.6),
            (1.0, 0.5, 0.9),
        ] {
            let mut p = policy("2026-01-01", t);
            (p.lexical_weight, p.identifier_weight) = (lw, iw);
            let c = |score, lexical, held, id| Candidate {
                lexical,
                identifiers_held: held,
                identifier_match: id,
                ..Candidate::dense(0, 0, score)
            };
            for &s in &grid {
                for &l in &grid {
                    for (held, id) in [(false, false), (true, false), (true, true)] {
                        let base = c(s, l, held, id).confidence(&p);
                        assert!(c(s + 0.05, l, held, id).confidence(&p) >= base);
                        assert!(c(s, l + 0.05, held, id).confidence(&p) >= base);
                        assert!(c(s, l, true, id).confidence(&p) >= base);
                        assert!(
                            c(s, l, true, true).confidence(&p)
                                >= c(s, l, true, false).confidence(&p)
                        );
                        assert_eq!(
                            base >= 0.5,
                            c(s, l, held, id).proven(&p) || (held && base == 0.5)
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn confidence_is_half_at_threshold_and_monotone() {
        assert_eq!(confidence(0.42, 0.42, 0.05), 0.5);
        assert!(confidence(0.43, 0.42, 0.05) > 0.5 && confidence(0.41, 0.42, 0.05) < 0.5);
        assert!(confidence(10.0, 0.0, 0.01) <= 1.0 && confidence(-10.0, 0.0, 0.01) > 0.0);
    }
}
