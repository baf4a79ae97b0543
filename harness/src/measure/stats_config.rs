//! The statistical settings of a campaign (`stats:`), and the one place every statistic a cell
//! or a comparison reports is computed through, so `ci: off` turns them all off at once.

use serde::{Deserialize, Serialize};

/// Statistical settings for summaries and comparisons. A key left out takes its default
/// (`stats: {ci: off}` alone is a whole group); an unknown key is an error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StatsConfig {
    /// Bootstrap resamples.
    pub resamples: usize,
    /// Randomization-test permutations.
    pub permutations: usize,
    /// Seed of both (fixed: identical numbers on every machine).
    pub seed: u64,
    /// `off`: no confidence intervals and no p-values anywhere (summaries, curves, compare),
    /// for quick looks; the only way to get none, since too few draws are refused.
    #[serde(default, skip_serializing_if = "CiMode::is_on")]
    pub ci: CiMode,
}

/// Whether the campaign computes confidence intervals and p-values.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CiMode {
    /// Bootstrap CIs and randomization p-values (the default).
    #[default]
    On,
    /// None.
    Off,
}

impl CiMode {
    /// Whether CIs and p-values are computed.
    pub fn is_on(&self) -> bool {
        *self == CiMode::On
    }
}

impl Default for StatsConfig {
    fn default() -> Self {
        StatsConfig {
            resamples: 2_000,
            permutations: 10_000,
            seed: 20_261_129,
            ci: CiMode::On,
        }
    }
}

/// Every statistic a cell or a comparison reports goes through these, so `ci: off` turns them
/// all off in one place. `None`: off, or the sample is too small for the statistic.
impl StatsConfig {
    /// Percentile-bootstrap 95% CI of the mean of `values`.
    pub fn mean_ci(&self, values: &[f64]) -> Option<[f64; 2]> {
        if !self.ci.is_on() {
            return None;
        }
        let c = crate::measure::stats::bootstrap_mean_ci(values, self.resamples, 0.95, self.seed)
            .ok()?;
        Some([c.lo, c.hi])
    }
    /// [`Self::mean_ci`] of several per-query columns of one query set, in one pass (each CI
    /// bit-identical to its own [`Self::mean_ci`]).
    pub fn mean_cis(&self, columns: &[&[f64]]) -> Vec<Option<[f64; 2]>> {
        if !self.ci.is_on() {
            return vec![None; columns.len()];
        }
        match crate::measure::stats::bootstrap_mean_cis(columns, self.resamples, 0.95, self.seed) {
            Ok(cis) => cis.into_iter().map(|c| Some([c.lo, c.hi])).collect(),
            Err(_) => columns.iter().map(|c| self.mean_ci(c)).collect(),
        }
    }
    /// Paired-bootstrap 95% CI of the mean difference `b - a`.
    pub fn paired_ci(&self, a: &[f64], b: &[f64]) -> Option<[f64; 2]> {
        if !self.ci.is_on() {
            return None;
        }
        let c = crate::measure::stats::paired_bootstrap_ci(a, b, self.resamples, 0.95, self.seed)
            .ok()?;
        Some([c.lo, c.hi])
    }
    /// Student-t 95% CI of the mean of the paired differences.
    pub fn t_ci(&self, diffs: &[f64]) -> Option<[f64; 2]> {
        if !self.ci.is_on() {
            return None;
        }
        let c = crate::measure::stats::t_mean_ci(diffs, 0.95).ok()?;
        Some([c.lo, c.hi])
    }
    /// Two-sided paired randomization-test p-value.
    pub fn p_value(&self, a: &[f64], b: &[f64]) -> Option<f64> {
        if !self.ci.is_on() {
            return None;
        }
        crate::measure::stats::randomization_test(a, b, self.permutations, self.seed).ok()
    }
}
