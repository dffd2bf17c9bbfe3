//! Episodes driven by a learner and recorded step by step, with the images its environment
//! renders: DAgger's (Ross et al. 2011), every step labelled with the task's scripted expert's
//! action for the state reached ([`VecEnv::expert_actions`]), so that behaviour cloning learns
//! to recover from its own mistakes, which demonstrations of the expert's own path never show;
//! and a policy's own (its executed actions), so that what a fine-tuned policy does can be
//! cloned into another model ([`record_policy_episodes`]).

use embodia_sim::VecEnv;
use embodia_sim::demonstrations::{Demonstrations, Episode};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::flow::ChunkActor;
use crate::flow::chunk_samples::chunk_samples;
use crate::{ActionQueue, AlgoError, Learner};

/// What a rollout keeps of each step besides the observation and the label.
pub(crate) struct RolloutRecording<'a> {
    /// Environment-state values per step ([`Episode::states`], from the critic observation);
    /// 0 for none.
    pub state_dim: usize,
    /// Per stored camera: the environment's camera index (`None`: stored black) and the bytes
    /// of one image.
    pub cameras: &'a [(Option<usize>, usize)],
}

/// The action a rollout stores for each step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum RolloutLabels {
    /// DAgger: the scripted expert's action for the state reached (not the action executed).
    /// At each chunk decision an environment executes the expert's actions with probability
    /// `share` (β) until the next decision, else the learner's deterministic chunk.
    Expert { share: f64 },
    /// The learner's own executed action, deterministic or (`stochastic`) sampled.
    Executed { stochastic: bool },
}

/// Runs `episodes` episodes in `env` from `reset(seed)` as `labels` says. Every step stores the
/// observation and its label; rewards, success and termination are the episode's own.
pub(crate) fn learner_rollouts(
    learner: &dyn Learner,
    env: &mut dyn VecEnv,
    episodes: usize,
    labels: RolloutLabels,
    seed: u64,
    keep: &RolloutRecording,
) -> Result<Vec<Episode>, AlgoError> {
    let n = env.num_envs();
    let (od, ad, sd) = (env.obs_spec().vector.dim(), env.action_spec().bounds.dim(), keep.state_dim);
    let quota: Vec<usize> = (0..n).map(|i| episodes / n + usize::from(i < episodes % n)).collect();
    let empty = || Episode { images: vec![Vec::new(); keep.cameras.len()], ..Episode::default() };
    let mut running: Vec<Episode> = (0..n).map(|_| empty()).collect();
    let mut done = vec![0usize; n];
    let mut added = Vec::with_capacity(episodes);
    let (mut expert, mut actions) = (vec![0.0f32; n * ad], vec![0.0f32; n * ad]);
    env.reset(seed);
    let mut mixture = ChaCha8Rng::seed_from_u64(seed ^ 0xBE7A);
    let mut sampling = ChaCha8Rng::seed_from_u64(seed ^ 0x5A3F);
    let mut queue = ActionQueue::new(learner, n, ad);
    let mut expert_drives = vec![false; n];
    while done.iter().zip(&quota).any(|(d, q)| d < q) {
        if let RolloutLabels::Expert { .. } = labels {
            env.expert_actions(&mut expert)?;
        }
        let stochastic = matches!(labels, RolloutLabels::Executed { stochastic: true });
        queue.step(learner, &*env, &mut actions, stochastic.then_some(&mut sampling))?;
        if let RolloutLabels::Expert { share } = labels {
            if queue.started_chunk() {
                for drives in &mut expert_drives {
                    *drives = mixture.random::<f64>() < share;
                }
            }
            for (i, _) in expert_drives.iter().enumerate().filter(|(_, drives)| **drives) {
                actions[i * ad..(i + 1) * ad].copy_from_slice(&expert[i * ad..(i + 1) * ad]);
            }
        }
        let step_labels = match labels {
            RolloutLabels::Expert { .. } => &expert,
            RolloutLabels::Executed { .. } => &actions,
        };
        let b = env.buffers();
        for (i, ep) in running.iter_mut().enumerate().filter(|(i, _)| done[*i] < quota[*i]) {
            if ep.is_empty() {
                ep.instruction = env.instruction(i).map(str::to_string);
            }
            ep.observations.extend_from_slice(&b.obs[i * od..(i + 1) * od]);
            ep.actions.extend_from_slice(&step_labels[i * ad..(i + 1) * ad]);
            ep.states.extend_from_slice(&b.critic_obs[i * sd..(i + 1) * sd]);
            for (store, &(camera, len)) in ep.images.iter_mut().zip(keep.cameras) {
                match camera.and_then(|c| env.image(c)) {
                    Some(images) => store.extend_from_slice(&images[i * len..(i + 1) * len]),
                    None => store.resize(store.len() + len, 0),
                }
            }
        }
        env.step(&actions)?;
        let b = env.buffers();
        for i in 0..n {
            if done[i] == quota[i] {
                continue;
            }
            running[i].rewards.push(b.reward[i]);
            if b.done(i) {
                done[i] += 1;
                let mut ep = std::mem::replace(&mut running[i], empty());
                ep.success = b.success[i] > 0.0;
                ep.terminated = b.terminated[i] > 0.0;
                added.push(ep);
            }
        }
    }
    Ok(added)
}

/// One DAgger round of a chunk-policy clone (`sft`, flow or diffusion): [`learner_rollouts`]
/// of `learner`, cut into training samples as the demonstrations are and standardized with
/// `actor`'s (the demonstrations') statistics: `([samples, obs_dim], [samples, H·D])`.
pub(crate) fn dagger_chunk_samples(
    learner: &dyn Learner,
    actor: &ChunkActor,
    env: &mut dyn VecEnv,
    episodes: usize,
    expert_share: f64,
    seed: u64,
) -> Result<(Vec<f32>, Vec<f32>), AlgoError> {
    let keep = RolloutRecording { state_dim: 0, cameras: &[] };
    let rollouts = Demonstrations {
        task: String::new(),
        fps: 0.0,
        obs_dim: actor.policy.obs_dim,
        action_dim: actor.policy.action_dim,
        episodes: learner_rollouts(learner, env, episodes, RolloutLabels::Expert { share: expert_share }, seed, &keep)?,
        cameras: Vec::new(),
        state_dim: 0,
    };
    let (mut obs, mut chunks) = chunk_samples(&rollouts, actor);
    actor.obs_norm.normalize(&mut obs);
    actor.action_norm.normalize(&mut chunks);
    Ok((obs, chunks))
}

/// `episodes` episodes of `learner` in `env` from `reset(seed)`, deterministic or
/// (`stochastic`) sampled, as demonstrations of the task `env` runs: every step's observation,
/// the action executed, every image the environment renders and, where the task has a critic
/// observation, the environment state. Keeping the successful ones and cloning them distills
/// what the learner does into another model, e.g. a VLA steered by `vla-dsrl` back into the
/// VLA's own weights (`vla-sft`'s `policy_datasets`). `fps`: the environment's control rate,
/// steps per second.
pub fn record_policy_episodes(
    learner: &dyn Learner,
    env: &mut dyn VecEnv,
    episodes: usize,
    seed: u64,
    stochastic: bool,
    fps: f32,
) -> Result<Demonstrations, AlgoError> {
    let images = env.obs_spec().images.clone();
    let cameras: Vec<(Option<usize>, usize)> =
        images.iter().enumerate().map(|(k, i)| (Some(k), i.height * i.width * i.channels)).collect();
    let state_dim = env.obs_spec().critic.as_ref().map_or(0, |c| c.dim());
    let keep = RolloutRecording { state_dim, cameras: &cameras };
    let labels = RolloutLabels::Executed { stochastic };
    Ok(Demonstrations {
        task: env.info().name.to_string(),
        fps,
        obs_dim: env.obs_spec().vector.dim(),
        action_dim: env.action_spec().bounds.dim(),
        episodes: learner_rollouts(learner, env, episodes, labels, seed, &keep)?,
        cameras: images,
        state_dim,
    })
}
