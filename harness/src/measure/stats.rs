//! Paired statistics for comparing two runs over the same queries.
//!
//! Every random draw comes from [`SplitMix64`] seeded by the caller and consumed
//! sequentially on one thread — no `rand` crate, no clock — so a CI or p-value is
//! bit-identical on every machine and at every thread count, as the harness's
//! determinism contract requires.

use hopbench_datasets::rng::SplitMix64;
use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};

/// A confidence interval for a mean (or a mean difference).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Ci {
    /// The point estimate: the sample mean of the inputs (not a bootstrap mean).
    pub mean: f64,
    pub lo: f64,
    pub hi: f64,
    /// Number of observations (queries) the interval is over.
    pub n: usize,
}

/// Why a statistic could not be computed. Returned instead of panicking or NaN.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StatsError {
    #[error("no values")]
    Empty,
    #[error("paired inputs differ in length: {a} vs {b}")]
    LengthMismatch { a: usize, b: usize },
    #[error("non-finite value in input")]
    NonFinite,
    #[error("confidence must be in (0, 1), got {0}")]
    BadConfidence(f64),
    #[error("resample/permutation count must be > 0")]
    ZeroResamples,
}

fn check_values(values: &[f64]) -> Result<(), StatsError> {
    if values.is_empty() {
        return Err(StatsError::Empty);
    }
    if values.iter().any(|v| !v.is_finite()) {
        return Err(StatsError::NonFinite);
    }
    Ok(())
}

fn check_confidence(confidence: f64) -> Result<(), StatsError> {
    if confidence > 0.0 && confidence < 1.0 {
        Ok(())
    } else {
        Err(StatsError::BadConfidence(confidence))
    }
}

/// Per-query differences `b[i] - a[i]`, after checking the pair is comparable.
fn paired_diffs(a: &[f64], b: &[f64]) -> Result<Vec<f64>, StatsError> {
    if a.len() != b.len() {
        return Err(StatsError::LengthMismatch {
            a: a.len(),
            b: b.len(),
        });
    }
    check_values(a)?;
    check_values(b)?;
    Ok(a.iter().zip(b).map(|(x, y)| y - x).collect())
}

fn mean_of(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

/// Percentile bootstrap CI of the mean.
///
/// Draws `resamples` samples of size n with replacement (indices from
/// `SplitMix64::new(seed)`), takes each sample's mean, and reports the
/// `(1-confidence)/2` and `(1+confidence)/2` quantiles of those means (linear
/// interpolation, as [`crate::measure::metrics::percentile`]). `mean` is the sample mean.
pub fn bootstrap_mean_ci(
    values: &[f64],
    resamples: usize,
    confidence: f64,
    seed: u64,
) -> Result<Ci, StatsError> {
    let mut cis = bootstrap_mean_cis(&[values], resamples, confidence, seed)?;
    Ok(cis.pop().expect("one column, one CI"))
}

/// [`bootstrap_mean_ci`] of several samples of one length (per-query columns of one set of
/// queries) in one pass: resample r draws the same indices for every column, exactly as
/// separate calls with the same seed would, so each CI is bit-identical to its own call, at one
/// draw per query instead of one per query per column.
pub fn bootstrap_mean_cis(
    columns: &[&[f64]],
    resamples: usize,
    confidence: f64,
    seed: u64,
) -> Result<Vec<Ci>, StatsError> {
    let Some(first) = columns.first() else {
        return Ok(Vec::new());
    };
    let n = first.len();
    for c in columns {
        if c.len() != n {
            return Err(StatsError::LengthMismatch { a: n, b: c.len() });
        }
        check_values(c)?;
    }
    check_confidence(confidence)?;
    if resamples == 0 {
        return Err(StatsError::ZeroResamples);
    }
    let m = columns.len();
    // row-major, so one draw reads one place
    let rows: Vec<f64> = (0..n)
        .flat_map(|i| columns.iter().map(move |c| c[i]))
        .collect();
    let mut rng = SplitMix64::new(seed);
    let mut means = vec![Vec::with_capacity(resamples); m];
    let mut sums = vec![0.0f64; m];
    // the draws of a batch are made before its rows are read, so the reads (random, and out of
    // cache for large samples) overlap instead of waiting one by one; the sums still add in
    // draw order
    const BATCH: usize = 1024;
    let mut draws = vec![0usize; BATCH.min(n)];
    for _ in 0..resamples {
        sums.fill(0.0);
        let mut left = n;
        while left > 0 {
            let b = left.min(BATCH);
            for d in &mut draws[..b] {
                *d = rng.below(n) * m;
            }
            for &d in &draws[..b] {
                for (s, v) in sums.iter_mut().zip(&rows[d..d + m]) {
                    *s += v;
                }
            }
            left -= b;
        }
        for (column, s) in means.iter_mut().zip(&sums) {
            column.push(s / n as f64);
        }
    }
    let alpha = 1.0 - confidence;
    Ok(columns
        .iter()
        .zip(&means)
        .map(|(values, means)| {
            let q = |p: f64| {
                crate::measure::metrics::percentile(means, 100.0 * p).expect("finite, non-empty")
            };
            Ci {
                mean: mean_of(values),
                lo: q(alpha / 2.0),
                hi: q(1.0 - alpha / 2.0),
                n,
            }
        })
        .collect())
}

/// Paired bootstrap CI of `mean(b - a)`: queries are resampled as pairs, which
/// is the same as bootstrapping the per-query differences. Positive = `b` better
/// (for a higher-is-better metric).
pub fn paired_bootstrap_ci(
    a: &[f64],
    b: &[f64],
    resamples: usize,
    confidence: f64,
    seed: u64,
) -> Result<Ci, StatsError> {
    bootstrap_mean_ci(&paired_diffs(a, b)?, resamples, confidence, seed)
}

/// Two-sided paired sign-flip randomization test of `mean(b - a) = 0`.
///
/// Under the null each query's difference is equally likely to have either sign,
/// so each of `permutations` rounds flips every difference's sign with an
/// independent fair bit and counts rounds whose `|Σ d|` is at least the observed
/// `|Σ d|` (minus a relative 1e-12 tolerance so exact ties count as extreme
/// despite float reassociation). Returns `(count + 1) / (permutations + 1)`, the
/// +1 correction that keeps the p-value valid (never 0). Returns exactly 1.0
/// when every difference is 0 (nothing to test).
pub fn randomization_test(
    a: &[f64],
    b: &[f64],
    permutations: usize,
    seed: u64,
) -> Result<f64, StatsError> {
    let d = paired_diffs(a, b)?;
    if permutations == 0 {
        return Err(StatsError::ZeroResamples);
    }
    if d.iter().all(|&x| x == 0.0) {
        return Ok(1.0);
    }
    let observed = d.iter().sum::<f64>().abs();
    let tolerance = 1e-12 * d.iter().map(|x| x.abs()).sum::<f64>();
    let threshold = observed - tolerance;
    let mut rng = SplitMix64::new(seed);
    // One draw of 64 sign bits per 64 differences, rounds drawn in order, each round summed in
    // query order: the p-value of the plain loop (the tests' `randomization_reference`), bit for
    // bit. A flip is an XOR of the sign bit (exactly `-x`), so no branch depends on a random
    // bit, and `LANES` rounds are summed side by side so their additions overlap.
    const LANES: usize = 4;
    let words = d.len().div_ceil(64);
    let mut bits = vec![0u64; LANES * words];
    let mut extreme = 0usize;
    let mut done = 0;
    while done < permutations {
        let lanes = LANES.min(permutations - done);
        for w in bits[..lanes * words].iter_mut() {
            *w = rng.next_u64();
        }
        let mut sums = [0.0f64; LANES];
        for (i, &x) in d.iter().enumerate() {
            let (word, bit) = (i / 64, i % 64);
            let x = x.to_bits();
            for (l, sum) in sums[..lanes].iter_mut().enumerate() {
                let flip = ((bits[l * words + word] >> bit) & 1) << 63;
                *sum += f64::from_bits(x ^ flip);
            }
        }
        extreme += sums[..lanes]
            .iter()
            .filter(|s| s.abs() >= threshold)
            .count();
        done += lanes;
    }
    Ok((extreme + 1) as f64 / (permutations + 1) as f64)
}

/// Holm–Bonferroni step-down adjusted p-values, returned in the input order.
///
/// With the m p-values sorted ascending `p(1) ≤ … ≤ p(m)`, the adjusted value of
/// `p(j)` is `min(1, max_{i ≤ j} (m - i + 1)·p(i))` — the running max makes the
/// adjustment monotone in the raw p-value. Ties keep input order (stable sort).
/// A NaN input yields NaN at its position and does not affect the others
/// (it is still counted in m, which is conservative).
pub fn holm(p_values: &[f64]) -> Vec<f64> {
    let m = p_values.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&i, &j| p_values[i].total_cmp(&p_values[j]));
    let mut out = vec![f64::NAN; m];
    let mut running = 0.0f64;
    for (rank, &i) in order.iter().enumerate() {
        let p = p_values[i];
        if p.is_nan() {
            continue;
        }
        running = running.max(((m - rank) as f64 * p).min(1.0));
        out[i] = running;
    }
    out
}

/// Parametric Student-t CI of the mean: `mean ± t_{(1+confidence)/2, n-1} · s/√n`
/// with `s` the sample standard deviation (n-1 denominator), shown beside the
/// bootstrap as a cross-check.
///
/// NaN-free by construction: with n = 1 (no spread information) or zero sample
/// variance the interval is degenerate, `lo = hi = mean`; `n` in the result lets
/// a reader tell a one-query interval from a certain one. Empty input is an error.
pub fn t_mean_ci(values: &[f64], confidence: f64) -> Result<Ci, StatsError> {
    check_values(values)?;
    check_confidence(confidence)?;
    let n = values.len();
    let mean = mean_of(values);
    let ss: f64 = values.iter().map(|v| (v - mean).powi(2)).sum();
    let degenerate = Ci {
        mean,
        lo: mean,
        hi: mean,
        n,
    };
    if n < 2 || ss == 0.0 {
        return Ok(degenerate);
    }
    let se = (ss / (n - 1) as f64).sqrt() / (n as f64).sqrt();
    let t = StudentsT::new(0.0, 1.0, (n - 1) as f64)
        .expect("n >= 2 gives valid freedom")
        .inverse_cdf((1.0 + confidence) / 2.0);
    Ok(Ci {
        mean,
        lo: mean - t * se,
        hi: mean + t * se,
        n,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic pseudo-data: uniform in [0, 1).
    fn uniform(n: usize, seed: u64) -> Vec<f64> {
        let mut r = SplitMix64::new(seed);
        (0..n)
            .map(|_| (r.next_u64() >> 11) as f64 / (1u64 << 53) as f64)
            .collect()
    }

    #[test]
    fn holm_hand_computed() {
        // m = 4. Sorted: 0.01 (idx 1), 0.02 (idx 3), 0.03 (idx 0), 0.04 (idx 2).
        //   0.01·4 = 0.04
        //   0.02·3 = 0.06 -> max(0.04, 0.06) = 0.06
        //   0.03·2 = 0.06 -> 0.06
        //   0.04·1 = 0.04 -> running max keeps 0.06 (monotone)
        let adj = holm(&[0.03, 0.01, 0.04, 0.02]);
        let want = [0.06, 0.04, 0.06, 0.06];
        for (a, w) in adj.iter().zip(want) {
            assert!((a - w).abs() < 1e-12, "{adj:?}");
        }
        // Capped at 1: 0.4·3 = 1.2 -> 1; 0.5·2 = 1.0; 0.9·1 -> running max 1.
        assert_eq!(holm(&[0.5, 0.4, 0.9]), vec![1.0, 1.0, 1.0]);
        assert!(holm(&[]).is_empty());
        assert_eq!(holm(&[0.2]), vec![0.2]);
    }

    /// The sign-flip test as the plain loop it is defined as: one fair bit per difference
    /// (64 per draw), a branch per flip.
    fn randomization_reference(a: &[f64], b: &[f64], permutations: usize, seed: u64) -> f64 {
        let d = paired_diffs(a, b).unwrap();
        if d.iter().all(|&x| x == 0.0) {
            return 1.0;
        }
        let observed = d.iter().sum::<f64>().abs();
        let tolerance = 1e-12 * d.iter().map(|x| x.abs()).sum::<f64>();
        let mut rng = SplitMix64::new(seed);
        let mut extreme = 0usize;
        for _ in 0..permutations {
            let mut bits = 0u64;
            let mut sum = 0.0;
            for (i, &x) in d.iter().enumerate() {
                if i % 64 == 0 {
                    bits = rng.next_u64();
                }
                sum += if bits & 1 == 1 { -x } else { x };
                bits >>= 1;
            }
            if sum.abs() >= observed - tolerance {
                extreme += 1;
            }
        }
        (extreme + 1) as f64 / (permutations + 1) as f64
    }

    #[test]
    fn the_randomization_test_is_its_plain_loop_bit_for_bit() {
        // sizes around the 64-difference words and permutation counts around the lanes, with
        // ties (equal per-query values), exact zeros and signed zeros among the differences
        for n in [1usize, 2, 63, 64, 65, 130, 333] {
            for perms in [1usize, 3, 4, 5, 999] {
                let a = uniform(n, 3 + n as u64);
                let mut b = uniform(n, 7 + perms as u64);
                for i in (0..n).step_by(5) {
                    b[i] = a[i];
                }
                if n > 2 {
                    b[1] = (a[1] * 4.0).round() / 4.0;
                    b[2] = -0.0;
                }
                let fast = randomization_test(&a, &b, perms, 11).unwrap();
                let slow = randomization_reference(&a, &b, perms, 11);
                assert_eq!(
                    fast.to_bits(),
                    slow.to_bits(),
                    "n {n}, {perms} permutations"
                );
            }
        }
        // a decisive difference: only the rounds that flip every sign alike are as extreme
        let a = vec![0.0; 40];
        let b = vec![1.0; 40];
        assert_eq!(
            randomization_test(&a, &b, 500, 1).unwrap().to_bits(),
            randomization_reference(&a, &b, 500, 1).to_bits()
        );
    }

    #[test]
    fn randomization_identical_is_one() {
        let a = uniform(50, 1);
        assert_eq!(randomization_test(&a, &a, 1000, 42), Ok(1.0));
    }

    #[test]
    fn randomization_strong_shift_is_significant() {
        let a = uniform(100, 1);
        let b: Vec<f64> = uniform(100, 2).iter().map(|x| x + 0.5).collect();
        let p = randomization_test(&a, &b, 9999, 42).unwrap();
        // No flip can reach the observed sum, so p is the floor 1/10000.
        assert!(p < 0.01, "p = {p}");
        assert_eq!(p, 1.0 / 10_000.0);
        // No shift (two draws of the same distribution): not significant.
        let p0 = randomization_test(&a, &uniform(100, 2), 9999, 42).unwrap();
        assert!(p0 > 0.05, "p0 = {p0}");
    }

    #[test]
    fn randomization_is_deterministic_and_symmetric() {
        let a = uniform(40, 3);
        let b: Vec<f64> = uniform(40, 4).iter().map(|x| x + 0.1).collect();
        let p1 = randomization_test(&a, &b, 2000, 9).unwrap();
        let p2 = randomization_test(&a, &b, 2000, 9).unwrap();
        assert_eq!(p1.to_bits(), p2.to_bits());
        // Two-sided: swapping the runs gives the same p.
        assert_eq!(randomization_test(&b, &a, 2000, 9).unwrap(), p1);
    }

    #[test]
    fn bootstrap_contains_mean_and_is_deterministic() {
        let v = uniform(200, 5);
        let c1 = bootstrap_mean_ci(&v, 2000, 0.95, 17).unwrap();
        // the batched, shared draws are the plain sequential bootstrap, bit for bit
        let plain = |values: &[f64], resamples: usize, seed: u64| {
            let n = values.len();
            let mut rng = SplitMix64::new(seed);
            let means: Vec<f64> = (0..resamples)
                .map(|_| (0..n).map(|_| values[rng.below(n)]).sum::<f64>() / n as f64)
                .collect();
            let alpha = 1.0 - 0.95;
            let q = |p: f64| crate::measure::metrics::percentile(&means, 100.0 * p).unwrap();
            [q(alpha / 2.0), q(1.0 - alpha / 2.0)]
        };
        let long: Vec<f64> = (0..2500).map(|i| ((i * 37) % 101) as f64 / 100.0).collect();
        for (values, resamples, seed) in [(&v[..], 2000, 17), (&long[..], 300, 5)] {
            let c = bootstrap_mean_ci(values, resamples, 0.95, seed).unwrap();
            assert_eq!([c.lo, c.hi], plain(values, resamples, seed));
        }
        // several columns at once give each column's own CI, bit for bit
        let w: Vec<f64> = v.iter().map(|x| (x * 7.0).sin().abs()).collect();
        let both = bootstrap_mean_cis(&[&v, &w], 2000, 0.95, 17).unwrap();
        assert_eq!(both, [c1, bootstrap_mean_ci(&w, 2000, 0.95, 17).unwrap()]);
        assert_eq!(
            bootstrap_mean_cis(&[&v, &w[1..]], 10, 0.95, 1),
            Err(StatsError::LengthMismatch {
                a: v.len(),
                b: w.len() - 1
            })
        );
        let c2 = bootstrap_mean_ci(&v, 2000, 0.95, 17).unwrap();
        assert_eq!(c1.mean.to_bits(), c2.mean.to_bits());
        assert_eq!(c1.lo.to_bits(), c2.lo.to_bits());
        assert_eq!(c1.hi.to_bits(), c2.hi.to_bits());
        assert!(c1.lo < c1.mean && c1.mean < c1.hi, "{c1:?}");
        assert_eq!(c1.n, 200);
        // Roughly matches the t interval for a smooth sample this size.
        let t = t_mean_ci(&v, 0.95).unwrap();
        assert!(((c1.hi - c1.lo) / (t.hi - t.lo) - 1.0).abs() < 0.15);
    }

    #[test]
    fn ci_width_shrinks_with_n() {
        let small = uniform(50, 6);
        let large = uniform(2000, 6);
        let bs = bootstrap_mean_ci(&small, 1000, 0.95, 1).unwrap();
        let bl = bootstrap_mean_ci(&large, 1000, 0.95, 1).unwrap();
        assert!(bl.hi - bl.lo < bs.hi - bs.lo);
        let ts = t_mean_ci(&small, 0.95).unwrap();
        let tl = t_mean_ci(&large, 0.95).unwrap();
        assert!(tl.hi - tl.lo < ts.hi - ts.lo);
    }

    #[test]
    fn paired_ci_of_difference() {
        let a = [0.1, 0.2, 0.3, 0.4];
        let b = [0.3, 0.4, 0.5, 0.6];
        // Every difference is exactly 0.2 up to float error -> a (near) point CI at 0.2.
        let c = paired_bootstrap_ci(&a, &b, 500, 0.9, 3).unwrap();
        assert!((c.mean - 0.2).abs() < 1e-12);
        assert!((c.lo - 0.2).abs() < 1e-12 && (c.hi - 0.2).abs() < 1e-12);
        assert_eq!(c.n, 4);
    }

    #[test]
    fn t_ci_hand_computed_and_degenerate() {
        // [1, 2, 3]: mean 2, s = 1, se = 1/√3, t_{0.975, 2} = 4.302652729911275.
        let c = t_mean_ci(&[1.0, 2.0, 3.0], 0.95).unwrap();
        let half = 4.302652729911275 / 3f64.sqrt();
        assert!((c.lo - (2.0 - half)).abs() < 1e-9 && (c.hi - (2.0 + half)).abs() < 1e-9);
        let one = t_mean_ci(&[0.7], 0.95).unwrap();
        assert_eq!((one.lo, one.mean, one.hi, one.n), (0.7, 0.7, 0.7, 1));
        let flat = t_mean_ci(&[0.5; 4], 0.95).unwrap();
        assert_eq!((flat.lo, flat.hi), (0.5, 0.5));
    }

    #[test]
    fn errors_instead_of_panics() {
        let mismatch = StatsError::LengthMismatch { a: 2, b: 3 };
        assert_eq!(
            paired_bootstrap_ci(&[1.0, 2.0], &[1.0, 2.0, 3.0], 10, 0.95, 0),
            Err(mismatch.clone())
        );
        assert_eq!(
            randomization_test(&[1.0, 2.0], &[1.0, 2.0, 3.0], 10, 0),
            Err(mismatch)
        );
        assert_eq!(bootstrap_mean_ci(&[], 10, 0.95, 0), Err(StatsError::Empty));
        assert_eq!(randomization_test(&[], &[], 10, 0), Err(StatsError::Empty));
        assert_eq!(t_mean_ci(&[], 0.95), Err(StatsError::Empty));
        assert_eq!(
            bootstrap_mean_ci(&[1.0], 10, 1.0, 0),
            Err(StatsError::BadConfidence(1.0))
        );
        assert_eq!(
            bootstrap_mean_ci(&[1.0], 0, 0.95, 0),
            Err(StatsError::ZeroResamples)
        );
        assert_eq!(
            t_mean_ci(&[1.0, f64::NAN], 0.95),
            Err(StatsError::NonFinite)
        );
    }

    #[test]
    fn ci_serde_roundtrip() {
        let c = Ci {
            mean: 0.5,
            lo: 0.25,
            hi: 0.75,
            n: 3,
        };
        let s = serde_json::to_string(&c).unwrap();
        assert_eq!(s, r#"{"mean":0.5,"lo":0.25,"hi":0.75,"n":3}"#);
        assert_eq!(serde_json::from_str::<Ci>(&s).unwrap(), c);
    }
}
