//! Where an evaluation's run and qrels come from. A file is one source; the Python package hands
//! over its dicts and DataFrame columns as another, so both are scored by the same code and
//! refused with the same messages (the record's place named as the format names it).

use std::path::{Path, PathBuf};

use hopbench_datasets::runfile::{self, Qrel, Record, RunFormat};
use hopbench_datasets::Error as DataError;

/// A run's records, read as often as the evaluation needs (twice when a query's records are
/// not contiguous).
pub trait RunSource {
    /// The run's name in messages: the file's path, or what stands for it.
    fn name(&self) -> &Path;
    /// The format whose field names and record places the messages use.
    fn format(&self) -> RunFormat;
    /// Hands every record to `visit`, in order; the first error (its own or `visit`'s) stops
    /// the read and is returned.
    fn read(
        &mut self,
        visit: &mut dyn FnMut(Record<'_>) -> Result<(), DataError>,
    ) -> Result<(), DataError>;
}

/// Judgements, read as often as the evaluation needs (twice when a pair is judged twice, to
/// name both places).
pub trait QrelsSource {
    /// The judgements' name in messages: the file's path, or what stands for it.
    fn name(&self) -> &Path;
    /// Hands every judgement to `visit`, in order; the first error stops the read.
    fn read(
        &mut self,
        visit: &mut dyn FnMut(Qrel<'_>) -> Result<(), DataError>,
    ) -> Result<(), DataError>;
}

/// A run file in one of [`RunFormat`]'s formats.
pub struct RunFile {
    pub path: PathBuf,
    pub format: RunFormat,
}

impl RunSource for RunFile {
    fn name(&self) -> &Path {
        &self.path
    }
    fn format(&self) -> RunFormat {
        self.format
    }
    fn read(
        &mut self,
        visit: &mut dyn FnMut(Record<'_>) -> Result<(), DataError>,
    ) -> Result<(), DataError> {
        runfile::read_run(&self.path, self.format, visit)
    }
}

/// A TREC qrels file.
pub struct QrelsFile(pub PathBuf);

impl QrelsSource for QrelsFile {
    fn name(&self) -> &Path {
        &self.0
    }
    fn read(
        &mut self,
        visit: &mut dyn FnMut(Qrel<'_>) -> Result<(), DataError>,
    ) -> Result<(), DataError> {
        runfile::for_each_qrel(&self.0, visit)
    }
}
