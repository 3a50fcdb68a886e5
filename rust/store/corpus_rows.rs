//! The rows the corpus is built from: documents, edges and the vocabularies setting.
//!
//! Owns: reading them, whole or in batches as they come. Does not own: what the corpus makes
//! of them (judgment.rs) or when it is loaded (cache.rs).

use std::sync::Arc;

use crate::errors::Result;
use crate::judgment::{Corpus, DocumentRecord, Edge, EdgeRecord};

use super::Store;

impl Store {
    /// Documents, windows and the graph of the edges in force under the store's setting, as
    /// the trust layer sees them (judgment.rs), without the vectors.
    pub(crate) fn load_corpus(&self) -> Result<Corpus> {
        let setting = self.vocabularies_setting()?;
        let mut docs = Vec::new();
        self.read_documents(usize::MAX, |batch| {
            docs.extend(batch);
            true
        })?;
        let edges = self.read_edges()?;
        Ok(Corpus::build(docs, edges, &setting))
    }

    /// `f` of the corpus of the state this connection reads: the search cache's when it is
    /// current (a large store's documents are not held twice), else read whole.
    pub(crate) fn with_corpus<T>(&self, f: impl FnOnce(&Corpus) -> T) -> Result<T> {
        if let Some(cache) = self.cache.as_ref().filter(|_| !self.in_write) {
            if cache.generation == self.generation()? {
                return Ok(f(&cache.corpus));
            }
        }
        Ok(f(&self.load_corpus()?))
    }

    /// Which vocabularies' declarations are in force (SPEC §8.4).
    pub(super) fn vocabularies_setting(&self) -> Result<String> {
        Ok(self.meta("vocabularies")?.unwrap_or_else(|| "all".into()))
    }

    /// Every document in id order, handed to `each` in batches of `batch`; reading stops
    /// early when `each` returns false.
    pub(super) fn read_documents(
        &self,
        batch: usize,
        mut each: impl FnMut(Vec<DocumentRecord>) -> bool,
    ) -> Result<()> {
        let mut stmt = self.conn.prepare(
            "SELECT id, key, path, first_indexed_at, valid_from_raw, valid_until_raw,
                    metadata_error, source, alias, retired_state, retired_since,
                    retired_vocabulary, retired_overridden,
                    coalesce(valid_from_raw, valid_until_raw, metadata_error, retired_state,
                             retired_since, retired_vocabulary) IS NULL
             FROM documents ORDER BY id",
        )?;
        let mut rows = stmt.query([])?;
        let mut docs = Vec::new();
        // Documents of one folder share its root; an unreadable root reads as empty.
        let empty: Arc<str> = Arc::from("");
        let mut source = empty.clone();
        while let Some(r) = rows.next()? {
            let text = |i| r.get_ref(i).ok().and_then(|v| v.as_str().ok());
            let root = text(7);
            if let Some(s) = root.filter(|s| *s != &*source) {
                source = Arc::from(s);
            }
            // Most documents declare no window and no retirement: those columns are read
            // only where one is set.
            let plain = r.get::<_, bool>(13).unwrap_or(false);
            let rare = |i| -> rusqlite::Result<Option<String>> {
                if plain {
                    Ok(None)
                } else {
                    r.get(i)
                }
            };
            // SPEC §2.5: hand-written garbage never crashes a search; unreadable text fields
            // fail closed as invalid metadata.
            let (from, until, err) = (rare(4), rare(5), rare(6));
            docs.push(DocumentRecord {
                id: r.get(0)?,
                source: if root.is_some() {
                    source.clone()
                } else {
                    empty.clone()
                },
                path: r.get::<_, String>(2).unwrap_or_default(),
                key: r.get::<_, String>(1).unwrap_or_default(),
                first_indexed_us: text(3).and_then(super::parse_instant_us),
                unreadable: from.is_err() || until.is_err() || err.is_err(),
                valid_from_raw: from.ok().flatten(),
                valid_until_raw: until.ok().flatten(),
                metadata_error: err.ok().flatten().is_some(),
                alias: r.get(8).ok().flatten(),
                retired_state: rare(9).ok().flatten(),
                retired_since: rare(10).ok().flatten(),
                retired_vocabulary: rare(11).ok().flatten(),
                retired_overridden: r.get::<_, Option<bool>>(12).ok().flatten() != Some(false),
            });
            if docs.len() == batch && !each(std::mem::take(&mut docs)) {
                return Ok(());
            }
        }
        if !docs.is_empty() {
            each(docs);
        }
        Ok(())
    }

    /// Every declared edge, in id order.
    pub(super) fn read_edges(&self) -> Result<Vec<EdgeRecord>> {
        let mut edges = Vec::new();
        {
            let mut stmt = self.conn.prepare(
                "SELECT doc_id, key, raw_ref, reversed, vocabulary, line, statement, overridden,
                        standing
                 FROM edges ORDER BY id",
            )?;
            let mut rows = stmt.query([])?;
            while let Some(r) = rows.next()? {
                let Ok(key) = r.get::<_, String>(1) else {
                    continue;
                };
                edges.push(EdgeRecord {
                    doc_id: r.get(0)?,
                    edge: Edge {
                        key,
                        raw: r.get::<_, String>(2).unwrap_or_default(),
                        reversed: r.get::<_, bool>(3).unwrap_or(false),
                        vocabulary: r.get::<_, String>(4).unwrap_or_default(),
                        line: r.get(5).ok().flatten(),
                        statement: r
                            .get::<_, Option<String>>(6)
                            .ok()
                            .flatten()
                            .unwrap_or_default(),
                        overridden: r.get::<_, bool>(7).unwrap_or(false),
                        // A standing this reader does not know is not a full edge either.
                        standing: r.get::<_, Option<String>>(8).unwrap_or(Some(String::new())),
                    },
                });
            }
        }
        Ok(edges)
    }
}
