#![allow(clippy::needless_range_loop)] // index arithmetic mirrors the formulas
//! Log-densities of the actors against closed forms computed in f64.

use burn::tensor::{Device, Tensor, TensorData};
use embodia_policies::{
    Activation, GaussianActorConfig, SquashedGaussianActorConfig, gaussian_entropy, gaussian_kl, gaussian_log_prob,
};

fn t2(data: &[f32], rows: usize, cols: usize) -> Tensor<2> {
    Tensor::from_data(TensorData::new(data.to_vec(), [rows, cols]), &Device::flex())
}

fn host(t: Tensor<2>) -> Vec<f32> {
    t.into_data().try_to_vec::<f32>().unwrap()
}

fn normal_log_pdf(x: f64, mean: f64, std: f64) -> f64 {
    -0.5 * ((x - mean) / std).powi(2) - std.ln() - 0.5 * (2.0 * std::f64::consts::PI).ln()
}

#[test]
fn gaussian_log_prob_matches_closed_form() {
    let x = [0.3, -1.2, 2.0, 0.0, 5.0, -0.7];
    let mean = [0.0, 0.5, 1.5, -0.2, 0.1, -0.7];
    let log_std = [-0.5, 0.2, 0.0, -2.0, 1.0, 0.3];
    let got = host(gaussian_log_prob(t2(&x, 2, 3), t2(&mean, 2, 3), t2(&log_std, 2, 3)));
    for row in 0..2 {
        let want: f64 = (0..3)
            .map(|j| {
                let k = row * 3 + j;
                normal_log_pdf(x[k] as f64, mean[k] as f64, (log_std[k] as f64).exp())
            })
            .sum();
        assert!((got[row] as f64 - want).abs() < 1e-4, "row {row}: {} vs {want}", got[row]);
    }
}

#[test]
fn gaussian_actor_entropy_and_log_prob_use_its_std() {
    let device = Device::flex();
    let config =
        GaussianActorConfig { obs_dim: 2, action_dim: 2, hidden: vec![8], activation: Activation::Tanh, init_std: 0.5 };
    let actor = config.init(&device);
    let obs = t2(&[0.1, -0.3], 1, 2);
    let (mean, log_std) = actor.forward(obs.clone());
    let (mean, log_std) = (host(mean), host(log_std));
    assert!(log_std.iter().all(|&l| (l as f64 - 0.5f64.ln()).abs() < 1e-6));
    let a = [0.4f32, -0.9];
    let (log_prob, entropy) = actor.log_prob_entropy(obs, t2(&a, 1, 2));
    let want: f64 = (0..2).map(|j| normal_log_pdf(a[j] as f64, mean[j] as f64, 0.5)).sum();
    assert!((host(log_prob)[0] as f64 - want).abs() < 1e-4);
    // Entropy of N(μ, σ²) per dimension: ½ ln(2πe σ²).
    let want_entropy = 2.0 * 0.5 * (2.0 * std::f64::consts::PI * std::f64::consts::E * 0.25).ln();
    assert!((host(entropy)[0] as f64 - want_entropy).abs() < 1e-4);
}

/// For a = tanh(u), u ~ N(μ, σ²): log p(a) = log N(u; μ, σ) − Σ log(1 − tanh(u)²). Checks the
/// actor's sample against this, including |u| large enough that 1 − tanh² underflows in f32.
#[test]
fn squashed_log_prob_matches_change_of_variables() {
    let device = Device::flex();
    let config = SquashedGaussianActorConfig {
        obs_dim: 3,
        action_dim: 2,
        hidden: vec![16, 16],
        activation: Activation::Relu,
        log_std_min: -5.0,
        log_std_max: 2.0,
        output_gain: 1.0,
    };
    let actor = config.init(&device);
    let obs = t2(&[0.5, -1.0, 2.0, 0.0, 0.3, -0.2, 1.0, 1.0, 1.0], 3, 3);
    let noise = [0.3f32, -1.5, 2.0, 0.1, 25.0, -30.0];
    let (mean, log_std) = actor.forward(obs.clone());
    let (mean, log_std) = (host(mean), host(log_std));
    let (actions, log_prob) = actor.sample(obs, t2(&noise, 3, 2));
    let (actions, log_prob) = (host(actions), host(log_prob));
    for row in 0..3 {
        let mut want = 0.0f64;
        for j in 0..2 {
            let k = row * 2 + j;
            let std = (log_std[k] as f64).exp();
            let u = mean[k] as f64 + std * noise[k] as f64;
            assert!((actions[k] as f64 - u.tanh()).abs() < 1e-5);
            assert!(log_std[k] >= -5.0 - 1e-5 && log_std[k] <= 2.0 + 1e-5);
            // log(1 − tanh²u) = log(sech²u) = 2·(log 2 − |u| − log(1 + e^{−2|u|})), stable in f64.
            let log_det = 2.0 * (std::f64::consts::LN_2 - u.abs() - (-2.0 * u.abs()).exp().ln_1p());
            want += normal_log_pdf(u, mean[k] as f64, std) - log_det;
        }
        let got = log_prob[row] as f64;
        assert!(got.is_finite(), "row {row} not finite");
        assert!((got - want).abs() < 1e-3 * want.abs().max(1.0), "row {row}: {got} vs {want}");
    }
}

#[test]
fn gaussian_kl_and_entropy_match_closed_forms() {
    let (pm, pl, qm, ql) = ([0.0f32, 1.0], [0.0f32, -0.5], [0.5f32, 1.0], [0.3f32, -0.5]);
    let kl = host(gaussian_kl(t2(&pm, 1, 2), t2(&pl, 1, 2), t2(&qm, 1, 2), t2(&ql, 1, 2)))[0] as f64;
    let want: f64 = (0..2)
        .map(|j| {
            let (sp, sq) = ((pl[j] as f64).exp(), (ql[j] as f64).exp());
            (sq / sp).ln() + (sp * sp + (pm[j] as f64 - qm[j] as f64).powi(2)) / (2.0 * sq * sq) - 0.5
        })
        .sum();
    assert!((kl - want).abs() < 1e-5, "{kl} vs {want}");
    let same = host(gaussian_kl(t2(&pm, 1, 2), t2(&pl, 1, 2), t2(&pm, 1, 2), t2(&pl, 1, 2)))[0];
    assert!(same.abs() < 1e-7);

    let entropy = host(gaussian_entropy(t2(&pl, 1, 2)))[0] as f64;
    let want: f64 = pl.iter().map(|&l| l as f64 + 0.5 * (2.0 * std::f64::consts::PI * std::f64::consts::E).ln()).sum();
    assert!((entropy - want).abs() < 1e-5);
}
