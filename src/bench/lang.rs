//! `embodia bench lang`: figures of a language-conditioned task family (`lang-cubes`): the
//! scripted expert's success rate per variant, and env-steps/s of the family without and with
//! cameras.

use std::time::Instant;

use rand::{Rng, SeedableRng};
use serde::Serialize;

use crate::run::RunError;
use embodia_sim::VecEnv;
use embodia_sim::camera::{CameraEnv, RenderConfig};
use embodia_sim::rapier::language::{LanguageSpec, Split};

/// The scripted expert on one variant.
#[derive(Debug, Clone, Serialize)]
pub struct VariantResult {
    /// The instruction.
    pub instruction: String,
    /// Whether the family's default config holds it out of training.
    pub held_out: bool,
    /// Fraction of the episodes that succeeded.
    pub success_rate: f64,
    /// Mean episode length, control steps (episodes end on success).
    pub mean_length: f64,
}

/// Env-steps per second of one setting.
#[derive(Debug, Clone, Serialize)]
pub struct StepRate {
    /// What was measured, e.g. `no camera` or `front 64x64`.
    pub setting: String,
    /// Batch size.
    pub envs: usize,
    /// Environment steps (batch steps × envs) per wall second, uniform random actions.
    pub env_steps_per_s: f64,
}

/// The scripted expert's success on every variant of the family `task`, `episodes` episodes
/// each (all in parallel environments), seeds `seed + k` for variant `k`.
pub fn expert_per_variant(task: &str, episodes: usize, seed: u64) -> Result<Vec<VariantResult>, RunError> {
    let config = family(task)?;
    let lang = config.command.language.as_ref().expect("checked by family");
    let spec = LanguageSpec::new(lang, config.scene.objects.len()).map_err(embodia_sim::SimError::InvalidTask)?;
    let mut out = Vec::new();
    for (k, v) in spec.variants.iter().enumerate() {
        let mut c = config.clone();
        let l = c.command.language.as_mut().expect("a family");
        l.held_out = vec![v.instruction.clone()];
        l.split = Split::HeldOut;
        let e = embodia_sim::rapier::expert_runs::evaluate_task_expert(
            task,
            Some(&c),
            episodes,
            episodes,
            seed + k as u64,
        )?;
        out.push(VariantResult {
            instruction: v.instruction.clone(),
            held_out: spec.held_out[k],
            success_rate: e.success_rate,
            mean_length: e.mean_length,
        });
    }
    Ok(out)
}

/// Env-steps/s of `envs` environments of `task` under uniform random actions over `steps`
/// batch steps (after 10 warm-up steps), with the cameras named in `cameras` (of the task's
/// `front`/`wrist`, at `res × res`) rendered after every step; none for an empty list.
pub fn step_rate(task: &str, envs: usize, res: usize, cameras: &[&str], steps: usize) -> Result<StepRate, RunError> {
    let inner = embodia_sim::make(task, envs)?;
    let mut env: Box<dyn VecEnv> = if cameras.is_empty() {
        inner
    } else {
        let config = embodia_sim::task_config(task)
            .ok_or_else(|| embodia_sim::SimError::UnknownTask { name: task.to_string(), valid: Vec::new() })?;
        let mut render = RenderConfig::for_task(&config, res, res);
        render.cameras.retain(|c| cameras.contains(&c.name.as_str()));
        Box::new(CameraEnv::new(inner, render)?)
    };
    env.reset(1);
    let bounds = env.action_spec().bounds.clone();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
    let mut actions = vec![0.0f32; envs * bounds.dim()];
    let mut timed = 0.0;
    for step in 0..steps + 10 {
        for (i, a) in actions.iter_mut().enumerate() {
            let k = i % bounds.dim();
            *a = rng.random_range(bounds.low[k].max(-1.0)..=bounds.high[k].min(1.0));
        }
        let start = Instant::now();
        env.step(&actions)?;
        if step >= 10 {
            timed += start.elapsed().as_secs_f64();
        }
    }
    let setting =
        if cameras.is_empty() { "no camera".to_string() } else { format!("{} {res}x{res}", cameras.join("+")) };
    Ok(StepRate { setting, envs, env_steps_per_s: (steps * envs) as f64 / timed.max(1e-9) })
}

/// The default configuration of `task`, which must be a language family.
fn family(task: &str) -> Result<embodia_sim::TaskConfig, RunError> {
    match embodia_sim::task_config(task) {
        Some(c) if c.command.language.is_some() => Ok(c),
        _ => Err(embodia_sim::SimError::InvalidTask(format!(
            "`--task {task}` is not a language-conditioned family (try lang-cubes)"
        ))
        .into()),
    }
}
