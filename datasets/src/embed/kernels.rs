//! Fused CPU kernels for the BERT forward pass, as candle custom ops.
//!
//! candle's generic ops each make a full pass over memory (bias add, residual add, layer norm,
//! GELU are four passes and four allocations); these kernels do one pass, in place where they can,
//! parallel over rows. Every kernel is row-local with a fixed summation order, so a row's result
//! does not depend on the other rows, on the row count, or on the thread count.
//!
//! Each kernel's loop is compiled for several instruction sets and the widest the CPU has is
//! chosen at run time ([`vectorized`]). The loops are element-wise or sum in an explicit fixed
//! order, and Rust never fuses a multiply and an add on its own, so every instruction set gives
//! the same bits.

use candle_core::{CpuStorage, InplaceOp1, InplaceOp2, Layout};
use rayon::prelude::*;

/// Runs `f` compiled for the widest vector instructions this CPU has (AVX-512, AVX2 + FMA, or
/// the baseline), detected at run time. `f` must be `#[inline(always)]` and call only
/// `#[inline(always)]` functions, or what it calls is compiled for the baseline.
#[inline(always)]
pub(crate) fn vectorized<R>(f: impl FnOnce() -> R) -> R {
    pulp::Arch::new().dispatch(f)
}

/// The matrix kernel the `gemm` crate picks on this CPU, by the rule it applies at run time
/// (its `init_gemm_fn`): the vectors' last bits depend on it, so it is part of the model id.
pub(crate) fn gemm_kernel() -> &'static str {
    #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            "avx512f"
        } else if std::arch::is_x86_feature_detected!("fma") {
            "fma"
        } else {
            "scalar"
        }
    }
    #[cfg(target_arch = "aarch64")]
    {
        if std::arch::is_aarch64_feature_detected!("neon") {
            "neon"
        } else {
            "scalar"
        }
    }
    #[cfg(not(any(target_arch = "x86", target_arch = "x86_64", target_arch = "aarch64")))]
    {
        "scalar"
    }
}

/// Rows per rayon task: enough work per task to amortise scheduling.
fn rows_per_task(row_len: usize) -> usize {
    (16 * 1024 / row_len.max(1)).max(1)
}

fn contiguous_f32<'a>(
    storage: &'a CpuStorage,
    layout: &Layout,
    op: &str,
) -> candle_core::Result<&'a [f32]> {
    let CpuStorage::F32(data) = storage else {
        candle_core::bail!("{op}: expected f32 storage");
    };
    match layout.contiguous_offsets() {
        Some((start, end)) => Ok(&data[start..end]),
        None => candle_core::bail!("{op}: input must be contiguous"),
    }
}

fn contiguous_f32_mut<'a>(
    storage: &'a mut CpuStorage,
    layout: &Layout,
    op: &str,
) -> candle_core::Result<&'a mut [f32]> {
    let CpuStorage::F32(data) = storage else {
        candle_core::bail!("{op}: expected f32 storage");
    };
    match layout.contiguous_offsets() {
        Some((start, end)) => Ok(&mut data[start..end]),
        None => candle_core::bail!("{op}: input must be contiguous"),
    }
}

/// Sum of a slice with eight interleaved accumulators combined in a fixed order: vectorisable,
/// and the same bits for the same slice wherever it sits.
#[inline]
pub(crate) fn sum8(xs: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let chunks = xs.chunks_exact(8);
    let tail = chunks.remainder();
    for c in chunks {
        for i in 0..8 {
            acc[i] += c[i];
        }
    }
    let mut s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
    for &v in tail {
        s += v;
    }
    s
}

/// Sum of squared deviations from `mean`, accumulated like [`sum8`].
#[inline(always)]
fn sq_dev8(xs: &[f32], mean: f32) -> f32 {
    let mut acc = [0f32; 8];
    let chunks = xs.chunks_exact(8);
    let tail = chunks.remainder();
    for c in chunks {
        for i in 0..8 {
            let d = c[i] - mean;
            acc[i] += d * d;
        }
    }
    let mut s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
    for &v in tail {
        let d = v - mean;
        s += d * d;
    }
    s
}

/// Layer norm of one row in place (two-pass mean and variance, biased variance as in torch).
#[inline(always)]
pub(crate) fn layer_norm_row(row: &mut [f32], gamma: &[f32], beta: &[f32], eps: f32) {
    let n = row.len() as f32;
    let mean = sum8(row) / n;
    let var = sq_dev8(row, mean) / n;
    let inv_std = 1.0 / (var + eps).sqrt();
    for ((x, g), b) in row.iter_mut().zip(gamma).zip(beta) {
        *x = (*x - mean) * inv_std * g + b;
    }
}

/// erf for f32: the rational approximation used by Eigen and XLA (numerator odd of degree 13,
/// denominator even of degree 8, input clamped to [-4, 4]), branch-free so that it vectorises.
/// Maximum absolute error against the exact erf is below 1e-6 (checked in the tests).
#[inline(always)]
#[allow(clippy::excessive_precision)]
pub(crate) fn erf_f32(x: f32) -> f32 {
    let x = x.clamp(-4.0, 4.0);
    let x2 = x * x;
    // Numerator: odd polynomial (alpha_1 .. alpha_13), Horner in x^2.
    let mut p = x2 * -2.72614225801306e-10_f32 + 2.77068142495902e-08;
    p = x2 * p + -2.10102402082508e-06;
    p = x2 * p + -5.69250639462346e-05;
    p = x2 * p + -7.34990630326855e-04;
    p = x2 * p + -2.95459980854025e-03;
    p = x2 * p + -1.60960333262415e-02;
    p *= x;
    // Denominator: even polynomial (beta_0 .. beta_8).
    let mut q = x2 * -1.45660718464996e-05_f32 + -2.13374055278905e-04;
    q = x2 * q + -1.68282697438203e-03;
    q = x2 * q + -7.37332916720468e-03;
    q = x2 * q + -1.42647390514189e-02;
    p / q
}

/// GELU with the exact (erf) form, as `hidden_act = "gelu"` in BERT configs.
#[inline(always)]
pub(crate) fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + erf_f32(x * std::f32::consts::FRAC_1_SQRT_2))
}

/// `op(x, b)` on every element `x` of the rows of a `[rows, bias.len()]` tensor, with `b` the
/// bias of its column, in place: the loop of [`BiasInPlace`], by blocks of rows in parallel.
/// `op` must be `#[inline(always)]`, so that it is compiled into the vectorised loop
/// ([`vectorized`]).
fn with_bias_in_place(
    name: &str,
    bias: &[f32],
    storage: &mut CpuStorage,
    layout: &Layout,
    op: impl Fn(&mut f32, &f32) + Sync,
) -> candle_core::Result<()> {
    let width = bias.len();
    let data = contiguous_f32_mut(storage, layout, name)?;
    if data.len() % width != 0 {
        candle_core::bail!("{name}: length {} is not a multiple of {width}", data.len());
    }
    data.par_chunks_mut(width * rows_per_task(width))
        .for_each(|block| {
            vectorized(
                #[inline(always)]
                || {
                    for row in block.chunks_exact_mut(width) {
                        for (x, b) in row.iter_mut().zip(bias) {
                            op(x, b);
                        }
                    }
                },
            )
        });
    Ok(())
}

/// `x <- op(x, bias)` over the rows of a `[rows, bias.len()]` tensor, in place: one kernel for
/// every element-wise op with a bias ([`BiasOp`]), so they share their loop.
pub(crate) struct BiasInPlace<'a, O> {
    pub bias: &'a [f32],
    pub op: O,
}

/// What a [`BiasInPlace`] kernel does to each element `x` with its column's bias `b`.
pub(crate) trait BiasOp {
    /// The kernel's name.
    fn name(&self) -> &'static str;
    /// The op on one element; implementations must be `#[inline(always)]`, so that it is
    /// compiled into the vectorised loop ([`vectorized`]).
    fn apply(&self, x: &mut f32, b: &f32);
}

impl<O: BiasOp + Sync> InplaceOp1 for BiasInPlace<'_, O> {
    fn name(&self) -> &'static str {
        self.op.name()
    }

    fn cpu_fwd(&self, storage: &mut CpuStorage, layout: &Layout) -> candle_core::Result<()> {
        with_bias_in_place(
            self.name(),
            self.bias,
            storage,
            layout,
            #[inline(always)]
            |x: &mut f32, b: &f32| self.op.apply(x, b),
        )
    }
}

/// `x <- gelu(x + bias)`.
pub(crate) struct BiasGelu;

impl BiasOp for BiasGelu {
    fn name(&self) -> &'static str {
        "hopbench-bias-gelu"
    }

    #[inline(always)]
    fn apply(&self, x: &mut f32, b: &f32) {
        *x = gelu(*x + b);
    }
}

/// `x <- layer_norm(x + bias + residual)` over rows, in place on `x`.
pub(crate) struct BiasResidualLayerNorm<'a> {
    pub bias: &'a [f32],
    pub gamma: &'a [f32],
    pub beta: &'a [f32],
    pub eps: f32,
}

impl InplaceOp2 for BiasResidualLayerNorm<'_> {
    fn name(&self) -> &'static str {
        "hopbench-bias-residual-layer-norm"
    }

    fn cpu_fwd(
        &self,
        s1: &mut CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> candle_core::Result<()> {
        let width = self.bias.len();
        let residual = contiguous_f32(s2, l2, self.name())?;
        let data = contiguous_f32_mut(s1, l1, self.name())?;
        if data.len() != residual.len() || data.len() % width != 0 {
            candle_core::bail!("{}: shape mismatch", self.name());
        }
        let chunk = width * rows_per_task(width);
        data.par_chunks_mut(chunk)
            .zip(residual.par_chunks(chunk))
            .for_each(|(block, res)| {
                vectorized(
                    #[inline(always)]
                    || {
                        for (row, res) in block.chunks_exact_mut(width).zip(res.chunks_exact(width))
                        {
                            for ((x, b), r) in row.iter_mut().zip(self.bias).zip(res) {
                                *x = *x + b + r;
                            }
                            layer_norm_row(row, self.gamma, self.beta, self.eps);
                        }
                    },
                )
            });
        Ok(())
    }
}

/// `x <- x + bias`.
pub(crate) struct AddBias;

impl BiasOp for AddBias {
    fn name(&self) -> &'static str {
        "hopbench-add-bias"
    }

    #[inline(always)]
    fn apply(&self, x: &mut f32, b: &f32) {
        *x += b;
    }
}

/// exp for f32, branch-free so that it vectorises: Cody-Waite range reduction to
/// `x = n ln 2 + r`, the Cephes degree-6 polynomial for `e^r`, and `2^n` built from its bits.
/// Relative error below 2e-7 on [-87, 88] (checked in the tests); inputs are clamped to that range.
#[inline(always)]
#[allow(clippy::excessive_precision)]
pub(crate) fn exp_f32(x: f32) -> f32 {
    const MAGIC: f32 = 12_582_912.0; // 1.5 * 2^23: adding it rounds to an integer
    let x = x.clamp(-87.0, 88.0);
    let shifted = x * std::f32::consts::LOG2_E + MAGIC;
    let n = shifted - MAGIC;
    let n_int = shifted.to_bits() as i32 - MAGIC.to_bits() as i32;
    let r = x - n * 0.693_359_375 - n * -2.121_944_4e-4;
    let mut p = 1.987_569_150_0e-4_f32;
    p = p * r + 1.398_199_950_7e-3;
    p = p * r + 8.333_451_907_3e-3;
    p = p * r + 4.166_579_589_4e-2;
    p = p * r + 1.666_666_545_9e-1;
    p = p * r + 5.000_000_120_1e-1;
    let y = p * r * r + r + 1.0;
    y * f32::from_bits(((n_int + 127) << 23) as u32)
}

/// Softmax over the last dimension (`width`), in place, one row at a time.
pub(crate) struct SoftmaxLastDim {
    pub width: usize,
}

impl InplaceOp1 for SoftmaxLastDim {
    fn name(&self) -> &'static str {
        "hopbench-softmax"
    }

    fn cpu_fwd(&self, storage: &mut CpuStorage, layout: &Layout) -> candle_core::Result<()> {
        let width = self.width;
        let data = contiguous_f32_mut(storage, layout, self.name())?;
        if width == 0 || data.len() % width != 0 {
            candle_core::bail!(
                "{}: length {} is not a multiple of {width}",
                self.name(),
                data.len()
            );
        }
        data.par_chunks_mut(width * rows_per_task(width))
            .for_each(|block| {
                vectorized(
                    #[inline(always)]
                    || {
                        for row in block.chunks_exact_mut(width) {
                            softmax_row(row);
                        }
                    },
                )
            });
        Ok(())
    }
}

#[inline(always)]
fn softmax_row(row: &mut [f32]) {
    let mut acc = [f32::NEG_INFINITY; 8];
    let chunks = row.chunks_exact(8);
    let tail = chunks.remainder();
    for c in chunks {
        for i in 0..8 {
            acc[i] = if c[i] > acc[i] { c[i] } else { acc[i] };
        }
    }
    let mut max = acc
        .iter()
        .fold(f32::NEG_INFINITY, |m, &v| if v > m { v } else { m });
    for &v in tail {
        max = if v > max { v } else { max };
    }
    for v in row.iter_mut() {
        *v = exp_f32(*v - max);
    }
    let sum = sum8(row);
    for v in row.iter_mut() {
        *v /= sum;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embed_kernels_erf_is_accurate() {
        let mut worst = 0f64;
        let mut x = -6.0f64;
        while x <= 6.0 {
            let exact = candle_core::cpu::erf::erf_f64(x);
            let got = erf_f32(x as f32) as f64;
            worst = worst.max((exact - got).abs());
            x += 1e-4;
        }
        assert!(worst < 1e-6, "max |erf error| = {worst:e}");
        assert_eq!(erf_f32(0.0), 0.0);
        assert_eq!(erf_f32(-1.0), -erf_f32(1.0));
    }

    #[test]
    fn embed_kernels_exp_is_accurate() {
        let mut worst = 0f64;
        let mut x = -87.0f64;
        while x <= 88.0 {
            let exact = x.exp();
            let got = exp_f32(x as f32) as f64;
            // Relative to exp of the f32 input, so the input rounding is not counted.
            let exact_of_input = ((x as f32) as f64).exp();
            worst = worst.max(((got - exact_of_input) / exact_of_input).abs());
            assert!(
                got.is_finite() && got > 0.0,
                "exp({x}) = {got}, exact {exact}"
            );
            x += 1e-3;
        }
        assert!(worst < 2e-7, "max relative exp error = {worst:e}");
        assert_eq!(exp_f32(0.0), 1.0);
    }

    #[test]
    fn embed_kernels_softmax_row_matches_naive() {
        let mut row: Vec<f32> = (0..29)
            .map(|i| ((i * 37) % 17) as f32 * 0.7 - 5.0)
            .collect();
        let x: Vec<f64> = row.iter().map(|&v| v as f64).collect();
        let max = x.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let sum: f64 = x.iter().map(|v| (v - max).exp()).sum();
        softmax_row(&mut row);
        for i in 0..29 {
            let want = (x[i] - max).exp() / sum;
            assert!(
                (row[i] as f64 - want).abs() < 1e-7,
                "{i}: {} vs {want}",
                row[i]
            );
        }
    }

    #[test]
    fn embed_kernels_layer_norm_row_matches_naive() {
        let mut row: Vec<f32> = (0..37)
            .map(|i| ((i * 7919) % 101) as f32 / 13.0 - 3.0)
            .collect();
        let gamma: Vec<f32> = (0..37).map(|i| 1.0 + i as f32 / 100.0).collect();
        let beta: Vec<f32> = (0..37).map(|i| i as f32 / 50.0).collect();
        let x: Vec<f64> = row.iter().map(|&v| v as f64).collect();
        let mean = x.iter().sum::<f64>() / 37.0;
        let var = x.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / 37.0;
        layer_norm_row(&mut row, &gamma, &beta, 1e-12);
        for i in 0..37 {
            let want = (x[i] - mean) / (var + 1e-12).sqrt() * gamma[i] as f64 + beta[i] as f64;
            assert!(
                (row[i] as f64 - want).abs() < 1e-5,
                "{i}: {} vs {want}",
                row[i]
            );
        }
    }
}
