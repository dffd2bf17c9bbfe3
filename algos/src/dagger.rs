//! DAgger rollouts (Ross et al. 2011): episodes driven by the learner (and, by chance, the
//! expert), every step labelled with the task's scripted expert's action for the state reached
//! ([`VecEnv::expert_actions`]). Behaviour cloning trains on them so that the clone learns to
//! recover from its own mistakes, which demonstrations of the expert's own path never show.

use embodia_sim::VecEnv;
use embodia_sim::demonstrations::{Demonstrations, Episode};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::chunk_actor::ChunkActor;
use crate::sft::chunk_samples;
use crate::{ActionQueue, AlgoError, Learner};

/// What a DAgger rollout keeps of each step besides the observation and the expert's label.
pub(crate) struct DaggerRecording<'a> {
    /// Environment-state values per step ([`Episode::states`], from the critic observation);
    /// 0 for none.
    pub state_dim: usize,
    /// Per stored camera: the environment's camera index (`None`: stored black) and the bytes
    /// of one image.
    pub cameras: &'a [(Option<usize>, usize)],
}

/// Runs `episodes` episodes in `env` from `reset(seed)`: at each chunk decision an environment
/// executes the expert's actions with probability `expert_share` (β) until the next decision,
/// else the learner's deterministic chunk. Every step stores the observation and the expert's
/// label (not the action executed); rewards, success and termination are the episode's own.
pub(crate) fn dagger_rollouts(
    learner: &dyn Learner,
    env: &mut dyn VecEnv,
    episodes: usize,
    expert_share: f64,
    seed: u64,
    keep: &DaggerRecording,
) -> Result<Vec<Episode>, AlgoError> {
    let n = env.num_envs();
    let (od, ad, sd) = (env.obs_spec().vector.dim(), env.action_spec().bounds.dim(), keep.state_dim);
    let quota: Vec<usize> = (0..n).map(|i| episodes / n + usize::from(i < episodes % n)).collect();
    let empty = || Episode { images: vec![Vec::new(); keep.cameras.len()], ..Episode::default() };
    let mut running: Vec<Episode> = (0..n).map(|_| empty()).collect();
    let mut done = vec![0usize; n];
    let mut added = Vec::with_capacity(episodes);
    let (mut labels, mut actions) = (vec![0.0f32; n * ad], vec![0.0f32; n * ad]);
    env.reset(seed);
    let mut mixture = ChaCha8Rng::seed_from_u64(seed ^ 0xBE7A);
    let mut queue = ActionQueue::new(learner, n, ad);
    let mut expert_drives = vec![false; n];
    while done.iter().zip(&quota).any(|(d, q)| d < q) {
        env.expert_actions(&mut labels)?;
        queue.step(learner, &*env, &mut actions, None)?;
        if queue.started_chunk() {
            for drives in &mut expert_drives {
                *drives = mixture.random::<f64>() < expert_share;
            }
        }
        for (i, _) in expert_drives.iter().enumerate().filter(|(_, drives)| **drives) {
            actions[i * ad..(i + 1) * ad].copy_from_slice(&labels[i * ad..(i + 1) * ad]);
        }
        let b = env.buffers();
        for (i, ep) in running.iter_mut().enumerate().filter(|(i, _)| done[*i] < quota[*i]) {
            if ep.is_empty() {
                ep.instruction = env.instruction(i).map(str::to_string);
            }
            ep.observations.extend_from_slice(&b.obs[i * od..(i + 1) * od]);
            ep.actions.extend_from_slice(&labels[i * ad..(i + 1) * ad]);
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

/// One DAgger round of a chunk-policy clone (`sft`, flow or diffusion): [`dagger_rollouts`]
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
    let keep = DaggerRecording { state_dim: 0, cameras: &[] };
    let rollouts = Demonstrations {
        task: String::new(),
        fps: 0.0,
        obs_dim: actor.policy.obs_dim,
        action_dim: actor.policy.action_dim,
        episodes: dagger_rollouts(learner, env, episodes, expert_share, seed, &keep)?,
        cameras: Vec::new(),
        state_dim: 0,
    };
    let (mut obs, mut chunks) = chunk_samples(&rollouts, actor);
    actor.obs_norm.normalize(&mut obs);
    actor.action_norm.normalize(&mut chunks);
    Ok((obs, chunks))
}
