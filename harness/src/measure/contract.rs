//! The determinism contract: what must be pinned before a matrix runs, and what is recorded.
//!
//! The seed refuses to run unless its BLAS thread counts are pinned, after measuring that the
//! thread scheduler changed 33 of 1,209 dense pools. hopbench goes further by construction: one
//! query's work is single-threaded with a fixed summation order, and rayon only spreads whole
//! queries over threads, collecting results in query order; so summaries are byte-identical at
//! any thread count (a test proves it). The contract still refuses to run with an unpinned
//! thread count, so that the timing half of a summary is always interpretable, and it records
//! what could still change the bits: the CPU features the gemm kernels choose from at run time
//! (the embedder's; recorded per export) and the code version.

use serde::{Deserialize, Serialize};

/// The deterministic half of the contract: recorded in every summary and hashed into cell keys.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Contract {
    /// Contract version.
    pub version: u32,
    /// How dense scores are summed.
    pub dense_summation: String,
    /// How ties break.
    pub ties: String,
    /// Parallelism model.
    pub parallelism: String,
    /// Target triple parts the numbers were computed on.
    pub target: String,
    /// CPU features that select SIMD kernels at run time.
    pub cpu_features: Vec<String>,
    /// Token counter of the `tokens` figures of a summary (`tokens@10`, and the selection of legs
    /// that do not select under a budget). Selecting legs spend in their own configured
    /// `token_counter`, which is part of their leg configuration and so of the key.
    pub token_counter: String,
}

impl Contract {
    /// The contract of this build on this machine.
    pub fn current() -> Self {
        Contract {
            version: 1,
            dense_summation: "exact dot, 8 fixed lanes, pairwise lane reduction".into(),
            ties: "descending score, then ascending chunk record id".into(),
            parallelism: "one thread per query; queries collected in dataset order".into(),
            target: format!("{}-{}", std::env::consts::ARCH, std::env::consts::OS),
            cpu_features: cpu_features(),
            token_counter: "heuristic-v1".into(),
        }
    }
}

#[cfg(target_arch = "x86_64")]
fn cpu_features() -> Vec<String> {
    let mut f = Vec::new();
    macro_rules! probe {
        ($($name:tt),*) => {$(
            if std::arch::is_x86_feature_detected!($name) { f.push($name.to_string()); }
        )*};
    }
    probe!("sse4.2", "avx", "avx2", "fma", "f16c", "avx512f");
    f
}

#[cfg(not(target_arch = "x86_64"))]
fn cpu_features() -> Vec<String> {
    Vec::new()
}

/// Where the pinned thread count came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ThreadSource {
    /// `--threads N`.
    Flag,
    /// The `RAYON_NUM_THREADS` environment variable.
    Env,
    /// The campaign's `run: {threads: N}` (what `--show-settings` prints).
    Campaign,
}

/// Resolves the pinned thread count (`--threads`, else `RAYON_NUM_THREADS`, else the
/// campaign's `run.threads`), or explains why the run is refused.
///
/// A count above [`max_threads`] is refused: one query runs per thread, so thousands of threads
/// on a few cores measure the scheduler, not the legs (and can stall the machine).
pub fn pinned_threads(
    flag: Option<usize>,
    campaign: Option<usize>,
) -> Result<(usize, ThreadSource), String> {
    let (n, source, name) = match (flag, std::env::var("RAYON_NUM_THREADS")) {
        (Some(n), _) => (n, ThreadSource::Flag, "--threads"),
        (None, Ok(v)) => match v.trim().parse::<usize>() {
            Ok(n) => (n, ThreadSource::Env, "RAYON_NUM_THREADS"),
            Err(_) => return Err(format!("RAYON_NUM_THREADS={v:?} is not a positive integer")),
        },
        (None, Err(_)) => match campaign {
            Some(n) => (n, ThreadSource::Campaign, "campaign field `run.threads`"),
            None => return Err(REFUSAL.into()),
        },
    };
    check_thread_count(n, name, max_threads())?;
    Ok((n, source))
}

/// The largest thread count a run accepts: four per core this process may use (at least 8), so
/// a run can oversubscribe a little (latency studies do) but never by thousands.
pub fn max_threads() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    (4 * cores).max(8)
}

/// Refuses 0 and counts above `max`, naming where the count came from.
fn check_thread_count(n: usize, name: &str, max: usize) -> Result<(), String> {
    if n == 0 {
        return Err(format!("{name} must be at least 1"));
    }
    if n > max {
        return Err(format!(
            "{name} is {n}, above the bound of {max} threads (4 per available core, at least 8): \
             one query runs per thread, so more threads than that measure the scheduler, not the legs"
        ));
    }
    Ok(())
}

/// The message a run without a pinned thread count is refused with.
pub const REFUSAL: &str = "refusing to run: pin the thread count with --threads N, \
RAYON_NUM_THREADS=N or the campaign's `run: {threads: N}`. Rankings here do not depend on it \
(one query per thread, fixed summation order), but latency does, and a summary must say what it \
was measured with.";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flag_wins_and_zero_is_refused() {
        assert_eq!(
            pinned_threads(Some(2), Some(3)).unwrap(),
            (2, ThreadSource::Flag)
        );
        assert!(pinned_threads(Some(0), Some(3)).is_err());
    }

    #[test]
    fn thread_counts_above_the_bound_are_refused_naming_their_source() {
        assert!(check_thread_count(8, "--threads", 8).is_ok());
        assert!(check_thread_count(1, "--threads", 8).is_ok());
        let e = check_thread_count(9, "RAYON_NUM_THREADS", 8).unwrap_err();
        assert!(
            e.starts_with("RAYON_NUM_THREADS is 9, above the bound of 8"),
            "{e}"
        );
        let e = check_thread_count(0, "campaign field `run.threads`", 8).unwrap_err();
        assert_eq!(e, "campaign field `run.threads` must be at least 1");
        assert!(max_threads() >= 8);
        let e = pinned_threads(Some(100_000), None).unwrap_err();
        assert!(e.contains("--threads is 100000, above the bound"), "{e}");
    }

    #[test]
    fn contract_is_stable_within_a_process() {
        assert_eq!(Contract::current(), Contract::current());
    }
}
