//! Wall time and peak memory of the stages of a prepare, for benchmarks (`hopbench bench
//! scale`). Each [`timed`] stage first hands what the stages before it freed back to the system
//! ([`crate::memory::release_freed`]) and resets the process's peak resident set (Linux:
//! `/proc/self/clear_refs`), so its peak is its own; the log is process-wide and [`take`]
//! empties it. Nothing here changes what a stage computes.

use std::sync::Mutex;
use std::time::Instant;

/// One timed stage.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Stage {
    /// The stage (`read`, `bm25`, `kg`, `embed`, `simgraph`, `write`, ...).
    pub name: &'static str,
    /// Wall time, seconds.
    pub secs: f64,
    /// Peak resident set during the stage, MiB (`None` where `/proc` is unavailable).
    pub peak_rss_mib: Option<f64>,
    /// Whether the peak was reset before the stage (otherwise it is the process's peak so far).
    pub peak_reset: bool,
}

static LOG: Mutex<Vec<Stage>> = Mutex::new(Vec::new());

/// Runs `f` as stage `name` and logs its time and peak memory.
pub fn timed<T>(name: &'static str, f: impl FnOnce() -> T) -> T {
    crate::memory::release_freed();
    let peak_reset = reset_peak_rss();
    let t = Instant::now();
    let out = f();
    let stage = Stage {
        name,
        secs: t.elapsed().as_secs_f64(),
        peak_rss_mib: peak_rss_mib(),
        peak_reset,
    };
    LOG.lock().unwrap_or_else(|p| p.into_inner()).push(stage);
    out
}

/// The stages logged since the last call, in order.
pub fn take() -> Vec<Stage> {
    std::mem::take(&mut *LOG.lock().unwrap_or_else(|p| p.into_inner()))
}

/// Peak resident set of this process so far, MiB (`VmHWM` of `/proc/self/status`).
pub fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

/// Resets the peak resident set to the current one (Linux: "5" to `/proc/self/clear_refs`).
pub fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stages_are_logged_in_order_and_taken_once() {
        take();
        let x = timed("first", || 2 + 2);
        timed("second", || std::hint::black_box(vec![0u8; 1 << 20]).len());
        assert_eq!(x, 4);
        let log = take();
        // other tests of this process may log stages too: keep ours
        let names: Vec<&str> = log
            .iter()
            .map(|s| s.name)
            .filter(|n| *n == "first" || *n == "second")
            .collect();
        assert_eq!(names, ["first", "second"]);
        assert!(log.iter().all(|s| s.secs >= 0.0));
    }
}
