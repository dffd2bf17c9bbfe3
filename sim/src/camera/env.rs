//! [`CameraEnv`]: any [`VecEnv`] with a scene, plus cameras rendered after every reset and step.

use super::batch::{CameraImages, Cameras};
use super::config::RenderConfig;
use crate::{ActionSpec, EnvSnapshot, ObsSpec, SimError, StepBuffers, TaskInfo, VecEnv};

/// Mixed into the seed of the visual randomization, so that it does not draw the same numbers
/// as the physics randomization of the wrapped environment.
const VISUAL_SEED: u64 = 0x5eed_ca3e_7a5e_0001;

/// A [`VecEnv`] whose every environment is also seen by cameras: after each `reset` and `step`,
/// [`CameraEnv::images`] holds what each camera sees in each environment, rendered from the
/// observation the policy acts on next (for an environment that just ended, the first state of
/// its next episode; the last frame of the ended episode is not rendered). Visual
/// randomization is drawn anew for an environment whenever its episode starts.
///
/// ```
/// use embodia_sim::camera::{CameraEnv, RenderConfig};
/// use embodia_sim::VecEnv;
/// let config = RenderConfig::for_task(&embodia_sim::task_config("pick-cube").unwrap(), 64, 64);
/// let mut env = CameraEnv::new(embodia_sim::make("pick-cube", 4)?, config)?;
/// env.reset(1);
/// env.step(&vec![0.0; 4 * env.action_spec().bounds.dim()])?;
/// let wrist = env.cameras().camera("wrist").expect("pick-cube has an end effector");
/// assert_eq!(wrist.depth.len(), 4 * 64 * 64);
/// # Ok::<(), embodia_sim::SimError>(())
/// ```
pub struct CameraEnv {
    inner: Box<dyn VecEnv>,
    cameras: Cameras,
    /// The wrapped environment's spec with the cameras' images added.
    obs_spec: ObsSpec,
}

impl CameraEnv {
    /// Wraps `inner` (which must have a [`scene_view`](VecEnv::scene_view)) with the cameras of
    /// `config`, reset with seed 0 and rendered.
    pub fn new(inner: Box<dyn VecEnv>, config: RenderConfig) -> Result<Self, SimError> {
        let Some(view) = inner.scene_view() else {
            return Err(SimError::Unsupported(format!(
                "task `{}` has no scene for cameras to see (only rapier tasks do)",
                inner.info().name
            )));
        };
        let cameras = Cameras::new(&view.bodies(), config, inner.num_envs())?;
        let mut obs_spec = inner.obs_spec().clone();
        obs_spec.images = cameras
            .config()
            .cameras
            .iter()
            .map(|c| crate::ImageSpec { name: c.name.clone(), height: c.height, width: c.width, channels: 3 })
            .collect();
        let mut env = Self { inner, cameras, obs_spec };
        env.inner.reset(0);
        env.cameras.reset(VISUAL_SEED);
        env.render()?;
        Ok(env)
    }

    /// The cameras and their images.
    pub fn cameras(&self) -> &Cameras {
        &self.cameras
    }

    /// The images of the last reset or step, one entry per camera.
    pub fn images(&self) -> &[CameraImages] {
        self.cameras.images()
    }

    /// The wrapped environment.
    pub fn inner(&self) -> &dyn VecEnv {
        self.inner.as_ref()
    }

    fn render(&mut self) -> Result<(), SimError> {
        let view = self.inner.scene_view().expect("checked in new");
        self.cameras.render(view)
    }
}

impl VecEnv for CameraEnv {
    fn info(&self) -> &TaskInfo {
        self.inner.info()
    }

    fn num_envs(&self) -> usize {
        self.inner.num_envs()
    }

    /// The wrapped environment's spec, with one [`crate::ImageSpec`] per camera (RGB).
    fn obs_spec(&self) -> &ObsSpec {
        &self.obs_spec
    }

    fn image(&self, camera: usize) -> Option<&[u8]> {
        self.cameras.images().get(camera).map(|i| i.rgb.as_slice())
    }

    fn instruction(&self, env: usize) -> Option<&str> {
        self.inner.instruction(env)
    }

    fn action_spec(&self) -> &ActionSpec {
        self.inner.action_spec()
    }

    fn reset(&mut self, seed: u64) {
        self.inner.reset(seed);
        self.cameras.reset(seed ^ VISUAL_SEED);
        // The bodies were checked when the cameras were made and a scene's bodies never change.
        self.render().expect("the scene keeps its bodies");
    }

    fn step(&mut self, actions: &[f32]) -> Result<(), SimError> {
        self.inner.step(actions)?;
        for env in 0..self.inner.num_envs() {
            if self.inner.buffers().done(env) {
                self.cameras.randomize(env);
            }
        }
        self.render()
    }

    fn buffers(&self) -> &StepBuffers {
        self.inner.buffers()
    }

    /// The wrapped environment's snapshot; the visual randomization is not part of it.
    fn snapshot(&self) -> EnvSnapshot {
        self.inner.snapshot()
    }

    /// Restores the wrapped environment, then draws fresh visual randomization from a seed
    /// derived from the snapshot's generators (so a restore is deterministic).
    fn restore(&mut self, snapshot: &EnvSnapshot) -> Result<(), SimError> {
        self.inner.restore(snapshot)?;
        let seed = snapshot.rng.iter().fold(VISUAL_SEED, |h, r| {
            let word = u64::from_le_bytes(r.seed[..8].try_into().expect("8 bytes"));
            (h ^ word ^ r.word_pos as u64).rotate_left(17).wrapping_mul(0x9e37_79b9_7f4a_7c15)
        });
        self.cameras.reset(seed);
        self.render()
    }

    fn scene_view(&self) -> Option<&dyn crate::view::SceneView> {
        self.inner.scene_view()
    }

    fn action_states(&self) -> Vec<Option<crate::ActionState>> {
        self.inner.action_states()
    }

    fn expert_actions(&mut self, actions: &mut [f32]) -> Result<(), SimError> {
        self.inner.expert_actions(actions)
    }

    fn set_first_env(&mut self, first: usize) -> Result<(), SimError> {
        self.inner.set_first_env(first)
    }
}
