//! Topic threads (spec §3.3): user turns cluster into threads by cosine to the thread centroid.

use serde::{Deserialize, Serialize};

use super::turnlog::{LoggedTurn, Speaker};
use hopbench_datasets::vector::dot;

/// Threading settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ThreadConfig {
    /// A user turn joins the most similar thread when cosine to its centroid is at least this.
    pub join_threshold: f32,
}

impl Default for ThreadConfig {
    fn default() -> Self {
        Self {
            join_threshold: 0.70,
        }
    }
}

/// What happened to the thread of the most recently assigned user turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ThreadEvent {
    /// The turn started a new thread.
    Started,
    /// The turn joined the thread that was already active.
    Joined,
    /// The turn joined a dormant thread, which is restored (made active again).
    Resumed,
}

/// State of one topic thread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Thread {
    /// Thread id, assigned 0, 1, 2, ... in order of creation.
    pub id: usize,
    /// Member turn indices, ascending: user turns assigned here plus the agent turns that
    /// followed them while this thread was active.
    pub members: Vec<usize>,
    /// Mean of the member *user* turn vectors (not re-normalised).
    pub centroid: Vec<f32>,
    /// Number of user turns averaged into `centroid`.
    pub user_count: usize,
    /// The last turn index added to the thread.
    pub last_turn: usize,
    /// True when this thread is not the active one.
    pub dormant: bool,
    /// How many times this thread was restored from dormancy.
    pub resumptions: usize,
}

impl Thread {
    /// Header-friendly label, `thread-<id>`.
    pub fn label(&self) -> String {
        format!("thread-{}", self.id)
    }

    /// Cosine of an L2-normalised vector to the centroid (0 when the centroid is zero).
    pub fn similarity(&self, vector: &[f32]) -> f32 {
        let norm = dot(&self.centroid, &self.centroid).sqrt();
        if norm <= 0.0 || self.centroid.len() != vector.len() {
            return 0.0;
        }
        dot(vector, &self.centroid) / norm
    }
}

/// All threads of a conversation plus the active one.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Threads {
    /// Threads by id.
    pub threads: Vec<Thread>,
    /// The active thread id; `None` until the first user turn.
    pub active: Option<usize>,
    /// What the last user-turn assignment did.
    pub last_event: Option<ThreadEvent>,
}

impl Threads {
    /// Thread every turn of `turns` in order.
    pub fn build(turns: &[LoggedTurn], config: &ThreadConfig) -> Self {
        let mut t = Self::default();
        for turn in turns {
            t.add(turn, config);
        }
        t
    }

    /// The active thread, if any.
    pub fn active_thread(&self) -> Option<&Thread> {
        self.active.map(|id| &self.threads[id])
    }

    /// Best thread for a vector: highest similarity, ties to the lowest id.
    pub fn best(&self, vector: &[f32]) -> Option<(usize, f32)> {
        let mut best: Option<(usize, f32)> = None;
        for th in &self.threads {
            let s = th.similarity(vector);
            if best.is_none_or(|(_, b)| s > b) {
                best = Some((th.id, s));
            }
        }
        best
    }

    /// Add one turn. A user turn joins the best thread at or above the threshold or starts a new
    /// one; an agent turn is attached to the active thread (starting one if none exists) without
    /// moving its centroid. Returns the thread id.
    pub fn add(&mut self, turn: &LoggedTurn, config: &ThreadConfig) -> usize {
        if turn.speaker == Speaker::Agent {
            let id = match self.active {
                Some(id) => id,
                None => self.start(turn.index, None),
            };
            let th = &mut self.threads[id];
            th.members.push(turn.index);
            th.last_turn = turn.index;
            return id;
        }
        let target = self
            .best(&turn.vector)
            .filter(|&(_, s)| s >= config.join_threshold);
        let id = match target {
            None => {
                self.last_event = Some(ThreadEvent::Started);
                self.start(turn.index, Some(&turn.vector))
            }
            Some((id, _)) => {
                let th = &mut self.threads[id];
                let n = th.user_count as f32;
                for (c, v) in th.centroid.iter_mut().zip(&turn.vector) {
                    *c = (*c * n + v) / (n + 1.0);
                }
                th.user_count += 1;
                th.members.push(turn.index);
                th.last_turn = turn.index;
                if th.dormant {
                    th.resumptions += 1;
                    self.last_event = Some(ThreadEvent::Resumed);
                } else {
                    self.last_event = Some(ThreadEvent::Joined);
                }
                id
            }
        };
        self.activate(id);
        id
    }

    fn start(&mut self, index: usize, vector: Option<&[f32]>) -> usize {
        let id = self.threads.len();
        self.threads.push(Thread {
            id,
            members: if vector.is_some() {
                vec![index]
            } else {
                vec![]
            },
            centroid: vector.map(<[f32]>::to_vec).unwrap_or_default(),
            user_count: usize::from(vector.is_some()),
            last_turn: index,
            dormant: true,
            resumptions: 0,
        });
        self.activate(id);
        id
    }

    fn activate(&mut self, id: usize) {
        for th in &mut self.threads {
            th.dormant = th.id != id;
        }
        self.active = Some(id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(index: usize, v: Vec<f32>) -> LoggedTurn {
        LoggedTurn {
            index,
            speaker: Speaker::User,
            text: String::new(),
            vector: v,
        }
    }
    fn agent(index: usize) -> LoggedTurn {
        LoggedTurn {
            index,
            speaker: Speaker::Agent,
            text: String::new(),
            vector: vec![0.0, 0.0],
        }
    }

    #[test]
    fn join_at_boundary_new_below() {
        let cfg = ThreadConfig::default();
        // cos = 0.7 exactly-ish: use a threshold-relative construction.
        let a = vec![1.0, 0.0];
        let at = vec![0.7, (1.0f32 - 0.49).sqrt()];
        let below = vec![0.69, (1.0f32 - 0.69 * 0.69).sqrt()];
        let mut t = Threads::default();
        t.add(&user(0, a.clone()), &cfg);
        assert_eq!(t.add(&user(1, at), &cfg), 0);
        assert_eq!(t.last_event, Some(ThreadEvent::Joined));
        let mut t = Threads::default();
        t.add(&user(0, a), &cfg);
        assert_eq!(t.add(&user(1, below), &cfg), 1);
        assert_eq!(t.last_event, Some(ThreadEvent::Started));
        assert_eq!(t.active, Some(1));
        assert!(t.threads[0].dormant && !t.threads[1].dormant);
    }

    #[test]
    fn dormant_thread_restored_when_resumed() {
        let cfg = ThreadConfig::default();
        let mut t = Threads::default();
        t.add(&user(0, vec![1.0, 0.0]), &cfg);
        t.add(&agent(1), &cfg);
        t.add(&user(2, vec![0.0, 1.0]), &cfg);
        t.add(&agent(3), &cfg);
        assert!(t.threads[0].dormant);
        assert_eq!(
            t.add(&user(4, vec![0.99, (1.0f32 - 0.9801).sqrt()]), &cfg),
            0
        );
        assert_eq!(t.last_event, Some(ThreadEvent::Resumed));
        assert_eq!(t.active, Some(0));
        assert!(!t.threads[0].dormant && t.threads[1].dormant);
        assert_eq!(t.threads[0].members, vec![0, 1, 4]);
        assert_eq!(t.threads[0].last_turn, 4);
        assert_eq!(t.threads[0].resumptions, 1);
        assert_eq!(t.threads[0].user_count, 2);
    }

    #[test]
    fn ties_go_to_lowest_id() {
        let cfg = ThreadConfig::default();
        let mut t = Threads::default();
        let s = std::f32::consts::FRAC_1_SQRT_2;
        t.add(&user(0, vec![1.0, 0.0]), &cfg);
        t.add(&user(1, vec![0.0, 1.0]), &cfg);
        // Equidistant to both centroids: cos = 0.707 >= 0.70 to each; lowest id wins.
        assert_eq!(t.add(&user(2, vec![s, s]), &cfg), 0);
    }
}
