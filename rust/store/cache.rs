//! The search cache: what every query needs in memory, loaded once per store generation.
//!
//! Owns: deciding when the cache is stale and loading documents, windows, edges and vectors in
//! one read snapshot. Does not own: how vectors are read from sqlite-vec (vectors.rs) or how a
//! query uses the cache (search.rs, explain.rs).

use crate::dense::DenseIndex;
use crate::errors::Result;
use crate::graph::{Declared, Graph, Node};
use crate::trust::Window;

use super::{parse_instant_us, Store};

/// Everything a search needs in memory, loaded once per store generation (SPEC §1: vectors are
/// loaded once per open store, not per query, and kept in step with writes).
pub(crate) struct SearchCache {
    pub(crate) generation: i64,
    pub(crate) dense: DenseIndex,
    pub(crate) row_chunk: Vec<i64>,
    pub(crate) chunk_row: std::collections::HashMap<i64, usize>,
    pub(crate) row_doc: Vec<usize>,
    pub(crate) doc_rows: Vec<Vec<usize>>,
    pub(crate) doc_ids: Vec<i64>,
    pub(crate) graph: Graph,
    pub(crate) windows: Vec<Window>,
    /// Per document: (source, path); per edge (as given to the graph): where it was written.
    pub(crate) locations: Vec<(String, String)>,
    pub(crate) edge_meta: Vec<EdgeMeta>,
}

/// Where an edge in force was written (SPEC §8.4), for explain.
#[derive(Debug, Clone, Default)]
pub(crate) struct EdgeMeta {
    pub(crate) raw: String,
    pub(crate) vocabulary: String,
    pub(crate) line: Option<i64>,
    pub(crate) statement: String,
}

/// SPEC §8.4 `--vocabularies`: which vocabularies' declarations are in force for a store.
pub(crate) fn vocabulary_in_force(setting: &str, vocabulary: &str) -> bool {
    match setting {
        "none" => false,
        "frontmatter" => vocabulary == "frontmatter",
        _ => true,
    }
}

impl Store {
    /// (Re)load the search cache when the committed generation moved (another process may have
    /// indexed since). Returns whether a load happened.
    pub(crate) fn ensure_cache(&mut self) -> Result<bool> {
        let generation = self.generation()?;
        if self
            .cache
            .as_ref()
            .is_some_and(|c| c.generation == generation)
        {
            return Ok(false);
        }
        self.cache = None;
        // SPEC §1: one read transaction, so documents, edges and vectors are one generation's
        // snapshot even while another process commits.
        let own = !self.in_write;
        if own {
            self.conn.execute_batch("BEGIN")?;
        }
        let loaded = self.load_cache();
        if own {
            // Read-only: ending it cannot lose anything.
            let _ = self.conn.execute_batch("COMMIT");
        }
        self.cache = Some(loaded?);
        Ok(true)
    }

    fn load_cache(&self) -> Result<SearchCache> {
        let generation = self.generation()?;
        let dim = self.embedder()?.map(|e| e.dim).unwrap_or(0);
        let setting = self.meta("vocabularies")?.unwrap_or_else(|| "all".into());
        let frontmatter = vocabulary_in_force(&setting, "frontmatter");
        let mut doc_ids = Vec::new();
        let mut nodes = Vec::new();
        let mut windows = Vec::new();
        let mut locations = Vec::new();
        let mut index_of = std::collections::HashMap::new();
        {
            let mut stmt = self.conn.prepare(
                "SELECT id, key, path, first_indexed_at, valid_from_raw, valid_until_raw,
                        metadata_error, source, alias, retired_state, retired_since,
                        retired_vocabulary, retired_overridden FROM documents ORDER BY id",
            )?;
            let mut rows = stmt.query([])?;
            while let Some(r) = rows.next()? {
                let id: i64 = r.get(0)?;
                index_of.insert(id, doc_ids.len());
                doc_ids.push(id);
                // SPEC §2.5: hand-written garbage never crashes a search; unreadable text
                // fields fail closed as invalid metadata.
                let first: Option<String> = r.get(3).ok().flatten();
                let from = r.get::<_, Option<String>>(4);
                let until = r.get::<_, Option<String>>(5);
                let err = r.get::<_, Option<String>>(6);
                let broken = from.is_err() || until.is_err() || err.is_err();
                locations.push((
                    r.get::<_, String>(7).unwrap_or_default(),
                    r.get::<_, String>(2).unwrap_or_default(),
                ));
                nodes.push(Node {
                    key: r.get::<_, String>(1).unwrap_or_default(),
                    path: r.get::<_, String>(2).unwrap_or_default(),
                    first_indexed_us: first.as_deref().and_then(parse_instant_us),
                    alias: r.get::<_, Option<String>>(8).ok().flatten(),
                });
                let retired_state = r.get::<_, Option<String>>(9).ok().flatten();
                let retired_vocabulary = r.get::<_, Option<String>>(11).ok().flatten();
                let retired_overridden = r.get::<_, Option<bool>>(12).ok().flatten();
                windows.push(Window {
                    valid_from_raw: from.ok().flatten().filter(|_| frontmatter),
                    valid_until_raw: until.ok().flatten().filter(|_| frontmatter),
                    metadata_error: broken || (frontmatter && err.ok().flatten().is_some()),
                    retired: retired_state.is_some()
                        && retired_overridden == Some(false)
                        && retired_vocabulary.is_some_and(|v| vocabulary_in_force(&setting, &v)),
                    retired_since_raw: r.get::<_, Option<String>>(10).ok().flatten(),
                });
            }
        }
        let mut edges = Vec::new();
        let mut edge_meta = Vec::new();
        {
            // Overridden header statements and vocabularies the setting leaves out are not in
            // force; explain reads them from the table.
            let mut stmt = self.conn.prepare(
                "SELECT doc_id, key, raw_ref, reversed, vocabulary, line, statement FROM edges
                 WHERE overridden = 0 ORDER BY id",
            )?;
            let mut rows = stmt.query([])?;
            while let Some(r) = rows.next()? {
                let doc_id: i64 = r.get(0)?;
                let vocabulary = r.get::<_, String>(4).unwrap_or_default();
                if !vocabulary_in_force(&setting, &vocabulary) {
                    continue;
                }
                if let (Some(&d), Ok(key)) = (index_of.get(&doc_id), r.get::<_, String>(1)) {
                    edges.push(Declared {
                        declarer: d,
                        key,
                        reversed: r.get::<_, bool>(3).unwrap_or(false),
                    });
                    edge_meta.push(EdgeMeta {
                        raw: r.get::<_, String>(2).unwrap_or_default(),
                        vocabulary,
                        line: r.get::<_, Option<i64>>(5).ok().flatten(),
                        statement: r
                            .get::<_, Option<String>>(6)
                            .ok()
                            .flatten()
                            .unwrap_or_default(),
                    });
                }
            }
        }
        let (ids, dense) = if dim > 0 {
            self.load_vectors(dim, |doc| index_of.contains_key(&doc))?
        } else {
            (Vec::new(), DenseIndex::new(0))
        };
        let mut row_chunk = Vec::with_capacity(ids.len());
        let mut row_doc = Vec::with_capacity(ids.len());
        let mut doc_rows = vec![Vec::new(); doc_ids.len()];
        for (row, (chunk_id, doc_id)) in ids.into_iter().enumerate() {
            let d = index_of[&doc_id];
            doc_rows[d].push(row);
            row_chunk.push(chunk_id);
            row_doc.push(d);
        }
        Ok(SearchCache {
            generation,
            dense,
            chunk_row: row_chunk
                .iter()
                .enumerate()
                .map(|(row, &c)| (c, row))
                .collect(),
            row_chunk,
            row_doc,
            doc_rows,
            doc_ids,
            graph: Graph::build_declared(nodes, &edges),
            windows,
            locations,
            edge_meta,
        })
    }
}
