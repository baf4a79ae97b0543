//! Questions: relation paths through the world, phrased as nested English.
//!
//! A path starts at a named entity and follows 2-4 facts forward. It is accepted only if every
//! hop is functional (the subject has exactly one object for that relation, so the answer is
//! unique), no entity repeats (so the answer is never the start, and no hop is supported by the
//! same passage twice), and no bridge or answer shares a name root with the start (so the
//! question names nothing but the start). Among valid candidates the generator prefers relation
//! signatures and answers it has used least, which spreads the questions over the world.

use std::collections::{BTreeMap, BTreeSet};

use super::text;
use super::world::{Fact, Rel, World};
use crate::model::{Question, SubQuestion};
use crate::rng::SplitMix64;

/// A relation path from a start entity.
#[derive(Debug, Clone)]
pub(crate) struct Path {
    pub(crate) start: usize,
    pub(crate) hops: Vec<Fact>,
}

impl Path {
    fn answer(&self) -> usize {
        self.hops.last().expect("a path has hops").obj
    }

    fn signature(&self) -> Vec<Rel> {
        self.hops.iter().map(|f| f.rel).collect()
    }
}

/// One random walk of `k` hops from a random start; `None` if it is not a valid question.
fn sample_path(rng: &mut SplitMix64, w: &World, k: usize) -> Option<Path> {
    let start = rng.below(w.entities.len());
    let mut visited = vec![start];
    let mut hops = Vec::with_capacity(k);
    let mut cur = start;
    for _ in 0..k {
        let options: Vec<Fact> = w
            .facts_of(cur)
            .into_iter()
            .filter(|f| !visited.contains(&f.obj))
            .collect();
        if options.is_empty() {
            return None;
        }
        let f = rng.pick(&options);
        // Unambiguous: the relation from this subject has exactly one object.
        if w.objects(cur, f.rel).len() != 1 {
            return None;
        }
        hops.push(f);
        visited.push(f.obj);
        cur = f.obj;
    }
    let start_roots = &w.entities[start].named.roots;
    for &e in &visited[1..] {
        if w.entities[e]
            .named
            .roots
            .iter()
            .any(|r| start_roots.contains(r))
        {
            return None;
        }
    }
    Some(Path { start, hops })
}

/// Split `total` by integer weights (largest remainder; ties to the earlier bucket).
pub(crate) fn split_counts(total: usize, weights: &[u32]) -> Vec<usize> {
    let sum: u64 = weights.iter().map(|&w| u64::from(w)).sum();
    if sum == 0 {
        return vec![0; weights.len()];
    }
    let exact: Vec<(usize, u64)> = weights
        .iter()
        .map(|&w| {
            let num = total as u64 * u64::from(w);
            ((num / sum) as usize, num % sum)
        })
        .collect();
    let mut counts: Vec<usize> = exact.iter().map(|e| e.0).collect();
    let mut rest = total - counts.iter().sum::<usize>();
    let mut order: Vec<usize> = (0..weights.len()).collect();
    order.sort_by(|&a, &b| exact[b].1.cmp(&exact[a].1).then(a.cmp(&b)));
    for i in order {
        if rest == 0 {
            break;
        }
        counts[i] += 1;
        rest -= 1;
    }
    counts
}

/// Choose the question paths: `counts[i]` paths of `i + 2` hops, each from a distinct start.
pub(crate) fn choose_paths(rng: &mut SplitMix64, w: &World, counts: &[usize]) -> Vec<Path> {
    let mut slots: Vec<usize> = Vec::new();
    for (i, &c) in counts.iter().enumerate() {
        slots.extend(std::iter::repeat_n(i + 2, c));
    }
    rng.shuffle(&mut slots);

    let mut used_starts: BTreeSet<usize> = BTreeSet::new();
    let mut sig_uses: BTreeMap<Vec<Rel>, usize> = BTreeMap::new();
    let mut answer_uses: BTreeMap<usize, usize> = BTreeMap::new();
    let mut chosen = Vec::new();
    for k in slots {
        let mut best: Option<((usize, usize), Path)> = None;
        let mut found = 0;
        for _ in 0..2000 {
            if found >= 12 {
                break;
            }
            let Some(p) = sample_path(rng, w, k) else {
                continue;
            };
            if used_starts.contains(&p.start) {
                continue;
            }
            found += 1;
            let score = (
                sig_uses.get(&p.signature()).copied().unwrap_or(0),
                answer_uses.get(&p.answer()).copied().unwrap_or(0),
            );
            if best.as_ref().is_none_or(|(s, _)| score < *s) {
                best = Some((score, p));
            }
        }
        if let Some((_, p)) = best {
            used_starts.insert(p.start);
            *sig_uses.entry(p.signature()).or_insert(0) += 1;
            *answer_uses.entry(p.answer()).or_insert(0) += 1;
            chosen.push(p);
        }
    }
    chosen
}

/// Phrase a path as a [`Question`]; `main_id[e]` is entity `e`'s main passage id.
pub(crate) fn phrase(
    rng: &mut SplitMix64,
    w: &World,
    p: &Path,
    id: String,
    main_id: &[String],
) -> Question {
    let start = w.entities[p.start].name();
    let k = p.hops.len();
    let mut x = start.to_string();
    for (i, f) in p.hops[..k - 1].iter().enumerate() {
        x = text::noun_phrase(rng, f.rel, &x, i == 0);
    }
    let q = text::question(rng, p.hops[k - 1].rel, &x, false);

    let hop_ids: Vec<String> = p.hops.iter().map(|f| main_id[f.subj].clone()).collect();
    let decomposition: Vec<SubQuestion> = p
        .hops
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let subject = if i == 0 {
                start.to_string()
            } else {
                format!("#{i}")
            };
            SubQuestion {
                question: text::question(rng, f.rel, &subject, true),
                answer: w.entities[f.obj].name().to_string(),
                gold: vec![hop_ids[i].clone()],
            }
        })
        .collect();

    let mut question = Question::new(id, q, hop_ids.clone());
    question.chain = Some(hop_ids.iter().map(|h| vec![h.clone()]).collect());
    question.decomposition = Some(decomposition);
    let path: Vec<String> = p
        .hops
        .iter()
        .map(|f| format!("{}.{}", w.entities[f.subj].kind.label(), f.rel.label()))
        .collect();
    let labels = &mut question.labels;
    labels.insert("hops".into(), format!("{k}hop"));
    labels.insert("path".into(), path.join(">"));
    labels.insert("start_type".into(), w.entities[p.start].kind.label().into());
    labels.insert(
        "answer_type".into(),
        w.entities[p.answer()].kind.label().into(),
    );
    question
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_counts_is_exact() {
        assert_eq!(split_counts(60, &[50, 35, 15]), vec![30, 21, 9]);
        assert_eq!(split_counts(7, &[50, 35, 15]), vec![4, 2, 1]);
        assert_eq!(split_counts(10, &[1, 1, 1]), vec![4, 3, 3]);
        assert_eq!(split_counts(5, &[0, 0, 0]), vec![0, 0, 0]);
    }
}
