//! Columns handed over through the Arrow C stream interface (`__arrow_c_stream__`, which
//! pandas Series backed by Arrow and polars Series provide): the evaluation reads Arrow's own
//! buffers, so no Python object is made per value. Turning an Arrow-backed id column into a list
//! makes one `str` per row, and cost 0.76 s per column of 10M rows (pandas 3.1 with pyarrow),
//! more than the evaluation itself.

use std::ffi::CStr;
use std::path::Path;

use arrow_array::cast::AsArray;
use arrow_array::ffi_stream::{ArrayStreamReader, FFI_ArrowArrayStream};
use arrow_array::types::{
    Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type, UInt32Type,
    UInt64Type, UInt8Type,
};
use arrow_array::{Array, ArrayRef};
use arrow_schema::DataType;
use hopbench_datasets::Error as DataError;
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyCapsuleMethods};

use crate::InputError;

const STREAM: &CStr = c"arrow_array_stream";

/// Chunk `$c`'s values as `$boxed` (a boxed iterator), each mapped by `$f`, for whichever of
/// the primitive types `$t` the chunk holds (the caller has checked that it is one of them).
macro_rules! primitive_values {
    ($c:expr, $boxed:ty, $f:expr; $($t:ty),* $(,)?) => {
        match $c.data_type() {
            $(t if t == &<$t as arrow_array::types::ArrowPrimitiveType>::DATA_TYPE => {
                Box::new($c.as_primitive::<$t>().values().iter().map(|&v| ($f)(v))) as $boxed
            })*
            _ => unreachable!("the column's type was checked"),
        }
    };
}

/// One column, its chunks as the producer exported them.
pub(crate) struct Column {
    chunks: Vec<ArrayRef>,
    len: usize,
}

impl Column {
    /// Imports `obj`'s `__arrow_c_stream__()`: the stream is moved out of its capsule and read
    /// to the end, so the producer's buffers stay alive as long as the chunks.
    pub(crate) fn import(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Self> {
        let capsule = obj
            .call_method0("__arrow_c_stream__")?
            .cast_into::<PyCapsule>()
            .map_err(|_| {
                InputError::new_err(format!(
                    "{what}: __arrow_c_stream__ did not return a capsule"
                ))
            })?;
        let pointer = capsule.pointer_checked(Some(STREAM))?;
        // SAFETY: the capsule is named "arrow_array_stream", which the Arrow PyCapsule interface
        // reserves for a valid `ArrowArrayStream`; `from_raw` moves it out and marks the
        // capsule's copy released, so the capsule's destructor does not release it again.
        let stream = unsafe { FFI_ArrowArrayStream::from_raw(pointer.as_ptr().cast()) };
        let reader = ArrayStreamReader::try_new(stream)
            .map_err(|e| InputError::new_err(format!("{what}: Arrow stream: {e}")))?;
        let mut chunks = Vec::new();
        for chunk in reader {
            let chunk =
                chunk.map_err(|e| InputError::new_err(format!("{what}: Arrow stream: {e}")))?;
            // a one-column table's stream (record batches) is read as that column
            let chunk = match chunk.as_struct_opt() {
                Some(table) if table.num_columns() == 1 => table.column(0).clone(),
                Some(table) => {
                    return Err(InputError::new_err(format!(
                        "{what}: an Arrow stream of {} columns, not one",
                        table.num_columns()
                    )))
                }
                None => chunk,
            };
            chunks.push(chunk);
        }
        let len = chunks.iter().map(|c| c.len()).sum();
        Ok(Column { chunks, len })
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    fn data_type(&self) -> Option<&DataType> {
        self.chunks.first().map(|c| c.data_type())
    }

    /// The first null's row, if any.
    fn first_null(&self) -> Option<usize> {
        let mut start = 0;
        for c in &self.chunks {
            if let Some(nulls) = c.logical_nulls().filter(|n| n.null_count() > 0) {
                return nulls.iter().position(|valid| !valid).map(|i| start + i);
            }
            start += c.len();
        }
        None
    }

    /// Refuses a column with a null, naming the row and the field as the list walk would.
    fn no_nulls(&self, name: &Path, field: &str) -> Result<(), DataError> {
        match self.first_null() {
            Some(row) => Err(DataError::field(
                name,
                format!("row {row}"),
                field,
                "is null",
            )),
            None => Ok(()),
        }
    }

    /// Refuses a column with a null or of a type that is not text.
    fn check_strs(&self, name: &Path, field: &str) -> Result<(), DataError> {
        self.no_nulls(name, field)?;
        match self.data_type() {
            Some(t) if !matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View) => {
                Err(DataError::field(
                    name,
                    "the column",
                    field,
                    format!("holds Arrow {t}, not str ids"),
                ))
            }
            _ => Ok(()),
        }
    }

    /// The column's values as text, row by row: Arrow's three string layouts.
    pub(crate) fn strs<'a>(
        &'a self,
        name: &Path,
        field: &str,
    ) -> Result<Box<dyn Iterator<Item = &'a str> + 'a>, DataError> {
        self.check_strs(name, field)?;
        Ok(Box::new(self.chunks.iter().flat_map(
            |c| -> Box<dyn Iterator<Item = &'a str> + 'a> {
                // no nulls (checked above): every value is present
                match c.data_type() {
                    DataType::Utf8 => {
                        Box::new(c.as_string::<i32>().iter().map(Option::unwrap_or_default))
                    }
                    DataType::LargeUtf8 => {
                        Box::new(c.as_string::<i64>().iter().map(Option::unwrap_or_default))
                    }
                    _ => Box::new(c.as_string_view().iter().map(Option::unwrap_or_default)),
                }
            },
        )))
    }

    /// The column's values as grades, row by row: integers (a grade above `i64::MAX` is an
    /// error naming its row).
    // one conversion written for every integer type: for i64 itself it is the identity
    #[allow(clippy::useless_conversion, clippy::unnecessary_fallible_conversions)]
    pub(crate) fn grades<'a>(
        &'a self,
        name: &'a Path,
        field: &'a str,
    ) -> Result<Box<dyn Iterator<Item = Result<i64, DataError>> + 'a>, DataError> {
        self.no_nulls(name, field)?;
        if self.numeric(name, field, "integer grades")? {
            return Err(DataError::field(
                name,
                "the column",
                field,
                format!(
                    "holds Arrow {}, not integer grades",
                    self.data_type().unwrap()
                ),
            ));
        }
        let values = self.chunks.iter().flat_map(|c| {
            primitive_values!(c, Box<dyn Iterator<Item = Option<i64>> + 'a>,
                |v| i64::try_from(v).ok();
                Int64Type, Int32Type, Int16Type, Int8Type, UInt64Type, UInt32Type, UInt16Type,
                UInt8Type)
        });
        Ok(Box::new(values.enumerate().map(move |(row, g)| {
            g.ok_or_else(|| {
                DataError::field(
                    name,
                    format!("row {row}"),
                    field,
                    "is not an integer (too large)",
                )
            })
        })))
    }

    /// Refuses a column that is not numeric; says whether it holds floats.
    fn numeric(&self, name: &Path, field: &str, wanted: &str) -> Result<bool, DataError> {
        match self.data_type() {
            None => Ok(false),
            Some(t) if t.is_integer() => Ok(false),
            Some(DataType::Float64 | DataType::Float32) => Ok(true),
            Some(t) => Err(DataError::field(
                name,
                "the column",
                field,
                format!("holds Arrow {t}, not {wanted}"),
            )),
        }
    }
}

/// One chunk of a checked id column, read by row: the layout is matched per row (a branch the
/// processor predicts), not called through a boxed iterator.
enum StrChunk<'a> {
    Utf8(&'a arrow_array::StringArray),
    Large(&'a arrow_array::LargeStringArray),
    View(&'a arrow_array::StringViewArray),
}

impl<'a> StrChunk<'a> {
    fn of(c: &'a ArrayRef) -> Self {
        match c.data_type() {
            DataType::Utf8 => StrChunk::Utf8(c.as_string::<i32>()),
            DataType::LargeUtf8 => StrChunk::Large(c.as_string::<i64>()),
            _ => StrChunk::View(c.as_string_view()),
        }
    }

    fn get(&self, i: usize) -> &'a str {
        match self {
            StrChunk::Utf8(a) => a.value(i),
            StrChunk::Large(a) => a.value(i),
            StrChunk::View(a) => a.value(i),
        }
    }
}

/// One chunk of a checked numeric column, read by row as `f64`, from its own buffer.
enum NumChunk<'a> {
    F64(&'a [f64]),
    F32(&'a [f32]),
    I64(&'a [i64]),
    I32(&'a [i32]),
    I16(&'a [i16]),
    I8(&'a [i8]),
    U64(&'a [u64]),
    U32(&'a [u32]),
    U16(&'a [u16]),
    U8(&'a [u8]),
}

impl<'a> NumChunk<'a> {
    fn of(c: &'a ArrayRef) -> Self {
        match c.data_type() {
            DataType::Float64 => NumChunk::F64(c.as_primitive::<Float64Type>().values()),
            DataType::Float32 => NumChunk::F32(c.as_primitive::<Float32Type>().values()),
            DataType::Int64 => NumChunk::I64(c.as_primitive::<Int64Type>().values()),
            DataType::Int32 => NumChunk::I32(c.as_primitive::<Int32Type>().values()),
            DataType::Int16 => NumChunk::I16(c.as_primitive::<Int16Type>().values()),
            DataType::Int8 => NumChunk::I8(c.as_primitive::<Int8Type>().values()),
            DataType::UInt64 => NumChunk::U64(c.as_primitive::<UInt64Type>().values()),
            DataType::UInt32 => NumChunk::U32(c.as_primitive::<UInt32Type>().values()),
            DataType::UInt16 => NumChunk::U16(c.as_primitive::<UInt16Type>().values()),
            DataType::UInt8 => NumChunk::U8(c.as_primitive::<UInt8Type>().values()),
            _ => unreachable!("the column's type was checked"),
        }
    }

    // every primitive type read as f64: for f64 itself the identity
    #[allow(clippy::unnecessary_cast)]
    fn get(&self, i: usize) -> f64 {
        match self {
            NumChunk::F64(v) => v[i] as f64,
            NumChunk::F32(v) => v[i] as f64,
            NumChunk::I64(v) => v[i] as f64,
            NumChunk::I32(v) => v[i] as f64,
            NumChunk::I16(v) => v[i] as f64,
            NumChunk::I8(v) => v[i] as f64,
            NumChunk::U64(v) => v[i] as f64,
            NumChunk::U32(v) => v[i] as f64,
            NumChunk::U16(v) => v[i] as f64,
            NumChunk::U8(v) => v[i] as f64,
        }
    }
}

/// Walks a run's three columns (query ids, document ids, scores) in step, handing `each` the
/// row, its ids and its score. The rows go a stretch at a time in which every column is within
/// one chunk (the columns may be chunked differently), each read from its typed buffer: the
/// rows [`Column::strs`] walks, without a call through a boxed iterator per value. The columns
/// are checked first, with their messages.
pub(crate) fn run_rows(
    name: &Path,
    [queries, docs, scores]: &[Column; 3],
    mut each: impl FnMut(usize, &str, &str, f64) -> Result<(), DataError>,
) -> Result<(), DataError> {
    queries.check_strs(name, "query_id")?;
    docs.check_strs(name, "doc_id")?;
    scores.no_nulls(name, "score")?;
    scores.numeric(name, "score", "numbers")?;
    let columns = [queries, docs, scores];
    // per column: its chunk, and the next row within it
    let mut at = [(0usize, 0usize); 3];
    let mut row = 0;
    while row < queries.len() {
        for (k, c) in columns.iter().enumerate() {
            // an empty chunk, or one read to its end: the next one
            while at[k].1 == c.chunks[at[k].0].len() {
                at[k] = (at[k].0 + 1, 0);
            }
        }
        let n = (0..3)
            .map(|k| columns[k].chunks[at[k].0].len() - at[k].1)
            .min()
            .expect("three columns");
        let q = StrChunk::of(&queries.chunks[at[0].0]);
        let d = StrChunk::of(&docs.chunks[at[1].0]);
        let v = NumChunk::of(&scores.chunks[at[2].0]);
        let [(_, q0), (_, d0), (_, v0)] = at;
        for i in 0..n {
            each(row + i, q.get(q0 + i), d.get(d0 + i), v.get(v0 + i))?;
        }
        for a in &mut at {
            a.1 += n;
        }
        row += n;
    }
    Ok(())
}
