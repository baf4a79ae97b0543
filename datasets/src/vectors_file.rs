//! Vectors a dataset brings from elsewhere (a GPU pipeline, another embedder), read and checked
//! before the export uses them in place of the built-in embedder's.
//!
//! A vectors file is one of:
//!
//! - **parquet** with an id column and a vector column: `id` (utf8) and `vector`
//!   (`list<float32>` or `fixed_size_list<float32>`), or the export's own layout, where the
//!   id column is `chunk_id` or `query_id` and the vector column `embedding` (for the
//!   content-only set, `embedding_content`), so an export's `corpus.parquet` and
//!   `queries.parquet` can be handed back as they are;
//! - **`.npy`**: a little-endian `float32` (`<f4`) C-order array of shape `(n, d)`, with its
//!   ids in a sibling text file, the same path with `.npy` replaced by `.ids.txt`, one id per
//!   line (row `i` of the array is the vector of line `i`).
//!
//! Every row is checked when the file is read, and the first failure is an error naming the
//! file, the row (or id) and the field: a duplicate id, a vector of another width than the
//! first row's, a value that is not finite (row and column), and a norm other than 1 (the
//! dense legs score by dot product, which is cosine only on unit vectors; the vectors are
//! used as given, never renormalised, so they must be unit within [`NORM_TOLERANCE`]).
//! [`VectorTable::ordered`] then checks the ids against the dataset's: every id the export
//! needs must have a vector, and a row whose id the dataset does not have is an error too (a
//! file for another corpus or a stale one), each naming the first such id and the count.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use arrow_array::{Array, FixedSizeListArray, Float32Array, ListArray};

use crate::error::{Error, Result};
use crate::parquet_io::Table;

/// How far from 1 a vector's L2 norm may be.
pub const NORM_TOLERANCE: f64 = 1e-3;

/// Which of a dataset's vector sets a file holds (it decides the export-layout column names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VectorSet {
    /// Passage vectors over the indexed text (header and body): the export's `embedding`.
    Passages,
    /// Passage vectors over the body alone: the export's `embedding_content`.
    Content,
    /// Query vectors.
    Queries,
    /// Sub-question vectors, keyed `<query id>#<hop>` (hops from 1).
    Subqueries,
}

impl VectorSet {
    /// The key of the `vectors:` group that names this set's file.
    pub fn key(self) -> &'static str {
        match self {
            VectorSet::Passages => "passages",
            VectorSet::Content => "content",
            VectorSet::Queries => "queries",
            VectorSet::Subqueries => "subqueries",
        }
    }

    fn export_columns(self) -> (&'static str, &'static str) {
        match self {
            VectorSet::Passages => ("chunk_id", "embedding"),
            VectorSet::Content => ("chunk_id", "embedding_content"),
            VectorSet::Queries | VectorSet::Subqueries => ("query_id", "embedding"),
        }
    }
}

/// The files a dataset's `vectors:` group names, resolved to paths, and the model the user
/// declares they were made with (recorded as the export's model id).
#[derive(Debug, Clone, PartialEq)]
pub struct VectorFiles {
    /// The declared model id.
    pub model: String,
    /// Passage vectors (required).
    pub passages: PathBuf,
    /// Query vectors (required: query vectors from another model would not share the
    /// passages' space).
    pub queries: PathBuf,
    /// Content-only passage vectors (optional: without them the content-only dense leg is
    /// `missing-inputs`).
    pub content: Option<PathBuf>,
    /// Sub-question vectors (optional: without them the decomposition task legs are
    /// `missing-inputs`).
    pub subqueries: Option<PathBuf>,
}

impl VectorFiles {
    /// Each set given and its file.
    pub fn sets(&self) -> Vec<(VectorSet, &Path)> {
        let mut out = vec![
            (VectorSet::Passages, self.passages.as_path()),
            (VectorSet::Queries, self.queries.as_path()),
        ];
        if let Some(p) = &self.content {
            out.push((VectorSet::Content, p));
        }
        if let Some(p) = &self.subqueries {
            out.push((VectorSet::Subqueries, p));
        }
        out
    }

    /// The files that are absent ([`files`](Self::files)), or an error for one that is not a
    /// file, or for a `.npy` present without its ids file (its rows would have no ids: a
    /// mistake in the data, not a dataset the user has not fetched).
    pub fn absent(&self) -> Result<Vec<PathBuf>> {
        let mut absent = Vec::new();
        for (_, p) in self.sets() {
            let here = crate::presence::file_present(p)?;
            if !here {
                absent.push(p.to_path_buf());
            }
            if is_npy(p) {
                let ids = ids_file_of(p);
                match crate::presence::file_present(&ids)? {
                    true => {}
                    false if here => {
                        return Err(Error::Config {
                            context: ids.display().to_string(),
                            message: format!(
                                "absent, while its vectors file {} is there (a .npy file's \
                                 row ids are read from the .ids.txt file beside it)",
                                p.display()
                            ),
                        })
                    }
                    false => absent.push(ids),
                }
            }
        }
        Ok(absent)
    }

    /// Every file that is read: each vectors file and, for `.npy`, its ids file (all hashed into
    /// the export's input key).
    pub fn files(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for (_, p) in self.sets() {
            out.push(p.to_path_buf());
            if is_npy(p) {
                out.push(ids_file_of(p));
            }
        }
        out
    }
}

fn is_npy(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "npy")
}

/// The ids file of a `.npy` vectors file: `x.npy` -> `x.ids.txt`.
pub fn ids_file_of(npy: &Path) -> PathBuf {
    npy.with_extension("ids.txt")
}

/// One vectors file, checked row by row.
#[derive(Debug)]
pub struct VectorTable {
    path: PathBuf,
    dim: usize,
    ids: Vec<String>,
    data: Vec<f32>,
}

impl VectorTable {
    /// Reads and checks `path` as the file of `set` (parquet, or `.npy` with its ids file).
    pub fn read(path: &Path, set: VectorSet) -> Result<VectorTable> {
        let (ids, data, dim) = if is_npy(path) {
            read_npy(path)?
        } else {
            read_parquet(path, set)?
        };
        let table = VectorTable {
            path: path.to_path_buf(),
            dim,
            ids,
            data,
        };
        table.check_rows()?;
        Ok(table)
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The vector width.
    pub fn dim(&self) -> usize {
        self.dim
    }

    fn check_rows(&self) -> Result<()> {
        if self.ids.is_empty() {
            return Err(Error::field(&self.path, "file", "id", "holds no rows"));
        }
        if self.dim == 0 {
            return Err(Error::field(&self.path, "row 0", "vector", "is empty"));
        }
        let mut seen: HashMap<&str, usize> = HashMap::with_capacity(self.ids.len());
        for (row, (id, v)) in self
            .ids
            .iter()
            .zip(self.data.chunks_exact(self.dim))
            .enumerate()
        {
            if let Some(first) = seen.insert(id, row) {
                return Err(Error::field(
                    &self.path,
                    format!("row {row}"),
                    "id",
                    format!("duplicate id `{id}` (first at row {first})"),
                ));
            }
            if let Some(col) = v.iter().position(|x| !x.is_finite()) {
                return Err(Error::field(
                    &self.path,
                    format!("row {row} (id `{id}`)"),
                    "vector",
                    format!("value {} at column {col} is not finite", v[col]),
                ));
            }
            let norm = v
                .iter()
                .map(|&x| f64::from(x) * f64::from(x))
                .sum::<f64>()
                .sqrt();
            if (norm - 1.0).abs() > NORM_TOLERANCE {
                return Err(Error::field(
                    &self.path,
                    format!("row {row} (id `{id}`)"),
                    "vector",
                    format!(
                        "L2 norm {norm:.6} is not 1 (within {NORM_TOLERANCE}): the dense legs \
                         score by dot product, so vectors must be L2-normalised"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The vectors of `wanted` (the dataset's ids of this set, `what` naming them in errors),
    /// row-major in that order. Every wanted id must have a row, and every row a wanted id.
    pub fn ordered(&self, wanted: &[&str], what: &str) -> Result<Vec<f32>> {
        let index: HashMap<&str, usize> = self
            .ids
            .iter()
            .enumerate()
            .map(|(i, id)| (id.as_str(), i))
            .collect();
        let missing: Vec<&str> = wanted
            .iter()
            .copied()
            .filter(|id| !index.contains_key(id))
            .collect();
        if let Some(first) = missing.first() {
            return Err(Error::field(
                &self.path,
                format!("id `{first}`"),
                "id",
                format!(
                    "{} of the dataset's {} {what} ids have no vector here (the first is `{first}`)",
                    missing.len(),
                    wanted.len()
                ),
            ));
        }
        if self.ids.len() > wanted.len() {
            let known: std::collections::HashSet<&str> = wanted.iter().copied().collect();
            let unknown: Vec<(usize, &String)> = self
                .ids
                .iter()
                .enumerate()
                .filter(|(_, id)| !known.contains(id.as_str()))
                .collect();
            let (row, id) = unknown[0];
            return Err(Error::field(
                &self.path,
                format!("row {row}"),
                "id",
                format!(
                    "`{id}` is not one of the dataset's {what} ids ({} rows name unknown ids)",
                    unknown.len()
                ),
            ));
        }
        let mut out = Vec::with_capacity(wanted.len() * self.dim);
        for id in wanted {
            let i = index[id];
            out.extend_from_slice(&self.data[i * self.dim..(i + 1) * self.dim]);
        }
        Ok(out)
    }
}

/// The id and vector columns of a parquet vectors file: `id` + `vector`, else the export's.
fn read_parquet(path: &Path, set: VectorSet) -> Result<(Vec<String>, Vec<f32>, usize)> {
    let table = Table::read(path).map_err(|e| match e {
        // the build carries no parquet compression codec: say how to write a readable file
        Error::Malformed {
            path,
            what,
            message,
        } if message.contains("Disabled feature") => Error::Malformed {
            path,
            what,
            message: format!(
                "{message} (hopbench reads uncompressed parquet: write it with \
                 `pyarrow.parquet.write_table(t, path, compression=\"none\")`)"
            ),
        },
        e => e,
    })?;
    let cols = table.columns();
    let (export_id, export_vec) = set.export_columns();
    let id_col = if cols.has("id") { "id" } else { export_id };
    let vec_col = if cols.has("vector") {
        "vector"
    } else {
        export_vec
    };
    if !cols.has(id_col) || !cols.has(vec_col) {
        return Err(Error::field(
            path,
            "schema",
            vec_col,
            format!(
                "expected columns `id` and `vector`, or the export's `{export_id}` and `{export_vec}`"
            ),
        ));
    }
    let ids = cols.strings(id_col)?;
    let array = cols.batch.column_by_name(vec_col).expect("checked above");
    let row_err = |row: usize, message: String| {
        Error::field(
            path,
            format!("row {row} (id `{}`)", ids[row]),
            vec_col,
            message,
        )
    };
    if let Some(a) = array.as_any().downcast_ref::<FixedSizeListArray>() {
        if let Some(row) = (0..a.len()).find(|&i| a.is_null(i)) {
            return Err(row_err(row, "is null".into()));
        }
        let values = a
            .values()
            .as_any()
            .downcast_ref::<Float32Array>()
            .ok_or_else(|| Error::field(path, "schema", vec_col, "expected float32 values"))?;
        let dim = a.value_length() as usize;
        let start = a.offset() * dim;
        return Ok((
            ids,
            values.values()[start..start + a.len() * dim].to_vec(),
            dim,
        ));
    }
    let a = array.as_any().downcast_ref::<ListArray>().ok_or_else(|| {
        Error::field(
            path,
            "schema",
            vec_col,
            format!("expected list<float32>, found {}", array.data_type()),
        )
    })?;
    let values = a
        .values()
        .as_any()
        .downcast_ref::<Float32Array>()
        .ok_or_else(|| Error::field(path, "schema", vec_col, "expected float32 values"))?;
    let offsets = a.value_offsets();
    let dim = (offsets[1] - offsets[0]) as usize;
    let mut data = Vec::with_capacity(a.len() * dim);
    for row in 0..a.len() {
        if a.is_null(row) {
            return Err(row_err(row, "is null".into()));
        }
        let (s, e) = (offsets[row] as usize, offsets[row + 1] as usize);
        if e - s != dim {
            return Err(Error::Dimension {
                path: path.to_path_buf(),
                record: format!("row {row} (id `{}`)", ids[row]),
                field: vec_col.into(),
                expected: dim,
                found: e - s,
            });
        }
        if values.null_count() > 0 && (s..e).any(|j| values.is_null(j)) {
            return Err(row_err(row, "holds a null value".into()));
        }
        data.extend_from_slice(&values.values()[s..e]);
    }
    Ok((ids, data, dim))
}

/// A `.npy` file of `<f4` `(n, d)` in C order, and its ids file.
fn read_npy(path: &Path) -> Result<(Vec<String>, Vec<f32>, usize)> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    let bad = |m: String| Error::malformed(path, "npy", m);
    if bytes.len() < 10 || &bytes[..6] != b"\x93NUMPY" {
        return Err(bad("no NUMPY magic".into()));
    }
    let (header_len, start) = match bytes[6] {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        2 | 3 if bytes.len() >= 12 => (
            u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize,
            12,
        ),
        v => return Err(bad(format!("unsupported format version {v}"))),
    };
    let header = bytes
        .get(start..start + header_len)
        .and_then(|h| std::str::from_utf8(h).ok())
        .ok_or_else(|| bad("truncated header".into()))?;
    let squeezed: String = header.chars().filter(|c| !c.is_whitespace()).collect();
    if !squeezed.contains("'descr':'<f4'") {
        return Err(Error::field(
            path,
            "header",
            "descr",
            format!("expected little-endian float32 '<f4': {}", header.trim()),
        ));
    }
    if !squeezed.contains("'fortran_order':False") {
        return Err(Error::field(
            path,
            "header",
            "fortran_order",
            "expected C order (False)",
        ));
    }
    let shape = squeezed
        .split("'shape':(")
        .nth(1)
        .and_then(|s| s.split(')').next())
        .ok_or_else(|| bad("no shape in the header".into()))?;
    let dims: Vec<usize> = shape
        .split(',')
        .filter(|s| !s.is_empty())
        .map(|s| s.parse::<usize>())
        .collect::<std::result::Result<_, _>>()
        .map_err(|e| bad(format!("shape ({shape}): {e}")))?;
    let [n, dim] = dims[..] else {
        return Err(Error::field(
            path,
            "header",
            "shape",
            format!("expected two dimensions (rows, width), found ({shape})"),
        ));
    };
    let body = &bytes[start + header_len..];
    if body.len() != n * dim * 4 {
        return Err(bad(format!(
            "shape ({n}, {dim}) needs {} bytes of data, the file has {}",
            n * dim * 4,
            body.len()
        )));
    }
    let data: Vec<f32> = body
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    let ids_path = ids_file_of(path);
    let text = std::fs::read_to_string(&ids_path).map_err(|e| Error::io(&ids_path, e))?;
    let ids: Vec<String> = text.lines().map(str::to_string).collect();
    if ids.len() != n {
        return Err(Error::field(
            &ids_path,
            "file",
            "id",
            format!("{} ids for the {n} rows of {}", ids.len(), path.display()),
        ));
    }
    if let Some(line) = ids.iter().position(String::is_empty) {
        return Err(Error::field(
            &ids_path,
            format!("line {}", line + 1),
            "id",
            "is empty",
        ));
    }
    Ok((ids, data, dim))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `.npy` v1 file of `rows` and its ids file.
    pub(crate) fn write_npy(path: &Path, ids: &[&str], rows: &[Vec<f32>]) {
        let dim = rows.first().map_or(0, Vec::len);
        let mut header = format!(
            "{{'descr': '<f4', 'fortran_order': False, 'shape': ({}, {dim}), }}",
            rows.len()
        );
        while (10 + header.len() + 1) % 64 != 0 {
            header.push(' ');
        }
        header.push('\n');
        let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
        bytes.extend((header.len() as u16).to_le_bytes());
        bytes.extend(header.as_bytes());
        for r in rows {
            for x in r {
                bytes.extend(x.to_le_bytes());
            }
        }
        std::fs::write(path, bytes).unwrap();
        std::fs::write(ids_file_of(path), ids.join("\n") + "\n").unwrap();
    }

    fn unit(i: usize, dim: usize) -> Vec<f32> {
        let mut v = vec![0.0; dim];
        v[i % dim] = 1.0;
        v
    }

    #[test]
    fn npy_rows_are_read_checked_and_ordered_by_the_datasets_ids() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("v.npy");
        write_npy(&p, &["b", "a"], &[unit(0, 3), unit(1, 3)]);
        let t = VectorTable::read(&p, VectorSet::Passages).unwrap();
        assert_eq!(t.dim(), 3);
        assert_eq!(
            t.ordered(&["a", "b"], "passage").unwrap(),
            [0., 1., 0., 1., 0., 0.]
        );
        let e = t
            .ordered(&["a", "b", "c"], "passage")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("v.npy") && e.contains("1 of the dataset's 3") && e.contains("`c`"),
            "{e}"
        );
        let e = t.ordered(&["a"], "passage").unwrap_err().to_string();
        assert!(
            e.contains("row 0") && e.contains("`b` is not one of"),
            "{e}"
        );
    }

    #[test]
    fn parquet_lists_of_another_width_and_unknown_columns_are_named() {
        use arrow_array::builder::{Float32Builder, ListBuilder};
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("v.parquet");
        let mut b = ListBuilder::new(Float32Builder::new());
        for row in [vec![1.0, 0.0], vec![0.0, 1.0], vec![0.0, 0.0, 1.0]] {
            b.values().append_slice(&row);
            b.append(true);
        }
        let ids = crate::parquet_io::strings(&["a", "b", "c"]);
        let list: arrow_array::ArrayRef = std::sync::Arc::new(b.finish());
        crate::parquet_io::write(&p, vec![("id", ids.clone()), ("vector", list.clone())]).unwrap();
        let e = VectorTable::read(&p, VectorSet::Passages)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("v.parquet") && e.contains("row 2 (id `c`)") && e.contains("`vector`"),
            "{e}"
        );
        assert!(e.contains('2') && e.contains('3'), "{e}");
        crate::parquet_io::write(&p, vec![("id", ids), ("vec", list)]).unwrap();
        let e = VectorTable::read(&p, VectorSet::Passages)
            .unwrap_err()
            .to_string();
        assert!(e.contains("expected columns `id` and `vector`"), "{e}");
    }

    #[test]
    fn npy_row_errors_name_the_file_row_and_column() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("v.npy");
        let err = |ids: &[&str], rows: &[Vec<f32>]| {
            write_npy(&p, ids, rows);
            VectorTable::read(&p, VectorSet::Queries)
                .unwrap_err()
                .to_string()
        };
        let e = err(&["a", "a"], &[unit(0, 2), unit(1, 2)]);
        assert!(
            e.contains("v.npy") && e.contains("row 1") && e.contains("duplicate id `a`"),
            "{e}"
        );
        let e = err(&["a", "b"], &[unit(0, 2), vec![f32::NAN, 1.0]]);
        assert!(
            e.contains("row 1") && e.contains("column 0") && e.contains("not finite"),
            "{e}"
        );
        let e = err(&["a"], &[vec![0.5, 0.5]]);
        assert!(e.contains("row 0") && e.contains("L2 norm 0.707107"), "{e}");
        // an ids file of another length names itself
        write_npy(&p, &["a", "b"], &[unit(0, 2), unit(1, 2)]);
        std::fs::write(ids_file_of(&p), "a\n").unwrap();
        let e = VectorTable::read(&p, VectorSet::Queries)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("v.ids.txt") && e.contains("1 ids for the 2 rows"),
            "{e}"
        );
        // another dtype is refused, naming the header field
        let mut bytes = std::fs::read(&p).unwrap();
        let at = bytes.windows(3).position(|w| w == b"<f4").unwrap();
        bytes[at + 2] = b'8';
        std::fs::write(&p, bytes).unwrap();
        let e = VectorTable::read(&p, VectorSet::Queries)
            .unwrap_err()
            .to_string();
        assert!(e.contains("field `descr`"), "{e}");
    }
}
