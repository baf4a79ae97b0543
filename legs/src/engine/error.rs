//! Why an engine could not answer. Engines outside the process can fail at query time, and so
//! can the built-in ones that read files as they search (Qdrant's shard, the exact scan of a
//! streamed vector file); the error names the engine, what it runs or reads and the request, so
//! a cell recorded as `error` says which query broke which backend.

use std::fmt;
use std::sync::Arc;

/// A first-stage engine that could not answer a request (or could not start).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineError {
    /// What answers, e.g. `external lexical engine`.
    pub engine: &'static str,
    /// The command line of the process, as configured; for an engine in the process, the
    /// directory or file it reads.
    pub command: String,
    /// The id of the query the request was for; `None` for a failure at start-up.
    pub query_id: Option<String>,
    /// What went wrong (boxed: every `Result` of a retrieval carries this error).
    pub failure: Box<Failure>,
}

impl fmt::Display for EngineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} `{}`", self.engine, self.command)?;
        match &self.query_id {
            Some(q) => write!(f, ", request for query `{q}`")?,
            None => f.write_str(", at start-up")?,
        }
        write!(f, ": {}", self.failure)
    }
}

impl EngineError {
    /// Whether this only repeats an earlier failure (a request not sent because the process
    /// had already failed): a cell reports the failure that caused it instead.
    pub fn is_consequence(&self) -> bool {
        matches!(*self.failure, Failure::Stopped { .. })
    }
}

/// No `source`: the message already holds the failure, and a chain would print it twice.
impl std::error::Error for EngineError {}

/// What went wrong with an engine's process or its answer.
///
/// The errors of the OS and of the datasets crate are carried as themselves ([`Carried`]), not
/// as their text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Failure {
    /// The process could not be started.
    #[error("cannot start the process: {0}")]
    Spawn(Carried<std::io::Error>),
    /// The configured command has no program.
    #[error("cannot start the process: the command is empty")]
    EmptyCommand,
    /// The process ended (or closed its output) before answering.
    #[error("the process exited ({status}) before answering{}", stderr_tail(.stderr))]
    Exited {
        /// Its exit status, as the OS reports it.
        status: String,
        /// The end of what it wrote to stderr.
        stderr: String,
    },
    /// No answer within the configured time; the process was killed.
    #[error("no answer within {ms} ms (the process was killed){}", stderr_tail(.stderr))]
    Timeout {
        /// The limit that passed.
        ms: u64,
        /// The end of what it wrote to stderr.
        stderr: String,
    },
    /// A line that is not the protocol's JSON.
    #[error("malformed answer {line:?}: {reason}")]
    Malformed {
        /// The line (cut to 200 characters).
        line: String,
        /// Why it is not an answer.
        reason: String,
    },
    /// An answer without a field the protocol requires.
    #[error("the answer has no `{0}`")]
    MissingField(String),
    /// An answer to another request.
    #[error("the answer is for query `{0}`")]
    WrongQuery(String),
    /// A result id that is not a chunk of the corpus.
    #[error("result {index} names `{id}`, which is not a chunk id of the corpus")]
    UnknownId {
        /// Position in the answer's `results`.
        index: usize,
        /// The id.
        id: String,
    },
    /// The same chunk twice in one answer.
    #[error("result {index} names `{id}` a second time")]
    DuplicateId {
        /// Position in the answer's `results`.
        index: usize,
        /// The id.
        id: String,
    },
    /// A score that is not a finite number (as `f32`, the scale every ranking uses).
    #[error("{} has the non-finite score {score}", which_result(*.index, .id))]
    NonFinite {
        /// Position in the answer's `results` (`None`: the line held a bare `NaN` or
        /// `Infinity`, which is not JSON, so it could not be parsed to find it).
        index: Option<usize>,
        /// The result's id, where known.
        id: Option<String>,
        /// The score as written.
        score: String,
    },
    /// More results than the `k` asked for.
    #[error("{got} results for k = {k}")]
    TooMany {
        /// Results returned.
        got: usize,
        /// Results asked for.
        k: usize,
    },
    /// The process stopped reading its requests without saying why on its output.
    #[error("cannot write the request: the process stopped reading")]
    StoppedReading,
    /// An embedded engine's index could not be built, opened or verified.
    #[error("{0}")]
    Shard(ShardFailure),
    /// An embedded engine's search failed.
    #[error("search failed: {0}")]
    Search(Carried<hopbench_datasets::Error>),
    /// A hit's payload carries no record id.
    #[error("point {point} has no record id in its payload")]
    MissingPayload {
        /// The point id.
        point: u64,
    },
    /// A hit's record id names another chunk than the point it was inserted as.
    #[error("point {point} carries record id `{id}`, which is chunk {chunk}")]
    PointMismatch {
        /// The point id.
        point: u64,
        /// The payload's record id.
        id: String,
        /// The chunk that id names.
        chunk: u32,
    },
    /// The process was stopped by an earlier failure of this cell, so the request was not sent.
    #[error(
        "not sent: the process was stopped after an earlier failure (request for query \
         `{query}`: {first})"
    )]
    Stopped {
        /// The query whose request failed first.
        query: String,
        /// How it failed.
        first: Box<Failure>,
    },
}

/// Another crate's error, carried as itself behind an `Arc` (so a failure can be kept and
/// reported again). Two are equal when they say the same: the errors it carries have no
/// equality of their own, and a failure is compared by what it reports.
#[derive(Debug)]
pub struct Carried<E>(pub Arc<E>);

impl<E> Carried<E> {
    /// Carries `error`.
    pub fn new(error: E) -> Self {
        Carried(Arc::new(error))
    }
}

impl<E> Clone for Carried<E> {
    fn clone(&self) -> Self {
        Carried(self.0.clone())
    }
}

impl<E: fmt::Display> fmt::Display for Carried<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl<E: fmt::Display> PartialEq for Carried<E> {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0.to_string() == other.0.to_string()
    }
}

impl<E: fmt::Display> Eq for Carried<E> {}

/// Why an embedded engine has no index to search.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ShardFailure {
    /// This build of hopbench lacks the engine; the message says how to get it.
    #[error("{0}")]
    NotBuilt(&'static str),
    /// Building, opening or verifying the index failed.
    #[error("{0}")]
    Index(Carried<hopbench_datasets::Error>),
}

fn which_result(index: Option<usize>, id: &Option<String>) -> String {
    match (index, id) {
        (Some(i), Some(id)) => format!("result {i} (`{id}`)"),
        (Some(i), None) => format!("result {i}"),
        _ => "a result".into(),
    }
}

fn stderr_tail(stderr: &str) -> String {
    let s = stderr.trim();
    if s.is_empty() {
        String::new()
    } else {
        format!("; its stderr ends: {s}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The failures that carry another error say what it says, in the words they always used.
    #[test]
    fn carried_errors_display_as_their_text_in_the_same_words() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "No such file");
        assert_eq!(
            Failure::Spawn(Carried::new(io)).to_string(),
            "cannot start the process: No such file"
        );
        assert_eq!(
            Failure::EmptyCommand.to_string(),
            "cannot start the process: the command is empty"
        );
        assert_eq!(
            Failure::StoppedReading.to_string(),
            "cannot write the request: the process stopped reading"
        );
        let data = hopbench_datasets::Error::Config {
            context: "shard".into(),
            message: "broken".into(),
        };
        let text = data.to_string();
        let data = Carried::new(data);
        assert_eq!(
            Failure::Shard(ShardFailure::Index(data.clone())).to_string(),
            text
        );
        assert_eq!(
            Failure::Search(data).to_string(),
            format!("search failed: {text}")
        );
        assert_eq!(
            Failure::Shard(ShardFailure::NotBuilt("not in this build")).to_string(),
            "not in this build"
        );
        let stopped = Failure::Stopped {
            query: "q7".into(),
            first: Box::new(Failure::MissingField("results".into())),
        };
        assert_eq!(
            stopped.to_string(),
            "not sent: the process was stopped after an earlier failure (request for query \
             `q7`: the answer has no `results`)"
        );
    }
}
