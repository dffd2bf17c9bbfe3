//! Demonstrations in memory: whole episodes of observations and actions, as recorded from a
//! scripted expert ([`crate::rapier::expert_runs::record_expert`]) or read from a dataset on disk.
//! Behaviour cloning (SFT) trains on them; dataset writers store them.

/// One episode, step-major: step `t` pairs the observation acted on with the action taken.
#[derive(Debug, Clone, PartialEq, Default)]
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
    /// The episode's language instruction (its LeRobot task string), e.g. `"pick up the red
    /// cube"`; `None` when the episode's task is the dataset's [`Demonstrations::task`].
    pub instruction: Option<String>,
    /// Camera images, one buffer per camera of [`Demonstrations::cameras`] (same order), each
    /// `[len, height, width, channels]` `u8`, step `t` seen when observation `t` was taken;
    /// empty without cameras.
    pub images: Vec<Vec<u8>>,
    /// Privileged environment state (the task's critic observation group, LeRobot's
    /// `observation.environment_state`) at each step, `[len, state_dim]`; empty when
    /// [`Demonstrations::state_dim`] is 0.
    pub states: Vec<f32>,
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
    /// Cameras whose images every episode carries ([`Episode::images`]); empty for none.
    pub cameras: Vec<crate::ImageSpec>,
    /// Width of the environment state every episode carries ([`Episode::states`]); 0 for none.
    pub state_dim: usize,
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

    /// Inserts `other`'s episodes before episode `at` (clamped to the end). Both must have the
    /// same observation and action widths, and `other` every camera of `self` (same name and
    /// size; its others are dropped); the error says what differs. Environment states are kept
    /// where both carry as many per step, else dropped from every episode (`state_dim` 0).
    pub fn insert_episodes(&mut self, at: usize, mut other: Demonstrations) -> Result<(), String> {
        if (other.obs_dim, other.action_dim) != (self.obs_dim, self.action_dim) {
            return Err(format!(
                "{} observation and {} action values per step, where the others have {} and {}",
                other.obs_dim, other.action_dim, self.obs_dim, self.action_dim
            ));
        }
        let mut picked = Vec::with_capacity(self.cameras.len());
        for camera in &self.cameras {
            match other.cameras.iter().position(|c| c == camera) {
                Some(k) => picked.push(k),
                None => {
                    let names = |c: &[crate::ImageSpec]| {
                        c.iter().map(|i| format!("{} {}x{}", i.name, i.width, i.height)).collect::<Vec<_>>().join(", ")
                    };
                    return Err(format!(
                        "cameras [{}], without the others' {} {}x{}",
                        names(&other.cameras),
                        camera.name,
                        camera.width,
                        camera.height
                    ));
                }
            }
        }
        for e in &mut other.episodes {
            let mut images = std::mem::take(&mut e.images);
            e.images = picked.iter().map(|&k| images.get_mut(k).map(std::mem::take).unwrap_or_default()).collect();
        }
        if other.state_dim != self.state_dim {
            for e in self.episodes.iter_mut().chain(other.episodes.iter_mut()) {
                e.states.clear();
            }
            self.state_dim = 0;
        }
        let at = at.min(self.episodes.len());
        self.episodes.splice(at..at, other.episodes);
        Ok(())
    }
}

/// Per-dimension statistics of one feature over all steps of a set of episodes (LeRobot's
/// `stats.json` entry): what behaviour cloning normalizes observations and actions with.
#[derive(Debug, Clone, PartialEq)]
pub struct FeatureStats {
    /// Mean per dimension, `[dim]`.
    pub mean: Vec<f64>,
    /// Population standard deviation per dimension (numpy's `std`, ddof 0), `[dim]`.
    pub std: Vec<f64>,
    /// Smallest value per dimension, `[dim]`.
    pub min: Vec<f64>,
    /// Largest value per dimension, `[dim]`.
    pub max: Vec<f64>,
    /// Number of rows (steps) the statistics were computed over.
    pub count: usize,
}

impl FeatureStats {
    /// Statistics of `rows` values laid out row-major as `[rows, dim]`, accumulated in f64.
    /// With no rows, every entry is 0 (mean, std) or ±∞ (min, max) and `count` is 0.
    pub fn from_rows<'a>(dim: usize, rows: impl IntoIterator<Item = &'a [f32]>) -> Self {
        let mut sum = vec![0.0f64; dim];
        let mut sum_sq = vec![0.0f64; dim];
        let mut min = vec![f64::INFINITY; dim];
        let mut max = vec![f64::NEG_INFINITY; dim];
        let mut count = 0usize;
        for row in rows {
            for (k, &v) in row.iter().enumerate().take(dim) {
                let v = f64::from(v);
                sum[k] += v;
                sum_sq[k] += v * v;
                min[k] = min[k].min(v);
                max[k] = max[k].max(v);
            }
            count += 1;
        }
        let n = count.max(1) as f64;
        let mean: Vec<f64> = sum.iter().map(|s| s / n).collect();
        // E[x²] − E[x]² can go slightly negative by rounding: clamp before the root.
        let std = sum_sq.iter().zip(&mean).map(|(sq, m)| (sq / n - m * m).max(0.0).sqrt()).collect();
        Self { mean, std, min, max, count }
    }

    /// Number of dimensions.
    pub fn dim(&self) -> usize {
        self.mean.len()
    }
}

/// Normalization statistics of a set of demonstrations: observations and actions.
#[derive(Debug, Clone, PartialEq)]
pub struct NormStats {
    /// Over all observations, `[obs_dim]` each.
    pub observation: FeatureStats,
    /// Over all actions, `[action_dim]` each.
    pub action: FeatureStats,
}

impl Demonstrations {
    /// Mean, std, min and max of observations and actions over all steps.
    pub fn norm_stats(&self) -> NormStats {
        let rows = |dim: usize, pick: fn(&Episode) -> &[f32]| {
            FeatureStats::from_rows(dim, self.episodes.iter().flat_map(move |e| pick(e).chunks_exact(dim.max(1))))
        };
        NormStats {
            observation: rows(self.obs_dim, |e| &e.observations),
            action: rows(self.action_dim, |e| &e.actions),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn norm_stats_are_per_dimension_over_all_steps() {
        let ep = |obs: &[f32], act: &[f32]| Episode {
            observations: obs.to_vec(),
            actions: act.to_vec(),
            rewards: vec![0.0; act.len()],
            success: true,
            terminated: true,
            ..Episode::default()
        };
        let demos = Demonstrations {
            task: "t".into(),
            fps: 10.0,
            obs_dim: 2,
            action_dim: 1,
            episodes: vec![ep(&[1.0, 10.0, 3.0, 10.0], &[0.5, -0.5]), ep(&[5.0, 40.0], &[2.0])],
            cameras: Vec::new(),
            state_dim: 0,
        };
        let s = demos.norm_stats();
        assert_eq!(s.observation.count, 3);
        assert_eq!(s.observation.mean, vec![3.0, 20.0]);
        assert_eq!(s.observation.min, vec![1.0, 10.0]);
        assert_eq!(s.observation.max, vec![5.0, 40.0]);
        // Population std of (1, 3, 5) and of (10, 10, 40).
        assert!((s.observation.std[0] - (8.0f64 / 3.0).sqrt()).abs() < 1e-12);
        assert!((s.observation.std[1] - 200.0f64.sqrt()).abs() < 1e-12);
        assert_eq!(s.action.mean, vec![2.0 / 3.0]);
        assert_eq!(s.action.count, 3);
    }

    #[test]
    fn inserted_episodes_must_match_and_states_are_kept_only_where_alike() {
        let ep = |obs: f32, states: usize| Episode {
            observations: vec![obs],
            actions: vec![0.0],
            rewards: vec![0.0],
            states: vec![obs; states],
            ..Episode::default()
        };
        let camera = |size| crate::ImageSpec { name: "front".into(), height: size, width: size, channels: 3 };
        let demos = |obs: &[f32], state_dim| Demonstrations {
            task: "t".into(),
            fps: 10.0,
            obs_dim: 1,
            action_dim: 1,
            episodes: obs.iter().map(|&o| ep(o, state_dim)).collect(),
            cameras: vec![camera(48)],
            state_dim,
        };
        let mut a = demos(&[1.0, 2.0], 1);
        a.insert_episodes(1, demos(&[7.0], 1)).unwrap();
        let order: Vec<f32> = a.episodes.iter().map(|e| e.observations[0]).collect();
        assert_eq!(order, [1.0, 7.0, 2.0]);
        assert_eq!((a.state_dim, a.episodes[1].states.len()), (1, 1));

        a.insert_episodes(0, demos(&[8.0], 0)).unwrap();
        assert_eq!(a.state_dim, 0);
        assert!(a.episodes.iter().all(|e| e.states.is_empty()), "states dropped from every episode");

        let wide = Demonstrations { obs_dim: 2, ..demos(&[], 0) };
        let e = a.insert_episodes(0, wide).unwrap_err();
        assert!(e.contains("2 observation and 1 action values") && e.contains("have 1 and 1"), "{e}");
        let other_size = Demonstrations { cameras: vec![camera(32)], ..demos(&[], 0) };
        let e = a.insert_episodes(0, other_size).unwrap_err();
        assert!(e.contains("cameras [front 32x32], without the others' front 48x48"), "{e}");
        assert_eq!(a.episodes.len(), 4, "a refused insert adds nothing");

        // Extra cameras are dropped, the shared one kept.
        let wrist = crate::ImageSpec { name: "wrist".into(), ..camera(48) };
        let mut two = demos(&[9.0], 0);
        two.cameras.insert(0, wrist);
        two.episodes[0].images = vec![vec![1], vec![2]];
        a.insert_episodes(0, two).unwrap();
        assert_eq!(a.episodes[0].images, vec![vec![2]]);
    }
}
