//! Progress of a long stage (embedding a dataset, running a cell's queries), on stderr.
//!
//! On a terminal it is an indicatif bar. When stderr is not a terminal (a Slurm task's log, a
//! CI log, `nohup`), a bar would print nothing until the end, so instead a plain line is
//! printed every [`interval`] while the stage runs, and one when it ends: a stage shorter than
//! the interval prints that one line only.
//!
//! ```text
//! progress: embed musique passages: 1024/11656 (8.8%), 41.3/s, ETA 4m18s
//! ```
//!
//! A background thread prints the lines, so a stage whose batches are slower than the interval
//! still reports on time. `--quiet` (show = false) silences both.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

/// Seconds between two plain progress lines: `HOPBENCH_PROGRESS_INTERVAL` (a positive number),
/// else 10.
pub fn interval() -> Duration {
    std::env::var("HOPBENCH_PROGRESS_INTERVAL")
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .map_or(Duration::from_secs(10), Duration::from_secs_f64)
}

/// The progress of one stage; finished (and its last line printed) by [`Progress::finish`] or
/// on drop.
pub struct Progress {
    kind: Kind,
}

enum Kind {
    Hidden,
    Bar(ProgressBar),
    Lines(Lines),
}

struct Lines {
    done: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    ticker: Option<JoinHandle<()>>,
    line: Arc<LineFormat>,
}

/// Where the plain lines go (stderr; a test collects them).
type Sink = Arc<dyn Fn(String) + Send + Sync>;

struct LineFormat {
    sink: Sink,
    what: String,
    unit: &'static str,
    total: u64,
    started: Instant,
}

impl LineFormat {
    fn line(&self, done: u64) -> String {
        let secs = self.started.elapsed().as_secs_f64();
        let rate = if secs > 0.0 { done as f64 / secs } else { 0.0 };
        let pct = if self.total > 0 {
            100.0 * done as f64 / self.total as f64
        } else {
            100.0
        };
        let eta = if done >= self.total {
            format!("done in {}", clock(secs))
        } else if rate > 0.0 {
            format!("ETA {}", clock((self.total - done) as f64 / rate))
        } else {
            "ETA unknown".to_string()
        };
        let unit = if self.unit.is_empty() {
            String::new()
        } else {
            format!(" {}", self.unit)
        };
        format!(
            "progress: {}: {done}/{}{unit} ({pct:.1}%), {rate:.1}/s, {eta}",
            self.what, self.total
        )
    }
}

/// `4m18s`, `1h02m`, `12s`.
fn clock(secs: f64) -> String {
    let s = secs.round() as u64;
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
    }
}

impl Progress {
    /// A stage of `total` items (`unit`: "queries", "texts", or "" for none) called `what`
    /// (`embed musique passages`, `musique x bm25`). Hidden when `show` is false.
    pub fn new(show: bool, what: &str, unit: &'static str, total: u64) -> Progress {
        if !show {
            return Progress { kind: Kind::Hidden };
        }
        if std::io::stderr().is_terminal() {
            let bar = ProgressBar::new(total);
            bar.set_style(
                ProgressStyle::with_template(&format!(
                    "{{prefix:>32}} [{{bar:30}}] {{pos}}/{{len}} {unit} {{per_sec}} {{eta}}"
                ))
                .expect("valid template")
                .progress_chars("=> "),
            );
            bar.set_prefix(what.to_string());
            return Progress {
                kind: Kind::Bar(bar),
            };
        }
        let stderr: Sink = Arc::new(|l| eprintln!("{l}"));
        Progress::lines(what, unit, total, interval(), stderr)
    }

    /// Plain lines to `sink`: one every `every` while the stage runs, one at its end.
    fn lines(what: &str, unit: &'static str, total: u64, every: Duration, sink: Sink) -> Progress {
        let line = Arc::new(LineFormat {
            sink,
            what: what.to_string(),
            unit,
            total,
            started: Instant::now(),
        });
        let done = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let ticker = {
            let (done, stop, line) = (done.clone(), stop.clone(), line.clone());
            std::thread::spawn(move || {
                let mut last = Instant::now();
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(50).min(every));
                    if last.elapsed() >= every && !stop.load(Ordering::Relaxed) {
                        (line.sink)(line.line(done.load(Ordering::Relaxed)));
                        last = Instant::now();
                    }
                }
            })
        };
        Progress {
            kind: Kind::Lines(Lines {
                done,
                stop,
                ticker: Some(ticker),
                line,
            }),
        }
    }

    /// `n` more items done (callable from any thread).
    pub fn inc(&self, n: u64) {
        match &self.kind {
            Kind::Hidden => {}
            Kind::Bar(b) => b.inc(n),
            Kind::Lines(l) => {
                l.done.fetch_add(n, Ordering::Relaxed);
            }
        }
    }

    /// Ends the stage: clears the bar, or prints the last line.
    pub fn finish(mut self) {
        self.end();
    }

    fn end(&mut self) {
        match &mut self.kind {
            Kind::Hidden => {}
            Kind::Bar(b) => b.finish_and_clear(),
            Kind::Lines(l) => {
                l.stop.store(true, Ordering::Relaxed);
                if let Some(t) = l.ticker.take() {
                    let _ = t.join();
                    (l.line.sink)(l.line.line(l.done.load(Ordering::Relaxed)));
                }
            }
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.end();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_says_stage_count_rate_and_eta() {
        let f = LineFormat {
            sink: Arc::new(|_| {}),
            what: "embed d passages".into(),
            unit: "texts",
            total: 200,
            started: Instant::now() - Duration::from_secs(10),
        };
        let l = f.line(50);
        assert!(
            l.starts_with("progress: embed d passages: 50/200 texts (25.0%), 5.0/s, ETA 30s"),
            "{l}"
        );
        assert!(f.line(200).contains("(100.0%)") && f.line(200).contains("done in 10s"));
        assert!(f.line(0).contains("ETA unknown"));
        let none = LineFormat {
            sink: Arc::new(|_| {}),
            what: "x".into(),
            unit: "",
            total: 0,
            started: Instant::now(),
        };
        assert!(
            none.line(0).starts_with("progress: x: 0/0 (100.0%)"),
            "{}",
            none.line(0)
        );
    }

    #[test]
    fn a_stage_shorter_than_the_interval_prints_one_line_at_its_end() {
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink: Sink = {
            let seen = seen.clone();
            Arc::new(move |l| seen.lock().unwrap().push(l))
        };
        let p = Progress::lines("d x bm25", "queries", 3, Duration::from_secs(3600), sink);
        p.inc(3);
        p.finish();
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 1, "{seen:?}");
        assert!(
            seen[0].starts_with("progress: d x bm25: 3/3 queries (100.0%)"),
            "{seen:?}"
        );
        assert!(seen[0].contains("done in"), "{seen:?}");
    }

    #[test]
    fn clock_is_short() {
        assert_eq!(clock(12.4), "12s");
        assert_eq!(clock(258.0), "4m18s");
        assert_eq!(clock(3720.0), "1h02m");
    }
}
