//! Log-densities of the Gaussian and tanh-squashed Gaussian, shared by the actors.

use burn::tensor::Tensor;
use burn::tensor::activation::softplus;

/// `ln(sqrt(2π))`.
pub const LOG_SQRT_2PI: f64 = 0.918_938_533_204_672_7;

/// Log-density of a diagonal Gaussian, summed over the last dimension.
///
/// `x`, `mean`, `log_std`: `[batch, dim]` (broadcastable); returns `[batch, 1]`.
pub fn gaussian_log_prob(x: Tensor<2>, mean: Tensor<2>, log_std: Tensor<2>) -> Tensor<2> {
    let dim = x.dims()[1] as f64;
    let z = (x - mean) * log_std.clone().neg().exp();
    (z.square().mul_scalar(-0.5) - log_std).sum_dim(1).sub_scalar(LOG_SQRT_2PI * dim)
}

/// Entropy of a diagonal Gaussian in nats, `Σ (log σ + ½ ln(2πe))`; `log_std`: `[batch, dim]`,
/// returns `[batch, 1]`.
pub fn gaussian_entropy(log_std: Tensor<2>) -> Tensor<2> {
    let dim = log_std.dims()[1] as f64;
    log_std.sum_dim(1).add_scalar(dim * (0.5 + LOG_SQRT_2PI))
}

/// KL(p ‖ q) of diagonal Gaussians, summed over the last dimension:
/// `Σ log σq − log σp + (σp² + (μp − μq)²) / (2σq²) − ½`. All inputs `[batch, dim]`
/// (broadcastable); returns `[batch, 1]`.
pub fn gaussian_kl(p_mean: Tensor<2>, p_log_std: Tensor<2>, q_mean: Tensor<2>, q_log_std: Tensor<2>) -> Tensor<2> {
    let p_var = p_log_std.clone().mul_scalar(2.0).exp();
    let q_var = q_log_std.clone().mul_scalar(2.0).exp();
    (q_log_std - p_log_std + (p_var + (p_mean - q_mean).square()) / q_var.mul_scalar(2.0)).sub_scalar(0.5).sum_dim(1)
}

/// `ln(1 − tanh(u)²)`, elementwise, computed as `2·(ln 2 − u − softplus(−2u))` so it stays
/// finite where `tanh(u)` rounds to ±1.
pub fn log_one_minus_tanh_sq<const D: usize>(u: Tensor<D>) -> Tensor<D> {
    let sp = softplus(u.clone().mul_scalar(-2.0), 1.0);
    (u.neg() - sp).add_scalar(std::f64::consts::LN_2).mul_scalar(2.0)
}
