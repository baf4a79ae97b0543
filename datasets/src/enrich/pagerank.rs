//! Weighted PageRank, fixed iteration count.
//!
//! The walk leaves node `i` along edge `(i, j)` with probability `w_ij / s_i` (`s_i` = strength);
//! a node without edges (dangling) spreads its mass uniformly over all nodes. Start uniform,
//! `pr' = (1 - d) / n + d * (sum_i pr_i w_ij / s_i + dangling / n)`, for exactly `iterations`
//! steps, in `f64` with a fixed summation order; stored as `f32`.

/// PageRank of the `n`-node graph with undirected `edges` (`a < b`).
pub(crate) fn pagerank(
    n: usize,
    edges: &[(u32, u32, f32)],
    damping: f64,
    iterations: usize,
) -> Vec<f32> {
    if n == 0 {
        return Vec::new();
    }
    let mut strength = vec![0f64; n];
    for &(a, b, w) in edges {
        strength[a as usize] += w as f64;
        strength[b as usize] += w as f64;
    }
    let uniform = 1.0 / n as f64;
    let mut pr = vec![uniform; n];
    let mut next = vec![0f64; n];
    for _ in 0..iterations {
        let dangling: f64 = (0..n).filter(|&i| strength[i] <= 0.0).map(|i| pr[i]).sum();
        let base = (1.0 - damping) * uniform + damping * dangling * uniform;
        next.iter_mut().for_each(|x| *x = base);
        for &(a, b, w) in edges {
            let (a, b, w) = (a as usize, b as usize, w as f64);
            next[b] += damping * pr[a] * w / strength[a];
            next[a] += damping * pr[b] * w / strength[b];
        }
        std::mem::swap(&mut pr, &mut next);
    }
    pr.into_iter().map(|x| x as f32).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_to_one_and_the_hub_ranks_highest() {
        // star: 0 is the hub of 1..=4, plus an edge 3-4 and an isolated node 5
        let e = vec![
            (0, 1, 1.0),
            (0, 2, 1.0),
            (0, 3, 1.0),
            (0, 4, 1.0),
            (3, 4, 0.5),
        ];
        let pr = pagerank(6, &e, 0.85, 50);
        let sum: f64 = pr.iter().map(|&x| x as f64).sum();
        assert!((sum - 1.0).abs() < 1e-6, "{sum}");
        for i in 1..6 {
            assert!(pr[0] > pr[i], "{pr:?}");
        }
        assert!(pr[3] > pr[1] && pr[1] > pr[5], "{pr:?}");
        assert_eq!(pr[1], pr[2]);
        assert_eq!(pagerank(6, &e, 0.85, 50), pr, "deterministic");
        // no edges: uniform
        assert_eq!(pagerank(4, &[], 0.85, 10), vec![0.25; 4]);
    }
}
