//! [`RapierEnv`]: a batch of independent rapier worlds behind the [`VecEnv`] contract.

use std::sync::Arc;

use bevy_ecs::system::IntoSystem;
use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::SeedableRng;
use rayon::prelude::*;

use super::scene::Scene;
use super::scripted_expert::ExpertLabeler;
use super::spec::SceneSpec;
use super::task_config::TaskConfig;
use crate::{ActionSpec, BoxSpace, EnvSnapshot, ObsSpec, RngState, SimError, StepBuffers, TaskInfo, VecEnv};
use embodia_robots::SceneRobot;

/// Per-environment scalar results of a step, gathered into [`StepBuffers`] after the parallel
/// part.
#[derive(Debug, Clone, Copy, Default)]
struct Outcome {
    reward: f32,
    terminated: bool,
    truncated: bool,
    success: bool,
    episode_return: f32,
    episode_length: u32,
}

fn env_rng(seed: u64, env: usize) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(env as u64);
    rng
}

/// `num_envs` rapier worlds of one task, stepped in parallel with rayon (one world per task;
/// rapier's own `parallel` feature stays off). Each world draws only from its own generator,
/// so results are identical whatever the thread count.
pub struct RapierEnv {
    info: TaskInfo,
    spec: Arc<SceneSpec>,
    scenes: Vec<Scene>,
    outcomes: Vec<Outcome>,
    obs_spec: ObsSpec,
    action_spec: ActionSpec,
    buffers: StepBuffers,
    /// Made at the first [`VecEnv::expert_actions`] call.
    expert: Option<ExpertLabeler>,
    /// The reward terms of [`RapierEnv::add_reward_term`], added again to every world a seeded
    /// reset builds.
    added_rewards: Vec<AddedReward>,
    /// Environment `i` draws as environment `first_env + i` ([`VecEnv::set_first_env`]).
    first_env: usize,
}

/// Adds one user reward term to a scene.
type AddedReward = Arc<dyn Fn(&mut Scene) + Send + Sync>;

impl RapierEnv {
    /// Builds `num_envs` worlds of `config` with `robot` (a [`SceneRobot`], or a bare
    /// [`RobotModel`](embodia_robots::RobotModel) driven by the task's actuator), reset with
    /// seed 0. `info` names the task; its time limit and threshold are taken from `config`.
    pub fn new(
        info: TaskInfo,
        config: TaskConfig,
        robot: impl Into<SceneRobot>,
        num_envs: usize,
    ) -> Result<Self, SimError> {
        if num_envs == 0 {
            return Err(SimError::ZeroEnvs);
        }
        if num_envs > crate::MAX_RAPIER_ENVS {
            return Err(SimError::TooManyEnvs { num_envs, max: crate::MAX_RAPIER_ENVS });
        }
        let info =
            TaskInfo { max_episode_steps: config.episode_steps, solve_threshold: config.solve_threshold, ..info };
        let spec = Arc::new(SceneSpec::new(config, robot)?);
        let scenes = (0..num_envs).map(|i| Scene::new(&spec, env_rng(0, i))).collect::<Result<Vec<_>, _>>()?;
        let clip = spec.config.action.clip;
        let critic = spec.config.observations.critic.is_some();
        let mut buffers = StepBuffers::new(num_envs, spec.obs_dim);
        if critic {
            buffers.critic_obs = vec![0.0; num_envs * spec.critic_dim];
            buffers.final_critic_obs = vec![0.0; num_envs * spec.critic_dim];
        }
        let mut env = Self {
            info,
            obs_spec: ObsSpec {
                vector: BoxSpace::uniform(spec.obs_dim, f32::NEG_INFINITY, f32::INFINITY),
                critic: critic.then(|| BoxSpace::uniform(spec.critic_dim, f32::NEG_INFINITY, f32::INFINITY)),
                images: Vec::new(),
            },
            action_spec: ActionSpec { bounds: BoxSpace::uniform(spec.num_actions(), -clip, clip) },
            buffers,
            expert: None,
            added_rewards: Vec::new(),
            first_env: 0,
            outcomes: vec![Outcome::default(); num_envs],
            scenes,
            spec,
        };
        env.start_episodes(0, false);
        Ok(env)
    }

    /// Starts an episode in every environment with generators derived from `seed`, in worlds
    /// built anew when `rebuild` (see [`VecEnv::reset`]; [`RapierEnv::new`]'s worlds are new).
    fn start_episodes(&mut self, seed: u64, rebuild: bool) {
        let (od, spec, added_rewards, first) = (self.spec.obs_dim, &self.spec, &self.added_rewards, self.first_env);
        self.scenes.par_iter_mut().zip(self.buffers.obs.par_chunks_mut(od)).enumerate().for_each(
            |(i, (scene, obs))| {
                // Building cannot fail here: the same spec built the world before.
                if rebuild && let Ok(fresh) = Scene::new(spec, env_rng(seed, first + i)) {
                    *scene = fresh;
                    added_rewards.iter().for_each(|add| add(scene));
                } else {
                    scene.set_rng(env_rng(seed, first + i));
                }
                scene.reset();
                scene.observe_policy(true, obs);
            },
        );
        self.observe_critic();
        self.clear_step_results();
    }

    /// Fills `buffers.critic_obs` from the current states (no noise: the critic's copy is
    /// privileged and clean).
    fn observe_critic(&mut self) {
        if self.spec.config.observations.critic.is_none() {
            return;
        }
        self.scenes
            .par_iter_mut()
            .zip(self.buffers.critic_obs.par_chunks_mut(self.spec.critic_dim))
            .for_each(|(scene, out)| scene.observe_critic(out));
    }

    /// Zeroes everything in the buffers but the observations (after a reset or restore).
    fn clear_step_results(&mut self) {
        let b = &mut self.buffers;
        for v in [&mut b.reward, &mut b.terminated, &mut b.truncated, &mut b.success, &mut b.final_obs] {
            v.fill(0.0);
        }
        b.final_critic_obs.fill(0.0);
        b.episode_return.fill(0.0);
        b.episode_length.fill(0);
    }

    /// Adds a reward term, `weight × system()`, to every environment, after the configured
    /// ones: a task's own term, written as a bevy system over the resources of
    /// [`super::terms`] (e.g. `|joints: Res<Joints>| joints.qd[0].abs()`), without a new
    /// [`RewardKind`](super::task_config::RewardKind). Takes effect from the next step.
    pub fn add_reward_term<M: 'static>(
        &mut self,
        weight: f32,
        system: impl IntoSystem<(), f32, M> + Clone + Send + Sync + 'static,
    ) {
        let add: AddedReward = Arc::new(move |scene: &mut Scene| scene.add_reward_term(weight, system.clone()));
        for scene in &mut self.scenes {
            add(scene);
        }
        self.added_rewards.push(add);
    }

    /// The environments' worlds and robots (read-only), for viewers and tests.
    pub fn scenes(&self) -> &[Scene] {
        &self.scenes
    }

    /// The shared task description.
    pub fn spec(&self) -> &SceneSpec {
        &self.spec
    }
}

impl VecEnv for RapierEnv {
    fn scene_view(&self) -> Option<&dyn crate::view::SceneView> {
        Some(self)
    }

    fn action_states(&self) -> Vec<Option<crate::ActionState>> {
        self.spec.action_states()
    }

    fn info(&self) -> &TaskInfo {
        &self.info
    }

    fn instruction(&self, env: usize) -> Option<&str> {
        self.scenes.get(env)?.instruction()
    }

    fn expert_actions(&mut self, actions: &mut [f32]) -> Result<(), SimError> {
        let expert = match &mut self.expert {
            Some(expert) => expert,
            None => self.expert.insert(ExpertLabeler::new(&self.spec, self.scenes.len())?),
        };
        expert.label(&self.spec, &self.scenes, actions)
    }

    fn num_envs(&self) -> usize {
        self.scenes.len()
    }

    fn obs_spec(&self) -> &ObsSpec {
        &self.obs_spec
    }

    fn action_spec(&self) -> &ActionSpec {
        &self.action_spec
    }

    fn reset(&mut self, seed: u64) {
        // Every world is built anew: a used world keeps contact and broad-phase state from its
        // past episodes (warm-start impulses, the order of contact pairs), so resetting it in
        // place would make the rollout of a seed depend on what the environment did before.
        self.start_episodes(seed, true);
    }

    fn set_first_env(&mut self, first: usize) -> Result<(), SimError> {
        self.first_env = first;
        Ok(())
    }

    fn step(&mut self, actions: &[f32]) -> Result<(), SimError> {
        let (n, ad, od) = (self.scenes.len(), self.spec.num_actions(), self.spec.obs_dim);
        if actions.len() != n * ad {
            return Err(SimError::ActionLength { expected: n * ad, got: actions.len() });
        }
        if let Some(k) = actions.iter().position(|a| !a.is_finite()) {
            return Err(SimError::NonFiniteAction { env: k / ad, index: k % ad });
        }
        let critic = self.spec.config.observations.critic.is_some();
        let max_steps = self.info.max_episode_steps;
        let b = &mut self.buffers;
        // The critic's copy of the final observation must be taken before the auto-reset.
        let step_one = |scene: &mut Scene,
                        out: &mut Outcome,
                        obs: &mut [f32],
                        final_obs: &mut [f32],
                        final_critic: &mut [f32],
                        action: &[f32]| {
            let (reward, terminated, success) = scene.step(action);
            scene.running_return += reward;
            let truncated = scene.elapsed() >= max_steps;
            scene.observe_policy(true, final_obs);
            if critic {
                scene.observe_critic(final_critic);
            }
            *out = Outcome { reward: reward as f32, terminated, truncated, success, ..Outcome::default() };
            if terminated || truncated {
                out.episode_return = scene.running_return as f32;
                out.episode_length = scene.elapsed();
                scene.reset();
                scene.observe_policy(true, obs);
            } else {
                obs.copy_from_slice(final_obs);
            }
        };
        let rows = self
            .scenes
            .par_iter_mut()
            .zip(self.outcomes.par_iter_mut())
            .zip(b.obs.par_chunks_mut(od).zip(b.final_obs.par_chunks_mut(od)).zip(actions.par_chunks(ad.max(1))));
        match self.spec.critic_dim {
            cd if critic => rows.zip(b.final_critic_obs.par_chunks_mut(cd)).for_each(
                |(((scene, out), ((obs, final_obs), action)), final_critic)| {
                    step_one(scene, out, obs, final_obs, final_critic, action)
                },
            ),
            _ => rows.for_each(|((scene, out), ((obs, final_obs), action))| {
                step_one(scene, out, obs, final_obs, &mut [], action)
            }),
        }
        self.observe_critic();
        let b = &mut self.buffers;
        let flag = |x: bool| f32::from(u8::from(x));
        for (i, o) in self.outcomes.iter().enumerate() {
            b.reward[i] = o.reward;
            b.terminated[i] = flag(o.terminated);
            b.truncated[i] = flag(o.truncated);
            b.success[i] = flag(o.success);
            b.episode_return[i] = o.episode_return;
            b.episode_length[i] = o.episode_length;
        }
        Ok(())
    }

    fn buffers(&self) -> &StepBuffers {
        &self.buffers
    }

    /// Episode counters, generators and observations. The rapier worlds themselves (contact
    /// caches, solver warm starts) are not serialized: [`VecEnv::restore`] resets every
    /// environment to a fresh episode from the restored generators instead of continuing the
    /// interrupted ones, so a resumed run continues statistically, not bit-exactly.
    fn snapshot(&self) -> EnvSnapshot {
        EnvSnapshot {
            task: self.info.name.to_string(),
            state: Vec::new(),
            elapsed: vec![0; self.scenes.len()],
            running_return: vec![0.0; self.scenes.len()],
            rng: self
                .scenes
                .iter()
                .map(|s| RngState {
                    seed: s.rng().get_seed(),
                    stream: s.rng().get_stream(),
                    word_pos: s.rng().get_word_pos(),
                })
                .collect(),
            obs: Vec::new(),
        }
    }

    fn restore(&mut self, snap: &EnvSnapshot) -> Result<(), SimError> {
        if snap.task != self.info.name {
            return Err(SimError::SnapshotMismatch(format!(
                "snapshot of task `{}`, environment is `{}`",
                snap.task, self.info.name
            )));
        }
        if snap.rng.len() != self.scenes.len() {
            return Err(SimError::SnapshotMismatch(format!(
                "rng has {} values; expected {}",
                snap.rng.len(),
                self.scenes.len()
            )));
        }
        let od = self.spec.obs_dim;
        for ((scene, st), obs) in self.scenes.iter_mut().zip(&snap.rng).zip(self.buffers.obs.chunks_mut(od)) {
            let mut r = ChaCha8Rng::from_seed(st.seed);
            r.set_stream(st.stream);
            r.set_word_pos(st.word_pos);
            scene.set_rng(r);
            scene.reset();
            scene.observe_policy(true, obs);
        }
        self.observe_critic();
        self.clear_step_results();
        Ok(())
    }
}
