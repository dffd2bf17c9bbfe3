//! Adam with its state keyed by parameter path, so it can be checkpointed and restored exactly,
//! and the warmup-cosine learning-rate schedule of the behaviour-cloning learners.

use std::collections::HashMap;

use burn::module::{Module, ModuleMapper, ModuleVisitor, Param, ParamId};
use burn::optim::GradientsParams;
use burn::tensor::{Tensor, TensorData};
use embodia_policies::NamedParams;

use crate::AlgoError;
use crate::error::check_range;

/// Adam (Kingma & Ba) with optional global gradient-norm clipping, and AdamW's decoupled
/// weight decay `x ← x − lr·λ·x` when [`Adam::with_weight_decay`] sets λ > 0.
///
/// The bias correction is folded into the step size, `x ← x − lr·√(1−β₂ᵗ)/(1−β₁ᵗ) · m/(√v + ε)`,
/// as in the paper's efficient form (PyTorch puts ε after the correction; the difference is
/// negligible at ε = 1e-8).
#[derive(Debug, Clone)]
pub struct Adam {
    beta1: f64,
    beta2: f64,
    eps: f64,
    weight_decay: f64,
    steps: u64,
    /// First and second moments by dotted parameter path.
    moments: HashMap<String, (Tensor<1>, Tensor<1>)>,
}

impl Default for Adam {
    fn default() -> Self {
        Self::new(0.9, 0.999, 1e-8)
    }
}

impl Adam {
    /// Adam with the given decay rates and ε.
    pub fn new(beta1: f64, beta2: f64, eps: f64) -> Self {
        Self { beta1, beta2, eps, weight_decay: 0.0, steps: 0, moments: HashMap::new() }
    }

    /// The same optimizer with decoupled weight decay λ (AdamW), applied to every parameter
    /// that has a gradient.
    pub fn with_weight_decay(mut self, weight_decay: f64) -> Self {
        self.weight_decay = weight_decay;
        self
    }

    /// Number of steps taken.
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// Applies one update to every parameter of `module` that has a gradient in `grads`. In a
    /// data-parallel run the gradients are first averaged over the ranks
    /// ([`crate::data_parallel::average_gradients`]). With `max_grad_norm`, gradients are first scaled so their global L2 norm is at most that,
    /// and that norm (before clipping) is returned; if it is not finite, the module is returned
    /// unchanged, since no update could be trusted.
    pub fn step<M: Module>(
        &mut self,
        lr: f64,
        module: M,
        grads: &GradientsParams,
        max_grad_norm: Option<f64>,
    ) -> (M, Option<f64>) {
        let averaged;
        let grads = match crate::data_parallel::world() {
            Some(world) => {
                averaged = crate::data_parallel::average_gradients(&module, grads, world);
                &averaged
            }
            None => grads,
        };
        let norm = max_grad_norm.map(|_| grad_norm(&module, grads));
        let clip = match (max_grad_norm, norm) {
            (_, Some(n)) if !n.is_finite() => return (module, norm),
            (Some(max), Some(n)) if n > max => max / (n + 1e-6),
            _ => 1.0,
        };
        self.steps += 1;
        let t = self.steps as i32;
        let step_size = lr * (1.0 - self.beta2.powi(t)).sqrt() / (1.0 - self.beta1.powi(t));
        let decay = lr * self.weight_decay;
        let mut mapper = AdamMapper { adam: self, grads, clip, step_size, decay, path: Vec::new() };
        (module.map(&mut mapper), norm)
    }

    /// Moments as named host arrays (`"m.<path>"`, `"v.<path>"`) and the step count.
    pub fn state(&self) -> (u64, NamedParams) {
        let mut out = NamedParams::new();
        for (path, (m, v)) in &self.moments {
            for (prefix, t) in [("m", m), ("v", v)] {
                let values = t.clone().into_data().try_to_vec::<f32>().unwrap_or_default();
                out.insert(format!("{prefix}.{path}"), (vec![values.len()], values));
            }
        }
        (self.steps, out)
    }

    /// Restores a state written by [`Adam::state`] for the parameters of `module`; moments go to
    /// `device`. Every moment must match a parameter of `module` in size.
    pub fn load_state<M: Module>(
        &mut self,
        steps: u64,
        state: &NamedParams,
        module: &M,
        device: &burn::tensor::Device,
    ) -> Result<(), AlgoError> {
        let sizes: HashMap<String, usize> =
            embodia_policies::named_params(module).into_iter().map(|(k, (_, v))| (k, v.len())).collect();
        self.steps = steps;
        self.moments.clear();
        for (key, (_, m)) in state.iter().filter(|(k, _)| k.starts_with("m.")) {
            let path = &key[2..];
            let v = &state
                .get(&format!("v.{path}"))
                .ok_or_else(|| AlgoError::Checkpoint(format!("optimizer state lacks `v.{path}`")))?
                .1;
            if v.len() != m.len() || sizes.get(path) != Some(&m.len()) {
                return Err(AlgoError::Checkpoint(format!(
                    "optimizer moments of `{path}` ({} and {} values) do not fit the parameter ({:?} values)",
                    m.len(),
                    v.len(),
                    sizes.get(path)
                )));
            }
            let to_tensor = |x: &Vec<f32>| Tensor::from_data(TensorData::new(x.clone(), [x.len()]), device);
            self.moments.insert(path.to_string(), (to_tensor(m), to_tensor(v)));
        }
        Ok(())
    }
}

/// Global L2 norm of the gradients of `module`'s parameters.
fn grad_norm<M: Module>(module: &M, grads: &GradientsParams) -> f64 {
    struct SumSquares<'a> {
        grads: &'a GradientsParams,
        total: Option<Tensor<1>>,
    }
    impl ModuleVisitor for SumSquares<'_> {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
            if let Some(g) = self.grads.get::<D>(param.id) {
                let s = g.square().sum();
                self.total = Some(match self.total.take() {
                    Some(t) => t + s,
                    None => s,
                });
            }
        }
    }
    let mut visitor = SumSquares { grads, total: None };
    module.visit(&mut visitor);
    visitor.total.map_or(0.0, |t| t.into_scalar::<f32>().to_f64().sqrt())
}

use burn::tensor::cast::ToElement;

struct AdamMapper<'a> {
    adam: &'a mut Adam,
    grads: &'a GradientsParams,
    clip: f64,
    step_size: f64,
    /// `lr·λ` of the decoupled weight decay.
    decay: f64,
    path: Vec<String>,
}

impl ModuleMapper for AdamMapper<'_> {
    fn enter_module(&mut self, name: &str, _container: &str) {
        self.path.push(name.to_string());
    }
    fn exit_module(&mut self, _name: &str, _container: &str) {
        self.path.pop();
    }
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        let (id, tensor, mapper): (ParamId, Tensor<D>, _) = param.consume();
        let Some(grad) = self.grads.get::<D>(id) else {
            return Param::from_mapped_value(id, tensor, mapper);
        };
        let require_grad = tensor.is_require_grad();
        let autodiff = tensor.is_autodiff();
        let shape = tensor.shape();
        let x = tensor.inner().reshape([-1]);
        let mut g: Tensor<1> = grad.reshape([-1]);
        if self.clip != 1.0 {
            g = g.mul_scalar(self.clip);
        }
        let (b1, b2) = (self.adam.beta1, self.adam.beta2);
        let path = self.path.join(".");
        let (m, v) = match self.adam.moments.remove(&path) {
            Some((m, v)) => {
                (m.mul_scalar(b1) + g.clone().mul_scalar(1.0 - b1), v.mul_scalar(b2) + g.square().mul_scalar(1.0 - b2))
            }
            None => (g.clone().mul_scalar(1.0 - b1), g.square().mul_scalar(1.0 - b2)),
        };
        let update = m.clone().mul_scalar(self.step_size) / v.clone().sqrt().add_scalar(self.adam.eps);
        self.adam.moments.insert(path, (m, v));
        let x = if self.decay > 0.0 { x.clone() - x.mul_scalar(self.decay) } else { x };
        let mut x = (x - update).reshape(shape);
        if autodiff {
            x = x.autodiff();
        }
        if require_grad {
            x = x.require_grad();
        }
        Param::from_mapped_value(id, x, mapper)
    }
}

/// Checks the fields of a [`warmup_cosine`] schedule, as the configs that use one name them:
/// `learning_rate` > 0, `0 ≤ final_learning_rate ≤ learning_rate`, `decay_steps > warmup_steps`.
pub(crate) fn check_warmup_cosine(
    learning_rate: f64,
    final_learning_rate: f64,
    warmup_steps: u64,
    decay_steps: u64,
) -> Result<(), AlgoError> {
    check_range("learning_rate", learning_rate, learning_rate > 0.0, "> 0")?;
    check_range(
        "final_learning_rate",
        final_learning_rate,
        (0.0..=learning_rate).contains(&final_learning_rate),
        "0 ≤ final_learning_rate ≤ learning_rate",
    )?;
    check_range("decay_steps", decay_steps, decay_steps > warmup_steps, "> warmup_steps")
}

/// Warmup-cosine learning rate at gradient step `step` (openpi `CosineDecaySchedule`): linear
/// from `peak/warmup` to `peak` over `warmup` steps, then a half cosine down to `end` at
/// `decay`, constant after.
pub fn warmup_cosine(step: u64, warmup: u64, decay: u64, peak: f64, end: f64) -> f64 {
    if step < warmup {
        return peak * (step + 1) as f64 / warmup as f64;
    }
    let progress = ((step - warmup) as f64 / (decay - warmup).max(1) as f64).min(1.0);
    end + (peak - end) * 0.5 * (1.0 + (std::f64::consts::PI * progress).cos())
}

#[cfg(test)]
mod tests {
    use burn::module::Param;
    use burn::tensor::Device;
    use embodia_policies::named_params;

    use super::*;

    #[derive(Module, Debug)]
    struct Point {
        w: Param<Tensor<1>>,
    }

    fn point(values: &[f32]) -> Point {
        let device = Device::flex().autodiff();
        Point { w: Param::from_tensor(Tensor::from_floats(values, &device).require_grad()) }
    }

    /// Gradients of `Σ (w − target)²`.
    fn grads(p: &Point, target: &[f32]) -> GradientsParams {
        let t = Tensor::<1>::from_floats(target, &p.w.val().device());
        GradientsParams::from_grads((p.w.val() - t).square().sum().backward(), p)
    }

    #[test]
    fn first_step_moves_each_coordinate_by_lr_and_converges() {
        let mut adam = Adam::default();
        let target = [3.0, -1.0];
        let mut p = point(&[0.0, 0.0]);
        let g = grads(&p, &target);
        p = adam.step(0.1, p, &g, None).0;
        // Adam's first step is lr·sign(g) (up to ε).
        let w = named_params(&p)["w"].1.clone();
        assert!((w[0] - 0.1).abs() < 1e-5 && (w[1] + 0.1).abs() < 1e-5, "{w:?}");
        for _ in 0..500 {
            let g = grads(&p, &target);
            p = adam.step(0.05, p, &g, None).0;
        }
        let w = named_params(&p)["w"].1.clone();
        assert!((w[0] - 3.0).abs() < 1e-2 && (w[1] + 1.0).abs() < 1e-2, "{w:?}");
    }

    #[test]
    fn decoupled_weight_decay_shrinks_parameters_without_gradient_signal() {
        let mut adam = Adam::default().with_weight_decay(0.5);
        let p = point(&[2.0, -4.0]);
        // Σ (w − w)² has a zero gradient: only the decay moves the weights, by lr·λ·w.
        let g = GradientsParams::from_grads((p.w.val() - p.w.val().detach()).square().sum().backward(), &p);
        let p = adam.step(0.1, p, &g, None).0;
        let w = named_params(&p)["w"].1.clone();
        assert!((w[0] - 1.9).abs() < 1e-6 && (w[1] + 3.8).abs() < 1e-6, "{w:?}");
    }

    #[test]
    fn clipping_reports_the_norm_and_state_round_trips() {
        let mut adam = Adam::default();
        let p = point(&[0.0, 0.0]);
        let g = grads(&p, &[3.0, 4.0]); // gradient (−6, −8), norm 10
        let (p, norm) = adam.step(0.1, p, &g, Some(1.0));
        assert!((norm.unwrap() - 10.0).abs() < 1e-4);

        let (steps, state) = adam.state();
        let mut restored = Adam::default();
        restored.load_state(steps, &state, &p, &Device::flex()).unwrap();
        let g = grads(&p, &[3.0, 4.0]);
        let a = named_params(&adam.step(0.1, p.clone(), &g, None).0);
        let b = named_params(&restored.step(0.1, p.clone(), &g, None).0);
        assert_eq!(a, b);

        let mut bad = state.clone();
        bad.insert("m.w".into(), (vec![3], vec![0.0; 3]));
        bad.insert("v.w".into(), (vec![3], vec![0.0; 3]));
        let err = restored.load_state(steps, &bad, &p, &Device::flex()).unwrap_err().to_string();
        assert!(err.contains("`w`"), "{err}");
    }

    #[test]
    fn warmup_cosine_endpoints() {
        let lr = |s| warmup_cosine(s, 10, 110, 1.0, 0.1);
        assert!((lr(0) - 0.1).abs() < 1e-12 && (lr(9) - 1.0).abs() < 1e-12);
        assert!((lr(60) - 0.55).abs() < 1e-12, "{}", lr(60));
        assert!((lr(110) - 0.1).abs() < 1e-12 && (lr(1000) - 0.1).abs() < 1e-12);
    }
}
