//! The numeric type dynamics are written in: one `f32`, or a column of `num_envs` values in a
//! burn tensor, so a model written once steps one environment on the CPU or a whole batch on
//! any burn device.

use burn::tensor::Tensor;
use std::ops::{Add, Div, Mul, Neg, Sub};

/// A real number, or a batch of them operated on element-wise.
///
/// Operations take their operands by value (burn tensors are reference-counted handles; for
/// `f32` a clone is a copy). Constants are `f32` and broadcast over a batch.
pub trait Scalar:
    Clone
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
    + Add<f32, Output = Self>
    + Sub<f32, Output = Self>
    + Mul<f32, Output = Self>
    + Div<f32, Output = Self>
{
    /// Sine (argument in radians).
    fn sin(self) -> Self;
    /// Cosine (argument in radians).
    fn cos(self) -> Self;
    /// Square root.
    fn sqrt(self) -> Self;
    /// Largest integer not greater than the value.
    fn floor(self) -> Self;
    /// Each value limited to `[low, high]`.
    fn clamp(self, low: f32, high: f32) -> Self;
    /// `value` everywhere, shaped like `self` (a batch of constants for tensors).
    fn splat(&self, value: f32) -> Self;

    /// `self²`.
    fn square(self) -> Self {
        self.clone() * self
    }
}

impl Scalar for f32 {
    fn sin(self) -> Self {
        f32::sin(self)
    }
    fn cos(self) -> Self {
        f32::cos(self)
    }
    fn sqrt(self) -> Self {
        f32::sqrt(self)
    }
    fn floor(self) -> Self {
        f32::floor(self)
    }
    fn clamp(self, low: f32, high: f32) -> Self {
        f32::clamp(self, low, high)
    }
    fn splat(&self, value: f32) -> Self {
        value
    }
}

/// A column of values, `[num_envs]`, one per environment.
impl Scalar for Tensor<1> {
    fn sin(self) -> Self {
        Tensor::sin(self)
    }
    fn cos(self) -> Self {
        Tensor::cos(self)
    }
    fn sqrt(self) -> Self {
        Tensor::sqrt(self)
    }
    fn floor(self) -> Self {
        Tensor::floor(self)
    }
    fn clamp(self, low: f32, high: f32) -> Self {
        Tensor::clamp(self, low, high)
    }
    fn splat(&self, value: f32) -> Self {
        self.full_like(value)
    }
}

/// A 3-vector of scalars (for tensors: three `[num_envs]` columns).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Vec3<S> {
    /// x component.
    pub x: S,
    /// y component.
    pub y: S,
    /// z component.
    pub z: S,
}

impl<S: Scalar> Vec3<S> {
    /// The vector `(x, y, z)`.
    pub fn new(x: S, y: S, z: S) -> Self {
        Self { x, y, z }
    }

    /// `self + other`.
    #[allow(clippy::should_implement_trait, reason = "arithmetic on `Scalar` values is spelled as methods throughout")]
    pub fn add(self, other: Self) -> Self {
        Self::new(self.x + other.x, self.y + other.y, self.z + other.z)
    }

    /// `self − other`.
    #[allow(clippy::should_implement_trait, reason = "arithmetic on `Scalar` values is spelled as methods throughout")]
    pub fn sub(self, other: Self) -> Self {
        Self::new(self.x - other.x, self.y - other.y, self.z - other.z)
    }

    /// `k · self` for a per-environment scalar `k`.
    pub fn scale(self, k: S) -> Self {
        Self::new(self.x * k.clone(), self.y * k.clone(), self.z * k)
    }

    /// `k · self` for a constant `k`.
    pub fn scale_f(self, k: f32) -> Self {
        Self::new(self.x * k, self.y * k, self.z * k)
    }

    /// Dot product.
    pub fn dot(self, other: Self) -> S {
        self.x * other.x + self.y * other.y + self.z * other.z
    }

    /// Squared Euclidean norm.
    pub fn norm_sq(self) -> S {
        self.clone().dot(self)
    }

    /// Cross product `self × other`.
    pub fn cross(self, o: Self) -> Self {
        let Self { x, y, z } = self;
        Self::new(
            y.clone() * o.z.clone() - z.clone() * o.y.clone(),
            z * o.x.clone() - x.clone() * o.z,
            x * o.y - y * o.x,
        )
    }

    /// Components as an array `[x, y, z]`.
    pub fn to_array(self) -> [S; 3] {
        [self.x, self.y, self.z]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cross_product_follows_the_right_hand_rule() {
        let x = Vec3::new(1.0f32, 0.0, 0.0);
        let y = Vec3::new(0.0f32, 1.0, 0.0);
        assert_eq!(x.cross(y), Vec3::new(0.0, 0.0, 1.0));
        assert_eq!(y.cross(x), Vec3::new(0.0, 0.0, -1.0));
    }

    #[test]
    fn tensor_columns_compute_what_f32_computes() {
        let device = burn::tensor::Device::flex();
        let values = [0.3f32, -1.7, 2.5];
        let t = Tensor::<1>::from_floats(values, &device);
        let got = (t.clone().sin() * t.clone().cos() + t.clone().square().sqrt() - 0.5).clamp(-1.0, 1.0) / 2.0;
        let got: Vec<f32> = got.into_data().try_to_vec().unwrap();
        for (g, v) in got.iter().zip(values) {
            let want = (v.sin() * v.cos() + v.square().sqrt() - 0.5).clamp(-1.0, 1.0) / 2.0;
            assert!((g - want).abs() < 1e-6, "{g} vs {want}");
        }
    }
}
