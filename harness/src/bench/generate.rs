//! `hopbench bench generate`: how generating the synthetic world grows with its size.
//!
//! For each requested passage count, one world of `passages / (1 + distractors_per_entity)`
//! entities and a tenth as many questions (within the generator's limits) is generated in
//! process and timed; the peak resident set (`VmHWM` of `/proc/self/status`) is reset before
//! each size where the kernel allows it (`/proc/self/clear_refs`), so each row's peak is that
//! size's own. The growth exponent is the least-squares slope of log(time) on log(passages).

use std::time::Instant;

use anyhow::{bail, Result};
use hopbench_datasets::stages::{peak_rss_mib, reset_peak_rss};
use hopbench_datasets::synthetic::{self, SyntheticConfig};
use serde::Serialize;

/// One generated world.
#[derive(Debug, Serialize)]
pub struct GenerateTiming {
    /// Passages generated.
    pub passages: usize,
    /// Entities of the world.
    pub entities: usize,
    /// Questions generated.
    pub questions: usize,
    /// Wall time of `synthetic::try_generate`, seconds.
    pub seconds: f64,
    /// Bytes of passage text (the bulk of the dataset held in memory).
    pub text_bytes: usize,
    /// Peak resident set during this size, MiB (`None` where `/proc` is unavailable).
    pub peak_rss_mib: Option<f64>,
    /// Whether the peak was reset before this size (otherwise it is the process's peak so far).
    pub peak_reset: bool,
}

/// The whole benchmark: one row per size and the fitted growth exponent.
#[derive(Debug, Serialize)]
pub struct GenerateReport {
    /// The rows, in the order asked.
    pub results: Vec<GenerateTiming>,
    /// Slope of log(seconds) against log(passages) (`None` with fewer than two sizes).
    pub growth_exponent: Option<f64>,
}

/// The config benchmarked for `passages` passages.
pub fn config_for(passages: usize, distractors_per_entity: usize, seed: u64) -> SyntheticConfig {
    let entities = passages / (1 + distractors_per_entity);
    SyntheticConfig {
        seed,
        entities,
        questions: (passages / 10)
            .min(entities / 2)
            .min(SyntheticConfig::MAX_QUESTIONS),
        distractors_per_entity,
        ..SyntheticConfig::default()
    }
}

/// Least-squares slope of `ln y` on `ln x`.
pub fn log_log_slope(points: &[(f64, f64)]) -> Option<f64> {
    if points.len() < 2 {
        return None;
    }
    let logs: Vec<(f64, f64)> = points.iter().map(|&(x, y)| (x.ln(), y.ln())).collect();
    let n = logs.len() as f64;
    let mx = logs.iter().map(|p| p.0).sum::<f64>() / n;
    let my = logs.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = logs.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = logs.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    (sxx > 0.0).then(|| sxy / sxx)
}

/// Generate one world per size in `passages` and time it.
pub fn generate(
    passages: &[usize],
    distractors_per_entity: usize,
    seed: u64,
) -> Result<GenerateReport> {
    if passages.is_empty() {
        bail!("--passages: give at least one size");
    }
    let mut results = Vec::with_capacity(passages.len());
    for &n in passages {
        let cfg = config_for(n, distractors_per_entity, seed);
        let peak_reset = reset_peak_rss();
        let started = Instant::now();
        let ds =
            synthetic::try_generate(&cfg).map_err(|e| anyhow::anyhow!("--passages {n}: {e}"))?;
        let seconds = started.elapsed().as_secs_f64();
        let peak = peak_rss_mib();
        results.push(GenerateTiming {
            passages: ds.passages.len(),
            entities: cfg.entities,
            questions: ds.questions.len(),
            seconds,
            text_bytes: ds.passages.iter().map(|p| p.text.len()).sum(),
            peak_rss_mib: peak,
            peak_reset,
        });
        drop(ds);
    }
    let points: Vec<(f64, f64)> = results
        .iter()
        .map(|r| (r.passages as f64, r.seconds))
        .collect();
    Ok(GenerateReport {
        growth_exponent: log_log_slope(&points),
        results,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slope_of_a_power_law() {
        let pts: Vec<(f64, f64)> = [1e3, 1e4, 1e5]
            .iter()
            .map(|&x: &f64| (x, 3.0 * x.powf(1.5)))
            .collect();
        assert!((log_log_slope(&pts).unwrap() - 1.5).abs() < 1e-9);
        assert_eq!(log_log_slope(&pts[..1]), None);
    }

    #[test]
    fn configs_are_valid_at_every_benchmarked_size() {
        for n in [10_000, 100_000, 1_000_000] {
            let cfg = config_for(n, 1, 1);
            assert_eq!(cfg.passages(), n);
            assert!(cfg.validate().is_ok(), "{cfg:?}");
        }
        assert_eq!(config_for(1_000_000, 1, 1).questions, 100_000);
    }

    #[test]
    fn a_small_run_reports_every_size() {
        let r = generate(&[400, 800], 1, 5).unwrap();
        assert_eq!(r.results.len(), 2);
        assert_eq!(r.results[1].passages, 800);
        assert!(r
            .results
            .iter()
            .all(|t| t.seconds > 0.0 && t.text_bytes > 0));
        assert!(r.growth_exponent.is_some());
        assert!(generate(&[], 1, 5).is_err());
        assert!(generate(&[20_000_002], 1, 5).is_err(), "beyond the limit");
    }
}
