//! One-step action-chunk policy: the student that replaces a `K`-step flow sampler by one
//! network evaluation.
//!
//! The network `F` is an MLP over `[s ‖ x ‖ t ‖ r]`: the standardized observation
//! `[obs_dim]`, a point `x` of the teacher's chunk space `[H·D]` (pure noise `z` for one-step
//! sampling), and two times in `[0, 1]` (flow convention: `t = 1` is noise, `t = 0` data). Its
//! output has the executed slice's width `[C·D]` only: the rest of the horizon is never run.
//! How `F` becomes an action depends on the [`OneStepHead`]:
//! - [`OneStepHead::Consistency`]: `f(x, t) = c_skip(t)·x_C + c_out(t)·F(s, x, t, 0)`, the
//!   consistency-model parameterization (LCM: σ_data = 0.5, time scaled by 10), so
//!   `f(x, 0) = x_C` holds exactly;
//! - [`OneStepHead::MeanFlow`]: `F` is the average velocity `u(x, r, t)` and the point at time
//!   `r` is `x_C − (t − r)·u` (MeanFlow); one step from noise is `z_C − u(z, 0, 1)`.
//!
//! One-step sampling (`t = 1`, `r = 0`) is therefore `β·z_C + α·F(s, z, 1, 0)` with constants
//! `(α, β)` from [`OneStepHead::one_step_coefficients`]; with a fixed `z` the whole student is an
//! MLP of the observation alone, which is what export writes out.
//!
//! Without [`OneStepPolicyConfig::denoiser`] the student is an MLP over the flattened chunk,
//! not a copy of the teacher's denoiser as in RL-100; times enter as raw scalars (no
//! sinusoidal embedding), which keeps the exported network a plain MLP. With
//! [`OneStepPolicyConfig::denoiser`] set it is RL-100's student instead: a copy of the
//! teacher's [`FlowPolicy`] whose velocity at `t = 1` is `F` under the MeanFlow head, so one
//! step is one Euler step from noise, `z_C − v(s, z, 1)_C` (where an untrained copy starts: the
//! teacher's one-step estimate of its mean action).

use burn::module::Module;
use burn::tensor::{Device, Tensor};
use serde::{Deserialize, Serialize};

use crate::flow::{FlowPolicy, FlowPolicyConfig};
use crate::mlp::{Activation, Mlp, MlpConfig};

/// σ_data of the consistency parameterization (LCM).
const SIGMA_DATA: f64 = 0.5;
/// Time scaling of the consistency parameterization (LCM's `timestep_scaling`).
const TIME_SCALE: f64 = 10.0;

/// How the student's network output becomes a point of the chunk space.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum OneStepHead {
    /// Consistency function `c_skip(t)·x_C + c_out(t)·F`.
    #[default]
    Consistency,
    /// MeanFlow average velocity: `x_C − (t − r)·F`.
    MeanFlow,
}

impl OneStepHead {
    /// `(c_skip(t), c_out(t))` of the consistency parameterization: `c_skip = σ²/((10t)² + σ²)`,
    /// `c_out = 10t·σ/√((10t)² + σ²)`; `(1, 0)` at `t = 0`.
    pub fn consistency_coefficients(t: f64) -> (f64, f64) {
        let st = TIME_SCALE * t;
        let denominator = st * st + SIGMA_DATA * SIGMA_DATA;
        (SIGMA_DATA * SIGMA_DATA / denominator, st * SIGMA_DATA / denominator.sqrt())
    }

    /// `(α, β)` of one-step sampling, `action = β·z_C + α·F(s, z, 1, 0)`.
    pub fn one_step_coefficients(self) -> (f64, f64) {
        match self {
            Self::Consistency => {
                let (skip, out) = Self::consistency_coefficients(1.0);
                (out, skip)
            }
            Self::MeanFlow => (-1.0, 1.0),
        }
    }
}

/// Layout of a [`OneStepPolicy`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OneStepPolicyConfig {
    /// Observation features. Set from the teacher.
    pub obs_dim: usize,
    /// Width of the teacher's flattened chunk `H·D` (the noise input). Set from the teacher.
    pub chunk_width: usize,
    /// Width of the executed slice `C·D` (the output). Set from the teacher.
    pub output_dim: usize,
    /// Hidden widths of the MLP student. Default [256, 256].
    pub hidden: Vec<usize>,
    /// Hidden activation of the MLP student. Default elu.
    pub activation: Activation,
    /// Output parameterization. Default consistency.
    pub head: OneStepHead,
    /// The teacher's layout when the student is a copy of the teacher's denoiser (RL-100's
    /// student; `hidden` and `activation` are then unused and `head` must be MeanFlow, whose
    /// one step is an Euler step). Set by distillation with `copy_teacher`. Default none.
    pub denoiser: Option<FlowPolicyConfig>,
}

impl Default for OneStepPolicyConfig {
    fn default() -> Self {
        Self {
            obs_dim: 0,
            chunk_width: 0,
            output_dim: 0,
            hidden: vec![256, 256],
            activation: Activation::Elu,
            head: OneStepHead::Consistency,
            denoiser: None,
        }
    }
}

impl OneStepPolicyConfig {
    /// Network inputs: `obs_dim + chunk_width + 2` (observation, chunk point, `t`, `r`).
    pub fn input_dim(&self) -> usize {
        self.obs_dim + self.chunk_width + 2
    }

    /// Builds the student on `device` (a copy of the teacher's denoiser gets fresh weights
    /// here; distillation loads the teacher's into it).
    pub fn init(&self, device: &Device) -> OneStepPolicy {
        let (net, denoiser) = match &self.denoiser {
            Some(layout) => (None, Some(layout.init(device))),
            None => (
                Some(MlpConfig::new(self.input_dim(), &self.hidden, self.output_dim, self.activation).init(device)),
                None,
            ),
        };
        OneStepPolicy { net, denoiser, head: self.head, output_dim: self.output_dim }
    }
}

/// The one-step student: `F(s, x, t, r)`, an MLP or the teacher's denoiser, and its output
/// parameterization.
#[derive(Module, Debug)]
pub struct OneStepPolicy {
    /// The MLP student (parameters `net.layers.*`).
    net: Option<Mlp>,
    /// The copy of the teacher's denoiser (parameters `denoiser.*`); `F` is its velocity at `(x,
    /// t)`, executed slice, and ignores `r`.
    denoiser: Option<FlowPolicy>,
    #[module(skip)]
    head: OneStepHead,
    #[module(skip)]
    output_dim: usize,
}

impl OneStepPolicy {
    /// Raw network output `F`, `[batch, C·D]`, for standardized observations `obs`
    /// (`[batch, obs_dim]`), chunk points `x` (`[batch, H·D]`) and times `t`, `r` (`[batch, 1]`).
    pub fn raw(&self, obs: Tensor<2>, x: Tensor<2>, t: Tensor<2>, r: Tensor<2>) -> Tensor<2> {
        match (&self.net, &self.denoiser) {
            (_, Some(denoiser)) => denoiser.velocity(denoiser.encode(obs), x, t).0.narrow(1, 0, self.output_dim),
            (Some(net), None) => net.forward(Tensor::cat(vec![obs, x, t, r], 1)),
            (None, None) => unreachable!("OneStepPolicyConfig::init builds one of the two"),
        }
    }

    /// The head applied to `raw` at `x` (`[batch, H·D]`) and times `t`, `r` (`[batch, 1]`):
    /// the consistency estimate of `x_0` or the MeanFlow point at time `r`, `[batch, C·D]`.
    pub fn apply_head(&self, raw: Tensor<2>, x: Tensor<2>, t: Tensor<2>, r: Tensor<2>) -> Tensor<2> {
        let x_c = x.narrow(1, 0, self.output_dim);
        match self.head {
            OneStepHead::Consistency => {
                let st = t.mul_scalar(TIME_SCALE);
                let denominator = st.clone().square().add_scalar(SIGMA_DATA * SIGMA_DATA);
                let skip = denominator.clone().recip().mul_scalar(SIGMA_DATA * SIGMA_DATA);
                let out = st.mul_scalar(SIGMA_DATA) / denominator.sqrt();
                x_c * skip + raw * out
            }
            OneStepHead::MeanFlow => x_c - raw * (t - r),
        }
    }

    /// [`OneStepPolicy::raw`] followed by [`OneStepPolicy::apply_head`], `[batch, C·D]`.
    pub fn forward(&self, obs: Tensor<2>, x: Tensor<2>, t: Tensor<2>, r: Tensor<2>) -> Tensor<2> {
        let raw = self.raw(obs, x.clone(), t.clone(), r.clone());
        self.apply_head(raw, x, t, r)
    }

    /// One-step sample from noise `z` (`[batch, H·D]`): the executed slice of the chunk,
    /// `[batch, C·D]`, standardized action units.
    pub fn sample(&self, obs: Tensor<2>, z: Tensor<2>) -> Tensor<2> {
        let [batch, _] = z.dims();
        let device = z.device();
        let raw = self.raw(obs, z.clone(), Tensor::ones([batch, 1], &device), Tensor::zeros([batch, 1], &device));
        // The head at (t, r) = (1, 0) with its constants: fewer tensor ops on the latency path.
        let (alpha, beta) = self.head.one_step_coefficients();
        z.narrow(1, 0, self.output_dim).mul_scalar(beta) + raw.mul_scalar(alpha)
    }

    /// The output parameterization.
    pub fn head(&self) -> OneStepHead {
        self.head
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(t: Tensor<2>) -> Vec<f32> {
        t.into_data().try_to_vec::<f32>().unwrap()
    }

    fn setup(head: OneStepHead) -> (OneStepPolicy, Tensor<2>, Tensor<2>, Device) {
        let device = Device::flex();
        let config = OneStepPolicyConfig {
            obs_dim: 3,
            chunk_width: 8,
            output_dim: 4,
            hidden: vec![16],
            head,
            ..Default::default()
        };
        let policy = crate::seeded_init(&device, 5, |device| config.init(device));
        let obs = Tensor::<2>::from_floats([[0.3, -1.0, 2.0], [1.5, 0.2, -0.7]], &device);
        let x = Tensor::<2>::from_floats(
            [[0.5, -0.25, 1.0, 2.0, 0.1, 0.2, 0.3, 0.4], [-1.0, 0.0, 0.75, -2.0, 0.0, 0.0, 1.0, 1.0]],
            &device,
        );
        (policy, obs, x, device)
    }

    #[test]
    fn consistency_head_is_the_identity_at_t_zero_and_matches_its_one_step_constants() {
        let (policy, obs, x, device) = setup(OneStepHead::Consistency);
        let zeros = Tensor::<2>::zeros([2, 1], &device);
        let at_zero = host(policy.forward(obs.clone(), x.clone(), zeros.clone(), zeros.clone()));
        assert_eq!(at_zero, host(x.clone().narrow(1, 0, 4)), "f(x, 0) = x_C");
        let (alpha, beta) = OneStepHead::Consistency.one_step_coefficients();
        assert!(beta > 0.0 && beta < 0.01 && alpha > 0.49 && alpha < 0.5, "c_out(1) ≈ σ_data: ({alpha}, {beta})");
        let one = Tensor::<2>::ones([2, 1], &device);
        let raw = host(policy.raw(obs.clone(), x.clone(), one, zeros));
        let xs = host(x.clone().narrow(1, 0, 4));
        for ((s, r), xc) in host(policy.sample(obs, x)).iter().zip(raw).zip(xs) {
            let want = beta as f32 * xc + alpha as f32 * r;
            assert!((s - want).abs() < 1e-6, "{s} vs {want}");
        }
    }

    #[test]
    fn meanflow_head_steps_from_t_to_r_with_the_average_velocity() {
        let (policy, obs, x, device) = setup(OneStepHead::MeanFlow);
        let t = Tensor::<2>::full([2, 1], 0.8, &device);
        let r = Tensor::<2>::full([2, 1], 0.3, &device);
        let u = host(policy.raw(obs.clone(), x.clone(), t.clone(), r.clone()));
        let got = host(policy.forward(obs, x.clone(), t, r));
        for ((g, u), xc) in got.iter().zip(u).zip(host(x.narrow(1, 0, 4))) {
            assert!((g - (xc - 0.5 * u)).abs() < 1e-6, "{g} vs {}", xc - 0.5 * u);
        }
        assert_eq!(OneStepHead::MeanFlow.one_step_coefficients(), (-1.0, 1.0));
    }
}
