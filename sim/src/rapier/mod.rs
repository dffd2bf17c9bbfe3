//! Robots and scenes simulated with rapier3d, many worlds stepped in parallel.

pub mod articulation;

pub use articulation::{Articulation, SpawnOptions};

#[cfg(test)]
mod tests;
