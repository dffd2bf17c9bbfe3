//! embodia: reinforcement learning for robots, from simulation to hardware.
//!
//! This crate is the `embodia` command line and the glue around the member crates, which it
//! re-exports: [`robots`] (robot models), [`sim`] (vectorized environments), [`policies`]
//! (burn networks), [`algos`] (PPO, SAC and their machinery), [`dataset`] (demonstration
//! datasets in the LeRobot layout) and [`deploy`] (servo bus, emulator, control loop, safety
//! layer).
#![warn(missing_docs)]

pub mod actions;
pub mod algorithms;
pub mod bench;
pub mod camera;
pub mod compare;
pub mod config;
pub mod demos;
pub mod deployment;
pub mod device;
pub mod distill;
pub mod distributed;
pub mod error;
pub mod export;
pub mod plot;
pub mod render;
pub mod rollout_ranks;
pub mod run;
pub mod run_dir;
pub mod run_lock;
pub mod servo_twin;
pub mod viz;

pub use embodia_algos as algos;
pub use embodia_dataset as dataset;
pub use embodia_deploy as deploy;
pub use embodia_policies as policies;
pub use embodia_robots as robots;
pub use embodia_sim as sim;
