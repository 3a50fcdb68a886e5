//! Reading a store out whole, a page of documents at a time, for `recall migrate`; and one
//! document's vectors, for an index run that finds a copy of it.
//!
//! Owns: each document with its chunks, vectors, declarations and both of its times, as the
//! write path takes them back. Does not own: writing them elsewhere (Python's migrate) or
//! the meta records (read one by one through `meta`).

use rusqlite::OptionalExtension;

use crate::errors::Result;

use super::{Declarations, Edge, NewChunk, NewDocument, NewRetirement, Store, VEC_TABLE};

/// One stored document as the write path takes it back, with its id and both times.
#[derive(Debug, Clone)]
pub struct ExportedDocument {
    pub id: i64,
    pub doc: NewDocument,
    pub first_indexed_at: String,
    pub indexed_at: String,
}

/// One stored document's title, chunks and vectors (chunk order): what a copy of it takes.
#[derive(Debug, Clone)]
pub struct StoredVectors {
    pub title: String,
    pub chunks: Vec<NewChunk>,
    pub vectors: Vec<f32>,
}

impl Store {
    /// Up to `limit` documents with ids above `after`, in id order; without `bodies`, no
    /// chunks and vectors (what `recall doctor` compares with the notes).
    pub fn export_documents(
        &self,
        after: i64,
        limit: usize,
        bodies: bool,
    ) -> Result<Vec<ExportedDocument>> {
        let dim = self.embedder()?.map_or(0, |e| e.dim);
        let mut out = Vec::new();
        let mut docs = self.conn.prepare(
            "SELECT id, source, path, key, title, content_hash, size_bytes, mtime_ns,
                    valid_from_raw, valid_until_raw, valid_from, valid_until, metadata_error,
                    frontmatter, alias, retired_state, retired_since, retired_vocabulary,
                    retired_line, retired_statement, retired_overridden, first_indexed_at,
                    indexed_at
             FROM documents WHERE id > ?1 ORDER BY id LIMIT ?2",
        )?;
        let mut rows = docs.query(rusqlite::params![after, limit as i64])?;
        while let Some(r) = rows.next()? {
            let id: i64 = r.get(0)?;
            let retired = r
                .get::<_, Option<String>>(15)?
                .map(|state| -> rusqlite::Result<NewRetirement> {
                    Ok(NewRetirement {
                        state,
                        since: r.get(16)?,
                        vocabulary: r.get::<_, Option<String>>(17)?.unwrap_or_default(),
                        line: r.get(18)?,
                        statement: r.get::<_, Option<String>>(19)?.unwrap_or_default(),
                        overridden: r.get::<_, Option<bool>>(20)?.unwrap_or(false),
                    })
                })
                .transpose()?;
            let (chunks, vectors) = if bodies {
                self.export_chunks(id, dim)?
            } else {
                Default::default()
            };
            out.push(ExportedDocument {
                id,
                doc: NewDocument {
                    source: r.get(1)?,
                    path: r.get(2)?,
                    key: r.get(3)?,
                    title: r.get(4)?,
                    content_hash: r.get(5)?,
                    size_bytes: r.get(6)?,
                    mtime_ns: r.get(7)?,
                    valid_from_raw: r.get(8)?,
                    valid_until_raw: r.get(9)?,
                    valid_from: r.get(10)?,
                    valid_until: r.get(11)?,
                    metadata_error: r.get(12)?,
                    frontmatter: r.get(13)?,
                    chunks,
                    vectors,
                    declarations: Declarations {
                        edges: self.export_edges(id)?,
                        alias: r.get(14)?,
                        retired,
                    },
                },
                first_indexed_at: r.get(21)?,
                indexed_at: r.get(22)?,
            });
        }
        Ok(out)
    }

    /// The title, chunks and vectors (chunk order) of the document at `path` under `source`;
    /// None when it is not stored or a chunk has no vector (`recall doctor` reports that).
    pub fn document_vectors(&self, source: &str, path: &str) -> Result<Option<StoredVectors>> {
        let found: Option<(i64, String)> = self
            .conn
            .prepare_cached("SELECT id, title FROM documents WHERE source = ?1 AND path = ?2")?
            .query_row(rusqlite::params![source, path], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .optional()?;
        let Some((id, title)) = found else {
            return Ok(None);
        };
        let dim = self.embedder()?.map_or(0, |e| e.dim);
        match self.export_chunks(id, dim) {
            Ok((chunks, vectors)) => Ok(Some(StoredVectors {
                title,
                chunks,
                vectors,
            })),
            Err(crate::errors::CoreError::Usage(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn export_chunks(&self, doc_id: i64, dim: usize) -> Result<(Vec<NewChunk>, Vec<f32>)> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT id, ordinal, text, byte_start, byte_end, line_start, line_end, heading_path
             FROM chunks WHERE doc_id = ?1 ORDER BY ordinal",
        )?;
        let mut vector = self.conn.prepare_cached(&format!(
            "SELECT embedding FROM {VEC_TABLE} WHERE chunk_id = ?1"
        ))?;
        let mut chunks = Vec::new();
        let mut vectors = Vec::new();
        let mut rows = stmt.query([doc_id])?;
        while let Some(r) = rows.next()? {
            let chunk_id: i64 = r.get(0)?;
            let blob: Option<Vec<u8>> = vector.query_row([chunk_id], |v| v.get(0)).optional()?;
            let blob = blob.unwrap_or_default();
            if blob.len() != dim * 4 {
                return Err(crate::errors::CoreError::Usage(format!(
                    "chunk {chunk_id} has no {dim}-dimension vector; run 'recall doctor'"
                )));
            }
            vectors.extend(
                blob.chunks_exact(4)
                    .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
            );
            chunks.push(NewChunk {
                ordinal: r.get(1)?,
                text: r.get(2)?,
                byte_start: r.get(3)?,
                byte_end: r.get(4)?,
                line_start: r.get(5)?,
                line_end: r.get(6)?,
                heading_path: r.get(7)?,
            });
        }
        Ok((chunks, vectors))
    }

    fn export_edges(&self, doc_id: i64) -> Result<Vec<Edge>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT raw_ref, key, reversed, vocabulary, line, statement, overridden, standing
             FROM edges WHERE doc_id = ?1 ORDER BY id",
        )?;
        let edges = stmt.query_map([doc_id], |r| {
            Ok(Edge {
                raw: r.get(0)?,
                key: r.get(1)?,
                reversed: r.get(2)?,
                vocabulary: r.get(3)?,
                line: r.get(4)?,
                statement: r.get::<_, Option<String>>(5)?.unwrap_or_default(),
                overridden: r.get(6)?,
                standing: r.get(7)?,
            })
        })?;
        Ok(edges.collect::<std::result::Result<_, _>>()?)
    }
}

#[cfg(test)]
mod tests {
    use crate::store::fixtures::{doc, embedder, temp_db};
    use crate::store::Store;

    #[test]
    fn a_documents_vectors_come_back_in_chunk_order() {
        let path = temp_db("document-vectors");
        let mut store = Store::open(&path).unwrap();
        store.begin(&embedder(4)).unwrap();
        let written = doc("a.md", 3, 4);
        store.put_document(&written, "t0").unwrap();
        store.commit("t0").unwrap();
        let stored = store.document_vectors("/corpus", "a.md").unwrap().unwrap();
        assert_eq!(stored.title, written.title);
        let texts: Vec<&str> = stored.chunks.iter().map(|c| c.text.as_str()).collect();
        assert_eq!(texts, ["chunk 0", "chunk 1", "chunk 2"]);
        assert_eq!(stored.vectors, written.vectors);
        assert!(store.document_vectors("/corpus", "b.md").unwrap().is_none());
        assert!(store.document_vectors("/other", "a.md").unwrap().is_none());
    }
}
