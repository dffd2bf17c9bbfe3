//! Demonstrations in memory: whole episodes of observations and actions, as recorded from a
//! scripted expert ([`crate::rapier::expert::record_expert`]) or read from a dataset on disk.
//! Behaviour cloning (SFT) trains on them; dataset writers store them.

/// One episode, step-major: step `t` pairs the observation acted on with the action taken.
#[derive(Debug, Clone, PartialEq)]
pub struct Episode {
    /// Policy observations, `[len, obs_dim]`, raw (unnormalized).
    pub observations: Vec<f32>,
    /// Actions taken, `[len, action_dim]`, in the task's action space.
    pub actions: Vec<f32>,
    /// Reward received after each action, `[len]`.
    pub rewards: Vec<f32>,
    /// Whether the episode ended in the task's success state.
    pub success: bool,
    /// Whether the episode ended in a terminal state (false: cut by the time limit).
    pub terminated: bool,
}

impl Episode {
    /// Number of steps.
    pub fn len(&self) -> usize {
        self.rewards.len()
    }

    /// Whether the episode has no steps.
    pub fn is_empty(&self) -> bool {
        self.rewards.is_empty()
    }
}

/// A set of episodes of one task.
#[derive(Debug, Clone, PartialEq)]
pub struct Demonstrations {
    /// Task name (a registered task, e.g. `pick-cube`).
    pub task: String,
    /// Control rate, steps per second.
    pub fps: f32,
    /// Observation width.
    pub obs_dim: usize,
    /// Action width.
    pub action_dim: usize,
    /// The episodes, in recording order.
    pub episodes: Vec<Episode>,
}

impl Demonstrations {
    /// Total number of steps over all episodes.
    pub fn num_steps(&self) -> usize {
        self.episodes.iter().map(Episode::len).sum()
    }

    /// Fraction of episodes that ended in success (0 when there are none).
    pub fn success_rate(&self) -> f64 {
        let n = self.episodes.len();
        if n == 0 { 0.0 } else { self.episodes.iter().filter(|e| e.success).count() as f64 / n as f64 }
    }
}
