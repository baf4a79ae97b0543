//! The one dot product of hopbench: every cosine (exact dense search, the similarity graph,
//! CDR/CDGR, conversation threads) is computed here, so they all share one summation order.
//!
//! The order is written out (eight interleaved lanes, then the lanes pairwise, then the tail) so
//! that neither the compiler nor a BLAS library can reassociate it per thread count: the seed
//! measured 33 of 1,209 MuSiQue queries changing their dense pool between 1 and 4 BLAS threads.
//! Here a score is a pure function of the two vectors, and `dot(a, b)` equals `dot(b, a)` bit for
//! bit.

/// Dot product with a fixed summation order: eight interleaved lanes, the lanes pairwise, then
/// the tail.
#[inline]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    debug_assert_eq!(a.len(), b.len());
    let mut lanes = [0.0f32; 8];
    let mut xs = a.chunks_exact(8);
    let mut ys = b.chunks_exact(8);
    for (x, y) in (&mut xs).zip(&mut ys) {
        let x: &[f32; 8] = x.try_into().expect("8");
        let y: &[f32; 8] = y.try_into().expect("8");
        for l in 0..8 {
            lanes[l] += x[l] * y[l];
        }
    }
    let mut tail = 0.0f32;
    for (x, y) in xs.remainder().iter().zip(ys.remainder()) {
        tail += x * y;
    }
    ((lanes[0] + lanes[4]) + (lanes[1] + lanes[5]))
        + ((lanes[2] + lanes[6]) + (lanes[3] + lanes[7]))
        + tail
}
