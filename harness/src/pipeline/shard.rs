//! `--shard I/N`: the I-th of N disjoint parts of a command's work (I counts from 0, as Slurm's
//! `SLURM_ARRAY_TASK_ID` does), so that N processes on N machines cover it exactly once.
//!
//! Two rules, both stable (the same inputs give the same parts on every machine and in every
//! order of completion):
//! - **cells** (`run-matrix`): the cell at position p of the plan (datasets in the order given,
//!   each dataset's legs in the order given) belongs to part p mod N, which spreads the cells of
//!   each dataset over the parts;
//! - **texts** (`prepare`): a text belongs to part (first 8 bytes of its blake3, little-endian)
//!   mod N. The embedding cache is addressed by the same hash, so two parts never embed the same
//!   text, whatever dataset it appears in.

use std::fmt;
use std::str::FromStr;

/// One part of N.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// 0-based part.
    pub index: usize,
    /// Number of parts (>= 1).
    pub count: usize,
}

impl Shard {
    /// Whether the cell at `position` of the plan is this part's.
    pub fn owns_cell(&self, position: usize) -> bool {
        position % self.count == self.index
    }

    /// Whether `text` is this part's to embed.
    pub fn owns_text(&self, text: &str) -> bool {
        let h = blake3::hash(text.as_bytes());
        let mut first = [0u8; 8];
        first.copy_from_slice(&h.as_bytes()[..8]);
        (u64::from_le_bytes(first) % self.count as u64) as usize == self.index
    }

    /// A name for files this part writes (`3-of-8`).
    pub fn label(&self) -> String {
        format!("{}-of-{}", self.index, self.count)
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl FromStr for Shard {
    type Err = String;

    fn from_str(s: &str) -> Result<Shard, String> {
        let bad = || format!("`{s}`: expected I/N with 0 <= I < N (I counts from 0)");
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let index: usize = i.trim().parse().map_err(|_| bad())?;
        let count: usize = n.trim().parse().map_err(|_| bad())?;
        if count == 0 || index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_refuses() {
        assert_eq!("2/4".parse::<Shard>(), Ok(Shard { index: 2, count: 4 }));
        for bad in ["4/4", "1/0", "x/2", "2", "-1/3", ""] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
        assert_eq!(Shard { index: 0, count: 1 }.to_string(), "0/1");
        assert_eq!(Shard { index: 3, count: 8 }.label(), "3-of-8");
    }

    #[test]
    fn parts_are_disjoint_and_cover_everything() {
        let texts: Vec<String> = (0..500).map(|i| format!("text {i}")).collect();
        for n in [1, 2, 3, 7] {
            let parts: Vec<Shard> = (0..n).map(|index| Shard { index, count: n }).collect();
            for (p, t) in texts.iter().enumerate() {
                assert_eq!(parts.iter().filter(|s| s.owns_cell(p)).count(), 1);
                assert_eq!(parts.iter().filter(|s| s.owns_text(t)).count(), 1);
            }
            // no part is starved of texts (500 texts, at most 7 parts)
            for s in &parts {
                assert!(texts.iter().filter(|t| s.owns_text(t)).count() > 500 / n / 2);
            }
        }
    }
}
