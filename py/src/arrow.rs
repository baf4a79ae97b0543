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
                InputError::new_err(format!("{what}: __arrow_c_stream__ did not return a capsule"))
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
            Some(row) => Err(DataError::field(name, format!("row {row}"), field, "is null")),
            None => Ok(()),
        }
    }

    /// The column's values as text, row by row: Arrow's three string layouts.
    pub(crate) fn strs<'a>(
        &'a self,
        name: &Path,
        field: &str,
    ) -> Result<Box<dyn Iterator<Item = &'a str> + 'a>, DataError> {
        self.no_nulls(name, field)?;
        if let Some(t) = self.data_type() {
            if !matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View) {
                return Err(DataError::field(
                    name,
                    "the column",
                    field,
                    format!("holds Arrow {t}, not str ids"),
                ));
            }
        }
        Ok(Box::new(self.chunks.iter().flat_map(|c| -> Box<dyn Iterator<Item = &'a str> + 'a> {
            // no nulls (checked above): every value is present
            match c.data_type() {
                DataType::Utf8 => Box::new(c.as_string::<i32>().iter().map(Option::unwrap_or_default)),
                DataType::LargeUtf8 => {
                    Box::new(c.as_string::<i64>().iter().map(Option::unwrap_or_default))
                }
                _ => Box::new(c.as_string_view().iter().map(Option::unwrap_or_default)),
            }
        })))
    }

    /// The column's values as numbers, row by row (a run's scores), with the place of each.
    // one conversion written for every primitive type: for f64 itself it is the identity
    #[allow(clippy::unnecessary_cast)]
    pub(crate) fn f64s<'a>(
        &'a self,
        name: &Path,
        field: &str,
    ) -> Result<Box<dyn Iterator<Item = f64> + 'a>, DataError> {
        self.no_nulls(name, field)?;
        self.numeric(name, field, "numbers")?;
        Ok(Box::new(self.chunks.iter().flat_map(|c| {
            primitive_values!(c, Box<dyn Iterator<Item = f64> + 'a>, |v| v as f64;
                Float64Type, Float32Type, Int64Type, Int32Type, Int16Type, Int8Type,
                UInt64Type, UInt32Type, UInt16Type, UInt8Type)
        })))
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
                format!("holds Arrow {}, not integer grades", self.data_type().unwrap()),
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
                DataError::field(name, format!("row {row}"), field, "is not an integer (too large)")
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
