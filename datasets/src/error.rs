//! The one error type of the `datasets` crate. Every variant names the file and, where it can,
//! the record and the field, because the user's next move is to open that file at that place.

use std::path::PathBuf;

/// Errors from reading raw datasets, embedding, and reading or writing an export.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The file could not be opened, read or written.
    #[error("{path}: {error}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error. Part of the message and deliberately not a `source`: anyhow's
        /// `{:#}` prints the source chain as well, which would say it twice.
        error: std::io::Error,
    },
    /// The file is not valid JSON / JSONL / TSV / parquet at all.
    #[error("{path}: malformed {what}: {message}")]
    Malformed {
        /// The file.
        path: PathBuf,
        /// What format was expected ("JSON", "JSONL line 12", ...).
        what: String,
        /// The parser's message.
        message: String,
    },
    /// A record lacks a field or the field has the wrong type.
    #[error("{path}: record {record}: field `{field}`: {message}")]
    Field {
        /// The file.
        path: PathBuf,
        /// The record (index or id) as the user would find it.
        record: String,
        /// The field name.
        field: String,
        /// What is wrong with it.
        message: String,
    },
    /// Two passages share an id.
    #[error("{path}: duplicate passage id `{id}`")]
    DuplicatePassage {
        /// The file.
        path: PathBuf,
        /// The repeated id.
        id: String,
    },
    /// A gold passage does not resolve to any corpus passage.
    #[error("{path}: record {record}: field `{field}`: gold passage {gold} is not in the corpus")]
    GoldNotInCorpus {
        /// The file.
        path: PathBuf,
        /// The question.
        record: String,
        /// The field holding the gold reference.
        field: String,
        /// The unresolved gold reference, as written.
        gold: String,
    },
    /// A vector has the wrong dimension.
    #[error(
        "{path}: record {record}: field `{field}`: expected dimension {expected}, found {found}"
    )]
    Dimension {
        /// The file.
        path: PathBuf,
        /// The record.
        record: String,
        /// The vector column.
        field: String,
        /// The model's dimension.
        expected: usize,
        /// What the record holds.
        found: usize,
    },
    /// The embedding model could not be loaded or run.
    #[error("embedding model {path}: {message}")]
    Model {
        /// The model directory or file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// An input path names something that is not a regular file (a directory, a FIFO, ...).
    #[error("{path}: is {what}, not a file")]
    NotAFile {
        /// The path.
        path: PathBuf,
        /// What is there instead.
        what: &'static str,
    },
    /// An error met before and kept, given again to each later caller: a part of an export
    /// read on demand whose read failed is not read again.
    #[error("{0}")]
    Repeated(std::sync::Arc<Error>),
    /// A configuration value is invalid.
    #[error("{context}: {message}")]
    Config {
        /// Where the value came from.
        context: String,
        /// What is wrong.
        message: String,
    },
}

/// Result alias for this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The 1-based line and column (in characters) of the first invalid byte of `bytes`, for
/// messages that let the user find it in a large file.
pub fn utf8_error_position(bytes: &[u8], e: std::str::Utf8Error) -> (usize, usize) {
    let good = &bytes[..e.valid_up_to()];
    let line = good.iter().filter(|&&b| b == b'\n').count() + 1;
    let start = good.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let column = std::str::from_utf8(&good[start..]).map_or(0, |s| s.chars().count()) + 1;
    (line, column)
}

impl Error {
    /// An I/O error on `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            error: source,
        }
    }
    /// A missing or mistyped field.
    pub fn field(
        path: impl Into<PathBuf>,
        record: impl ToString,
        field: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Error::Field {
            path: path.into(),
            record: record.to_string(),
            field: field.into(),
            message: message.into(),
        }
    }
    /// A file that does not parse.
    pub fn malformed(
        path: impl Into<PathBuf>,
        what: impl Into<String>,
        message: impl ToString,
    ) -> Self {
        Error::Malformed {
            path: path.into(),
            what: what.into(),
            message: message.to_string(),
        }
    }
}
