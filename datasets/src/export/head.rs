//! An export's head: its manifest and each query's id and gold chunk ids, read without the
//! corpus, the indexes or any vector.
//!
//! A cell's cache key depends on the export only through its manifest (the content hash, the
//! model) and its evaluated queries (ids and gold chunk ids), all of which the head holds. So a
//! rerun whose cells are all cached decides that from the head and never decodes the corpus,
//! the indexes or the vectors (at a million chunks, gigabytes of parquet into some 10^7
//! allocations). Every file is still checked against its hash, as a reused export is.

use std::path::{Path, PathBuf};

use super::identity::verified_manifest;
use super::{Manifest, EXPORT_VERSION};
use crate::error::{Error, Result};
use crate::parquet_io as pq;

/// One query as a cell's key sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryHead {
    /// Query id.
    pub id: String,
    /// Gold chunk record ids, in the export's order (that of [`super::QueryRecord::gold`]).
    pub gold: Vec<String>,
    /// Their grades ([`super::QueryRecord::grades`]; `None`: binary gold).
    pub grades: Option<Vec<u32>>,
}

/// An export's manifest and queries, without the rest (see the module docs).
#[derive(Debug, Clone)]
pub struct ExportHead {
    /// The export directory.
    pub dir: PathBuf,
    /// Its manifest.
    pub manifest: Manifest,
    /// Its queries, in export order.
    pub queries: Vec<QueryHead>,
}

/// The head of the export in `dir` if that export is the one `input_key` describes (the key
/// [`super::planned_manifest`] gives), is of this build's layout, and every file is the one its
/// manifest hashed; `Ok(None)` otherwise (no export, or one that prepare would rebuild). A
/// queries file that matches its hash but does not decode is an error naming it.
pub fn read_head(dir: &Path, input_key: &str) -> Result<Option<ExportHead>> {
    // every file is checked against its hash, as a prepare that reuses the export checks it:
    // a damaged file is found on any rerun, cached or not
    let Some(manifest) = verified_manifest(dir, input_key) else {
        return Ok(None);
    };
    if manifest.export_version != EXPORT_VERSION {
        return Ok(None);
    }
    let path = dir.join("queries.parquet");
    // the columns the key and the qrels file read; the vectors and JSON columns are not decoded
    let mut wanted = vec!["query_id", "gold_chunk_ids"];
    if manifest.stats.graded_gold.is_some() {
        wanted.push("gold_grades");
    }
    let table = pq::Table::read_columns(&path, &wanted)?;
    let cols = table.columns();
    let ids = cols.strings("query_id")?;
    let gold = cols.string_lists("gold_chunk_ids")?;
    let lens: Vec<usize> = gold
        .iter()
        .map(|g| g.as_ref().map_or(0, Vec::len))
        .collect();
    let mut grades =
        super::read::gold_grades(&path, &cols, &manifest, &ids, &lens)?.map(Vec::into_iter);
    let queries = ids
        .iter()
        .zip(gold)
        .map(|(id, gold)| match gold {
            Some(gold) => Ok(QueryHead {
                id: id.clone(),
                gold,
                grades: grades.as_mut().and_then(Iterator::next),
            }),
            None => Err(Error::field(&path, id, "gold_chunk_ids", "is null")),
        })
        .collect::<Result<Vec<_>>>()?;
    // the counts printed about a cached export are the manifest's: they must be the files'
    let chunks = pq::row_count(&dir.join("corpus.parquet"))?;
    let gold_chunks = queries.iter().map(|q| q.gold.len()).sum();
    let counts = [
        ("chunks", chunks),
        ("queries", queries.len()),
        ("gold_chunks", gold_chunks),
    ];
    if super::read::check_stats(dir, &manifest, counts).is_err() {
        return Ok(None);
    }
    Ok(Some(ExportHead {
        dir: dir.to_path_buf(),
        manifest,
        queries,
    }))
}
