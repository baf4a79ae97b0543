//! Oracle legs: bounds on what a policy could achieve, not policies (the seed's §5.9 ceiling
//! study). They are the only legs that read [`QueryInput::gold`].
//!
//! * `rescue_oracle` — graph rescue's union with every *rescued* gold chunk promoted to the
//!   front (in union order), everything else unchanged. No shippable use of the rescue tail can
//!   beat it, so `rescue_oracle − graph_rescue` is the graph lanes' entire ceiling.
//! * `base_oracle` — a perfect rescore of what the base already holds: the gold chunks among the
//!   base's top `oracle_k` first (in base order), then the rest of the base, then the rescue
//!   tail. `base_oracle − graph_rescue` is the ceiling of a rescore over the base's own pool.
//!
//! Both rescore by position, `1 / (rank_score_k + rank)`, and keep each candidate's `rescued`
//! stamp. Their diagnostics are graph rescue's plus `oracle_promoted` (gold chunks moved).

use std::sync::Arc;

use hopbench_datasets::export::Export;

use crate::candidate::Candidate;
use crate::leg::{LegError, QueryInput, Ranker, Retrieval};
use crate::rescue::{GraphRescue, RescueConfig};

fn sorted_gold(gold: &[u32]) -> Vec<u32> {
    let mut g = gold.to_vec();
    g.sort_unstable();
    g.dedup();
    g
}

fn rescore(list: &mut [Candidate], k: f32) {
    for (rank, c) in list.iter_mut().enumerate() {
        c.score = (1.0 / (k as f64 + rank as f64)) as f32;
    }
}

/// The union with its rescued gold chunks moved to the front (in union order); returns the list
/// and how many were moved.
pub fn promote_rescued_gold(union: &[Candidate], gold: &[u32], k: f32) -> (Vec<Candidate>, usize) {
    let gold = sorted_gold(gold);
    let is_promoted = |c: &Candidate| c.rescued && gold.binary_search(&c.chunk).is_ok();
    let mut out: Vec<Candidate> = union.iter().filter(|c| is_promoted(c)).copied().collect();
    let moved = out.len();
    out.extend(union.iter().filter(|c| !is_promoted(c)).copied());
    rescore(&mut out, k);
    (out, moved)
}

/// The union (whose first `base_len` entries are the base) with the gold chunks among the base's
/// top `oracle_k` moved to the front (in base order), then the rest of the base, then the tail;
/// returns the list and how many were moved.
pub fn rescore_base_top(
    union: &[Candidate],
    base_len: usize,
    gold: &[u32],
    oracle_k: usize,
    k: f32,
) -> (Vec<Candidate>, usize) {
    let gold = sorted_gold(gold);
    let base_len = base_len.min(union.len());
    let head = oracle_k.min(base_len);
    let is_promoted = |i: usize, c: &Candidate| i < head && gold.binary_search(&c.chunk).is_ok();
    let mut out: Vec<Candidate> = Vec::with_capacity(union.len());
    out.extend(
        union[..base_len]
            .iter()
            .enumerate()
            .filter(|&(i, c)| is_promoted(i, c))
            .map(|(_, c)| *c),
    );
    let moved = out.len();
    out.extend(
        union[..base_len]
            .iter()
            .enumerate()
            .filter(|&(i, c)| !is_promoted(i, c))
            .map(|(_, c)| *c),
    );
    out.extend_from_slice(&union[base_len..]);
    rescore(&mut out, k);
    (out, moved)
}

/// Which bound an [`OracleLeg`] computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OracleKind {
    /// Rescued gold to the front.
    Rescue,
    /// Gold among the base's top `oracle_k` to the front.
    Base {
        /// Base head the oracle may rescore.
        oracle_k: usize,
    },
}

/// An oracle over graph rescue's retrieval.
pub struct Oracle {
    rescue: GraphRescue,
    kind: OracleKind,
}

impl Oracle {
    /// An oracle of `kind` over graph rescue configured by `config`.
    pub fn new(
        export: &Arc<Export>,
        config: RescueConfig,
        kind: OracleKind,
    ) -> Result<Self, LegError> {
        Ok(Oracle {
            rescue: GraphRescue::new(export, config)?,
            kind,
        })
    }
}

impl Ranker for Oracle {
    fn retrieve(&self, q: &QueryInput<'_>) -> Result<Retrieval, LegError> {
        let out = self.rescue.retrieve_full(q)?;
        let k = self.rescue.config().tail.rank_score_k;
        let (ranked, moved) = match self.kind {
            OracleKind::Rescue => promote_rescued_gold(&out.union, q.gold, k),
            OracleKind::Base { oracle_k } => {
                rescore_base_top(&out.union, out.base.len(), q.gold, oracle_k, k)
            }
        };
        let mut diagnostics = out.diagnostics();
        diagnostics.insert("oracle_promoted".into(), moved as f64);
        Ok(Retrieval {
            ranked,
            diagnostics,
            rescue_stage: true,
            ..Default::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::GraphMode;

    fn union() -> Vec<Candidate> {
        // base 10, 11, 12, 13; tail 20, 21, 22
        let mut u: Vec<Candidate> = [10, 11, 12, 13, 20, 21, 22]
            .iter()
            .map(|&c| Candidate::new(c, 0.0))
            .collect();
        for c in &mut u[4..] {
            c.rescued = true;
        }
        rescore(&mut u, 60.0);
        u
    }
    fn ids(v: &[Candidate]) -> Vec<u32> {
        v.iter().map(|c| c.chunk).collect()
    }

    #[test]
    fn rescue_oracle_puts_rescued_gold_first() {
        // gold 22 and 20 (rescued) and 12 (base): only the rescued ones move, in union order
        let (r, moved) = promote_rescued_gold(&union(), &[22, 12, 20], 60.0);
        assert_eq!(moved, 2);
        assert_eq!(ids(&r), vec![20, 22, 10, 11, 12, 13, 21]);
        assert!(r[0].rescued && !r[2].rescued);
        assert_eq!(r[0].score, (1.0f64 / 60.0) as f32);
        assert_eq!(promote_rescued_gold(&union(), &[], 60.0).0, union());
    }

    #[test]
    fn base_oracle_puts_base_gold_first() {
        let (r, moved) = rescore_base_top(&union(), 4, &[13, 11, 21], 100, 60.0);
        assert_eq!(moved, 2);
        assert_eq!(ids(&r), vec![11, 13, 10, 12, 20, 21, 22]);
        // only the base's top oracle_k may be rescored
        let (r, moved) = rescore_base_top(&union(), 4, &[13, 11], 2, 60.0);
        assert_eq!(moved, 1);
        assert_eq!(ids(&r), vec![11, 10, 12, 13, 20, 21, 22]);
        assert!(r.windows(2).all(|w| w[0].score > w[1].score));
    }

    #[test]
    fn oracles_on_the_synthetic_export_never_lose_gold_from_the_head() {
        let export = crate::rescue::fixtures::synthetic();
        let mut config = RescueConfig::default();
        config.gate.graph_mode = GraphMode::Force;
        let rescue = GraphRescue::new(&export, config.clone()).unwrap();
        let ro = Oracle::new(&export, config.clone(), OracleKind::Rescue).unwrap();
        let bo = Oracle::new(&export, config, OracleKind::Base { oracle_k: 100 }).unwrap();
        let hits = |r: &Retrieval, gold: &[u32], k: usize| {
            r.ranked[..k.min(r.ranked.len())]
                .iter()
                .filter(|c| gold.contains(&c.chunk))
                .count()
        };
        for i in 0..export.queries.len() {
            let q = QueryInput::from_export(&export, i);
            let g = rescue.retrieve(&q).unwrap();
            let (r, b) = (ro.retrieve(&q).unwrap(), bo.retrieve(&q).unwrap());
            for k in [1, 5, 10, 20] {
                assert!(hits(&r, q.gold, k) >= hits(&g, q.gold, k));
                assert!(hits(&b, q.gold, k) >= hits(&g, q.gold, k));
            }
            // same set of chunks, reordered
            let mut a = ids(&g.ranked);
            let mut c = ids(&b.ranked);
            a.sort_unstable();
            c.sort_unstable();
            assert_eq!(a, c);
            // base oracle: the promoted gold leads
            let moved = b.diagnostics["oracle_promoted"] as usize;
            assert!(b.ranked[..moved].iter().all(|c| q.gold.contains(&c.chunk)));
        }
    }
}
