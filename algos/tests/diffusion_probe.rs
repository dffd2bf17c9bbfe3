//! Diagnostic, ignored by default: open-loop action error of a diffusion SFT policy on its own
//! demonstrations, per DDIM step count, timestep spacing and x̂0 clip (and, with `PROBE_FLOW`
//! set, of the flow SFT policy for comparison). Figures quoted in the README came from
//! `PROBE_FLOW=1 PROBE_STEPS=2000 cargo test --release -p embodia-algos --test diffusion_probe -- --ignored --nocapture`.

use burn::tensor::Device;
use embodia_algos::{ChunkActor, ChunkModel, DiffusionSft, Sft, SftConfig, act_diffusion};
use embodia_policies::{DiffusionConfig, DiffusionPolicy, TimestepSpacing, load_params, named_params};
use embodia_sim::demonstrations::Demonstrations;
use embodia_sim::rapier::expert::record_task_expert;

/// Mean squared error, in the task's action units, between the `C` executed actions chosen at
/// every step of the first 5 episodes and the demonstrated ones.
fn open_loop_mse(demos: &Demonstrations, actor: &ChunkActor, act: &dyn Fn(&[f32], &mut [f32])) -> f64 {
    let (od, ad, c) = (actor.policy.obs_dim, actor.policy.action_dim, actor.policy.chunk);
    let (mut err, mut count) = (0.0f64, 0usize);
    for ep in demos.episodes.iter().take(5) {
        let len = ep.len();
        let mut out = vec![0.0f32; len * c * ad];
        act(&ep.observations[..len * od], &mut out);
        for t in 0..len {
            for j in 0..c.min(len - t) {
                for a in 0..ad {
                    let e = out[(t * c + j) * ad + a] - ep.actions[(t + j) * ad + a];
                    err += (e * e) as f64;
                    count += 1;
                }
            }
        }
    }
    err / count as f64
}

#[test]
#[ignore]
fn probe() {
    let task = std::env::var("PROBE_TASK").unwrap_or("pick-cube".into());
    let steps: usize = std::env::var("PROBE_STEPS").map(|s| s.parse().unwrap()).unwrap_or(2000);
    let demos = record_task_expert(&task, None, 16, 20, 7).unwrap();
    let env = embodia_sim::make(&task, 1).unwrap();
    let plain = Device::flex();
    if std::env::var("PROBE_FLOW").is_ok() {
        let config = SftConfig { decay_steps: steps as u64, ..Default::default() };
        let mut flow = Sft::new(config, env.as_ref(), &demos, plain.clone().autodiff(), 1).unwrap();
        for _ in 0..steps {
            flow.update().unwrap();
        }
        let (model, actor) = flow.policy();
        let mse = open_loop_mse(&demos, actor, &|obs, out| actor.act(model, obs, out, None, &plain).unwrap());
        eprintln!("flow: open-loop action MSE {mse}");
    }
    let config = SftConfig { model: ChunkModel::Diffusion, decay_steps: steps as u64, ..Default::default() };
    let mut sft = DiffusionSft::new(config.clone(), env.as_ref(), &demos, plain.clone().autodiff(), 1).unwrap();
    for _ in 0..steps {
        sft.update().unwrap();
    }
    let (ema, actor) = sft.policy();
    let params = named_params(ema);
    for (k, clip, spacing) in [
        (5, 3.0, TimestepSpacing::Leading),
        (5, 3.0, TimestepSpacing::Trailing),
        (10, 3.0, TimestepSpacing::Leading),
        (5, 0.0, TimestepSpacing::Leading),
    ] {
        let d = DiffusionConfig { sampling_steps: k, denoised_clip: clip, spacing, ..config.diffusion.clone() };
        let p = load_params(DiffusionPolicy::new(&actor.policy, &d, &plain), &params).unwrap();
        let mse = open_loop_mse(&demos, actor, &|obs, out| act_diffusion(actor, &p, 0.0, obs, out, None, &plain).unwrap());
        eprintln!("diffusion K={k} clip={clip} {spacing:?}: open-loop action MSE {mse}");
    }
}
