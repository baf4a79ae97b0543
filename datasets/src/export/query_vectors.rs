//! The query vectors a loaded export holds: every query's, or only those of the queries a run
//! evaluates. A run of a hundred queries over a set of 10^5 then holds a hundred vectors, not the
//! 154 MB of all of them (384 floats each), and a set's size no longer sets a small run's memory.

use std::path::Path;

use super::QueryRecord;
use crate::error::Result;
use crate::parquet_io as pq;

/// Which queries' vectors [`super::read::load_keeping`] keeps: given the export's queries (read
/// and checked whole first), the positions of those a run will ask for.
pub type KeepVectors<'a> = &'a dyn Fn(&[QueryRecord]) -> Vec<usize>;

/// Marks a query whose vector is not held.
const NOT_HELD: u32 = u32::MAX;

/// The vectors of some or all of an export's queries.
#[derive(Debug, Default)]
pub(super) struct QueryVectors {
    dim: usize,
    /// The held vectors, row-major, in query order.
    pub(super) data: Vec<f32>,
    /// Per query: its row in `data`, or [`NOT_HELD`]; `None` when every query's is held (row =
    /// query).
    rows: Option<Vec<u32>>,
}

impl QueryVectors {
    /// Every query's vector, from `data` (row-major, `dim` wide).
    pub(super) fn all(data: Vec<f32>, dim: usize) -> QueryVectors {
        QueryVectors {
            dim,
            data,
            rows: None,
        }
    }

    /// The rows of `data` (every query's vector, row-major, `dim` wide) that `keep` names
    /// (every row when `None`).
    pub(super) fn from_rows(data: Vec<f32>, dim: usize, keep: Option<&[usize]>) -> QueryVectors {
        let Some(keep) = keep else {
            return QueryVectors::all(data, dim);
        };
        let queries = data.len() / dim.max(1);
        let mut rows = vec![NOT_HELD; queries];
        for &q in keep {
            if let Some(slot) = rows.get_mut(q) {
                *slot = 0;
            }
        }
        let mut held = Vec::new();
        let mut rank = 0u32;
        for (q, slot) in rows.iter_mut().enumerate() {
            if *slot != NOT_HELD {
                *slot = rank;
                rank += 1;
                held.extend_from_slice(&data[q * dim..(q + 1) * dim]);
            }
        }
        QueryVectors {
            dim,
            data: held,
            rows: Some(rows),
        }
    }

    /// The `embedding` column of `queries.parquet` at `path` (`queries` rows, `dim` wide), read
    /// a batch at a time, keeping the rows in `keep` (every row when `None`). The whole column
    /// is still decoded and checked for its shape; what is not kept is not held.
    pub(super) fn read(
        path: &Path,
        dim: usize,
        queries: usize,
        keep: Option<&[usize]>,
    ) -> Result<QueryVectors> {
        let Some(keep) = keep else {
            return Ok(QueryVectors::all(
                pq::read_vectors(path, "embedding", dim, queries)?,
                dim,
            ));
        };
        let mut rows = vec![NOT_HELD; queries];
        // a position past the queries asks for nothing the file has; one given twice is held
        // once
        for &q in keep {
            if let Some(slot) = rows.get_mut(q) {
                *slot = 0;
            }
        }
        // rows in query order, so a row's place in `data` is its rank among the kept
        for (rank, slot) in rows.iter_mut().filter(|s| **s != NOT_HELD).enumerate() {
            *slot = rank as u32;
        }
        let held = rows.iter().filter(|&&s| s != NOT_HELD).count();
        let mut data = Vec::with_capacity(held * dim);
        let mut at = 0usize;
        pq::stream_vectors(path, "embedding", dim, queries, |floats| {
            for row in floats.chunks_exact(dim.max(1)) {
                if rows.get(at).is_some_and(|&s| s != NOT_HELD) {
                    data.extend_from_slice(row);
                }
                at += 1;
            }
            Ok(())
        })?;
        Ok(QueryVectors {
            dim,
            data,
            rows: Some(rows),
        })
    }

    /// Query `q`'s vector, `None` when it is not held (or `q` is not a query).
    pub(super) fn get(&self, q: usize) -> Option<&[f32]> {
        let row = match &self.rows {
            None => q,
            Some(rows) => match *rows.get(q)? {
                NOT_HELD => return None,
                r => r as usize,
            },
        };
        self.data.get(row * self.dim..(row + 1) * self.dim)
    }

    /// Whether every query's vector is held.
    pub(super) fn holds_all(&self) -> bool {
        self.rows.is_none()
    }
}
