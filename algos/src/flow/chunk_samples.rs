//! Behaviour cloning's training pairs: `(s_t, a_{t..t+H})` samples of demonstrations, and the
//! chunk actor whose standardizations are fitted to them. Flow and diffusion SFT, DAgger and the
//! VLA's SFT all read demonstrations through here.

use embodia_policies::FlowPolicyConfig;
use embodia_sim::VecEnv;
use embodia_sim::demonstrations::Demonstrations;

use super::chunk_actor::{ChunkActor, InitialNoise};
use crate::AlgoError;
use crate::normalizer::Standardizer;

/// The actor of `policy` for `env` with standardizations (std at least `min_std`) fitted to
/// the training samples of `demos`, actions relative to the state where `relative_actions`
/// and the task allows, and those samples standardized: `(actor, [samples, obs_dim],
/// [samples, H·D])`. `policy` must carry the task's widths.
pub(crate) fn fitted_actor(
    policy: &FlowPolicyConfig,
    relative_actions: bool,
    min_std: f32,
    env: &dyn VecEnv,
    demos: &Demonstrations,
) -> Result<(ChunkActor, Vec<f32>, Vec<f32>), AlgoError> {
    let (od, ad) = (policy.obs_dim, policy.action_dim);
    check_demonstrations(demos, od, ad)?;
    let bounds = &env.action_spec().bounds;
    let relative = if relative_actions { env.action_states() } else { Vec::new() };
    let mut actor = ChunkActor {
        obs_norm: Standardizer::fit(&[], od, min_std),
        action_norm: Standardizer::fit(&[], ad, min_std),
        policy: policy.clone(),
        action_low: bounds.low.clone(),
        action_high: bounds.high.clone(),
        relative,
        initial_noise: InitialNoise::default(),
    };
    let (mut sample_obs, mut sample_chunks) = chunk_samples(demos, &actor);
    actor.obs_norm = Standardizer::fit(&sample_obs, od, min_std);
    actor.action_norm = Standardizer::fit(&sample_chunks, ad, min_std);
    actor.obs_norm.normalize(&mut sample_obs);
    actor.action_norm.normalize(&mut sample_chunks);
    Ok((actor, sample_obs, sample_chunks))
}

/// Fails unless `demos` has the task's widths and at least one step.
pub(crate) fn check_demonstrations(demos: &Demonstrations, od: usize, ad: usize) -> Result<(), AlgoError> {
    if demos.obs_dim != od || demos.action_dim != ad {
        return Err(AlgoError::Config {
            field: "demonstrations".into(),
            value: format!("obs_dim {}, action_dim {}", demos.obs_dim, demos.action_dim),
            allowed: format!("the task's widths: obs_dim {od}, action_dim {ad}"),
        });
    }
    if demos.num_steps() == 0 {
        return Err(AlgoError::Config {
            field: "demonstrations".into(),
            value: format!("{} episodes with no steps", demos.episodes.len()),
            allowed: "at least one step".into(),
        });
    }
    Ok(())
}

/// Raw `(s_t, a_{t..t+H})` samples of every step of every episode, chunks padded with the
/// episode's last action and made relative to `s_t` where the actor says so:
/// `([samples, obs_dim], [samples, H·D])`.
pub(crate) fn chunk_samples(demos: &Demonstrations, actor: &ChunkActor) -> (Vec<f32>, Vec<f32>) {
    let (h, ad, od) = (actor.policy.horizon, actor.policy.action_dim, actor.policy.obs_dim);
    let mut obs = Vec::new();
    let mut chunks = Vec::new();
    for ep in demos.episodes.iter().filter(|e| !e.is_empty()) {
        obs.extend_from_slice(&ep.observations);
        let len = ep.len();
        for t in 0..len {
            let state = &ep.observations[t * od..(t + 1) * od];
            for j in 0..h {
                let s = (t + j).min(len - 1);
                let at = chunks.len();
                chunks.extend_from_slice(&ep.actions[s * ad..(s + 1) * ad]);
                actor.add_state(state, &mut chunks[at..], -1.0);
            }
        }
    }
    (obs, chunks)
}
