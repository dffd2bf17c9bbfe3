//! The random draws of resets and events, from each environment's own generator.

use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::RngCore;

/// A closed interval `[low, high]`.
pub type Range = [f32; 2];

/// Uniform draw in `[r[0], r[1]]`.
pub(crate) fn uniform(rng: &mut ChaCha8Rng, r: Range) -> f32 {
    let u = (rng.next_u32() >> 8) as f32 * (1.0 / (1u32 << 24) as f32);
    r[0] + (r[1] - r[0]) * u
}

/// Standard normal draw (Box–Muller).
pub(crate) fn gaussian(rng: &mut ChaCha8Rng) -> f32 {
    let u1 = uniform(rng, [f32::EPSILON, 1.0]);
    let u2 = uniform(rng, [0.0, 1.0]);
    (-2.0 * u1.ln()).sqrt() * (std::f32::consts::TAU * u2).cos()
}
