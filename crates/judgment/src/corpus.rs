//! The corpus a query is judged over (SPEC §2–§5): documents and their declared edges as any
//! backend reads them, turned into the supersession graph and the validity windows under the
//! store's vocabulary setting.
//!
//! Owns: which declarations are in force (vocabularies, frontmatter overrides, partial and
//! unread statements), a dated retirement dating its successor edges, the declarations counted
//! as `stats` reports them, and finding a document by path. The single-file store and the
//! PostgreSQL backend both build their corpus here, so a verdict never depends on where the
//! notes are stored. Does not own: reading rows (each backend) or the rules (trust.rs, graph.rs).

use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::graph::{Declared, Graph, Node, Resolution};
use crate::trust::Window;

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

/// One declaration of a supersession edge as its document states it, overridden ones included:
/// what the index run stores and what a corpus is built from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Edge {
    /// The reference as written.
    pub raw: String,
    /// Its resolution key, or the alias a PEP or ADR number names.
    pub key: String,
    /// True: the reference supersedes the declaring document (`Superseded-By:`).
    pub reversed: bool,
    pub vocabulary: String,
    pub line: Option<i64>,
    pub statement: String,
    /// A header statement frontmatter overrode: kept for explain, never in force.
    pub overridden: bool,
    /// None: a full edge. `partial` (SPEC §2.5 "partly superseded": never a full edge) or
    /// `unread` (a status-like statement the reader could not classify): kept for explain,
    /// stats and the hit's mark, never in force.
    pub standing: Option<String>,
}

/// One stored edge and the document that declares it.
#[derive(Debug, Clone, Default)]
pub struct EdgeRecord {
    pub doc_id: i64,
    pub edge: Edge,
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

/// Where each id of a list stands in it (a corpus's documents, a search's rows): a table by id
/// where the ids are dense (a store's row ids mostly are: 4 bytes an id, where a hash map took
/// 36 at a million), else the ids sorted with their places, searched (a store far sparser than
/// four ids an entry has seen most of its rows replaced).
#[derive(Debug, Clone, Default)]
pub struct IdIndex {
    by_id: Vec<u32>,
    sorted: Vec<(i64, u32)>,
}

/// No entry at this id in the table.
const NO_ENTRY: u32 = u32::MAX;

impl IdIndex {
    /// The index of `ids`, in order (of an id listed twice, the later place).
    pub fn of(ids: &[i64]) -> IdIndex {
        let largest = ids.iter().copied().max().unwrap_or(-1);
        let dense = ids.iter().all(|&id| id >= 0)
            && usize::try_from(largest).is_ok_and(|l| l <= 4 * ids.len() + 4096)
            && ids.len() < NO_ENTRY as usize;
        if !dense {
            let mut sorted: Vec<(i64, u32)> = ids
                .iter()
                .enumerate()
                .map(|(at, &id)| (id, at as u32))
                .collect();
            sorted.sort_by_key(|&(id, at)| (id, std::cmp::Reverse(at)));
            sorted.dedup_by_key(|e| e.0);
            return IdIndex {
                by_id: Vec::new(),
                sorted,
            };
        }
        let mut by_id = vec![NO_ENTRY; usize::try_from(largest + 1).unwrap_or(0)];
        for (at, &id) in ids.iter().enumerate() {
            by_id[id as usize] = at as u32;
        }
        IdIndex {
            by_id,
            sorted: Vec::new(),
        }
    }

    /// Where `id` stands, if it is listed.
    #[inline]
    pub fn get(&self, id: i64) -> Option<usize> {
        if self.by_id.is_empty() {
            return self
                .sorted
                .binary_search_by_key(&id, |e| e.0)
                .ok()
                .map(|i| self.sorted[i].1 as usize);
        }
        usize::try_from(id)
            .ok()
            .and_then(|i| self.by_id.get(i))
            .filter(|&&at| at != NO_ENTRY)
            .map(|&at| at as usize)
    }
}

/// Documents, their windows and the graph of the edges in force: one generation's view.
#[derive(Debug, Clone, Default)]
pub struct Corpus {
    pub doc_ids: Vec<i64>,
    pub index_of: IdIndex,
    pub graph: Graph,
    pub windows: Vec<Window>,
    /// Per document: the root its path is relative to (the path is its graph node's);
    /// `location` gives both.
    pub sources: Vec<Arc<str>>,
    /// Per edge in force (as given to the graph): where it was written.
    pub edge_meta: Vec<EdgeMeta>,
    /// By document: its statements the reader could not classify, in force under the setting
    /// (vocabulary, line, statement), for the hit's `validity.unread` (SPEC §2.5); only the
    /// few documents that have any.
    pub unread: FxHashMap<usize, Vec<EdgeMeta>>,
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
            c.doc_ids.push(d.id);
            c.windows.push(Window {
                valid_from_raw: d.valid_from_raw.filter(|_| frontmatter).map(Into::into),
                valid_until_raw: d.valid_until_raw.filter(|_| frontmatter).map(Into::into),
                metadata_error: d.unreadable || (frontmatter && d.metadata_error),
                retired: d.retired_state.is_some()
                    && !d.retired_overridden
                    && d.retired_vocabulary
                        .as_deref()
                        .is_some_and(|v| vocabulary_in_force(setting, v)),
                retired_since_raw: d.retired_since.map(Into::into),
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
        c.index_of = IdIndex::of(&c.doc_ids);
        let mut declared = Vec::new();
        for EdgeRecord { doc_id, edge: e } in edges() {
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
            let Some(d) = c.index_of.get(doc_id) else {
                continue;
            };
            match e.standing.as_deref() {
                None => {}
                Some("unread") => {
                    c.unread.entry(d).or_default().push(EdgeMeta {
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
            unread: self.unread.values().map(|u| u.len() as i64).sum(),
            retired: self.windows.iter().filter(|w| w.retired).count() as i64,
        }
    }

    /// SPEC §2.5: what document `d` says about itself that the reader could not act on, as
    /// (vocabulary, line, statement): statements it could not classify, and references in a
    /// note's own words (not frontmatter) that name no document.
    pub fn unread_of(&self, d: usize) -> Vec<(String, Option<i64>, String)> {
        let mut found: Vec<(String, Option<i64>, String)> = self
            .unread
            .get(&d)
            .into_iter()
            .flatten()
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

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(id: i64, path: &str) -> DocumentRecord {
        DocumentRecord {
            id,
            source: "/notes".into(),
            path: path.into(),
            key: crate::graph::resolution_key(path),
            first_indexed_us: crate::trust::parse_day_start_us("2026-01-01"),
            ..DocumentRecord::default()
        }
    }

    fn edge(doc_id: i64, key: &str, vocabulary: &str, overridden: bool) -> EdgeRecord {
        EdgeRecord {
            doc_id,
            edge: Edge {
                key: key.into(),
                raw: key.into(),
                vocabulary: vocabulary.into(),
                overridden,
                ..Edge::default()
            },
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
        assert_eq!(all.index_of.get(30), Some(2));
        assert_eq!(all.index_of.get(31), None);
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
        partial.edge.standing = Some("partial".into());
        let mut unread = edge(2, "", "nygard", false);
        unread.edge.standing = Some("unread".into());
        unread.edge.statement = "Parked pending legal".into();
        let mut successor = edge(1, "#adr:2", "nygard", false);
        successor.edge.reversed = true;
        let mut gone = edge(2, "#adr:9", "prose", false);
        gone.edge.reversed = true;
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

    fn with_standing(mut e: EdgeRecord, standing: &str) -> EdgeRecord {
        e.edge.standing = Some(standing.into());
        e
    }

    #[test]
    fn declarations_are_counted_as_stats_reports_them() {
        // a and b share the key `run` (x/run.md, y/run.md); c, d and e declare.
        let docs = || {
            vec![
                doc(1, "x/run.md"),
                doc(2, "y/run.md"),
                doc(3, "c.md"),
                doc(4, "d.md"),
                doc(5, "e.md"),
            ]
        };
        let edges = || {
            vec![
                edge(3, "d", "frontmatter", false),     // resolved
                edge(3, "ghost", "frontmatter", false), // dangling
                edge(4, "run", "frontmatter", false),   // ambiguous
                edge(5, "e", "frontmatter", false),     // self-reference
                edge(5, "c", "madr", false),            // resolved
                edge(5, "d", "madr", true),             // overridden by frontmatter
                with_standing(edge(4, "c", "madr", false), "partial"),
                with_standing(edge(4, "", "madr", false), "unread"),
                with_standing(edge(9, "c", "madr", false), "partial"), // of no document
            ]
        };
        let all = Corpus::build(docs(), edges(), "all");
        let t = all.tally();
        assert_eq!(t.claims, (2, 1, 1, 1));
        assert_eq!(
            t.by_vocabulary,
            vec![("frontmatter".into(), 4, 0), ("madr".into(), 1, 1)]
        );
        assert_eq!((t.partial, t.unread, t.retired), (2, 1, 0));
        let front = Corpus::build(docs(), edges(), "frontmatter").tally();
        assert_eq!(front.claims, (1, 1, 1, 1));
        assert_eq!(
            front.by_vocabulary,
            vec![("frontmatter".into(), 4, 0), ("madr".into(), 0, 1)],
            "a vocabulary out of force is listed, its edges not counted"
        );
        assert_eq!((front.partial, front.unread), (0, 0));
        // Who names a document: resolved and ambiguous claims both, the document itself not.
        assert_eq!(
            all.declarers_toward(0),
            vec![("/notes".into(), "d.md".into())]
        );
        assert_eq!(
            all.declarers_toward(3),
            vec![("/notes".into(), "c.md".into())]
        );
        assert!(all.declarers_toward(4).is_empty());
    }

    #[test]
    fn a_retirement_is_in_force_only_as_declared_and_not_overridden() {
        let retired = |state: Option<&str>, vocabulary: &str, overridden: bool| {
            let mut d = doc(1, "a.md");
            d.retired_state = state.map(str::to_string);
            d.retired_vocabulary = Some(vocabulary.into());
            d.retired_overridden = overridden;
            d
        };
        let in_force = |d: DocumentRecord, setting: &str| {
            Corpus::build(vec![d], vec![], setting).windows[0].retired
        };
        assert!(in_force(retired(Some("rejected"), "madr", false), "all"));
        assert!(!in_force(retired(Some("rejected"), "madr", true), "all"));
        assert!(!in_force(retired(None, "madr", false), "all"));
        assert!(!in_force(
            retired(Some("rejected"), "madr", false),
            "frontmatter"
        ));
        assert!(in_force(
            retired(Some("rejected"), "frontmatter", false),
            "frontmatter"
        ));
        assert!(!in_force(
            retired(Some("rejected"), "frontmatter", false),
            "none"
        ));
        let t = Corpus::build(
            vec![retired(Some("rejected"), "madr", false)],
            vec![],
            "all",
        );
        assert_eq!(t.tally().retired, 1);
    }

    #[test]
    fn only_a_successor_named_in_a_dated_retirement_holds_from_its_date() {
        // a retired on 2026-05-01 and names its successor b in its own words, and c in
        // frontmatter; it also says in its own words that it replaces d.
        let mut a = doc(1, "a.md");
        a.retired_state = Some("superseded".into());
        a.retired_since = Some("2026-05-01".into());
        a.retired_vocabulary = Some("nygard".into());
        let docs = vec![a, doc(2, "b.md"), doc(3, "c.md"), doc(4, "d.md")];
        let mut to_b = edge(1, "b", "nygard", false);
        to_b.edge.reversed = true;
        let mut to_c = edge(1, "c", "frontmatter", false);
        to_c.edge.reversed = true;
        let replaces_d = edge(1, "d", "nygard", false);
        let since = |c: &Corpus| -> Vec<Option<i64>> {
            (0..c.edge_meta.len())
                .map(|id| c.graph.claim(id).since_us)
                .collect()
        };
        let c = Corpus::build(docs, vec![to_b, to_c, replaces_d], "all");
        let day = crate::trust::parse_day_start_us("2026-05-01");
        assert_eq!(since(&c), vec![day, None, None]);
        let before = crate::graph::At {
            known_us: None,
            now_us: crate::trust::parse_day_start_us("2026-04-01"),
        };
        assert_eq!(
            c.graph.successor_at(3, before),
            Some(0),
            "d was replaced all along"
        );
    }

    #[test]
    fn unread_are_statements_not_classified_and_prose_references_to_no_note() {
        let docs = vec![doc(1, "a.md"), doc(2, "b.md")];
        let mut prose = edge(1, "ghost", "prose", false);
        prose.edge.statement = "Replaced by the ghost note".into();
        let edges = vec![
            prose,
            edge(1, "gone", "frontmatter", false), // dangling, but frontmatter: lint's to say
            edge(1, "b", "prose", false),          // resolved
        ];
        let c = Corpus::build(docs, edges, "all");
        let unread = c.unread_of(0);
        assert_eq!(unread.len(), 1, "{unread:?}");
        assert_eq!(unread[0].0, "prose");
        assert!(
            unread[0].2.ends_with("(names no note: ghost)"),
            "{unread:?}"
        );
    }

    #[test]
    fn an_id_is_found_whether_the_ids_are_dense_or_not() {
        for ids in [vec![3, 0, 7, 1], vec![5, 1 << 40, -3, 9]] {
            let index = IdIndex::of(&ids);
            for (d, &id) in ids.iter().enumerate() {
                assert_eq!(index.get(id), Some(d));
            }
            for absent in [2, 4, 8, -1, i64::MAX, i64::MIN] {
                assert_eq!(index.get(absent), None);
            }
        }
        assert_eq!(IdIndex::of(&[]).get(0), None);
        // An id listed twice stands at its later place, dense or not.
        assert_eq!(IdIndex::of(&[4, 2, 4]).get(4), Some(2));
        assert_eq!(IdIndex::of(&[1 << 40, 2, 1 << 40]).get(1 << 40), Some(2));
    }

    #[test]
    fn a_folder_is_the_source_joined_with_the_paths_parent() {
        assert_eq!(folder_of("/notes", "adr/0001-x.md"), "/notes/adr");
        assert_eq!(folder_of("/notes", "a\\b.md"), "/notes/a");
        assert_eq!(folder_of("/notes", "a.md"), "/notes/");
    }
}
