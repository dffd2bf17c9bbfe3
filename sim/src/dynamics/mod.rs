//! Dynamics written once for any [`Scalar`]: plain `f32` steps one environment on the CPU,
//! a burn tensor column steps a whole batch on any burn device (see [`crate::tensor`]).

pub mod cartpole;
pub mod flight;
pub mod pendulum;
pub mod quadrotor;
pub mod scalar;

pub use scalar::{Scalar, Vec3};
