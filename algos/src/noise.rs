//! Temporally correlated exploration noise.
//!
//! White Gaussian noise explores by jittering: over many steps its effect averages out, which
//! fails on tasks like mountain-car-continuous where only a sustained push in one direction
//! reaches the reward. Pink noise (power ∝ 1/f) keeps long stretches of same-sign noise while
//! staying Gaussian with unit variance per step; Eberhard et al. (ICLR 2023, "Pink Noise Is All
//! You Need") found it the best default for off-policy continuous control.

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;
use serde::{Deserialize, Serialize};

/// Which noise drives exploration when acting (updates always use white noise, as the policy's
/// log-density is that of independent Gaussians).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum ExplorationNoise {
    /// Independent standard-normal samples every step.
    #[default]
    White,
    /// Pink (1/f) noise from [`PinkNoise`].
    Pink,
}

/// Octaves of [`PinkNoise`]: correlations reach over 2¹⁰ = 1,024 steps, about one long episode.
pub const PINK_OCTAVES: usize = 10;

/// Pink noise for `streams` independent channels (environments × action dimensions) by the
/// Voss–McCartney algorithm: each output is the sum of `PINK_OCTAVES` Gaussian sources, source
/// `k` redrawn every `2ᵏ` steps, plus a fresh white sample, scaled to unit variance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PinkNoise {
    /// Current source values, `[streams, PINK_OCTAVES]`.
    sources: Vec<f32>,
    /// Steps drawn so far.
    step: u64,
}

impl PinkNoise {
    /// Noise for `streams` channels with sources drawn from `rng`.
    pub fn new(streams: usize, rng: &mut ChaCha8Rng) -> Self {
        let sources = (0..streams * PINK_OCTAVES).map(|_| rng.sample(StandardNormal)).collect();
        Self { sources, step: 0 }
    }

    /// Number of channels.
    pub fn streams(&self) -> usize {
        self.sources.len() / PINK_OCTAVES
    }

    /// Fills `out` (`[streams]`) with the next sample of every channel. Allocation-free.
    pub fn sample(&mut self, rng: &mut ChaCha8Rng, out: &mut [f32]) {
        self.step += 1;
        // Source k changes when bit k of the step counter flips from 0 to 1: exactly one source
        // per step, the low octaves often, the high ones rarely.
        let k = self.step.trailing_zeros() as usize;
        let scale = 1.0 / ((PINK_OCTAVES + 1) as f32).sqrt();
        for (o, sources) in out.iter_mut().zip(self.sources.chunks_exact_mut(PINK_OCTAVES)) {
            if k < PINK_OCTAVES {
                sources[k] = rng.sample(StandardNormal);
            }
            let white: f32 = rng.sample(StandardNormal);
            *o = (sources.iter().sum::<f32>() + white) * scale;
        }
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;

    /// Unit variance per step, and strong positive correlation between nearby steps (white
    /// noise has none).
    #[test]
    fn pink_noise_has_unit_variance_and_long_correlation() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let streams = 64;
        let steps = 4096;
        let mut noise = PinkNoise::new(streams, &mut rng);
        let mut xs = vec![0.0f32; streams * steps];
        for t in 0..steps {
            noise.sample(&mut rng, &mut xs[t * streams..(t + 1) * streams]);
        }
        let n = xs.len() as f64;
        let mean = xs.iter().map(|&x| x as f64).sum::<f64>() / n;
        let var = xs.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / n;
        assert!(mean.abs() < 0.1, "mean {mean}");
        assert!((var - 1.0).abs() < 0.15, "variance {var}");
        let lag_corr = |lag: usize| {
            let mut s = 0.0;
            for t in 0..steps - lag {
                for c in 0..streams {
                    s += xs[t * streams + c] as f64 * xs[(t + lag) * streams + c] as f64;
                }
            }
            s / ((steps - lag) * streams) as f64 / var
        };
        assert!(lag_corr(1) > 0.6, "lag-1 correlation {}", lag_corr(1));
        assert!(lag_corr(16) > 0.3, "lag-16 correlation {}", lag_corr(16));
    }
}
