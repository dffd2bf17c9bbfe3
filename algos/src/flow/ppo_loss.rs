//! PPO's update for chunk policies, shared by Flow PPO, DPPO and the VLA's PPO: the mini-batches
//! of an update's epochs, the KL guard that ends an update early, the rows grouped by their
//! stochastic denoising step, and the clipped-surrogate loss of one group with its statistics.

use burn::tensor::{Device, Tensor};
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;

use super::ppo_flow_config::{LogProbType, NoiseStepReduction, PpoFlowConfig};
use crate::transfer::{to_host, to_tensor};
use crate::{AlgoError, MetricRow};

/// The statistics of PPO's update, each a mean over the samples of the mini-batches run.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PpoStats {
    /// Clipped surrogate loss (minimized).
    pub policy_loss: f64,
    /// Clipped Huber value loss; 0 without a critic (GRPO).
    pub value_loss: f64,
    /// Entropy of the sampling distribution, nats per action element.
    pub entropy: f64,
    /// Approximate KL divergence of the current policy from the rollout's, `(r − 1) − log r`.
    pub approx_kl: f64,
    /// Share of ratios outside `1 ± clip_ratio`.
    pub clip_fraction: f64,
}

impl PpoStats {
    fn fields_mut(&mut self) -> [&mut f64; 5] {
        [&mut self.policy_loss, &mut self.value_loss, &mut self.entropy, &mut self.approx_kl, &mut self.clip_fraction]
    }

    /// Adds `other` field by field.
    pub fn add(&mut self, other: &PpoStats) {
        let other = [other.policy_loss, other.value_loss, other.entropy, other.approx_kl, other.clip_fraction];
        for (s, x) in self.fields_mut().into_iter().zip(other) {
            *s += x;
        }
    }

    /// The mean of every rank's statistics in a data-parallel run (each rank's are its share of
    /// the mini-batch means, [`ppo_group_loss`]); unchanged alone.
    pub(crate) fn averaged_over_ranks(mut self) -> Self {
        let ranks = crate::data_parallel::world().map_or(1, |w| w.size()) as f64;
        let mut values = [self.policy_loss, self.value_loss, self.entropy, self.approx_kl, self.clip_fraction];
        crate::data_parallel::sum_over_ranks(&mut values);
        for (field, v) in self.fields_mut().into_iter().zip(values) {
            *field = v / ranks;
        }
        self
    }

    /// Writes the statistics into their columns of `row` (`kl` is the approximate KL).
    pub fn write_to(&self, row: &mut MetricRow) {
        row.policy_loss = Some(self.policy_loss);
        row.value_loss = Some(self.value_loss);
        row.entropy = Some(self.entropy);
        row.kl = Some(self.approx_kl);
        row.clip_fraction = Some(self.clip_fraction);
    }
}

/// Runs `minibatch` (its statistics and whether it stepped the optimizer) over `batches` in order until one is
/// refused by the KL guard; returns the mean statistics over the mini-batches run (zeros
/// without any).
pub(crate) fn kl_guarded_minibatches<B>(
    batches: &[B],
    mut minibatch: impl FnMut(&B) -> Result<(PpoStats, bool), AlgoError>,
) -> Result<PpoStats, AlgoError> {
    let (mut sums, mut run) = (PpoStats::default(), 0usize);
    for batch in batches {
        let (stats, stepped) = minibatch(batch)?;
        sums.add(&stats);
        run += 1;
        if !stepped {
            break;
        }
    }
    for s in sums.fields_mut() {
        *s /= run.max(1) as f64;
    }
    Ok(sums)
}

/// The mini-batches of `update_epochs` passes over rollout rows `rows`: each pass shuffles the
/// previous pass's order with `rng` and cuts it into `mini_batches` slices of equal size (the
/// last shorter). Empty without rows.
pub(crate) fn epoch_minibatches(
    rows: &[usize],
    update_epochs: usize,
    mini_batches: usize,
    rng: &mut ChaCha8Rng,
) -> Vec<Vec<usize>> {
    let mut order = rows.to_vec();
    if order.is_empty() {
        return Vec::new();
    }
    let size = order.len().div_ceil(mini_batches);
    let mut batches = Vec::new();
    for _ in 0..update_epochs {
        order.shuffle(rng);
        batches.extend(order.chunks(size).map(<[usize]>::to_vec));
    }
    batches
}

/// A mini-batch's self-imitation loss (`[1]`, unweighted): checked finite, added to `tally`
/// (the update's sum and count, reported as `aux_loss`), and returned times `coef`.
pub(crate) fn tally_self_imitation(
    loss: Tensor<1>,
    coef: f64,
    tally: &mut (f64, usize),
    what: &str,
    env_steps: u64,
) -> Result<Tensor<1>, AlgoError> {
    let value = crate::transfer::to_host(loss.clone())?[0] as f64;
    crate::check_finite(what, value, env_steps)?;
    *tally = (tally.0 + value, tally.1 + 1);
    Ok(loss.mul_scalar(coef))
}

/// The mini-batches of one update with self-imitation's rows riding along: `update_epochs`
/// passes over the PPO rows `used` paired with as many passes over `imitated` (the rows of the
/// iteration's successful episodes), `(ppo rows, imitation rows)` per mini-batch, either side
/// empty where one has run out. Without `imitated`, the PPO mini-batches alone.
pub(crate) fn minibatches_with_imitation(
    used: &[usize],
    imitated: &[usize],
    update_epochs: usize,
    mini_batches: usize,
    rng: &mut ChaCha8Rng,
) -> Vec<(Vec<usize>, Vec<usize>)> {
    let ppo = epoch_minibatches(used, update_epochs, mini_batches, rng);
    let imitation = epoch_minibatches(imitated, update_epochs, mini_batches, rng);
    (0..ppo.len().max(imitation.len()))
        .map(|i| (ppo.get(i).cloned().unwrap_or_default(), imitation.get(i).cloned().unwrap_or_default()))
        .collect()
}

/// Mini-batch rows `indices` (into `[steps·n]`) grouped by the denoising step `k*` that was
/// stochastic when their chunk step was sampled (`stochastic_step`, `[steps]`): one-step
/// Flow-SDE log-probs of different `k*` are evaluated separately. With a joint log-prob over
/// every step (`joint`), all in group 0. `[K]` groups.
pub(crate) fn stochastic_step_groups(
    indices: &[usize],
    stochastic_step: &[usize],
    n: usize,
    k: usize,
    joint: bool,
) -> Vec<Vec<usize>> {
    let mut groups: Vec<Vec<usize>> = vec![Vec::new(); k];
    for &idx in indices {
        let group = if joint { 0 } else { stochastic_step[idx / n] };
        groups[group].push(idx);
    }
    groups
}

/// The stored chains of rows `members` (into `[steps·n]`) of `chains` (`[steps, K + 1, n, H·D]`),
/// as `[K + 1, members, H·D]`.
pub(crate) fn gather_chains(chains: &[f32], members: &[usize], n: usize, k: usize, hd: usize) -> Vec<f32> {
    let m = members.len();
    let mut out = vec![0.0f32; (k + 1) * m * hd];
    for (row, &idx) in members.iter().enumerate() {
        let (step, env) = (idx / n, idx % n);
        for s in 0..=k {
            let src = ((step * (k + 1) + s) * n + env) * hd;
            let dst = (s * m + row) * hd;
            out[dst..dst + hd].copy_from_slice(&chains[src..src + hd]);
        }
    }
    out
}

/// One group of a mini-batch as the PPO loss reads it: recomputed log-probs `[m, C·D]`,
/// entropies `[m, 1]` and values `[m, 1]` (with gradients; `None` without a critic, as in
/// GRPO), and the rollout's old log-probs (`[m, C·D]`), advantages, old values and returns
/// (`[m]` each).
pub(crate) struct GroupBatch<'a> {
    pub log_prob: Tensor<2>,
    pub entropy: Tensor<2>,
    pub value: Option<Tensor<2>>,
    pub old_lp: &'a [f32],
    pub adv: &'a [f32],
    pub old_v: &'a [f32],
    pub ret: &'a [f32],
}

/// The PPO loss of one group of `m` samples of a mini-batch of `b`: clipped
/// surrogate on the ratio shaped by `logprob_type` and `noise_step_reduction` (chunk layout
/// `(C, D, K)`), clipped Huber value loss (none without values, as in GRPO), entropy bonus.
/// Returns the group's share of the mini-batch loss (its per-sample losses summed, divided by
/// `b`) and its shares of the mini-batch means of the statistics. `b` is the mini-batch's size,
/// or in a data-parallel run its size over all ranks divided by their number
/// ([`crate::data_parallel::MiniBatchRows::nominal`]), so that the ranks' average is the mean.
pub(crate) fn ppo_group_loss(
    cfg: &PpoFlowConfig,
    g: GroupBatch<'_>,
    (chunk, action_dim, denoise_steps): (usize, usize, usize),
    b: f64,
    d: &Device,
) -> Result<(Tensor<1>, PpoStats), AlgoError> {
    let m = g.adv.len();
    let cd = chunk * action_dim;
    let step_scale = match (cfg.joint_log_prob(), cfg.noise_step_reduction) {
        (true, NoiseStepReduction::Sum) => (denoise_steps + 1) as f64,
        _ => 1.0,
    };
    let (groups_n, per) = match cfg.logprob_type {
        LogProbType::ChunkLevel => (1, cd),
        LogProbType::ActionLevel => (chunk, action_dim),
        LogProbType::TokenLevel => (cd, 1),
    };
    // Reduction order: per element, already averaged over denoising steps (scaled back to
    // their sum by `step_scale`); then summed according to `logprob_type`.
    let lp = g.log_prob.reshape([m, groups_n, per]).sum_dim(2).reshape([m, groups_n]);
    let old = to_tensor(g.old_lp, m, cd, d).reshape([m, groups_n, per]).sum_dim(2).reshape([m, groups_n]);
    let log_ratio = (lp - old).mul_scalar(step_scale);
    let ratio = log_ratio.clone().clamp(-20.0, 20.0).exp();
    let adv = to_tensor(g.adv, m, 1, d);
    let clip = cfg.clip_ratio;
    let mut objective =
        (ratio.clone() * adv.clone()).min_pair(ratio.clone().clamp(1.0 - clip, 1.0 + clip) * adv.clone());
    if cfg.dual_clip > 0.0 {
        // Floored at c·A where A < 0; `min(c·A, 0)` is 0 where A ≥ 0, below the objective there.
        objective = objective.max_pair(adv.mul_scalar(cfg.dual_clip).clamp_max(0.0));
    }
    let surrogate = objective.neg().mean_dim(1);
    let clipped = (ratio.clone() - 1.0).abs().greater_elem(clip).float().mean_dim(1);
    let approx_kl = ((ratio - 1.0) - log_ratio).mean();
    let value_loss = match g.value {
        Some(value) => {
            let (old_v, ret) = (to_tensor(g.old_v, m, 1, d), to_tensor(g.ret, m, 1, d));
            let clipped = old_v.clone() + (value.clone() - old_v).clamp(-cfg.value_clip, cfg.value_clip);
            huber(ret.clone() - value, cfg.huber_delta).max_pair(huber(ret - clipped, cfg.huber_delta))
        }
        // No critic: the group baseline replaces it.
        None => Tensor::zeros([m, 1], d),
    };
    let per_sample = surrogate.clone() + value_loss.clone().mul_scalar(cfg.value_loss_coef)
        - g.entropy.clone().mul_scalar(cfg.entropy_coef);
    let loss = per_sample.sum().div_scalar(b);
    let host = to_host(Tensor::cat(
        vec![
            surrogate.sum().inner(),
            value_loss.sum().inner(),
            g.entropy.sum().inner(),
            approx_kl.inner(),
            clipped.sum().inner(),
        ],
        0,
    ))?;
    let share = |h: f32| h as f64 / b;
    let stats = PpoStats {
        policy_loss: share(host[0]),
        value_loss: share(host[1]),
        entropy: share(host[2]),
        // A mean over the group's samples: weighted by the group's share of the mini-batch.
        approx_kl: host[3] as f64 * m as f64 / b,
        clip_fraction: share(host[4]),
    };
    Ok((loss, stats))
}

/// Huber loss with threshold δ, elementwise.
fn huber(error: Tensor<2>, delta: f64) -> Tensor<2> {
    let abs = error.clone().abs();
    let quadratic = error.square().mul_scalar(0.5);
    let linear = abs.clone().sub_scalar(0.5 * delta).mul_scalar(delta);
    quadratic.mask_where(abs.greater_elem(delta), linear)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flow::ppo_flow_config::{FlowRlMethod, SdeSteps};

    #[test]
    fn kl_guard_stops_at_the_first_minibatch_over_one_and_a_half_target_kl() {
        let cfg = PpoFlowConfig { target_kl: 0.01, ..Default::default() };
        assert!(!cfg.kl_stops_update(0.015) && cfg.kl_stops_update(0.0151));
        assert!(!PpoFlowConfig::default().kl_stops_update(1e9), "target_kl = 0 is off");
        let kls = [0.0, 0.004, 0.02, 0.001];
        let batches: Vec<Vec<usize>> = (0..kls.len()).map(|i| vec![i]).collect();
        let mut stepped = Vec::new();
        let means = kl_guarded_minibatches(&batches, |b| {
            let kl = kls[b[0]];
            let step = !cfg.kl_stops_update(kl);
            if step {
                stepped.push(b[0]);
            }
            let stats = PpoStats { policy_loss: 1.0, value_loss: 2.0, entropy: 3.0, approx_kl: kl, clip_fraction: 0.5 };
            Ok((stats, step))
        })
        .unwrap();
        assert_eq!(stepped, [0, 1], "the third mini-batch is refused and ends the update");
        assert_eq!((means.policy_loss, means.value_loss, means.entropy), (1.0, 2.0, 3.0));
        assert!((means.approx_kl - 0.024 / 3.0).abs() < 1e-12, "{means:?}");
    }

    /// A chunk whose log-probability rose by 5 since its rollout, with advantage −1: PPO's clip
    /// leaves its loss at e^5; the dual clip at 3 caps it at 3, and leaves a positive advantage's
    /// clipped loss and a ratio inside the range alone.
    #[test]
    fn dual_clip_caps_the_loss_of_a_negative_advantage_with_a_large_ratio() {
        let d = Device::flex();
        let loss = |dual_clip: f64, lp: f32, adv: f32| {
            let cfg = PpoFlowConfig { dual_clip, ..Default::default() };
            let batch = GroupBatch {
                log_prob: Tensor::<2>::from_floats([[lp]], &d),
                entropy: Tensor::zeros([1, 1], &d),
                value: None,
                old_lp: &[0.0],
                adv: &[adv],
                old_v: &[0.0],
                ret: &[0.0],
            };
            to_host(ppo_group_loss(&cfg, batch, (1, 1, 1), 1.0, &d).unwrap().0).unwrap()[0]
        };
        assert!((loss(0.0, 5.0, -1.0) - 5f32.exp()).abs() < 1e-3, "{}", loss(0.0, 5.0, -1.0));
        assert!((loss(3.0, 5.0, -1.0) - 3.0).abs() < 1e-6);
        assert!((loss(3.0, 5.0, 1.0) + 1.2).abs() < 1e-6, "the clip at 1 + ε for A > 0");
        assert!((loss(3.0, 0.1, -1.0) - 0.1f32.exp()).abs() < 1e-6, "inside the range");
        assert!(PpoFlowConfig { dual_clip: 1.0, ..Default::default() }.validate().is_err());
    }

    /// One sample, C·D = 2 elements whose step-mean log-probs rose by 0.01 each, advantage 1,
    /// K = 4: the mean reduction gives the ratio e^0.02, the sum e^0.1 (5 terms), which the clip
    /// at 0.05 caps; one-step Flow-SDE ignores the setting, Flow-SDE on every step follows it.
    #[test]
    fn noise_step_reduction_scales_flow_noise_log_ratios() {
        let d = Device::flex();
        let loss_and_kl_with = |cfg: PpoFlowConfig| {
            let cfg = PpoFlowConfig { clip_ratio: 0.05, ..cfg };
            let batch = GroupBatch {
                log_prob: Tensor::<2>::from_floats([[-0.99, -1.99]], &d),
                entropy: Tensor::zeros([1, 1], &d),
                value: None,
                old_lp: &[-1.0, -2.0],
                adv: &[1.0],
                old_v: &[0.0],
                ret: &[0.0],
            };
            let (loss, stats) = ppo_group_loss(&cfg, batch, (1, 2, 4), 1.0, &d).unwrap();
            (to_host(loss).unwrap()[0] as f64, stats.approx_kl, stats.clip_fraction)
        };
        let loss_and_kl = |method, reduction| {
            loss_and_kl_with(PpoFlowConfig { method, noise_step_reduction: reduction, ..Default::default() })
        };
        let close = |a: f64, b: f64| (a - b).abs() < 1e-5;
        let (mean_loss, mean_kl, mean_clipped) = loss_and_kl(FlowRlMethod::Noise, NoiseStepReduction::Mean);
        assert!(close(mean_loss, -(0.02f64).exp()), "{mean_loss}");
        assert!(close(mean_kl, (0.02f64).exp() - 1.0 - 0.02), "{mean_kl}");
        assert_eq!(mean_clipped, 0.0, "ratio 1.02 is inside the clip range 1 ± 0.05");
        let (sum_loss, sum_kl, sum_clipped) = loss_and_kl(FlowRlMethod::Noise, NoiseStepReduction::Sum);
        assert!(close(sum_loss, -1.05), "clipped: {sum_loss}");
        assert!(close(sum_kl, (0.1f64).exp() - 1.0 - 0.1), "{sum_kl}");
        assert_eq!(sum_clipped, 1.0, "ratio 1.105 is outside it");
        assert_eq!(loss_and_kl(FlowRlMethod::Sde, NoiseStepReduction::Sum), (mean_loss, mean_kl, mean_clipped));
        let sde_all = PpoFlowConfig {
            sde_steps: SdeSteps::All,
            noise_step_reduction: NoiseStepReduction::Sum,
            ..Default::default()
        };
        assert_eq!(loss_and_kl_with(sde_all), (sum_loss, sum_kl, sum_clipped), "every SDE step in the ratio");
    }

    #[test]
    fn huber_is_quadratic_inside_and_linear_outside() {
        let d = Device::flex();
        let e = Tensor::<2>::from_floats([[0.5, -2.0, 12.0, -30.0]], &d);
        let h = to_host(huber(e, 10.0)).unwrap();
        assert_eq!(h, vec![0.125, 2.0, 10.0 * (12.0 - 5.0), 10.0 * (30.0 - 5.0)]);
    }
}
