//! A part of an export read from its file when first asked for, then kept.
//!
//! Threads that ask while the first read runs wait for it, so a part is read at most once per
//! loaded export. A read that fails is kept failed: every later caller gets the same error (as
//! [`Error::Repeated`]) without the file being read again, so a damaged million-row column is
//! decoded once, not once per leg.

use std::sync::{Arc, OnceLock};

use crate::error::{Error, Result};

pub(crate) struct OnDemand<T> {
    cell: OnceLock<std::result::Result<T, Arc<Error>>>,
}

impl<T> OnDemand<T> {
    /// Not read yet.
    pub(crate) fn new() -> Self {
        OnDemand {
            cell: OnceLock::new(),
        }
    }

    /// Already read: `value`.
    pub(crate) fn ready(value: T) -> Self {
        OnDemand {
            cell: OnceLock::from(Ok(value)),
        }
    }

    /// The part, read by `read` on the first call.
    pub(crate) fn get_or_read(&self, read: impl FnOnce() -> Result<T>) -> Result<&T> {
        match self.cell.get_or_init(|| read().map_err(Arc::new)) {
            Ok(value) => Ok(value),
            Err(e) => Err(Error::Repeated(e.clone())),
        }
    }

    /// Whether the part has been read (successfully or not).
    #[cfg(test)]
    pub(crate) fn is_read(&self) -> bool {
        self.cell.get().is_some()
    }
}

impl<T> std::fmt::Debug for OnDemand<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self.cell.get() {
            None => "OnDemand(not read)",
            Some(Ok(_)) => "OnDemand(read)",
            Some(Err(_)) => "OnDemand(failed)",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn a_part_is_read_once_and_kept() {
        let reads = AtomicUsize::new(0);
        let part = OnDemand::new();
        assert!(!part.is_read());
        for _ in 0..3 {
            let v = part
                .get_or_read(|| {
                    reads.fetch_add(1, Ordering::SeqCst);
                    Ok(vec![1.0f32, 2.0])
                })
                .unwrap();
            assert_eq!(v, &[1.0, 2.0]);
        }
        assert_eq!(reads.load(Ordering::SeqCst), 1);
        assert!(part.is_read());
    }

    #[test]
    fn a_failed_read_fails_again_with_its_error_without_reading_again() {
        let reads = AtomicUsize::new(0);
        let part: OnDemand<Vec<f32>> = OnDemand::new();
        let read = || {
            reads.fetch_add(1, Ordering::SeqCst);
            Err(Error::field(
                "corpus.parquet",
                "row 3",
                "embedding",
                "is null",
            ))
        };
        let first = part.get_or_read(read).unwrap_err().to_string();
        let second = part.get_or_read(read).unwrap_err().to_string();
        assert_eq!(
            first,
            "corpus.parquet: record row 3: field `embedding`: is null"
        );
        assert_eq!(first, second);
        assert_eq!(reads.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn threads_asking_at_once_share_one_read() {
        let reads = AtomicUsize::new(0);
        let part = OnDemand::new();
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    let v = part
                        .get_or_read(|| {
                            reads.fetch_add(1, Ordering::SeqCst);
                            std::thread::sleep(std::time::Duration::from_millis(20));
                            Ok(7u32)
                        })
                        .unwrap();
                    assert_eq!(*v, 7);
                });
            }
        });
        assert_eq!(reads.load(Ordering::SeqCst), 1);
    }
}
