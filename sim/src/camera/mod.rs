//! Batched RGB and depth cameras on simulated scenes, rendered on the CPU.
//!
//! The renderer rasterizes the visual shapes a [`SceneView`](crate::view::SceneView) lists
//! (boxes, spheres, cylinders and capsules tessellated once, URDF triangle meshes as they are)
//! with a z-buffer, flat Lambert shading from one directional light plus ambient, and
//! per-body colours. It allocates nothing per frame: images live in [`CameraImages`] buffers,
//! `[num_envs, H, W, 3]` `u8` RGB and `[num_envs, H, W]` `f32` depth in metres along the
//! optical axis, and environments render in parallel with rayon, each into its own slice (so
//! images do not depend on the thread count).
//!
//! - [`config`]: cameras (resolution, [`Lens`], [`Mount`]: fixed or on a robot link),
//!   [`Lighting`], visual domain [`Randomization`] (colours, light, camera jitter,
//!   distractors).
//! - [`Cameras`]: the cameras of a batch, their randomization per environment and their images.
//! - [`CameraEnv`]: any `VecEnv` with a scene plus cameras rendered after each reset and step.

mod affine;
mod batch;
pub mod config;
mod env;
mod mesh;
mod raster;

pub use batch::{CameraImages, Cameras};
pub use config::{CameraConfig, Lens, Lighting, Mount, Randomization, RenderConfig};
pub use env::CameraEnv;

#[cfg(test)]
mod tests;
