//! An engine in another process, spoken to in JSON lines over its stdin and stdout: any index a
//! user has (bm25s, hnswlib, a vector database client) can stand in for one first-stage side
//! while every composing leg stays as it is.
//!
//! ## The protocol
//!
//! The process is started once per leg build (so once per cell) with the export's directory in
//! `HOPBENCH_EXPORT` (absolute), the side it answers in `HOPBENCH_SIDE` (`dense` | `lexical`)
//! and, on the dense side, the corpus vector column in `HOPBENCH_VECTORS` (`embedding` |
//! `embedding_content`). It loads its index, then writes one line `{"ready": true}`; loading is
//! therefore outside every query's latency, and a backend that cannot start fails the cell
//! before any query runs. Then, one request at a time, it reads one line
//!
//! ```text
//! {"query_id": "q17", "text": "Who ...?", "vector": [0.01, ...], "k": 100}
//! ```
//!
//! (`vector`, the query's L2-normalised embedding from the export, on the dense side only) and
//! writes one line
//!
//! ```text
//! {"query_id": "q17", "results": [{"id": "<chunk id>", "score": 12.5}, ...]}
//! ```
//!
//! with at most `k` results, each a chunk id of the corpus at most once, with a finite score.
//! Nothing else may be in either object. The harness re-sorts the results into the one ranking
//! order (score descending, ties on ascending id), so the order the process writes them in does
//! not matter. A query may send more than one request (the conversation legs also retrieve for
//! earlier turns, with the same `query_id` and another text), so a backend must not cache by
//! `query_id`. When its stdin closes, the process should exit; it is killed after a grace period.
//!
//! ## Failures
//!
//! A process that cannot start, exits, does not answer within `timeout_ms` (or is not ready
//! within `startup_timeout_ms`), writes a line that is not the protocol's JSON, answers another
//! query, omits a field, names an unknown or repeated id, returns more than `k` results or a
//! non-finite score is an [`EngineError`] naming the command and the query; the cell is then
//! recorded as `error` with that reason, never as zeros. The first failure stops the process
//! (killed and reaped at once: a timed-out or confused process cannot be resynchronised), and
//! every later request of the cell fails naming that first failure.
//!
//! ## Threads
//!
//! The harness runs queries in parallel, and the process is one pipe: requests are serialised
//! by a mutex, so there is one process per engine whatever the thread count, and the results
//! are whatever the process answers for each request alone (deterministic when the backend is).
//! The harness times `retrieve`, which includes the round trip, and with more than one thread
//! also the wait for the pipe: time external engines with `--threads 1` (or `hopbench bench
//! latency`, which is single-threaded).

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use hopbench_datasets::export::Export;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::error::{Carried, EngineError, Failure};
use super::{
    group_of, read_group, CacheInputs, Engine, EngineKind, ExportRef, Side, SideKind, Vectors,
};
use crate::candidate::{sort_ranked, Candidate};
use crate::leg::{LegError, QueryInput};
use crate::params::{Check, Flat, ParamError};

/// `{engine: external, command: [...], timeout_ms: N, startup_timeout_ms: N}`: the process
/// that answers one first-stage side.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExternalSpec {
    /// The program and its arguments (no shell; a relative program path is resolved from the
    /// harness's working directory, a bare name on `PATH`).
    pub command: Vec<String>,
    /// How long one request may take, round trip (ms).
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
    /// How long the process may take to load its index and say it is ready (ms).
    #[serde(default = "default_startup_timeout_ms")]
    pub startup_timeout_ms: u64,
}

impl EngineKind for ExternalSpec {
    const NAME: &'static str = "external";
    const SIDES: &'static [SideKind] = &[SideKind::Dense, SideKind::Lexical];

    fn read(rest: &Flat) -> Result<Self, ParamError> {
        read_group(Self::NAME, rest)
    }
    fn write(&self) -> Flat {
        group_of(self)
    }
    fn check(&self, c: &Check<'_>, side: SideKind) -> Result<(), LegError> {
        ExternalSpec::check(self, c, side.key())
    }
    fn build(&self, export: &Arc<Export>, side: Side) -> Result<Box<dyn Engine>, LegError> {
        if let Side::Dense(vectors) = side {
            vectors.available_in(export)?;
        }
        Ok(Box::new(ExternalEngine::start(export, side, self)?))
    }

    /// blake3 of every file the command names, by the argument as written. The command line
    /// alone would let an edited backend script be served from the cache; with its bytes in
    /// the key, editing it recomputes the cell. Arguments that are not files (flags, a program
    /// found on `PATH` such as `python3`) are not hashed, so an upgraded interpreter or package
    /// is not seen: `--force` after one. Relative paths resolve from the working directory, as
    /// the process's do. A file that cannot be read is recorded as such (the process will fail).
    fn cache_inputs(&self, _side: Side, _export: Option<ExportRef<'_>>, out: &mut CacheInputs) {
        for arg in &self.command {
            let path = std::path::Path::new(arg);
            if !path.is_file() {
                continue;
            }
            let hash = match std::fs::read(path) {
                Ok(bytes) => blake3::hash(&bytes).to_hex().to_string(),
                Err(e) => format!("unreadable: {e}"),
            };
            out.files.insert(arg.clone(), hash);
        }
    }
}

fn default_timeout_ms() -> u64 {
    10_000
}
fn default_startup_timeout_ms() -> u64 {
    600_000
}

impl ExternalSpec {
    /// Range checks; `side` is the campaign key of the group (`dense`, `lexical`).
    pub fn check(&self, c: &Check<'_>, side: &str) -> Result<(), LegError> {
        match self.command.first() {
            None => c.fail(&format!("{side}.command"), "must name a program")?,
            Some(p) if p.trim().is_empty() => {
                c.fail(&format!("{side}.command"), "the program is empty")?
            }
            Some(_) => {}
        }
        c.at_least(
            &format!("{side}.timeout_ms"),
            self.timeout_ms.min(usize::MAX as u64) as usize,
            1,
        )?;
        c.at_least(
            &format!("{side}.startup_timeout_ms"),
            self.startup_timeout_ms.min(usize::MAX as u64) as usize,
            1,
        )
    }

    /// The command line as one string, for messages.
    pub fn display(&self) -> String {
        self.command
            .iter()
            .map(|a| {
                if a.is_empty() || a.contains(|c: char| c.is_whitespace() || c == '\'') {
                    format!("'{}'", a.replace('\'', r"'\''"))
                } else {
                    a.clone()
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// Longest line read from the process; a longer one is a malformed answer, not an allocation
/// without bound.
const MAX_LINE: u64 = 64 << 20;
/// What is kept of the process's stderr for messages.
const STDERR_TAIL: usize = 2_000;
/// How long a process whose stdin closed may take to exit before it is killed.
const GRACE: Duration = Duration::from_millis(500);

/// One line from the process's stdout, or why there is none.
enum Line {
    Text(String),
    Eof,
    Bad(String),
}

/// The running process and the threads that move its bytes. Writes go through a thread so a
/// process that stops reading cannot block a request past its timeout.
struct Proc {
    child: Child,
    requests: Option<Sender<Vec<u8>>>,
    lines: Receiver<Line>,
    stderr: Arc<Mutex<String>>,
    threads: Vec<JoinHandle<()>>,
    /// The first failure; once set the process is stopped and every request fails.
    failed: Option<(String, Failure)>,
    /// Whether the child has been waited for.
    reaped: bool,
}

impl Proc {
    /// Closes stdin, gives the process [`GRACE`] to exit, kills it if it has not, and waits for
    /// it (so it never lingers as a zombie), then collects the I/O threads that have ended.
    fn stop(&mut self, grace: Duration) {
        self.requests = None;
        if !self.reaped {
            let deadline = Instant::now() + grace;
            loop {
                match self.child.try_wait() {
                    Ok(Some(_)) => break,
                    Ok(None) if Instant::now() < deadline => {
                        std::thread::sleep(Duration::from_millis(5))
                    }
                    _ => {
                        let _ = self.child.kill();
                        break;
                    }
                }
            }
            let _ = self.child.wait();
            self.reaped = true;
        }
        // the pipes close with the process; a grandchild that inherited them may keep a reader
        // thread alive, which then ends with it instead of blocking this call
        let deadline = Instant::now() + Duration::from_millis(200);
        while self.threads.iter().any(|t| !t.is_finished()) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(2));
        }
        for t in std::mem::take(&mut self.threads) {
            if t.is_finished() {
                let _ = t.join();
            }
        }
    }

    /// The exit status after stdout ended: waits a little for the exit, kills if it does not
    /// come (a process that closed stdout but lives on cannot answer either).
    fn exit_status(&mut self) -> String {
        let deadline = Instant::now() + GRACE;
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(s)) => break s.to_string(),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(5))
                }
                Ok(None) => {
                    let _ = self.child.kill();
                    break "closed its stdout; killed".to_string();
                }
                Err(e) => break format!("unknown: {e}"),
            }
        };
        self.stop(Duration::ZERO);
        status
    }

    fn stderr_tail(&self) -> String {
        self.stderr
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The next line within `timeout`, as a failure when there is none.
    fn next_line(&mut self, timeout: Duration, ms: u64) -> Result<String, Failure> {
        match self.lines.recv_timeout(timeout) {
            Ok(Line::Text(t)) => Ok(t),
            Ok(Line::Bad(reason)) => Err(Failure::Malformed {
                line: String::new(),
                reason,
            }),
            Ok(Line::Eof) | Err(RecvTimeoutError::Disconnected) => {
                let status = self.exit_status();
                Err(Failure::Exited {
                    status,
                    stderr: self.stderr_tail(),
                })
            }
            Err(RecvTimeoutError::Timeout) => {
                let _ = self.child.kill();
                self.stop(Duration::ZERO);
                Err(Failure::Timeout {
                    ms,
                    stderr: self.stderr_tail(),
                })
            }
        }
    }
}

/// An engine answered by an external process (see the module docs for the protocol).
pub struct ExternalEngine {
    export: Arc<Export>,
    side: Side,
    label: &'static str,
    command: String,
    timeout_ms: u64,
    pid: u32,
    proc: Mutex<Proc>,
}

impl ExternalEngine {
    /// Starts the process for `side` of `export` and waits until it is ready.
    pub fn start(
        export: &Arc<Export>,
        side: Side,
        spec: &ExternalSpec,
    ) -> Result<Self, EngineError> {
        let label = match side {
            Side::Dense(_) => "external dense engine",
            Side::Lexical => "external lexical engine",
        };
        let command = spec.display();
        let fail = |failure| EngineError {
            engine: label,
            command: command.clone(),
            query_id: None,
            failure: Box::new(failure),
        };
        let (program, args) = spec
            .command
            .split_first()
            .ok_or_else(|| fail(Failure::EmptyCommand))?;
        let dir = std::path::absolute(&export.dir).unwrap_or_else(|_| export.dir.clone());
        let mut cmd = Command::new(program);
        cmd.args(args)
            .env("HOPBENCH_EXPORT", &dir)
            .env("HOPBENCH_SIDE", side.kind().key())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Side::Dense(v) = side {
            cmd.env(
                "HOPBENCH_VECTORS",
                match v {
                    Vectors::Full => "embedding",
                    Vectors::ContentOnly => "embedding_content",
                },
            );
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| fail(Failure::Spawn(Carried::new(e))))?;
        let pid = child.id();
        let stdin = child.stdin.take().expect("stdin is piped");
        let stdout = child.stdout.take().expect("stdout is piped");
        let stderr_pipe = child.stderr.take().expect("stderr is piped");
        let (req_tx, req_rx) = mpsc::channel::<Vec<u8>>();
        let (line_tx, line_rx) = mpsc::channel::<Line>();
        let stderr = Arc::new(Mutex::new(String::new()));
        let threads = vec![
            std::thread::spawn(move || write_requests(stdin, req_rx)),
            std::thread::spawn(move || read_lines(stdout, line_tx)),
            {
                let tail = stderr.clone();
                std::thread::spawn(move || keep_tail(stderr_pipe, &tail))
            },
        ];
        let mut proc = Proc {
            child,
            requests: Some(req_tx),
            lines: line_rx,
            stderr,
            threads,
            failed: None,
            reaped: false,
        };
        let ready = proc
            .next_line(
                Duration::from_millis(spec.startup_timeout_ms),
                spec.startup_timeout_ms,
            )
            .and_then(|line| match serde_json::from_str::<Value>(&line) {
                Ok(v) if v == serde_json::json!({"ready": true}) => Ok(()),
                _ => Err(Failure::Malformed {
                    line: cut(&line),
                    reason: r#"the first line must be {"ready": true}"#.into(),
                }),
            });
        if let Err(f) = ready {
            proc.stop(Duration::ZERO);
            return Err(fail(f));
        }
        Ok(ExternalEngine {
            export: export.clone(),
            side,
            label,
            command,
            timeout_ms: spec.timeout_ms,
            pid,
            proc: Mutex::new(proc),
        })
    }

    /// The process id (diagnostics, and the tests that check the process is reaped).
    pub fn pid(&self) -> u32 {
        self.pid
    }

    fn error(&self, query_id: &str, failure: Failure) -> EngineError {
        EngineError {
            engine: self.label,
            command: self.command.clone(),
            query_id: Some(query_id.to_string()),
            failure: Box::new(failure),
        }
    }

    /// One request and its checked answer, on the locked process.
    fn exchange(
        &self,
        proc: &mut Proc,
        q: &QueryInput<'_>,
        k: usize,
    ) -> Result<Vec<Candidate>, Failure> {
        let request = Request {
            query_id: q.id,
            text: q.text,
            vector: matches!(self.side, Side::Dense(_)).then_some(q.embedding),
            k,
        };
        let mut bytes = serde_json::to_vec(&request).expect("a request serialises");
        bytes.push(b'\n');
        let sent = proc
            .requests
            .as_ref()
            .is_some_and(|tx| tx.send(bytes).is_ok());
        if !sent {
            // the writer ended: the process is gone, and its stdout says how
            return Err(proc
                .next_line(Duration::from_millis(self.timeout_ms), self.timeout_ms)
                .err()
                .unwrap_or(Failure::StoppedReading));
        }
        let line = proc.next_line(Duration::from_millis(self.timeout_ms), self.timeout_ms)?;
        parse_answer(&line, q.id, k, |id| self.export.chunk_index(id))
    }
}

impl Engine for ExternalEngine {
    fn name(&self) -> &'static str {
        "external"
    }

    fn search(&self, q: &QueryInput<'_>, k: usize) -> Result<Vec<Candidate>, EngineError> {
        let mut proc = self.proc.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((query, first)) = &proc.failed {
            let stopped = Failure::Stopped {
                query: query.clone(),
                first: Box::new(first.clone()),
            };
            return Err(self.error(q.id, stopped));
        }
        match self.exchange(&mut proc, q, k) {
            Ok(list) => Ok(list),
            Err(failure) => {
                proc.stop(Duration::ZERO);
                let err = self.error(q.id, failure);
                proc.failed = Some((q.id.to_string(), (*err.failure).clone()));
                Err(err)
            }
        }
    }
}

impl Drop for ExternalEngine {
    fn drop(&mut self) {
        self.proc
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .stop(GRACE);
    }
}

#[derive(Serialize)]
struct Request<'a> {
    query_id: &'a str,
    text: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    vector: Option<&'a [f32]>,
    k: usize,
}

fn write_requests(mut stdin: ChildStdin, requests: Receiver<Vec<u8>>) {
    for r in requests {
        if stdin.write_all(&r).and_then(|()| stdin.flush()).is_err() {
            return;
        }
    }
}

fn read_lines(stdout: impl Read, lines: Sender<Line>) {
    let mut reader = BufReader::new(stdout);
    loop {
        let mut buf = Vec::new();
        let event = match (&mut reader).take(MAX_LINE + 1).read_until(b'\n', &mut buf) {
            Ok(0) => Line::Eof,
            Ok(_) if buf.last() != Some(&b'\n') && buf.len() as u64 > MAX_LINE => {
                Line::Bad(format!("a line longer than {MAX_LINE} bytes"))
            }
            Ok(_) => match String::from_utf8(buf) {
                Ok(s) => Line::Text(s.trim_end_matches(['\n', '\r']).to_string()),
                Err(_) => Line::Bad("a line that is not UTF-8".into()),
            },
            Err(e) => Line::Bad(format!("reading stdout: {e}")),
        };
        let end = !matches!(event, Line::Text(_));
        if lines.send(event).is_err() || end {
            return;
        }
    }
}

fn keep_tail(stderr: impl Read, tail: &Mutex<String>) {
    let mut reader = BufReader::new(stderr);
    let mut buf = [0u8; 4096];
    while let Ok(n) = reader.read(&mut buf) {
        if n == 0 {
            return;
        }
        let mut t = tail.lock().unwrap_or_else(PoisonError::into_inner);
        t.push_str(&String::from_utf8_lossy(&buf[..n]));
        if t.len() > STDERR_TAIL {
            let mut cut = t.len() - STDERR_TAIL;
            while !t.is_char_boundary(cut) {
                cut += 1;
            }
            t.drain(..cut);
        }
    }
}

/// The first 200 characters of `line`.
fn cut(line: &str) -> String {
    let mut s: String = line.chars().take(200).collect();
    if s.len() < line.len() {
        s.push('…');
    }
    s
}

/// Checks one answer line against the request (`query_id`, `k`) and maps its ids with
/// `chunk_of`; the candidates come back in rank order.
fn parse_answer(
    line: &str,
    query_id: &str,
    k: usize,
    chunk_of: impl Fn(&str) -> Option<u32>,
) -> Result<Vec<Candidate>, Failure> {
    let malformed = |reason: String| Failure::Malformed {
        line: cut(line),
        reason,
    };
    let value: Value = serde_json::from_str(line).map_err(|e| {
        // Python's json writes NaN and Infinity, which are not JSON: say what they are
        match bare_non_finite(line) {
            Some(token) => Failure::NonFinite {
                index: None,
                id: None,
                score: token.into(),
            },
            None => malformed(e.to_string()),
        }
    })?;
    let Value::Object(mut top) = value else {
        return Err(malformed("not a JSON object".into()));
    };
    let got_id = take(&mut top, "query_id")?;
    let results = take(&mut top, "results")?;
    if let Some(extra) = top.keys().next() {
        return Err(malformed(format!("unknown field `{extra}`")));
    }
    match got_id {
        Value::String(s) if s == query_id => {}
        Value::String(s) => return Err(Failure::WrongQuery(s)),
        other => return Err(malformed(format!("`query_id` is {other}, not a string"))),
    }
    let Value::Array(results) = results else {
        return Err(malformed("`results` is not a list".into()));
    };
    if results.len() > k {
        return Err(Failure::TooMany {
            got: results.len(),
            k,
        });
    }
    let mut out = Vec::with_capacity(results.len());
    let mut seen = std::collections::HashSet::with_capacity(results.len());
    for (index, hit) in results.into_iter().enumerate() {
        let Value::Object(mut hit) = hit else {
            return Err(malformed(format!("result {index} is not an object")));
        };
        let id = take(&mut hit, "id")
            .map_err(|_| Failure::MissingField(format!("results[{index}].id")))?;
        let score = take(&mut hit, "score")
            .map_err(|_| Failure::MissingField(format!("results[{index}].score")))?;
        if let Some(extra) = hit.keys().next() {
            return Err(malformed(format!(
                "unknown field `{extra}` in result {index}"
            )));
        }
        let Value::String(id) = id else {
            return Err(malformed(format!(
                "result {index}: `id` is {id}, not a string"
            )));
        };
        let Some(s) = score.as_f64() else {
            return Err(malformed(format!(
                "result {index} (`{id}`): `score` is {score}, not a number"
            )));
        };
        // the rankings are on the f32 scale: a score that does not fit is not finite there
        let s32 = s as f32;
        if !s32.is_finite() {
            return Err(Failure::NonFinite {
                index: Some(index),
                id: Some(id),
                score: score.to_string(),
            });
        }
        let Some(chunk) = chunk_of(&id) else {
            return Err(Failure::UnknownId { index, id });
        };
        if !seen.insert(chunk) {
            return Err(Failure::DuplicateId { index, id });
        }
        // -0.0 and 0.0 are one score, so such a tie breaks on the id like any other
        out.push(Candidate::new(chunk, s32 + 0.0));
    }
    sort_ranked(&mut out);
    Ok(out)
}

fn take(map: &mut Map<String, Value>, field: &str) -> Result<Value, Failure> {
    map.remove(field)
        .ok_or_else(|| Failure::MissingField(field.into()))
}

/// A bare `NaN`, `Infinity` or `-Infinity` outside the strings of `line`.
fn bare_non_finite(line: &str) -> Option<&'static str> {
    let bytes = line.as_bytes();
    let (mut i, mut in_string) = (0, false);
    while i < bytes.len() {
        let b = bytes[i];
        if in_string {
            match b {
                b'\\' => i += 1,
                b'"' => in_string = false,
                _ => {}
            }
        } else if b == b'"' {
            in_string = true;
        } else {
            for token in ["-Infinity", "Infinity", "NaN"] {
                if bytes[i..].starts_with(token.as_bytes()) {
                    return Some(token);
                }
            }
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rescue::fixtures;

    fn fake() -> String {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/fake_backend.py"
        )
        .to_string()
    }

    fn spec(args: &[&str], timeout_ms: u64) -> ExternalSpec {
        let mut command = vec!["python3".to_string(), fake()];
        command.extend(args.iter().map(|a| a.to_string()));
        ExternalSpec {
            command,
            timeout_ms,
            startup_timeout_ms: 20_000,
        }
    }

    fn start(side: Side, args: &[&str], timeout_ms: u64) -> Result<ExternalEngine, EngineError> {
        ExternalEngine::start(&fixtures::synthetic(), side, &spec(args, timeout_ms))
    }

    /// Whether process `pid` is gone, zombie included (a zombie keeps its `/proc` entry).
    fn gone(pid: u32) -> bool {
        !std::path::Path::new(&format!("/proc/{pid}")).exists()
    }

    fn query(export: &Export, i: usize) -> QueryInput<'_> {
        QueryInput::from_export(export, i)
    }

    #[test]
    fn answers_are_resorted_by_score_then_id_and_the_process_is_reaped_on_drop() {
        let export = fixtures::synthetic();
        let id = |i: usize| export.chunks[i].id.clone();
        // written out of order, with a tie between chunks 7 and 3 and a -0.0 / 0.0 tie
        let args = [
            "ok".to_string(),
            format!("{}:0.5", id(7)),
            format!("{}:2.0", id(9)),
            format!("{}:0.5", id(3)),
            format!("{}:-0.0", id(5)),
            format!("{}:0.0", id(4)),
        ];
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let engine = start(Side::Lexical, &args, 10_000).unwrap();
        let pid = engine.pid();
        assert!(!gone(pid));
        let q = query(&export, 0);
        let got = engine.search(&q, 10).unwrap();
        let ids: Vec<u32> = got.iter().map(|c| c.chunk).collect();
        assert_eq!(ids, vec![9, 3, 7, 4, 5]);
        assert_eq!(got[0].score, 2.0);
        // k cuts what the process answers (it sends its first k)
        assert_eq!(engine.search(&q, 2).unwrap().len(), 2);
        drop(engine);
        assert!(gone(pid), "the process {pid} was not reaped");
    }

    #[test]
    fn requests_and_environment_follow_the_protocol_on_both_sides() {
        let export = fixtures::synthetic();
        for side in [Side::Lexical, Side::Dense(Vectors::Full)] {
            let engine = start(side, &["check"], 10_000).unwrap();
            for i in 0..3 {
                assert_eq!(engine.search(&query(&export, i), 5), Ok(vec![]), "{side:?}");
            }
        }
    }

    #[test]
    fn a_process_that_ignores_eof_is_killed_and_reaped_on_drop() {
        let engine = start(Side::Lexical, &["stubborn"], 10_000).unwrap();
        let pid = engine.pid();
        let t = Instant::now();
        drop(engine);
        assert!(gone(pid), "the process {pid} was not reaped");
        assert!(t.elapsed() < Duration::from_secs(5));
    }

    /// Runs one request against a misbehaving fake; returns the failure after checking the
    /// error names the query and the command and the process is already reaped.
    fn fails(args: &[&str], timeout_ms: u64) -> Failure {
        let export = fixtures::synthetic();
        let engine = start(Side::Lexical, args, timeout_ms).unwrap();
        let pid = engine.pid();
        let q = query(&export, 1);
        let e = engine.search(&q, 5).unwrap_err();
        assert_eq!(e.query_id.as_deref(), Some(q.id));
        let msg = e.to_string();
        assert!(
            msg.contains(&format!("request for query `{}`", q.id)),
            "{msg}"
        );
        assert!(
            msg.contains("fake_backend.py") && msg.contains(args[0]),
            "{msg}"
        );
        assert!(
            msg.starts_with("external lexical engine `python3 "),
            "{msg}"
        );
        assert!(gone(pid), "the process {pid} was not reaped after: {msg}");
        // the engine is stopped: the next request names the first failure
        let again = engine.search(&query(&export, 2), 5).unwrap_err();
        match &*again.failure {
            Failure::Stopped { query, .. } => assert_eq!(query, &q.id),
            other => panic!("{other:?}"),
        }
        *e.failure
    }

    #[test]
    fn every_protocol_violation_is_a_typed_error_naming_query_and_command() {
        let export = fixtures::synthetic();
        let id = export.chunks[0].id.as_str();
        match fails(&["die-after", "0"], 10_000) {
            Failure::Exited { status, stderr } => {
                assert!(status.contains('1'), "{status}");
                assert!(stderr.contains("fake: giving up"), "{stderr}");
            }
            other => panic!("{other:?}"),
        }
        let t = Instant::now();
        assert!(matches!(
            fails(&["hang"], 300),
            Failure::Timeout { ms: 300, .. }
        ));
        assert!(t.elapsed() < Duration::from_secs(10));
        assert!(matches!(
            fails(&["malformed"], 10_000),
            Failure::Malformed { .. }
        ));
        assert!(matches!(
            fails(&["not-object"], 10_000),
            Failure::Malformed { .. }
        ));
        match fails(&["extra-field"], 10_000) {
            Failure::Malformed { reason, .. } => assert!(reason.contains("took_ms"), "{reason}"),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            fails(&["no-results"], 10_000),
            Failure::MissingField("results".into())
        );
        assert_eq!(
            fails(&["no-score"], 10_000),
            Failure::MissingField("results[0].score".into())
        );
        match fails(&["wrong-query"], 10_000) {
            Failure::WrongQuery(got) => assert!(got.ends_with("-other"), "{got}"),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            fails(&["unknown-id"], 10_000),
            Failure::UnknownId {
                index: 0,
                id: "no-such-chunk".into()
            }
        );
        assert_eq!(
            fails(&["duplicate", id], 10_000),
            Failure::DuplicateId {
                index: 1,
                id: id.into()
            }
        );
        assert_eq!(
            fails(&["nan", id], 10_000),
            Failure::NonFinite {
                index: None,
                id: None,
                score: "NaN".into()
            }
        );
        assert_eq!(
            fails(&["huge", id], 10_000),
            Failure::NonFinite {
                index: Some(0),
                id: Some(id.into()),
                score: "1e+39".into()
            }
        );
        assert_eq!(
            fails(&["too-many"], 10_000),
            Failure::TooMany { got: 6, k: 5 }
        );
    }

    #[test]
    fn a_process_that_cannot_start_is_an_error_at_start_up() {
        let at_start = |args: &[&str], startup_ms: u64| {
            let mut s = spec(args, 10_000);
            s.startup_timeout_ms = startup_ms;
            let e = ExternalEngine::start(&fixtures::synthetic(), Side::Lexical, &s)
                .err()
                .expect("start fails");
            assert_eq!(e.query_id, None);
            assert!(e.to_string().contains(", at start-up: "), "{e}");
            *e.failure
        };
        match at_start(&["exit-at-start"], 20_000) {
            Failure::Exited { stderr, .. } => {
                assert!(stderr.contains("cannot load the index"), "{stderr}")
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            at_start(&["never-ready"], 300),
            Failure::Timeout { ms: 300, .. }
        ));
        assert!(matches!(
            at_start(&["bad-ready"], 20_000),
            Failure::Malformed { .. }
        ));
        let missing = ExternalSpec {
            command: vec!["/nonexistent/hopbench-backend".into()],
            timeout_ms: 100,
            startup_timeout_ms: 100,
        };
        let e = ExternalEngine::start(&fixtures::synthetic(), Side::Lexical, &missing)
            .err()
            .unwrap();
        assert!(matches!(*e.failure, Failure::Spawn(_)), "{e}");
    }

    #[test]
    fn parallel_requests_are_serialised_and_each_gets_its_own_answer() {
        let export = fixtures::synthetic();
        let engine = start(Side::Dense(Vectors::Full), &["check"], 10_000).unwrap();
        std::thread::scope(|s| {
            for t in 0..4 {
                let (engine, export) = (&engine, &export);
                s.spawn(move || {
                    for i in 0..10 {
                        let q = query(export, (t * 10 + i) % export.queries.len());
                        assert_eq!(engine.search(&q, 3), Ok(vec![]));
                    }
                });
            }
        });
    }

    #[test]
    fn non_finite_tokens_are_found_outside_strings_only() {
        assert_eq!(bare_non_finite(r#"{"score": NaN}"#), Some("NaN"));
        assert_eq!(
            bare_non_finite(r#"{"score": -Infinity}"#),
            Some("-Infinity")
        );
        assert_eq!(
            bare_non_finite(r#"{"id": "NaN \" Infinity", "s": 1}"#),
            None
        );
        assert_eq!(bare_non_finite("{\"id\": \"é\", \"s\": 1}"), None);
    }

    #[test]
    fn the_command_line_is_displayed_with_quotes_where_needed() {
        let s = ExternalSpec {
            command: vec!["python3".into(), "my backend.py".into(), "it's".into()],
            timeout_ms: 1,
            startup_timeout_ms: 1,
        };
        assert_eq!(s.display(), r#"python3 'my backend.py' 'it'\''s'"#);
    }
}
