//! From a sequence's token vectors to its sentence vector, as sentence-transformers' modules
//! compute it: Pooling (each mode, concatenated in order), then the Dense layers and Normalize in
//! `modules.json` order, then `truncate_dim`.
//!
//! Sums run in `f64` in a fixed order, so a vector is a pure function of its token vectors. The
//! plain pipeline (mean, then normalise) is the arithmetic every vector before pipelines were
//! read had, bit for bit.

use super::model_dir::{Dense, ModelDir, PoolMode, Post};

/// The sentence vector of one sequence: `rows` is its `len x h` token vectors (row-major), and
/// its first `skip` tokens are left out of the pooling (a prompt's, when the model pools without
/// it; the encoder still attended to them).
pub(crate) fn sentence_vector(dir: &ModelDir, rows: &[f32], h: usize, skip: usize) -> Vec<f32> {
    let len = rows.len() / h;
    // the first `skip` positions leave the pooling mask; at least the final special token stays
    let skip = skip.min(len.saturating_sub(1));
    let kept = &rows[skip * h..];
    let mut v: Vec<f32> = Vec::with_capacity(h * dir.pooling.modes.len());
    for mode in &dir.pooling.modes {
        match mode {
            PoolMode::Mean => v.extend(mean(kept, h)),
            PoolMode::MeanSqrtLen => {
                let n = (kept.len() / h) as f64;
                v.extend(sum(kept, h).iter().map(|s| (s / n.sqrt()) as f32));
            }
            PoolMode::Cls => v.extend_from_slice(&kept[..h]),
            PoolMode::LastToken => v.extend_from_slice(&kept[kept.len() - h..]),
            PoolMode::Max => v.extend(max(kept, h)),
            PoolMode::WeightedMean => v.extend(weighted_mean(kept, h, skip)),
        }
    }
    for post in &dir.post {
        v = match post {
            Post::Dense(d) => dense(d, &v),
            Post::Normalize => normalise(&v),
        };
    }
    if let Some(t) = dir.truncate_dim {
        v.truncate(t);
    }
    v
}

/// Component-wise sums of the rows, in row order.
fn sum(rows: &[f32], h: usize) -> Vec<f64> {
    let mut acc = vec![0f64; h];
    for row in rows.chunks_exact(h) {
        for (a, &v) in acc.iter_mut().zip(row) {
            *a += v as f64;
        }
    }
    acc
}

/// The mean of the rows.
fn mean(rows: &[f32], h: usize) -> Vec<f32> {
    let n = rows.len() / h;
    sum(rows, h).iter().map(|a| (a / n as f64) as f32).collect()
}

fn max(rows: &[f32], h: usize) -> Vec<f32> {
    let mut out = vec![f32::NEG_INFINITY; h];
    for row in rows.chunks_exact(h) {
        for (m, &v) in out.iter_mut().zip(row) {
            *m = m.max(v);
        }
    }
    out
}

/// The mean weighted by position: the token at position `t` of the sequence (counting the
/// skipped ones, from 0) weighs `t + 1`.
fn weighted_mean(rows: &[f32], h: usize, skip: usize) -> Vec<f32> {
    let mut acc = vec![0f64; h];
    let mut total = 0f64;
    for (t, row) in rows.chunks_exact(h).enumerate() {
        let w = (skip + t + 1) as f64;
        total += w;
        for (a, &v) in acc.iter_mut().zip(row) {
            *a += w * v as f64;
        }
    }
    acc.iter().map(|a| (a / total) as f32).collect()
}

/// `activation(W v + b)`.
fn dense(d: &Dense, v: &[f32]) -> Vec<f32> {
    d.weight
        .chunks_exact(d.in_features)
        .enumerate()
        .map(|(o, w)| {
            let mut s: f64 = w.iter().zip(v).map(|(&a, &b)| a as f64 * b as f64).sum();
            if let Some(b) = &d.bias {
                s += b[o] as f64;
            }
            d.activation.apply(s) as f32
        })
        .collect()
}

/// `v / max(||v||, 1e-12)`, the norm in `f64`.
fn normalise(v: &[f32]) -> Vec<f32> {
    let norm = v
        .iter()
        .map(|&x| x as f64 * x as f64)
        .sum::<f64>()
        .sqrt()
        .max(1e-12);
    v.iter().map(|&x| (x as f64 / norm) as f32).collect()
}
