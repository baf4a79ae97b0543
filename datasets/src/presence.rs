//! Whether an input file is there: absent, a file, or something that is not a file.
//!
//! An absent input makes a dataset or a leg `missing-inputs`, a normal state of a matrix run
//! over datasets a user has not downloaded. A path that names a directory, a FIFO, a socket or
//! a device is not that: it is a mistake in the configuration (or in the data directory), and
//! reading it would hang (a FIFO) or fail far from the cause. So it is an error naming the
//! path and what it is.

use std::path::Path;

use crate::error::{Error, Result};

/// `Ok(true)` for a regular file (a symbolic link is followed), `Ok(false)` when nothing is at
/// `path`, and an error naming `path` when something other than a file is there or its kind
/// cannot be told.
pub fn file_present(path: &Path) -> Result<bool> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => Ok(true),
        Ok(m) => Err(Error::NotAFile {
            path: path.to_path_buf(),
            what: kind_of(&m.file_type()),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(Error::io(path, e)),
    }
}

/// Opens `path` for reading, refusing a path that is not a regular file before it is opened
/// (opening a FIFO would wait for a writer).
pub fn open_file(path: &Path) -> Result<std::fs::File> {
    if let Ok(m) = std::fs::metadata(path) {
        if !m.is_file() {
            return Err(Error::NotAFile {
                path: path.to_path_buf(),
                what: kind_of(&m.file_type()),
            });
        }
    }
    std::fs::File::open(path).map_err(|e| Error::io(path, e))
}

/// What a non-file is, in a user's words.
fn kind_of(t: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO (named pipe)"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_block_device() || t.is_char_device() {
        "a device"
    } else {
        "not a regular file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_an_absence_a_directory_and_a_fifo_are_told_apart() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f.json");
        std::fs::write(&file, "[]").unwrap();
        assert!(file_present(&file).unwrap());
        assert!(!file_present(&dir.path().join("absent.json")).unwrap());
        let e = file_present(dir.path()).unwrap_err().to_string();
        assert!(
            e.contains(&dir.path().display().to_string()) && e.contains("a directory"),
            "{e}"
        );
        let fifo = dir.path().join("pipe.json");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let e = file_present(&fifo).unwrap_err().to_string();
        assert!(e.contains("pipe.json") && e.contains("FIFO"), "{e}");
        // opening it is refused before the open, which would wait for a writer
        let e = open_file(&fifo).unwrap_err().to_string();
        assert!(e.contains("FIFO"), "{e}");
        assert!(open_file(&file).is_ok());
        // a link to a file is the file; a dangling link is an absence
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert!(file_present(&link).unwrap());
        let dangling = dir.path().join("dangling.json");
        std::os::unix::fs::symlink(dir.path().join("gone"), &dangling).unwrap();
        assert!(!file_present(&dangling).unwrap());
    }
}
