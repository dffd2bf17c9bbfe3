//! Running mean and variance of observations (Chan et al.'s parallel update), for normalization.

use serde::{Deserialize, Serialize};

/// Per-feature running statistics, `[dim]`, accumulated in f64 so long runs do not drift.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunningNormalizer {
    mean: Vec<f64>,
    var: Vec<f64>,
    count: f64,
    /// Normalized values are clipped to `±clip` (RSL-RL and SB3 use 5–10).
    clip: f32,
    /// Added to the variance before the square root.
    eps: f64,
}

impl RunningNormalizer {
    /// Statistics for `dim` features with no data yet (identity until updated).
    pub fn new(dim: usize, clip: f32) -> Self {
        Self { mean: vec![0.0; dim], var: vec![1.0; dim], count: 0.0, clip, eps: 1e-8 }
    }

    /// Number of features.
    pub fn dim(&self) -> usize {
        self.mean.len()
    }

    /// Samples seen so far.
    pub fn count(&self) -> f64 {
        self.count
    }

    /// Per-feature mean, `[dim]`.
    pub fn mean(&self) -> &[f64] {
        &self.mean
    }

    /// Per-feature population variance, `[dim]`.
    pub fn var(&self) -> &[f64] {
        &self.var
    }

    /// Normalized values are clipped to `±clip`.
    pub fn clip(&self) -> f32 {
        self.clip
    }

    /// Added to the variance before the square root.
    pub fn eps(&self) -> f64 {
        self.eps
    }

    /// Folds a batch `[n, dim]` (row-major) into the statistics. Allocation-free.
    pub fn update(&mut self, batch: &[f32]) {
        let dim = self.dim();
        let n = (batch.len() / dim) as f64;
        if n == 0.0 {
            return;
        }
        for j in 0..dim {
            let column = batch.iter().skip(j).step_by(dim).map(|&x| x as f64);
            let batch_mean = column.clone().sum::<f64>() / n;
            let batch_var = column.map(|x| (x - batch_mean).powi(2)).sum::<f64>() / n;
            self.merge(j, n, batch_mean, batch_var);
        }
        self.count += n;
    }

    /// [`RunningNormalizer::update`] with every rank's batch in a data-parallel run
    /// ([`crate::data_parallel`]): one all-reduce of the per-feature sums `Σx`, `Σx²` (in f64)
    /// and the row count, folded in as [`RunningNormalizer::update_moments`] does. One message per
    /// call, since it runs at every environment step; the variance from the sums differs from
    /// one process's two-pass variance only in the last bits. `scratch` is reused between calls.
    /// Alone, [`RunningNormalizer::update`].
    pub fn update_over_ranks(&mut self, batch: &[f32], scratch: &mut Vec<f64>) {
        use crate::data_parallel::{Reduce, all_reduce, world};
        let Some(w) = world() else { return self.update(batch) };
        let dim = self.dim();
        scratch.clear();
        scratch.resize(2 * dim + 1, 0.0);
        for row in batch.chunks_exact(dim) {
            for (j, &x) in row.iter().enumerate() {
                let x = x as f64;
                scratch[j] += x;
                scratch[dim + j] += x * x;
            }
        }
        scratch[2 * dim] = (batch.len() / dim) as f64;
        all_reduce(w, scratch, Reduce::Sum);
        let n = scratch[2 * dim];
        if n == 0.0 {
            return;
        }
        for j in 0..dim {
            let mean = scratch[j] / n;
            self.merge(j, n, mean, (scratch[dim + j] / n - mean * mean).max(0.0));
        }
        self.count += n;
    }

    /// Folds a batch of `n` rows given by its per-feature sums `Σx` and `Σx²` (`[dim]` each, as
    /// a device reduces them) into the statistics.
    pub fn update_moments(&mut self, n: f64, sum: &[f32], sum_sq: &[f32]) {
        if n == 0.0 {
            return;
        }
        for j in 0..self.dim() {
            let batch_mean = f64::from(sum[j]) / n;
            let batch_var = (f64::from(sum_sq[j]) / n - batch_mean * batch_mean).max(0.0);
            self.merge(j, n, batch_mean, batch_var);
        }
        self.count += n;
    }

    /// Chan's parallel update of feature `j` with a batch of `n` rows of mean `batch_mean`
    /// and (population) variance `batch_var`; `self.count` is updated by the caller.
    fn merge(&mut self, j: usize, n: f64, batch_mean: f64, batch_var: f64) {
        let total = self.count + n;
        let delta = batch_mean - self.mean[j];
        // With no prior data the default variance of 1 must not leak into the result.
        let prior_m2 = if self.count > 0.0 { self.var[j] * self.count } else { 0.0 };
        let m2 = prior_m2 + batch_var * n + delta * delta * self.count * n / total;
        self.mean[j] += delta * n / total;
        self.var[j] = m2 / total;
    }

    /// Normalizes `[n, dim]` in place: `clip((x − mean)/√(var + ε))`.
    pub fn normalize(&self, batch: &mut [f32]) {
        let dim = self.dim();
        for row in batch.chunks_exact_mut(dim) {
            for (j, x) in row.iter_mut().enumerate() {
                let z = (*x as f64 - self.mean[j]) / (self.var[j] + self.eps).sqrt();
                *x = (z as f32).clamp(-self.clip, self.clip);
            }
        }
    }
}

/// Fixed per-feature standardization `z = (x − mean)/std` fitted once to a dataset (the norm
/// stats of demonstrations): for observations and actions of behaviour cloning.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Standardizer {
    /// Per-feature mean, `[dim]`.
    pub mean: Vec<f32>,
    /// Per-feature standard deviation, `[dim]`, at least the `min_std` it was fitted with.
    pub std: Vec<f32>,
}

impl Standardizer {
    /// Mean and population std of the rows of `data` (`[n, dim]`, n ≥ 1), the std floored at
    /// `min_std` so constant features map to 0 instead of dividing by zero.
    pub fn fit(data: &[f32], dim: usize, min_std: f32) -> Self {
        let mut stats = RunningNormalizer::new(dim, f32::INFINITY);
        stats.update(data);
        Self {
            mean: stats.mean().iter().map(|&m| m as f32).collect(),
            std: stats.var().iter().map(|&v| (v.sqrt() as f32).max(min_std)).collect(),
        }
    }

    /// Number of features.
    pub fn dim(&self) -> usize {
        self.mean.len()
    }

    /// `[n, dim]` in place: `(x − mean)/std`.
    pub fn normalize(&self, batch: &mut [f32]) {
        for row in batch.chunks_exact_mut(self.dim()) {
            for ((x, m), s) in row.iter_mut().zip(&self.mean).zip(&self.std) {
                *x = (*x - m) / s;
            }
        }
    }

    /// `[n, dim]` in place: `z·std + mean`.
    pub fn denormalize(&self, batch: &mut [f32]) {
        for row in batch.chunks_exact_mut(self.dim()) {
            for ((x, m), s) in row.iter_mut().zip(&self.mean).zip(&self.std) {
                *x = *x * s + m;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_two_pass_statistics_over_uneven_batches() {
        let dim = 3;
        let data: Vec<f32> = (0..300).map(|i| ((i * 37 % 101) as f32 * 0.13 - 4.0) * (1 + i % 3) as f32).collect();
        let mut norm = RunningNormalizer::new(dim, 10.0);
        for chunk in [&data[..30], &data[30..33], &data[33..180], &data[180..]] {
            norm.update(chunk);
        }
        let n = (data.len() / dim) as f64;
        for j in 0..dim {
            let col: Vec<f64> = data.iter().skip(j).step_by(dim).map(|&x| x as f64).collect();
            let mean = col.iter().sum::<f64>() / n;
            let var = col.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
            assert!((norm.mean()[j] - mean).abs() < 1e-9, "mean {j}: {} vs {mean}", norm.mean()[j]);
            assert!((norm.var()[j] - var).abs() < 1e-9 * var.max(1.0), "var {j}: {} vs {var}", norm.var()[j]);
        }
        assert_eq!(norm.count(), n);
    }

    #[test]
    fn standardizer_round_trips_and_floors_constant_features() {
        let data = [1.0, 5.0, 3.0, 5.0]; // feature 0: mean 2, std 1; feature 1 constant
        let s = Standardizer::fit(&data, 2, 0.01);
        assert_eq!((s.mean.clone(), s.std.clone()), (vec![2.0, 5.0], vec![1.0, 0.01]));
        let mut x = [3.0, 5.0];
        s.normalize(&mut x);
        assert_eq!(x, [1.0, 0.0]);
        s.denormalize(&mut x);
        assert_eq!(x, [3.0, 5.0]);
    }

    #[test]
    fn normalizes_and_clips() {
        let mut norm = RunningNormalizer::new(1, 2.0);
        norm.update(&[1.0, 3.0]); // mean 2, var 1
        let mut x = [2.0, 3.0, 100.0];
        norm.normalize(&mut x);
        assert!((x[0]).abs() < 1e-6 && (x[1] - 1.0).abs() < 1e-6 && x[2] == 2.0, "{x:?}");
    }
}
