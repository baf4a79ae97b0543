//! Small helpers around arrow-rs/parquet, shared by the export and the harness's per-query
//! records, so the export's readers and writers stay short, and so
//! every column error names the file and the column.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::builder::{ListBuilder, StringBuilder, UInt32Builder};
use arrow_array::{
    Array, ArrayRef, FixedSizeListArray, Float32Array, Float64Array, ListArray, RecordBatch,
    RecordBatchReader, StringArray, UInt32Array,
};
use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::{ArrowWriter, ProjectionMask};
use parquet::file::properties::WriterProperties;

use crate::error::{Error, Result};

/// Writes `columns` as one parquet file. Every top-level field is declared nullable so the schema
/// does not depend on the data; readers enforce non-null where a column requires it. Uncompressed:
/// the files are small and their hashes must not depend on a codec's version.
pub fn write(path: &Path, columns: Vec<(&str, ArrayRef)>) -> Result<()> {
    let schema = schema_of(&columns);
    let batch = RecordBatch::try_new(
        schema.clone(),
        columns.into_iter().map(|(_, a)| a).collect(),
    )
    .map_err(|e| Error::malformed(path, "record batch", e))?;
    let mut w = open_writer(path, schema)?;
    w.write(&batch)
        .map_err(|e| Error::malformed(path, "parquet write", e))?;
    w.close()
        .map_err(|e| Error::malformed(path, "parquet close", e))?;
    Ok(())
}

/// Rows per row group of [`write_in_groups`]: a file of fewer rows is one row group. Every
/// export of the real sets (at most a few thousand chunks, under [`WRITE_ROWS`]) is byte for
/// byte what [`write`] gives.
pub const GROUP_ROWS: usize = 65_536;

#[cfg(test)]
thread_local! {
    /// This thread's group size in tests ([`with_group_rows`]).
    static TEST_GROUP_ROWS: std::cell::Cell<usize> = const { std::cell::Cell::new(GROUP_ROWS) };
}

/// The rows of each group [`write_in_groups`] writes: [`GROUP_ROWS`], or a test's smaller
/// size, so a test corpus of a few rows is written in several groups.
fn group_rows() -> usize {
    #[cfg(test)]
    return TEST_GROUP_ROWS.get();
    #[cfg(not(test))]
    GROUP_ROWS
}

/// Runs `f` with [`write_in_groups`] writing groups (and so slices) of at most `rows` rows on
/// this thread.
#[cfg(test)]
pub(crate) fn with_group_rows<T>(rows: usize, f: impl FnOnce() -> T) -> T {
    let old = TEST_GROUP_ROWS.replace(rows);
    let out = f();
    TEST_GROUP_ROWS.set(old);
    out
}

/// Rows handed to the encoder at once within a row group of [`write_in_groups`]: the columns
/// are built a slice at a time, so a group's vectors are never whole as arrays beside their
/// encoded pages, and the encoder's definition and repetition levels (two bytes each per
/// vector value) are a slice's.
pub const WRITE_ROWS: usize = 8_192;

/// Writes a file of `rows` rows a row group at a time, each handed to the encoder a slice at a
/// time: `columns(range)` builds (or fails to build) the columns of the rows in `range` (at
/// most [`WRITE_ROWS`], never across a group), so only one slice's arrays and one group's
/// encoded pages are held at once, where [`write`] holds every column of the file as arrays
/// and then the whole file encoded (a million-chunk corpus doubled the prepare's peak memory
/// while it was written). A file of at most [`WRITE_ROWS`] rows is byte for byte what
/// [`write`] gives.
pub fn write_in_groups<'a>(
    path: &Path,
    rows: usize,
    mut columns: impl FnMut(std::ops::Range<usize>) -> Result<Vec<(&'a str, ArrayRef)>>,
) -> Result<()> {
    let group = group_rows();
    let slice = WRITE_ROWS.min(group);
    let mut writer: Option<(ArrowWriter<File>, Arc<Schema>)> = None;
    let mut start = 0;
    // an empty file is one empty slice, which gives the schema
    while start < rows || writer.is_none() {
        let group_end = (start + group).min(rows);
        let mut at = start;
        loop {
            let end = (at + slice).min(group_end);
            let cols = columns(at..end)?;
            let (w, schema) = match &mut writer {
                Some(w) => w,
                None => {
                    let schema = schema_of(&cols);
                    writer.insert((open_writer(path, schema.clone())?, schema))
                }
            };
            let batch =
                RecordBatch::try_new(schema.clone(), cols.into_iter().map(|(_, a)| a).collect())
                    .map_err(|e| Error::malformed(path, "record batch", e))?;
            w.write(&batch)
                .map_err(|e| Error::malformed(path, "parquet write", e))?;
            at = end;
            if at >= group_end {
                break;
            }
        }
        // the group is complete: encode and write it out now
        let (w, _) = writer.as_mut().expect("a slice was written");
        w.flush()
            .map_err(|e| Error::malformed(path, "parquet write", e))?;
        start = group_end;
    }
    let (w, _) = writer.expect("at least one slice");
    w.close()
        .map_err(|e| Error::malformed(path, "parquet close", e))?;
    Ok(())
}

/// The schema of a file of `cols`: their names and types, every column nullable.
fn schema_of(cols: &[(&str, ArrayRef)]) -> Arc<Schema> {
    let fields: Vec<Field> = cols
        .iter()
        .map(|(name, a)| Field::new(*name, a.data_type().clone(), true))
        .collect();
    Arc::new(Schema::new(fields))
}

/// A writer creating `path`, a file of `schema`, with the properties every file of ours has.
fn open_writer(path: &Path, schema: Arc<Schema>) -> Result<ArrowWriter<File>> {
    let file = File::create(path).map_err(|e| Error::io(path, e))?;
    let props = WriterProperties::builder()
        .set_created_by("hopbench".into())
        .build();
    ArrowWriter::try_new(file, schema, Some(props))
        .map_err(|e| Error::malformed(path, "parquet writer", e))
}

/// Reads a whole parquet file into one batch (our files are small: one row group per column).
pub fn read(path: &Path) -> Result<RecordBatch> {
    guarded(path, || read_unguarded(path, None))
}

/// [`read`] of the top-level columns `names` alone (the others are not decoded); a name the
/// file lacks is left out, for the typed accessors to report as missing.
pub fn read_columns(path: &Path, names: &[&str]) -> Result<RecordBatch> {
    guarded(path, || read_unguarded(path, Some(names)))
}

/// Runs `f`, a call into the parquet decoder. The decoder asserts on some inconsistent
/// metadata (a negative column offset, for one) instead of returning an error; a file that does
/// that is malformed like any other, and is reported as such, naming it, rather than ending the
/// process.
fn guarded<T>(path: &Path, f: impl FnOnce() -> Result<T>) -> Result<T> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(result) => result,
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown".into());
            Err(Error::malformed(
                path,
                "parquet",
                format!("the decoder gave up: {what}"),
            ))
        }
    }
}

fn read_unguarded(path: &Path, names: Option<&[&str]>) -> Result<RecordBatch> {
    // one batch of every row: an export file is read whole (a million-chunk corpus's similarity
    // graph has some 10^7 edges)
    let file = crate::presence::open_file(path)?;
    let mut builder = ParquetRecordBatchReaderBuilder::try_new(file)
        .map_err(|e| Error::malformed(path, "parquet", e))?;
    if let Some(names) = names {
        let roots: Vec<usize> = builder
            .schema()
            .fields()
            .iter()
            .enumerate()
            .filter(|(_, f)| names.contains(&f.name().as_str()))
            .map(|(i, _)| i)
            .collect();
        let mask = ProjectionMask::roots(builder.parquet_schema(), roots);
        builder = builder.with_projection(mask);
    }
    let rows = builder.metadata().file_metadata().num_rows().max(1) as usize;
    let reader = builder
        .with_batch_size(rows)
        .build()
        .map_err(|e| Error::malformed(path, "parquet", e))?;
    let schema = reader.schema();
    let mut batches = Vec::new();
    for b in reader {
        batches.push(b.map_err(|e| Error::malformed(path, "parquet", e))?);
    }
    arrow_select_concat(path, schema, batches)
}

/// The names of the top-level columns of `path`, read from its footer alone (no column is
/// decoded).
pub fn column_names(path: &Path) -> Result<Vec<String>> {
    guarded(path, || {
        let file = crate::presence::open_file(path)?;
        let builder = ParquetRecordBatchReaderBuilder::try_new(file)
            .map_err(|e| Error::malformed(path, "parquet", e))?;
        Ok(builder
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect())
    })
}

/// The number of rows of the parquet file at `path`, from its footer (nothing decoded).
pub fn row_count(path: &Path) -> Result<usize> {
    guarded(path, || {
        let file = crate::presence::open_file(path)?;
        let builder = ParquetRecordBatchReaderBuilder::try_new(file)
            .map_err(|e| Error::malformed(path, "parquet", e))?;
        Ok(builder.metadata().file_metadata().num_rows().max(0) as usize)
    })
}

/// Streams the `fixed_size_list<float32>` column `name` of `path` into one row-major buffer of
/// `rows x dim` floats, a reader batch at a time, so the peak is the buffer and one batch rather
/// than the column decoded whole and then copied (at a million 384-wide rows, 1.5 GB instead of
/// 3 GB). `rows` is what the caller knows the file holds (its ids, already read); a file of
/// another row count, a column of another width, a null vector or a decoder failure is an error
/// naming the file and the column.
pub fn read_vectors(path: &Path, name: &str, dim: usize, rows: usize) -> Result<Vec<f32>> {
    let mut out = Vec::with_capacity(rows.saturating_mul(dim));
    stream_vectors(path, name, dim, rows, |floats| {
        out.extend_from_slice(floats);
        Ok(())
    })?;
    Ok(out)
}

/// [`read_vectors`] handing each reader batch's rows (row-major, in row order) to `sink`
/// instead of collecting them: for a writer of the column elsewhere, which then never holds
/// more than one batch.
pub fn stream_vectors(
    path: &Path,
    name: &str,
    dim: usize,
    rows: usize,
    sink: impl FnMut(&[f32]) -> Result<()>,
) -> Result<()> {
    guarded(path, || {
        stream_vectors_unguarded(path, name, dim, rows, sink)
    })
}

fn stream_vectors_unguarded(
    path: &Path,
    name: &str,
    dim: usize,
    rows: usize,
    mut sink: impl FnMut(&[f32]) -> Result<()>,
) -> Result<()> {
    let (reader, meta) = stream_columns(path, &[name])?;
    let in_file = meta.file_metadata().num_rows();
    if usize::try_from(in_file).ok() != Some(rows) {
        return Err(Error::field(
            path,
            "schema",
            name,
            format!("the file has {in_file} rows, expected {rows}"),
        ));
    }
    let seen = each_batch(path, reader, |cols, first| {
        sink(cols.batch_vectors(name, dim, first)?)
    })?;
    if seen != rows {
        return Err(Error::malformed(
            path,
            "parquet",
            "the file's row count is not what its metadata says",
        ));
    }
    Ok(())
}

/// A `list<uint32>` column read flat: each row's end in `values` (`ends[i]` is where row `i`
/// ends; row 0 starts at 0) and every row's items, in row order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FlatLists {
    /// Where each row ends in `values`.
    pub ends: Vec<usize>,
    /// The items of every row, concatenated.
    pub values: Vec<u32>,
}

/// Streams the `list<uint32>` columns `names` of `path` into one [`FlatLists`] each, a reader
/// batch of rows at a time: the peak is the result and one batch, rather than the columns
/// decoded whole (with the decoder's two 16-bit levels per item beside them) and then copied.
/// A million-chunk export's BM25 postings are 26 million items per column: 0.2 GB held instead
/// of some 0.8 GB while they were read. A null row or item, a missing column or a decoder
/// failure is an error naming the file, the column and the row.
pub fn read_u32_lists<const N: usize>(path: &Path, names: [&str; N]) -> Result<[FlatLists; N]> {
    guarded(path, || read_u32_lists_unguarded(path, names))
}

fn read_u32_lists_unguarded<const N: usize>(
    path: &Path,
    names: [&str; N],
) -> Result<[FlatLists; N]> {
    let (reader, meta) = stream_columns(path, &names)?;
    // the items each column holds, from the footer, so every buffer is allocated once at its
    // size (a leaf's value count is its items plus one per empty or null row: an upper bound)
    let schema = meta.file_metadata().schema_descr();
    let items = |name: &str| -> usize {
        let Some(leaf) = (0..schema.num_columns())
            .find(|&c| schema.column(c).path().parts().first().map(String::as_str) == Some(name))
        else {
            return 0;
        };
        meta.row_groups()
            .iter()
            .map(|g| usize::try_from(g.column(leaf).num_values()).unwrap_or(0))
            .sum()
    };
    let rows = usize::try_from(meta.file_metadata().num_rows()).unwrap_or(0);
    let mut out: [FlatLists; N] = std::array::from_fn(|i| FlatLists {
        ends: Vec::with_capacity(rows),
        values: Vec::with_capacity(items(names[i])),
    });
    each_batch(path, reader, |cols, first| {
        for (name, lists) in names.iter().zip(out.iter_mut()) {
            cols.append_u32_lists(name, first, lists)?;
        }
        Ok(())
    })?;
    Ok(out)
}

/// Streams the `list<uint32>` column `name` of `path` to `row`, one row (its index and items)
/// at a time in row order, a reader batch of rows decoded at once: for a check of a column
/// against what it should hold, which then never holds the column. A null row or item, a
/// missing column, a decoder failure or an error of `row` ends the walk.
pub fn for_each_u32_list(
    path: &Path,
    name: &str,
    row: impl FnMut(usize, &[u32]) -> Result<()>,
) -> Result<()> {
    guarded(path, || for_each_u32_list_unguarded(path, name, row))
}

fn for_each_u32_list_unguarded(
    path: &Path,
    name: &str,
    mut row: impl FnMut(usize, &[u32]) -> Result<()>,
) -> Result<()> {
    let (reader, _) = stream_columns(path, &[name])?;
    let mut lists = FlatLists::default();
    each_batch(path, reader, |cols, first| {
        lists.ends.clear();
        lists.values.clear();
        cols.append_u32_lists(name, first, &mut lists)?;
        let mut start = 0;
        for (i, &end) in lists.ends.iter().enumerate() {
            row(first + i, &lists.values[start..end])?;
            start = end;
        }
        Ok(())
    })?;
    Ok(())
}

/// Hands each batch of `reader` (over `path`) to `f` with the index of its first row; the rows
/// seen in all.
fn each_batch(
    path: &Path,
    reader: parquet::arrow::arrow_reader::ParquetRecordBatchReader,
    mut f: impl FnMut(&Columns<'_>, usize) -> Result<()>,
) -> Result<usize> {
    let mut seen = 0usize;
    for batch in reader {
        let batch = batch.map_err(|e| Error::malformed(path, "parquet", e))?;
        f(
            &Columns {
                path,
                batch: &batch,
            },
            seen,
        )?;
        seen += batch.num_rows();
    }
    Ok(seen)
}

/// Rows a streaming reader ([`stream_vectors`], [`read_u32_lists`], [`for_each_u32_list`])
/// decodes at once.
const STREAM_ROWS: usize = 1 << 14;

/// A reader of the top-level columns `names` of `path`, [`STREAM_ROWS`] rows a batch, with the
/// file's metadata: a name the file lacks is an error naming it.
fn stream_columns(
    path: &Path,
    names: &[&str],
) -> Result<(
    parquet::arrow::arrow_reader::ParquetRecordBatchReader,
    Arc<parquet::file::metadata::ParquetMetaData>,
)> {
    let file = crate::presence::open_file(path)?;
    let builder = ParquetRecordBatchReaderBuilder::try_new(file)
        .map_err(|e| Error::malformed(path, "parquet", e))?;
    let fields = builder.schema().fields().clone();
    let mut roots = Vec::with_capacity(names.len());
    for name in names {
        match fields.iter().position(|f| f.name() == name) {
            Some(root) => roots.push(root),
            None => return Err(Error::field(path, "schema", *name, "column is missing")),
        }
    }
    let meta = builder.metadata().clone();
    let mask = ProjectionMask::roots(builder.parquet_schema(), roots);
    let reader = builder
        .with_projection(mask)
        .with_batch_size(STREAM_ROWS)
        .build()
        .map_err(|e| Error::malformed(path, "parquet", e))?;
    Ok((reader, meta))
}

/// A batch reader that ignores the writer's Arrow schema hint: strings are read as `utf8`
/// whichever Arrow type wrote them (pandas and pyarrow write `large_string`, polars
/// `string_view`), the file's own parquet types being the same.
fn batch_reader(path: &Path) -> Result<parquet::arrow::arrow_reader::ParquetRecordBatchReader> {
    let file = crate::presence::open_file(path)?;
    let options =
        parquet::arrow::arrow_reader::ArrowReaderOptions::new().with_skip_arrow_metadata(true);
    ParquetRecordBatchReaderBuilder::try_new_with_options(file, options)
        .map_err(|e| Error::malformed(path, "parquet", e))?
        .with_batch_size(1 << 20)
        .build()
        .map_err(|e| Error::malformed(path, "parquet", e))
}

/// Streams a parquet file of any length to `each`, one batch of at most 2^20 rows at a time, in
/// row order (for files too large to hold whole, such as a system's run; [`read`] is for the
/// export's files). A decoder panic is reported as a malformed file, as in [`read`].
pub fn for_each_batch(path: &Path, each: &mut dyn FnMut(&RecordBatch) -> Result<()>) -> Result<()> {
    let mut reader = guarded(path, || batch_reader(path))?;
    loop {
        let next = guarded(path, || {
            reader
                .next()
                .transpose()
                .map_err(|e| Error::malformed(path, "parquet", e))
        })?;
        match next {
            Some(batch) => each(&batch)?,
            None => return Ok(()),
        }
    }
}

fn arrow_select_concat(
    path: &Path,
    schema: Arc<Schema>,
    mut batches: Vec<RecordBatch>,
) -> Result<RecordBatch> {
    match batches.len() {
        0 => Ok(RecordBatch::new_empty(schema)),
        1 => Ok(batches.pop().expect("one batch")),
        _ => Err(Error::malformed(
            path,
            "parquet",
            "the file's row count is not what its metadata says",
        )),
    }
}

/// A nullable f64 column.
pub fn opt_f64s(values: &[Option<f64>]) -> ArrayRef {
    Arc::new(Float64Array::from(values.to_vec()))
}

/// A non-null f64 column.
pub fn f64s(values: &[f64]) -> ArrayRef {
    Arc::new(Float64Array::from(values.to_vec()))
}

/// A parquet file read whole, kept with its path: the one way the export's readers open a file,
/// so every column error names it. `Table::read(path)?.columns()` replaces the read-then-wrap
/// pair each reader would otherwise repeat.
#[derive(Debug)]
pub struct Table {
    path: PathBuf,
    batch: RecordBatch,
}

impl Table {
    /// Reads `path` ([`read`]).
    pub fn read(path: impl Into<PathBuf>) -> Result<Table> {
        let path = path.into();
        let batch = read(&path)?;
        Ok(Table { path, batch })
    }

    /// Reads the columns `names` of `path` ([`read_columns`]).
    pub fn read_columns(path: impl Into<PathBuf>, names: &[&str]) -> Result<Table> {
        let path = path.into();
        let batch = read_columns(&path, names)?;
        Ok(Table { path, batch })
    }

    /// Its columns, for typed access.
    pub fn columns(&self) -> Columns<'_> {
        Columns {
            path: &self.path,
            batch: &self.batch,
        }
    }

    /// The file it was read from.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// A typed column accessor that names the file and column on every failure.
pub struct Columns<'a> {
    /// The file (named in errors).
    pub path: &'a Path,
    /// Its rows.
    pub batch: &'a RecordBatch,
}

impl<'a> Columns<'a> {
    fn get(&self, name: &str) -> Result<&'a ArrayRef> {
        self.batch
            .column_by_name(name)
            .ok_or_else(|| Error::field(self.path, "schema", name, "column is missing"))
    }

    /// Column `name` as arrow array type `T` (`what` names the type in the error).
    pub fn typed<T: 'static>(&self, name: &str, what: &str) -> Result<&'a T> {
        self.get(name)?
            .as_any()
            .downcast_ref::<T>()
            .ok_or_else(|| Error::field(self.path, "schema", name, format!("expected {what}")))
    }

    /// Whether the column exists.
    pub fn has(&self, name: &str) -> bool {
        self.batch.column_by_name(name).is_some()
    }

    /// A non-null string column.
    pub fn strings(&self, name: &str) -> Result<Vec<String>> {
        let a = self.typed::<StringArray>(name, "utf8")?;
        (0..a.len())
            .map(|i| {
                if a.is_null(i) {
                    Err(Error::field(self.path, format!("row {i}"), name, "is null"))
                } else {
                    Ok(a.value(i).to_string())
                }
            })
            .collect()
    }

    /// A nullable string column.
    pub fn opt_strings(&self, name: &str) -> Result<Vec<Option<String>>> {
        let a = self.typed::<StringArray>(name, "utf8")?;
        Ok((0..a.len())
            .map(|i| (!a.is_null(i)).then(|| a.value(i).to_string()))
            .collect())
    }

    /// A nullable f64 column.
    pub fn opt_f64s(&self, name: &str) -> Result<Vec<Option<f64>>> {
        let a = self.typed::<Float64Array>(name, "float64")?;
        Ok((0..a.len())
            .map(|i| (!a.is_null(i)).then(|| a.value(i)))
            .collect())
    }

    /// A non-null u32 column.
    pub fn u32s(&self, name: &str) -> Result<Vec<u32>> {
        let a = self.typed::<UInt32Array>(name, "uint32")?;
        if a.null_count() > 0 {
            return Err(Error::field(self.path, "column", name, "holds nulls"));
        }
        Ok(a.values().to_vec())
    }

    /// A nullable u32 column.
    pub fn opt_u32s(&self, name: &str) -> Result<Vec<Option<u32>>> {
        let a = self.typed::<UInt32Array>(name, "uint32")?;
        Ok((0..a.len())
            .map(|i| (!a.is_null(i)).then(|| a.value(i)))
            .collect())
    }

    /// A non-null f32 column.
    pub fn f32s(&self, name: &str) -> Result<Vec<f32>> {
        let a = self.typed::<Float32Array>(name, "float32")?;
        if a.null_count() > 0 {
            return Err(Error::field(self.path, "column", name, "holds nulls"));
        }
        Ok(a.values().to_vec())
    }

    /// A fixed-size f32 list column, flattened row-major, with its width checked.
    pub fn vectors(&self, name: &str, dim: usize) -> Result<Vec<f32>> {
        Ok(self.batch_vectors(name, dim, 0)?.to_vec())
    }

    /// The `fixed_size_list<float32>` column `name` of width `dim`, row-major (rows are
    /// numbered from `first_row` in errors).
    fn batch_vectors(&self, name: &str, dim: usize, first_row: usize) -> Result<&'a [f32]> {
        let a = self.typed::<FixedSizeListArray>(name, "fixed_size_list<float32>")?;
        if a.value_length() as usize != dim {
            return Err(Error::Dimension {
                path: self.path.to_path_buf(),
                record: "schema".into(),
                field: name.into(),
                expected: dim,
                found: a.value_length() as usize,
            });
        }
        if let Some(row) = (0..a.len()).find(|&i| a.is_null(i)) {
            return Err(Error::field(
                self.path,
                format!("row {}", first_row + row),
                name,
                "is a null vector",
            ));
        }
        let v = a
            .values()
            .as_any()
            .downcast_ref::<Float32Array>()
            .ok_or_else(|| Error::field(self.path, "schema", name, "expected float32 values"))?;
        if v.null_count() > 0 {
            return Err(Error::field(self.path, "column", name, "holds null floats"));
        }
        v.values()
            .get(..a.len() * dim)
            .ok_or_else(|| Error::field(self.path, "column", name, "is shorter than its rows"))
    }

    /// Appends the `list<uint32>` column `name` to `out` (rows are numbered from `first_row` in
    /// errors): a null row or a null item is an error.
    fn append_u32_lists(&self, name: &str, first_row: usize, out: &mut FlatLists) -> Result<()> {
        let a = self.typed::<ListArray>(name, "list<uint32>")?;
        let row = |i: usize| format!("row {}", first_row + i);
        if let Some(i) = (0..a.len()).find(|&i| a.is_null(i)) {
            return Err(Error::field(self.path, row(i), name, "is null"));
        }
        let child = a
            .values()
            .as_any()
            .downcast_ref::<UInt32Array>()
            .ok_or_else(|| Error::field(self.path, "schema", name, "expected list<uint32>"))?;
        let offsets = a.value_offsets();
        let (first, last) = (offsets[0] as usize, offsets[a.len()] as usize);
        if child.null_count() > 0 {
            if let Some(i) = (0..a.len()).find(|&i| a.value(i).null_count() > 0) {
                return Err(Error::field(self.path, row(i), name, "holds null items"));
            }
        }
        let base = out.values.len();
        out.ends
            .extend(offsets[1..].iter().map(|&o| base + o as usize - first));
        out.values.extend_from_slice(&child.values()[first..last]);
        Ok(())
    }

    /// A `list<utf8>` column (null rows -> None).
    pub fn string_lists(&self, name: &str) -> Result<Vec<Option<Vec<String>>>> {
        let a = self.typed::<ListArray>(name, "list<utf8>")?;
        (0..a.len())
            .map(|i| {
                if a.is_null(i) {
                    return Ok(None);
                }
                let inner = a.value(i);
                let s = inner
                    .as_any()
                    .downcast_ref::<StringArray>()
                    .ok_or_else(|| {
                        Error::field(self.path, format!("row {i}"), name, "expected list<utf8>")
                    })?;
                Ok(Some((0..s.len()).map(|j| s.value(j).to_string()).collect()))
            })
            .collect()
    }

    /// A `list<u32>` column (null rows and null items are an error).
    pub fn u32_lists(&self, name: &str) -> Result<Vec<Vec<u32>>> {
        let mut out = Vec::new();
        self.each_u32_list(name, |_, row| {
            out.push(row.to_vec());
            Ok(())
        })?;
        Ok(out)
    }

    /// Each row of the `list<u32>` column `name`, in order, handed to `f` with its number
    /// (checked as [`Columns::u32_lists`] checks them): for a reader that keeps the rows its
    /// own way.
    pub fn each_u32_list(
        &self,
        name: &str,
        mut f: impl FnMut(usize, &[u32]) -> Result<()>,
    ) -> Result<()> {
        let a = self.typed::<ListArray>(name, "list<uint32>")?;
        for i in 0..a.len() {
            if a.is_null(i) {
                return Err(Error::field(self.path, format!("row {i}"), name, "is null"));
            }
            let inner = a.value(i);
            let s = inner
                .as_any()
                .downcast_ref::<UInt32Array>()
                .ok_or_else(|| {
                    Error::field(self.path, format!("row {i}"), name, "expected list<uint32>")
                })?;
            if s.null_count() > 0 {
                return Err(Error::field(
                    self.path,
                    format!("row {i}"),
                    name,
                    "holds null items",
                ));
            }
            f(i, s.values())?;
        }
        Ok(())
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.batch.num_rows()
    }
}

/// A utf8 column.
pub fn strings<S: AsRef<str>>(values: &[S]) -> ArrayRef {
    Arc::new(StringArray::from_iter_values(
        values.iter().map(|s| s.as_ref()),
    ))
}

/// A nullable utf8 column.
pub fn opt_strings(values: &[Option<String>]) -> ArrayRef {
    Arc::new(StringArray::from_iter(values.iter().map(|s| s.as_deref())))
}

/// A u32 column.
pub fn u32s(values: &[u32]) -> ArrayRef {
    Arc::new(UInt32Array::from(values.to_vec()))
}

/// A nullable u32 column.
pub fn opt_u32s(values: &[Option<u32>]) -> ArrayRef {
    Arc::new(UInt32Array::from(values.to_vec()))
}

/// A non-null f32 column.
pub fn f32s(values: &[f32]) -> ArrayRef {
    Arc::new(Float32Array::from(values.to_vec()))
}

/// A fixed-size f32 list column from row-major vectors of width `dim`.
pub fn vectors(flat: &[f32], dim: usize) -> ArrayRef {
    owned_vectors(flat.to_vec(), dim)
}

/// [`vectors`] taking the buffer it wraps, without a copy.
pub fn owned_vectors(flat: Vec<f32>, dim: usize) -> ArrayRef {
    let values = Arc::new(Float32Array::from(flat));
    let field = Arc::new(Field::new("item", DataType::Float32, false));
    Arc::new(
        FixedSizeListArray::try_new(field, dim as i32, values, None)
            .expect("flat vector length is a multiple of dim"),
    )
}

/// A `list<utf8>` column; `None` rows are null.
pub fn string_lists(rows: &[Option<Vec<String>>]) -> ArrayRef {
    let mut b = ListBuilder::new(StringBuilder::new());
    for row in rows {
        match row {
            Some(items) => {
                for s in items {
                    b.values().append_value(s);
                }
                b.append(true);
            }
            None => b.append(false),
        }
    }
    Arc::new(b.finish())
}

/// A `list<u32>` column.
pub fn u32_lists(rows: &[Vec<u32>]) -> ArrayRef {
    u32_lists_of(rows.iter().map(Vec::as_slice))
}

/// [`u32_lists`] of rows given as slices, wherever they are held.
pub fn u32_lists_of<'a>(rows: impl Iterator<Item = &'a [u32]>) -> ArrayRef {
    let mut b = ListBuilder::new(UInt32Builder::new());
    for row in rows {
        b.values().append_slice(row);
        b.append(true);
    }
    Arc::new(b.finish())
}

/// [`u32_lists`] of rows kept as one flat run (CSR): row `i` is
/// `values[offsets[i]..offsets[i + 1]]`. The same array, without a `Vec` per row first (a
/// million-chunk BM25 index has 26 million postings).
pub fn u32_lists_flat(offsets: &[u32], values: &[u32]) -> ArrayRef {
    let rows = offsets.len().saturating_sub(1);
    let mut b = ListBuilder::with_capacity(UInt32Builder::with_capacity(values.len()), rows);
    for w in offsets.windows(2) {
        b.values()
            .append_slice(&values[w[0] as usize..w[1] as usize]);
        b.append(true);
    }
    Arc::new(b.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_columns_stream_in_as_the_whole_file_decodes_them() {
        // rows across reader batches and row groups, with empty rows among them
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("l.parquet");
        let row = |i: usize, salt: u32| -> Vec<u32> {
            (0..(i % 7) as u32)
                .map(|k| i as u32 * 11 + k + salt)
                .collect()
        };
        for rows in [0, 1, 16_384, 16_385, 50_003] {
            with_group_rows(20_000, || {
                write_in_groups(&path, rows, |r| {
                    let a: Vec<Vec<u32>> = r.clone().map(|i| row(i, 0)).collect();
                    let b: Vec<Vec<u32>> = r.map(|i| row(i, 5)).collect();
                    Ok(vec![("a", u32_lists(&a)), ("b", u32_lists(&b))])
                })
            })
            .unwrap();
            let [a, b] = read_u32_lists(&path, ["a", "b"]).unwrap();
            let table = Table::read(&path).unwrap();
            // row by row, the same rows
            let mut walked: Vec<Vec<u32>> = Vec::new();
            for_each_u32_list(&path, "b", |i, items| {
                assert_eq!(i, walked.len());
                walked.push(items.to_vec());
                Ok(())
            })
            .unwrap();
            assert_eq!(walked, table.columns().u32_lists("b").unwrap());
            for (name, flat) in [("a", a), ("b", b)] {
                let whole = table.columns().u32_lists(name).unwrap();
                let mut ends = Vec::new();
                for r in &whole {
                    ends.push(ends.last().copied().unwrap_or(0) + r.len());
                }
                assert_eq!(flat.ends, ends, "{rows} rows, column {name}");
                assert_eq!(flat.values, whole.concat(), "{rows} rows, column {name}");
                // allocated once, from the footer: one slot over per empty row at most
                let empty = whole.iter().filter(|r| r.is_empty()).count();
                let spare = flat.values.capacity() - flat.values.len();
                assert!(spare <= empty, "{rows} rows: {spare} spare slots");
            }
        }
        // a missing column, a null row and a null item are refused, naming the row
        let err = read_u32_lists(&path, ["a", "c"]).unwrap_err().to_string();
        assert!(err.contains("`c`") && err.contains("missing"), "{err}");
        let mut b = ListBuilder::new(UInt32Builder::new());
        for i in 0..20_000u32 {
            match i {
                17_000 => b.append(false),
                _ => {
                    b.values().append_value(i);
                    b.append(true)
                }
            }
        }
        write(&path, vec![("a", Arc::new(b.finish()) as ArrayRef)]).unwrap();
        let err = read_u32_lists(&path, ["a"]).unwrap_err().to_string();
        assert!(
            err.contains("row 17000") && err.contains("is null"),
            "{err}"
        );
        let err = for_each_u32_list(&path, "a", |_, _| Ok(()))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("row 17000") && err.contains("is null"),
            "{err}"
        );
        // the walk stops at the visitor's first error
        let mut visited = 0;
        let err = for_each_u32_list(&path, "a", |i, _| {
            visited += 1;
            match i {
                3 => Err(Error::field(&path, "row 3", "a", "not wanted")),
                _ => Ok(()),
            }
        })
        .unwrap_err()
        .to_string();
        assert!(err.contains("not wanted") && visited == 4, "{err}");
        let mut b = ListBuilder::new(UInt32Builder::new());
        for i in 0..20_000u32 {
            b.values().append_value(i);
            if i == 19_999 {
                b.values().append_null();
            }
            b.append(true);
        }
        write(&path, vec![("a", Arc::new(b.finish()) as ArrayRef)]).unwrap();
        let err = read_u32_lists(&path, ["a"]).unwrap_err().to_string();
        assert!(
            err.contains("row 19999") && err.contains("null items"),
            "{err}"
        );
    }

    #[test]
    fn a_file_written_in_groups_is_the_one_write_gives_up_to_a_slice_and_reads_the_same_above() {
        let columns = |r: std::ops::Range<usize>| {
            let ids: Vec<String> = r.clone().map(|i| format!("c{i:07}")).collect();
            let lists: Vec<Vec<u32>> = r.clone().map(|i| (0..(i % 5) as u32).collect()).collect();
            let flat: Vec<f32> = r.flat_map(|i| [i as f32, -(i as f32)]).collect();
            vec![
                ("id", strings(&ids)),
                ("l", u32_lists(&lists)),
                ("v", vectors(&flat, 2)),
            ]
        };
        let tmp = tempfile::tempdir().unwrap();
        for rows in [
            0,
            1,
            5000,
            WRITE_ROWS,
            WRITE_ROWS + 1,
            GROUP_ROWS,
            GROUP_ROWS + 3,
            2 * GROUP_ROWS + 17,
        ] {
            let (a, b) = (tmp.path().join("a.parquet"), tmp.path().join("b.parquet"));
            write(&a, columns(0..rows)).unwrap();
            write_in_groups(&b, rows, |r| Ok(columns(r))).unwrap();
            let (ta, tb) = (Table::read(&a).unwrap(), Table::read(&b).unwrap());
            let (ca, cb) = (ta.columns(), tb.columns());
            assert_eq!(
                ca.strings("id").unwrap(),
                cb.strings("id").unwrap(),
                "{rows}"
            );
            assert_eq!(
                ca.u32_lists("l").unwrap(),
                cb.u32_lists("l").unwrap(),
                "{rows}"
            );
            assert_eq!(
                ca.vectors("v", 2).unwrap(),
                cb.vectors("v", 2).unwrap(),
                "{rows}"
            );
            assert_eq!(
                read_vectors(&b, "v", 2, rows).unwrap(),
                ca.vectors("v", 2).unwrap()
            );
            if rows <= WRITE_ROWS {
                let same = std::fs::read(&a).unwrap() == std::fs::read(&b).unwrap();
                assert!(same, "{rows} rows: not the bytes of one write");
            }
        }
    }

    #[test]
    fn flat_lists_are_the_lists_of_their_rows() {
        let rows: Vec<Vec<u32>> = vec![vec![3, 1], vec![], vec![7], vec![], vec![2, 2, 9]];
        let mut offsets = vec![0u32];
        for r in &rows {
            offsets.push(offsets.last().unwrap() + r.len() as u32);
        }
        let values: Vec<u32> = rows.concat();
        let (a, b) = (u32_lists(&rows), u32_lists_flat(&offsets, &values));
        assert_eq!(a.to_data(), b.to_data());
        assert_eq!(a.data_type(), b.data_type());
        // and the files are the same bytes
        let tmp = tempfile::tempdir().unwrap();
        let (pa, pb) = (tmp.path().join("a.parquet"), tmp.path().join("b.parquet"));
        write(&pa, vec![("l", a)]).unwrap();
        write(&pb, vec![("l", b)]).unwrap();
        assert_eq!(std::fs::read(pa).unwrap(), std::fs::read(pb).unwrap());
        assert_eq!(u32_lists_flat(&[0], &[]).len(), 0);
    }

    #[test]
    fn an_export_file_longer_than_one_reader_batch_reads_whole() {
        // 2^20 + 3 rows: more than the streaming reader's batch, as a large corpus's files are
        let n = (1u32 << 20) + 3;
        let values: Vec<u32> = (0..n).collect();
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("big.parquet");
        write(&path, vec![("a", u32s(&values))]).unwrap();
        let table = Table::read(&path).unwrap();
        let got = table.columns().u32s("a").unwrap();
        assert_eq!(got.len(), n as usize);
        assert_eq!(got[n as usize - 1], n - 1);
    }

    #[test]
    fn reading_some_columns_decodes_those_alone() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("t.parquet");
        let lists = vec![Some(vec!["x".to_string()]), None];
        write(
            &path,
            vec![
                ("id", strings(&["a", "b"])),
                ("v", f32s(&[1.0, 2.0])),
                ("gold", string_lists(&lists)),
            ],
        )
        .unwrap();
        let t = Table::read_columns(&path, &["gold", "id", "absent"]).unwrap();
        let cols = t.columns();
        assert_eq!(cols.strings("id").unwrap(), ["a", "b"]);
        assert_eq!(cols.string_lists("gold").unwrap(), lists);
        assert!(!cols.has("v"), "not asked for");
        let e = cols.strings("absent").unwrap_err().to_string();
        assert!(e.contains("absent") && e.contains("t.parquet"), "{e}");
    }

    /// `dim`-wide vectors whose values say where they are (row, component).
    fn numbered(rows: usize, dim: usize) -> Vec<f32> {
        (0..rows * dim).map(|i| i as f32 * 0.5 - 3.0).collect()
    }

    #[test]
    fn streamed_vectors_equal_the_column_decoded_whole() {
        let tmp = tempfile::tempdir().unwrap();
        // more rows than one streaming batch (2^14), and a last batch that is not full; a
        // width that is not a multiple of 8
        for (rows, dim) in [(0, 4), (1, 3), (40_003, 5)] {
            let path = tmp.path().join(format!("v{rows}.parquet"));
            let flat = numbered(rows, dim);
            let ids: Vec<String> = (0..rows).map(|i| format!("c{i}")).collect();
            write(
                &path,
                vec![("id", strings(&ids)), ("embedding", vectors(&flat, dim))],
            )
            .unwrap();
            let reference = Table::read(&path)
                .unwrap()
                .columns()
                .vectors("embedding", dim)
                .unwrap();
            let streamed = read_vectors(&path, "embedding", dim, rows).unwrap();
            assert_eq!(streamed, reference, "{rows} x {dim}");
            assert_eq!(streamed, flat);
        }
    }

    #[test]
    fn streamed_vectors_refuse_another_shape_naming_file_and_column() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("v.parquet");
        write(&path, vec![("embedding", vectors(&numbered(6, 4), 4))]).unwrap();
        let err = |name: &str, dim: usize, rows: usize| {
            read_vectors(&path, name, dim, rows)
                .unwrap_err()
                .to_string()
        };
        let e = err("embedding", 4, 7);
        assert!(
            e.contains("v.parquet")
                && e.contains("`embedding`")
                && e.contains("6 rows, expected 7"),
            "{e}"
        );
        let e = err("embedding", 3, 6);
        assert!(e.contains("expected dimension 3, found 4"), "{e}");
        let e = err("embedding_content", 4, 6);
        assert!(
            e.contains("`embedding_content`") && e.contains("missing"),
            "{e}"
        );
        // a null vector, in a later batch, named by its row
        let path = tmp.path().join("nulls.parquet");
        let n = 20_000;
        let field = Arc::new(Field::new("item", DataType::Float32, false));
        let mut valid = vec![true; n];
        valid[17_000] = false;
        let a = FixedSizeListArray::try_new(
            field,
            2,
            Arc::new(Float32Array::from(numbered(n, 2))),
            Some(valid.into()),
        )
        .unwrap();
        write(&path, vec![("embedding", Arc::new(a))]).unwrap();
        let e = read_vectors(&path, "embedding", 2, n)
            .unwrap_err()
            .to_string();
        assert!(e.contains("row 17000") && e.contains("null vector"), "{e}");
    }

    #[test]
    fn column_names_come_from_the_footer() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("t.parquet");
        write(&path, vec![("b", f32s(&[1.0])), ("a", u32s(&[2]))]).unwrap();
        assert_eq!(column_names(&path).unwrap(), ["b", "a"]);
        std::fs::write(&path, b"not parquet").unwrap();
        let e = column_names(&path).unwrap_err().to_string();
        assert!(e.contains("t.parquet") && e.contains("malformed"), "{e}");
    }
}
