//! What the format readers' tests share: raw files written into a temp dir, and the parts of
//! the errors a reader must report, to compare whole.

use std::path::{Path, PathBuf};

use crate::error::Error;

/// Writes `text` to `dir/name` and returns the path.
pub(crate) fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> PathBuf {
    let p = dir.path().join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// The `(path, record, field, gold)` of a [`Error::GoldNotInCorpus`]; any other error fails the
/// test with its message.
pub(crate) fn gold_missing(e: &Error) -> (&Path, &str, &str, &str) {
    match e {
        Error::GoldNotInCorpus {
            path,
            record,
            field,
            gold,
        } => (path, record, field, gold),
        _ => panic!("{e}"),
    }
}

/// The `(path, record, field, message)` of a [`Error::Field`]; any other error fails the test
/// with its message.
pub(crate) fn field_error(e: &Error) -> (&Path, &str, &str, &str) {
    match e {
        Error::Field {
            path,
            record,
            field,
            message,
        } => (path, record, field, message),
        _ => panic!("{e}"),
    }
}

/// Where the real datasets are, for the tests that read them: `$HOPBENCH_DATA`, else
/// `shared/datasets` beside the repository, else `/work/shared/datasets`; `None` if absent (with a
/// line saying the test is skipped, so a green run does not pass for one that read the data).
pub(crate) fn real_data_dir() -> Option<PathBuf> {
    let candidates = [
        std::env::var_os("HOPBENCH_DATA").map(PathBuf::from),
        Some(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/datasets")),
        Some(PathBuf::from("/work/shared/datasets")),
    ];
    let dir = candidates.into_iter().flatten().find(|p| p.is_dir());
    if dir.is_none() {
        println!("skipped: no datasets directory");
    }
    dir
}

/// Asserts that `e` is a [`Error::Malformed`] whose `what` (the part of the file at fault, such
/// as `JSONL line 2`) is `what`.
pub(crate) fn assert_malformed_at(e: &Error, what: &str) {
    assert!(
        matches!(e, Error::Malformed { what: at, .. } if at == what),
        "{e}"
    );
}
