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
pub fn pinned_threads(
    flag: Option<usize>,
    campaign: Option<usize>,
) -> Result<(usize, ThreadSource), String> {
    if let Some(n) = flag {
        if n == 0 {
            return Err("--threads must be at least 1".into());
        }
        return Ok((n, ThreadSource::Flag));
    }
    match std::env::var("RAYON_NUM_THREADS") {
        Ok(v) => match v.trim().parse::<usize>() {
            Ok(n) if n > 0 => Ok((n, ThreadSource::Env)),
            _ => Err(format!("RAYON_NUM_THREADS={v:?} is not a positive integer")),
        },
        Err(_) => match campaign {
            Some(0) => Err("campaign field `run.threads` must be at least 1".into()),
            Some(n) => Ok((n, ThreadSource::Campaign)),
            None => Err(REFUSAL.into()),
        },
    }
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
    fn contract_is_stable_within_a_process() {
        assert_eq!(Contract::current(), Contract::current());
    }
}
