//! Tier C store: the session's turn log with recency decay (spec §3.1–§3.2).

use hopbench_datasets::Turn;
use serde::{Deserialize, Serialize};

/// Turn-log settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TurnLogConfig {
    /// Recency half-life in turns (spec default 6).
    pub half_life: f32,
}

impl Default for TurnLogConfig {
    fn default() -> Self {
        Self { half_life: 6.0 }
    }
}

/// Who spoke a turn. `"user"` is [`Speaker::User`]; every other speaker string is
/// [`Speaker::Agent`] (the dataset only uses `"user"` and `"agent"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Speaker {
    /// The user.
    User,
    /// The agent (the spec's ASSISTANT role).
    Agent,
}

impl Speaker {
    /// Map a dataset speaker string.
    pub fn parse(s: &str) -> Self {
        if s.eq_ignore_ascii_case("user") {
            Speaker::User
        } else {
            Speaker::Agent
        }
    }
}

/// One logged turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoggedTurn {
    /// Position in the conversation, from 0.
    pub index: usize,
    /// Who spoke.
    pub speaker: Speaker,
    /// What was said.
    pub text: String,
    /// The caller's (L2-normalised) embedding of `text`.
    pub vector: Vec<f32>,
}

/// Recency weight `0.5^(age / half_life)`; a non-positive half-life gives 1.0 at age 0 and
/// 0.0 otherwise.
pub fn recency_weight(age: usize, half_life: f32) -> f32 {
    if half_life <= 0.0 {
        return if age == 0 { 1.0 } else { 0.0 };
    }
    0.5f32.powf(age as f32 / half_life)
}

/// The turn log of one conversation; the last turn is the current one.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnLog {
    /// Every turn, in order, the current turn last.
    pub turns: Vec<LoggedTurn>,
    /// Half-life used by [`TurnLog::recency`].
    pub half_life: f32,
}

impl TurnLog {
    /// Log a conversation, embedding every turn once with `embed`.
    pub fn build(
        conversation: &[Turn],
        embed: &dyn Fn(&str) -> Vec<f32>,
        config: &TurnLogConfig,
    ) -> Self {
        let turns = conversation
            .iter()
            .enumerate()
            .map(|(index, t)| LoggedTurn {
                index,
                speaker: Speaker::parse(&t.speaker),
                text: t.text.clone(),
                vector: embed(&t.text),
            })
            .collect();
        Self {
            turns,
            half_life: config.half_life,
        }
    }

    /// Index of the current (last) turn; `None` for an empty log.
    pub fn current_index(&self) -> Option<usize> {
        self.turns.len().checked_sub(1)
    }

    /// Age in turns of turn `index` measured from the current turn (0 for the current turn).
    pub fn age(&self, index: usize) -> usize {
        self.current_index().unwrap_or(0).saturating_sub(index)
    }

    /// Recency weight of turn `index`.
    pub fn recency(&self, index: usize) -> f32 {
        recency_weight(self.age(index), self.half_life)
    }

    /// The turns before the current one.
    pub fn history(&self) -> &[LoggedTurn] {
        &self.turns[..self.turns.len().saturating_sub(1)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recency_decay_values() {
        assert!((recency_weight(0, 6.0) - 1.0).abs() < 1e-6);
        assert!((recency_weight(6, 6.0) - 0.5).abs() < 1e-6);
        assert!((recency_weight(12, 6.0) - 0.25).abs() < 1e-6);
        assert!((recency_weight(3, 3.0) - 0.5).abs() < 1e-6);
    }

    #[test]
    fn log_ages_from_current_turn() {
        let conv: Vec<Turn> = (0..13)
            .map(|i| Turn {
                speaker: if i % 2 == 0 { "user" } else { "agent" }.into(),
                text: format!("t{i}"),
            })
            .collect();
        let log = TurnLog::build(&conv, &|_| vec![1.0], &TurnLogConfig::default());
        assert_eq!(log.current_index(), Some(12));
        assert_eq!(log.turns[1].speaker, Speaker::Agent);
        assert!((log.recency(12) - 1.0).abs() < 1e-6);
        assert!((log.recency(6) - 0.5).abs() < 1e-6);
        assert!((log.recency(0) - 0.25).abs() < 1e-6);
        assert_eq!(log.history().len(), 12);
    }
}
