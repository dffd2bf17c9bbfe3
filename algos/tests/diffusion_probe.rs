//! Diagnostic (ignored): open-loop error of a pick-cube diffusion SFT policy per DDIM step count.
use burn::tensor::Device;
use embodia_algos::{ChunkModel, DiffusionSft, Sft, SftConfig, act_diffusion};
use embodia_policies::{TimestepSpacing, DiffusionConfig, DiffusionPolicy, load_params, named_params};
use embodia_sim::rapier::expert::record_task_expert;

#[test]
#[ignore]
fn probe() {
    let task = std::env::var("PROBE_TASK").unwrap_or("pick-cube".into());
    let steps: usize = std::env::var("PROBE_STEPS").map(|s| s.parse().unwrap()).unwrap_or(2000);
    let demos = record_task_expert(&task, None, 16, 20, 7).unwrap();
    let config = SftConfig { model: ChunkModel::Diffusion, decay_steps: steps as u64, ..Default::default() };
    let env = embodia_sim::make(&task, 1).unwrap();
    let mut sft = DiffusionSft::new(config.clone(), env.as_ref(), &demos, Device::flex().autodiff(), 1).unwrap();
    for i in 0..steps {
        let l = sft.update().unwrap();
        if i % 500 == 0 { eprintln!("step {i} loss {l}"); }
    }
    if std::env::var("PROBE_FLOW").is_ok() {
        let mut flow = Sft::new(SftConfig { decay_steps: steps as u64, ..Default::default() }, env.as_ref(), &demos, Device::flex().autodiff(), 1).unwrap();
        for _ in 0..steps { flow.update().unwrap(); }
        let (model, actor) = flow.policy();
        let (od, ad, c) = (actor.policy.obs_dim, actor.policy.action_dim, actor.policy.chunk);
        let (mut err, mut count) = (0.0f64, 0usize);
        for ep in demos.episodes.iter().take(5) {
            let len = ep.len();
            let mut out = vec![0.0f32; len * c * ad];
            actor.act(model, &ep.observations[..len * od], &mut out, None, &Device::flex()).unwrap();
            for t in 0..len { for j in 0..c.min(len - t) { for a in 0..ad {
                let e = out[(t * c + j) * ad + a] - ep.actions[(t + j) * ad + a];
                err += (e * e) as f64; count += 1;
            }}}
        }
        eprintln!("K=flow: open-loop action MSE {}", err / count as f64);
    }
    let (ema, actor) = sft.policy();
    let params = named_params(ema);
    let (od, ad, c) = (actor.policy.obs_dim, actor.policy.action_dim, actor.policy.chunk);
    for (k, clip, spacing) in [(5, 3.0, TimestepSpacing::Trailing), (5, 3.0, TimestepSpacing::Leading), (10, 3.0, TimestepSpacing::Trailing), (5, 0.0, TimestepSpacing::Trailing)] {
        let d = DiffusionConfig { sampling_steps: k, denoised_clip: clip, spacing, ..config.diffusion.clone() };
        let p = load_params(DiffusionPolicy::new(&actor.policy, &d, &Device::flex()), &params).unwrap();
        let (mut err, mut count) = (0.0f64, 0usize);
        for ep in demos.episodes.iter().take(5) {
            let len = ep.len();
            let mut out = vec![0.0f32; len * c * ad];
            act_diffusion(actor, &p, 0.0, &ep.observations[..len * od], &mut out, None, &Device::flex()).unwrap();
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
        eprintln!("K={k} clip={clip} {spacing:?}: open-loop action MSE {}", err / count as f64);
    }
}
