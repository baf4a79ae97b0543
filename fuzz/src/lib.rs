//! Shared plumbing of the hopbench fuzz targets (see `fuzz/README.md`).
//!
//! * [`split`] cuts one fuzz input into the several files a raw format reads, so libFuzzer can
//!   mutate every file of a dataset from one input.
//! * [`scratch_dir`] is the one scratch directory a fuzz process writes its files into (on
//!   tmpfs when `/dev/shm` exists), reused for every input.
//! * [`read_format`] writes the pieces as the role files of a format, reads them through
//!   `Format::read`, and checks what a reader promises about a dataset it returns `Ok`.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use hopbench_datasets::formats::{Files, Format};
use hopbench_datasets::RawDataset;

/// Separates the files of one input (a line of its own, so seeds stay readable text).
pub const SEP: &[u8] = b"\n=====\n";

/// Splits `data` on [`SEP`] into at most `max` pieces (the last piece keeps any further
/// separators).
pub fn split(data: &[u8], max: usize) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut rest = data;
    while out.len() + 1 < max {
        match find(rest, SEP) {
            Some(at) => {
                out.push(&rest[..at]);
                rest = &rest[at + SEP.len()..];
            }
            None => break,
        }
    }
    out.push(rest);
    out
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The process's scratch directory, `hopbench-fuzz-<pid>` (on tmpfs where there is one),
/// created once. A fuzz process never drops it (libFuzzer exits, aborts or is killed), so on
/// creation the directories of processes that no longer run are removed.
pub fn scratch_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let shm = Path::new("/dev/shm");
        let parent = if shm.is_dir() {
            shm.to_path_buf()
        } else {
            std::env::temp_dir()
        };
        sweep_dead(&parent);
        let dir = parent.join(format!("hopbench-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("cannot create the fuzz scratch directory");
        dir
    })
}

/// Removes `parent/hopbench-fuzz-<pid>` for every pid with no `/proc/<pid>` (Linux; elsewhere
/// nothing is removed).
fn sweep_dead(parent: &Path) {
    if !Path::new("/proc/self").exists() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("hopbench-fuzz-"))
            .filter(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        else {
            continue;
        };
        if !Path::new("/proc").join(pid).exists() {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// Writes `bytes` to `scratch_dir()/name` and returns the path.
pub fn write(name: &str, bytes: &[u8]) -> PathBuf {
    let p = scratch_dir().join(name);
    std::fs::write(&p, bytes).expect("cannot write a fuzz input file");
    p
}

/// One role of a format as the fuzz targets fill it: the role name and the file name each of
/// its files gets (`{i}` is replaced by the file's number for list roles).
pub struct RoleFile {
    /// Role name.
    pub role: &'static str,
    /// File name in the scratch dir.
    pub file: &'static str,
    /// `Some(n)`: a list role taking up to `n` pieces; `None`: one file.
    pub many: Option<usize>,
    /// Whether the role may be left out (it is, when the input has no piece for it).
    pub optional: bool,
}

/// Splits `data` into the files of `roles` (in order), writes them, and reads them with
/// `format`. A required role with no piece gets an empty file; an optional one is left out; a
/// list role takes all the remaining pieces (up to its maximum). An `Ok` dataset is checked
/// with [`check_dataset`].
pub fn read_format(format: &Format, roles: &[RoleFile], data: &[u8]) {
    let max: usize = roles.iter().map(|r| r.many.unwrap_or(1)).sum();
    let pieces = split(data, max);
    let mut next = pieces.into_iter();
    let mut by_role: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    for r in roles {
        match r.many {
            None => match next.next() {
                Some(bytes) => {
                    by_role.insert(r.role.into(), vec![write(r.file, bytes)]);
                }
                None if r.optional => {}
                None => {
                    by_role.insert(r.role.into(), vec![write(r.file, b"")]);
                }
            },
            Some(n) => {
                let mut paths = Vec::new();
                for (i, bytes) in next.by_ref().take(n).enumerate() {
                    paths.push(write(&r.file.replace("{i}", &i.to_string()), bytes));
                }
                if paths.is_empty() && !r.optional {
                    paths.push(write(&r.file.replace("{i}", "0"), b""));
                }
                if !paths.is_empty() {
                    by_role.insert(r.role.into(), paths);
                }
            }
        }
    }
    let files = Files::new(format, by_role).expect("the fuzz target gives the format's roles");
    match format.read(&files) {
        Ok(d) => {
            check_dataset(format.name(), &d);
            if verbose() {
                eprintln!(
                    "{}: read {} passages, {} questions",
                    format.name(),
                    d.passages.len(),
                    d.questions.len()
                );
            }
        }
        Err(e) if verbose() => eprintln!("{}: {e}", format.name()),
        Err(_) => {}
    }
}

/// `HOPBENCH_FUZZ_VERBOSE=1`: the targets say what the code under test returned.
pub fn verbose() -> bool {
    static V: OnceLock<bool> = OnceLock::new();
    *V.get_or_init(|| std::env::var_os("HOPBENCH_FUZZ_VERBOSE").is_some())
}

/// What every reader promises about a dataset it returns (`formats` module docs: "two passages
/// with one id -> DuplicatePassage; a gold reference with no passage -> GoldNotInCorpus; a
/// repeated question id -> Field"; empty question text is a field error). A violation panics:
/// the reader accepted an input it documents as an error.
pub fn check_dataset(format: &str, d: &RawDataset) {
    let mut ids = HashSet::new();
    for p in &d.passages {
        assert!(
            ids.insert(p.id.as_str()),
            "{format}: passage id {:?} twice",
            p.id
        );
    }
    let mut qids = HashSet::new();
    for q in &d.questions {
        assert!(
            qids.insert(q.id.as_str()),
            "{format}: question id {:?} twice",
            q.id
        );
        assert!(
            !q.text.trim().is_empty(),
            "{format}: question {:?} has empty text",
            q.id
        );
        let known = |what: &str, g: &String| {
            assert!(
                ids.contains(g.as_str()),
                "{format}: question {:?}: {what} {g:?} is no passage",
                q.id
            )
        };
        q.gold.iter().for_each(|g| known("gold", g));
        for slot in q.chain.iter().flatten() {
            slot.iter().for_each(|g| known("chain slot", g));
        }
        for s in q.decomposition.iter().flatten() {
            s.gold.iter().for_each(|g| known("decomposition gold", g));
        }
    }
}
