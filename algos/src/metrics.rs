//! Training metrics and the sink trait learners report through.

/// One row of training metrics, written once per log interval. `None` fields do not apply to
/// the algorithm (e.g. `alpha` for PPO) or had no data in the interval (no episode ended).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MetricRow {
    /// Environment steps so far (summed over environments).
    pub env_steps: u64,
    /// Wall-clock seconds of training so far (excluding time before a resume point's process).
    pub wall_seconds: f64,
    /// Mean undiscounted return of episodes that ended in the interval.
    pub return_mean: Option<f64>,
    /// Lowest such return.
    pub return_min: Option<f64>,
    /// Highest such return.
    pub return_max: Option<f64>,
    /// Mean length, in steps, of episodes that ended in the interval.
    pub episode_length: Option<f64>,
    /// Fraction of ended episodes that succeeded (tasks with a success notion only).
    pub success_rate: Option<f64>,
    /// Actor (policy) loss, averaged over the interval's updates.
    pub policy_loss: Option<f64>,
    /// Critic (value or Q) loss, averaged over the interval's updates.
    pub value_loss: Option<f64>,
    /// Policy entropy estimate, nats.
    pub entropy: Option<f64>,
    /// SAC entropy temperature α.
    pub alpha: Option<f64>,
    /// PPO approximate KL divergence between the old and new policy.
    pub kl: Option<f64>,
    /// Learning rate in use at the end of the interval.
    pub learning_rate: Option<f64>,
    /// Environment steps per second over the interval.
    pub fps: Option<f64>,
    /// Auxiliary loss, averaged over the interval's updates (VLA SFT's grounding loss; VLA PPO's
    /// self-imitation flow-matching loss).
    pub aux_loss: Option<f64>,
    /// Loss on held-out validation data at the end of the interval (VLA SFT's flow-matching loss
    /// on its validation episodes).
    pub val_loss: Option<f64>,
    /// Auxiliary loss on the validation data (VLA SFT's grounding loss).
    pub val_aux_loss: Option<f64>,
    /// Flow-policy PPO: fraction of the probability ratios outside `[1 − ε, 1 + ε]` over the
    /// interval's mini-batches (one ratio per chunk, action or element, per `logprob_type`).
    pub clip_fraction: Option<f64>,
    /// GRPO: share of the iteration's groups whose returns differ, the only ones with a
    /// learning signal (the others are dropped with `filter_uniform_groups`).
    pub mixed_groups: Option<f64>,
}

impl MetricRow {
    /// The row of a supervised iteration (SFT, distillation), whose budget is counted in
    /// gradient steps: their mean loss, the learning rate, and a deterministic evaluation.
    pub fn supervised(gradient_steps: u64, mean_loss: f64, learning_rate: f64, eval: &crate::EvalResult) -> Self {
        Self {
            env_steps: gradient_steps,
            policy_loss: Some(mean_loss),
            return_mean: Some(eval.mean_return),
            episode_length: Some(eval.mean_length),
            success_rate: eval.success_rate,
            learning_rate: Some(learning_rate),
            ..Default::default()
        }
    }

    /// CSV header, matching [`MetricRow::csv_values`].
    pub const CSV_HEADER: &'static str = "env_steps,wall_seconds,return_mean,return_min,return_max,episode_length,success_rate,policy_loss,value_loss,entropy,alpha,kl,learning_rate,fps,aux_loss,val_loss,val_aux_loss,clip_fraction,mixed_groups";

    /// The row as CSV fields (empty where `None`).
    pub fn csv_values(&self) -> String {
        let opt = |v: Option<f64>| v.map(|x| format!("{x}")).unwrap_or_default();
        format!(
            "{},{:.3},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            self.env_steps,
            self.wall_seconds,
            opt(self.return_mean),
            opt(self.return_min),
            opt(self.return_max),
            opt(self.episode_length),
            opt(self.success_rate),
            opt(self.policy_loss),
            opt(self.value_loss),
            opt(self.entropy),
            opt(self.alpha),
            opt(self.kl),
            opt(self.learning_rate),
            opt(self.fps.map(|f| f.round())),
            opt(self.aux_loss),
            opt(self.val_loss),
            opt(self.val_aux_loss),
            opt(self.clip_fraction),
            opt(self.mixed_groups),
        )
    }
}

/// Where learners and runners send metrics (CSV files, progress bars, rerun, tests).
pub trait MetricSink {
    /// Receives one row.
    fn record(&mut self, row: &MetricRow);
}

impl MetricSink for Vec<MetricRow> {
    fn record(&mut self, row: &MetricRow) {
        self.push(row.clone());
    }
}

/// Episode statistics gathered from `StepBuffers` between log rows.
#[derive(Debug, Clone, Default)]
pub struct EpisodeStats {
    returns_sum: f64,
    min: f64,
    max: f64,
    length_sum: f64,
    successes: f64,
    count: u64,
}

impl EpisodeStats {
    /// Records one ended episode.
    pub fn push(&mut self, ret: f32, length: u32, success: bool) {
        let r = ret as f64;
        if self.count == 0 {
            self.min = r;
            self.max = r;
        }
        self.min = self.min.min(r);
        self.max = self.max.max(r);
        self.returns_sum += r;
        self.length_sum += length as f64;
        self.successes += success as u8 as f64;
        self.count += 1;
    }

    /// Records `count` ended episodes given by their sums (returns, lengths, successes) and
    /// their lowest and highest return, as a device reduces them.
    pub fn push_summed(&mut self, count: u64, returns: f64, lengths: f64, successes: f64, min: f64, max: f64) {
        if count == 0 {
            return;
        }
        if self.count == 0 {
            (self.min, self.max) = (min, max);
        }
        self.min = self.min.min(min);
        self.max = self.max.max(max);
        self.returns_sum += returns;
        self.length_sum += lengths;
        self.successes += successes;
        self.count += count;
    }

    /// Records every episode that ended in the environments' last step.
    pub fn push_ended(&mut self, buffers: &embodia_sim::StepBuffers) {
        for i in 0..buffers.reward.len() {
            if buffers.done(i) {
                self.push(buffers.episode_return[i], buffers.episode_length[i], buffers.success[i] > 0.0);
            }
        }
    }

    /// Combines every rank's statistics into each rank's (the metrics of a data-parallel run,
    /// [`crate::data_parallel`]); nothing outside one.
    pub fn combine_over_ranks(&mut self) {
        use crate::data_parallel::{Reduce, all_reduce, world};
        let Some(w) = world() else { return };
        let mut sums = [self.returns_sum, self.length_sum, self.successes, self.count as f64];
        all_reduce(w, &mut sums, Reduce::Sum);
        // A rank without episodes must not pull the extremes towards its zeros.
        let empty = self.count == 0;
        let mut extremes = if empty { [f64::NEG_INFINITY; 2] } else { [-self.min, self.max] };
        all_reduce(w, &mut extremes, Reduce::Max);
        *self = Self::default();
        self.push_summed(sums[3] as u64, sums[0], sums[1], sums[2], -extremes[0], extremes[1]);
    }

    /// Writes the statistics into `row` (leaving fields `None` when no episode ended) and resets.
    pub fn drain_into(&mut self, row: &mut MetricRow, has_success: bool) {
        if self.count > 0 {
            let n = self.count as f64;
            row.return_mean = Some(self.returns_sum / n);
            row.return_min = Some(self.min);
            row.return_max = Some(self.max);
            row.episode_length = Some(self.length_sum / n);
            row.success_rate = has_success.then_some(self.successes / n);
        }
        *self = Self::default();
    }
}

/// Time spent in one iteration, seconds.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TimeSplit {
    /// Stepping environments.
    pub sim: f64,
    /// Sampling chunks (rollout inference) and bootstrap values.
    pub inference: f64,
    /// Advantages and gradient updates.
    pub update: f64,
}
