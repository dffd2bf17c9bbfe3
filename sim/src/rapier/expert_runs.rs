//! Whole episodes of a task's scripted expert in a [`RapierEnv`]: its success rate and mean
//! return ([`evaluate_expert`]), or its episodes recorded as demonstrations, optionally with
//! perturbed actions (DART) and camera images.

use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::SeedableRng;
use rayon::prelude::*;

use super::builtin_tasks::rapier_tasks;
use super::env::RapierEnv;
use super::scripted_expert::scripted_expert;
use super::task_config::TaskConfig;
use crate::demonstrations::{Demonstrations, Episode};
use crate::{SimError, VecEnv};

/// Results of [`evaluate_expert`].
#[derive(Debug, Clone, PartialEq)]
pub struct ExpertEval {
    /// Episodes run.
    pub episodes: usize,
    /// Fraction of episodes that ended in success.
    pub success_rate: f64,
    /// Mean undiscounted return.
    pub mean_return: f64,
    /// Mean episode length, control steps.
    pub mean_length: f64,
}

/// Runs `episodes` episodes of the task's scripted expert in `env` from `reset(seed)`, spread
/// evenly over its environments (environment `i` runs `episodes / n` episodes, one more for
/// the first `episodes % n`), and reports the success rate and mean return.
pub fn evaluate_expert(env: &mut RapierEnv, episodes: usize, seed: u64) -> Result<ExpertEval, SimError> {
    let demos = run_expert(env, episodes, seed, false, 0.0, None)?;
    let k = episodes.max(1) as f64;
    let successes = demos.episodes.iter().filter(|e| e.success).count();
    let returns: f64 = demos.episodes.iter().map(|e| e.rewards.iter().map(|&r| r as f64).sum::<f64>()).sum();
    Ok(ExpertEval {
        episodes,
        success_rate: successes as f64 / k,
        mean_return: returns / k,
        mean_length: demos.num_steps() as f64 / k,
    })
}

/// Records `episodes` episodes of the task's scripted expert in `env` from `reset(seed)`
/// (spread over its environments as in [`evaluate_expert`]), successful or not, in the order
/// they end (ties by environment index): observations, actions, rewards and outcome.
pub fn record_expert(env: &mut RapierEnv, episodes: usize, seed: u64) -> Result<Demonstrations, SimError> {
    run_expert(env, episodes, seed, true, 0.0, None)
}

/// [`record_expert`] with the executed actions perturbed (DART, Laskey et al. 2017): every
/// step the environment runs the expert's action plus Gaussian noise of std
/// `noise_std × clip` (clamped to `±clip`, the task's action clip), while the episode records
/// the expert's clean action as the label and the perturbed one in the state that follows.
/// The demonstrations then show how the expert recovers from the small deviations a cloned
/// policy makes, instead of only its own noise-free path; without them a clone never sees the
/// corrective part of the expert's feedback and drifts (the hold of pick-cube, where the
/// expert's states never leave the goal). The last tenth of each episode's time limit is not
/// perturbed. The noise is drawn from a generator seeded by `seed`.
pub fn record_expert_perturbed(
    env: &mut RapierEnv,
    episodes: usize,
    seed: u64,
    noise_std: f32,
) -> Result<Demonstrations, SimError> {
    run_expert(env, episodes, seed, true, noise_std, None)
}

/// Mixed into the seed of the visual randomization of recorded episodes (as `CameraEnv` does).
const RECORD_VISUAL_SEED: u64 = 0x5eed_ca3e_7a5e_0001;

/// [`record_expert_perturbed`] with the cameras of `render` rendering every environment after
/// each reset and step: every episode carries, per camera, the image seen with each
/// observation ([`Episode::images`], `[len, height, width, 3]` `u8`) and
/// [`Demonstrations::cameras`] lists the cameras. Visual randomization is drawn anew at each
/// episode start. Errors when a camera does not fit the scene (naming its field).
pub fn record_expert_rendered(
    env: &mut RapierEnv,
    episodes: usize,
    seed: u64,
    noise_std: f32,
    render: crate::camera::RenderConfig,
) -> Result<Demonstrations, SimError> {
    use crate::view::SceneView;
    let mut cameras = crate::camera::Cameras::new(&env.bodies(), render, env.num_envs())?;
    run_expert(env, episodes, seed, true, noise_std, Some(&mut cameras))
}

/// The expert loop of [`evaluate_expert`] and [`record_expert`]; stores observations and
/// actions only when `keep_steps` (rewards always, for returns); executes the actions perturbed
/// by `noise_std` (see [`record_expert_perturbed`]).
fn run_expert(
    env: &mut RapierEnv,
    episodes: usize,
    seed: u64,
    keep_steps: bool,
    noise_std: f32,
    mut cameras: Option<&mut crate::camera::Cameras>,
) -> Result<Demonstrations, SimError> {
    let n = env.num_envs();
    let mut experts = (0..n).map(|_| scripted_expert(env.spec())).collect::<Result<Vec<_>, _>>()?;
    let quota: Vec<usize> = (0..n).map(|i| episodes / n + usize::from(i < episodes % n)).collect();
    let mut done = vec![0usize; n];
    let (od, ad) = (env.obs_spec().vector.dim(), env.spec().num_actions());
    let mut demos = Demonstrations {
        task: env.info().name.to_string(),
        fps: 1.0 / env.spec().config.scene.control_dt(),
        obs_dim: od,
        action_dim: ad,
        episodes: Vec::with_capacity(episodes),
        cameras: match &cameras {
            Some(c) => c
                .images()
                .iter()
                .map(|i| crate::ImageSpec { name: i.name.clone(), height: i.height, width: i.width, channels: 3 })
                .collect(),
            None => Vec::new(),
        },
        state_dim: if env.obs_spec().critic.is_some() { env.spec().critic_dim } else { 0 },
    };
    let sd = demos.state_dim;
    let num_cameras = demos.cameras.len();
    let empty = || Episode { images: vec![Vec::new(); num_cameras], ..Episode::default() };
    let mut running: Vec<Episode> = (0..n).map(|_| empty()).collect();
    let mut actions = vec![0.0f32; n * ad];
    let mut executed = vec![0.0f32; n * ad];
    let clip = env.spec().config.action.clip;
    // The last tenth of the time limit runs unperturbed, so that a task judged at the end of
    // the episode (pick-cube's hold) is judged on the expert's own behaviour.
    let quiet_from = env.spec().config.episode_steps as usize * 9 / 10;
    let mut noise_rng = ChaCha8Rng::seed_from_u64(seed ^ 0xDA47);
    env.reset(seed);
    if let Some(c) = cameras.as_deref_mut() {
        c.reset(seed ^ RECORD_VISUAL_SEED);
        c.render(&*env)?;
    }
    for (expert, scene) in experts.iter_mut().zip(env.scenes()) {
        expert.reset(env.spec(), scene);
    }
    while done.iter().zip(&quota).any(|(d, q)| d < q) {
        let spec = env.spec();
        experts
            .par_iter_mut()
            .zip(env.scenes().par_iter())
            .zip(actions.par_chunks_mut(ad.max(1)))
            .for_each(|((expert, scene), action)| expert.act(spec, scene, action));
        if keep_steps {
            let obs = &env.buffers().obs;
            for (i, ep) in running.iter_mut().enumerate().filter(|(i, _)| done[*i] < quota[*i]) {
                ep.observations.extend_from_slice(&obs[i * od..(i + 1) * od]);
                ep.actions.extend_from_slice(&actions[i * ad..(i + 1) * ad]);
                ep.states.extend_from_slice(&env.buffers().critic_obs[i * sd..(i + 1) * sd]);
                if let Some(c) = cameras.as_deref() {
                    for (store, images) in ep.images.iter_mut().zip(c.images()) {
                        store.extend_from_slice(images.rgb_of(i));
                    }
                }
            }
        }
        for (i, ep) in running.iter_mut().enumerate() {
            if ep.rewards.is_empty() && ep.instruction.is_none() {
                ep.instruction = env.instruction(i).map(str::to_string);
            }
        }
        executed.copy_from_slice(&actions);
        if noise_std > 0.0 {
            for (i, a) in executed.chunks_exact_mut(ad.max(1)).enumerate() {
                if running[i].rewards.len() >= quiet_from {
                    continue;
                }
                for a in a {
                    let xi = super::terms::gaussian(&mut noise_rng);
                    *a = (*a + noise_std * clip * xi).clamp(-clip, clip);
                }
            }
        }
        env.step(&executed)?;
        let b = env.buffers();
        for i in 0..n {
            if done[i] < quota[i] {
                running[i].rewards.push(b.reward[i]);
            }
            if !b.done(i) {
                continue;
            }
            if done[i] < quota[i] {
                done[i] += 1;
                let mut ep = std::mem::replace(&mut running[i], empty());
                ep.success = b.success[i] > 0.0;
                ep.terminated = b.terminated[i] > 0.0;
                demos.episodes.push(ep);
            }
            experts[i].reset(env.spec(), &env.scenes()[i]);
            if let Some(c) = cameras.as_deref_mut() {
                c.randomize(i);
            }
        }
        if let Some(c) = cameras.as_deref_mut() {
            c.render(&*env)?;
        }
    }
    Ok(demos)
}

/// [`evaluate_expert`] on `num_envs` environments of the registered rapier task `name`, with
/// its default configuration or `config`.
pub fn evaluate_task_expert(
    name: &str,
    config: Option<&TaskConfig>,
    num_envs: usize,
    episodes: usize,
    seed: u64,
) -> Result<ExpertEval, SimError> {
    evaluate_expert(&mut task_env(name, config, num_envs.min(episodes).max(1))?, episodes, seed)
}

/// [`record_expert`] on `num_envs` environments of the registered rapier task `name`, with its
/// default configuration or `config`.
pub fn record_task_expert(
    name: &str,
    config: Option<&TaskConfig>,
    num_envs: usize,
    episodes: usize,
    seed: u64,
) -> Result<Demonstrations, SimError> {
    record_expert(&mut task_env(name, config, num_envs.min(episodes).max(1))?, episodes, seed)
}

/// [`record_expert_perturbed`] on `num_envs` environments of the registered rapier task `name`,
/// with its default configuration or `config`.
pub fn record_task_expert_perturbed(
    name: &str,
    config: Option<&TaskConfig>,
    num_envs: usize,
    episodes: usize,
    seed: u64,
    noise_std: f32,
) -> Result<Demonstrations, SimError> {
    record_expert_perturbed(&mut task_env(name, config, num_envs.min(episodes).max(1))?, episodes, seed, noise_std)
}

/// [`record_expert_rendered`] (cameras from `render`) or, without `render`,
/// [`record_expert_perturbed`], on `num_envs` environments of the registered rapier task
/// `name`, with its default configuration or `config`.
pub fn record_task_expert_rendered(
    name: &str,
    config: Option<&TaskConfig>,
    num_envs: usize,
    episodes: usize,
    seed: u64,
    noise_std: f32,
    render: Option<crate::camera::RenderConfig>,
) -> Result<Demonstrations, SimError> {
    let mut env = task_env(name, config, num_envs.min(episodes).max(1))?;
    match render {
        Some(r) => record_expert_rendered(&mut env, episodes, seed, noise_std, r),
        None => record_expert_perturbed(&mut env, episodes, seed, noise_std),
    }
}

/// The registered tasks whose scripted expert exists ([`scripted_expert`] accepts them).
pub fn tasks_with_expert() -> Vec<String> {
    rapier_tasks()
        .into_iter()
        .filter(|t| {
            let Ok(model) = embodia_robots::scene_robot(&(t.config)().scene.robot) else { return false };
            RapierEnv::new(t.info.clone(), (t.config)(), model, 1).is_ok_and(|env| scripted_expert(env.spec()).is_ok())
        })
        .map(|t| t.info.name.to_string())
        .collect()
}

/// `num_envs` environments of the registered rapier task `name`.
fn task_env(name: &str, config: Option<&TaskConfig>, num_envs: usize) -> Result<RapierEnv, SimError> {
    let Some(task) = rapier_tasks().into_iter().find(|t| t.info.name == name) else {
        if crate::tasks().iter().any(|t| t.name == name) {
            return Err(SimError::NoExpert { name: name.to_string(), with_expert: tasks_with_expert() });
        }
        let valid = crate::tasks().iter().map(|t| t.name.to_string()).collect();
        return Err(SimError::UnknownTask { name: name.to_string(), valid });
    };
    let config = config.cloned().unwrap_or_else(task.config);
    let model = embodia_robots::scene_robot(&config.scene.robot)
        .map_err(|e| SimError::InvalidTask(format!("`env.scene.robot`: {e}")))?;
    RapierEnv::new(task.info, config, model, num_envs)
}
