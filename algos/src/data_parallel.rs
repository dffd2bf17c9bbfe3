//! Data-parallel training (`embodia train --dist ddp`): several processes ("ranks") each step
//! their own slice of one batch of environments and run a replica of one learner, which stays
//! identical on every rank.
//!
//! # How it works
//! 1. The runner joins the process to a [`Collective`] (MPI, in the `embodia` crate) with
//!    [`join`] before building the learner. Like MPI's world communicator, the membership is
//!    process-wide: [`world`] returns it wherever a learner needs it.
//! 2. Rank `r` of `S` holds environments `r·n … (r+1)·n − 1` of a batch of `S·n`: the
//!    environments draw their randomness as those of the whole batch would
//!    ([`embodia_sim::VecEnv::set_first_env`]).
//! 3. What a learner draws for the whole batch (its action noise, its mini-batch shuffles) it
//!    draws on every rank from the same generator and keeps its own rows of
//!    ([`fill_normal_rows`], [`MiniBatchRows`]), so the generators stay in step.
//! 4. Statistics over the batch (the observation normalizer, advantage normalization, the KL
//!    of the adaptive learning rate, the episode statistics of the metrics) are summed over
//!    the ranks ([`Collective::all_reduce`]).
//! 5. [`crate::Adam::step`] averages the gradients over the ranks before clipping them: one
//!    all-reduce of one fused buffer per step ([`average_gradients`]). Each rank's loss is
//!    its rows' share of the mini-batch's mean (its sum divided by the mini-batch size over
//!    the ranks), so the average is the gradient of the whole mini-batch's loss.
//!
//! With this, `S` ranks of `n` environments compute what one process with `S·n` environments
//! computes, up to the order of floating-point sums. Learners that do not take part in this
//! are refused by the runner ([`crate::Learner`] implementations say so through the
//! `embodia` crate's algorithm registry).

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use burn::module::{Module, ModuleVisitor, Param, ParamId};
use burn::optim::GradientsParams;
use burn::tensor::{Tensor, TensorData};
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;

use crate::rng::fill_normal;

/// An element-wise reduction over the ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reduce {
    /// The sum.
    Sum,
    /// The least value.
    Min,
    /// The greatest value.
    Max,
}

/// The processes of a data-parallel run, seen from one of them. Every rank must make the same
/// calls in the same order (they are collective); a rank that fails ends the job (MPI's
/// default error handler aborts every rank).
pub trait Collective: Send + Sync {
    /// This process's rank, `0 … size − 1`; rank 0 writes the run directory.
    fn rank(&self) -> usize;
    /// Number of ranks.
    fn size(&self) -> usize;
    /// Replaces `values` on every rank by their element-wise reduction over the ranks.
    fn all_reduce(&self, values: &mut [f64], op: Reduce);
    /// [`Collective::all_reduce`] with [`Reduce::Sum`] for `f32` buffers (gradients).
    fn all_reduce_sum_f32(&self, values: &mut [f32]);
    /// Replaces `values` on every rank by rank 0's.
    fn broadcast_f32(&self, values: &mut [f32]);
    /// Rank 0 receives every rank's `bytes`, in rank order (its own first); the others `None`.
    fn gather_bytes(&self, bytes: &[u8]) -> Option<Vec<Vec<u8>>>;
    /// Sends `values` to rank `to` (point to point: the rollout ranks of `--dist actors`).
    fn send_f32(&self, to: usize, values: &[f32]);
    /// Receives exactly `values.len()` values sent by rank `from` with [`Collective::send_f32`].
    fn receive_f32(&self, from: usize, values: &mut [f32]);
    /// Sends a message of any length to rank `to`.
    fn send_bytes(&self, to: usize, bytes: &[u8]);
    /// Receives a message sent by rank `from` with [`Collective::send_bytes`].
    fn receive_bytes(&self, from: usize) -> Vec<u8>;
}

static WORLD: OnceLock<Box<dyn Collective>> = OnceLock::new();

/// Makes `collective` this process's [`world`]. Once per process: a second call returns the
/// collective back.
pub fn join(collective: Box<dyn Collective>) -> Result<(), Box<dyn Collective>> {
    WORLD.set(collective)
}

/// The data-parallel run this process belongs to with at least two ranks; `None` when it
/// trains alone.
pub fn world() -> Option<&'static dyn Collective> {
    WORLD.get().map(|w| w.as_ref()).filter(|w| w.size() > 1)
}

/// Bytes sent and time spent in collectives since the process started, for the figures of a
/// run (`embodia train` reports them on rank 0).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CommStats {
    /// Collective calls.
    pub calls: u64,
    /// Bytes this rank sent or received in them (the parts it knows the size of beforehand).
    pub bytes: u64,
    /// Wall seconds this rank spent in them, waiting for slower ranks included.
    pub seconds: f64,
    /// Gradient all-reduces (one per optimizer step).
    pub gradient_reduces: u64,
    /// Bytes of one gradient all-reduce (the last one).
    pub gradient_bytes: u64,
}

static CALLS: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);
static NANOS: AtomicU64 = AtomicU64::new(0);
static GRADIENT_REDUCES: AtomicU64 = AtomicU64::new(0);
static GRADIENT_BYTES: AtomicU64 = AtomicU64::new(0);

/// The totals so far.
pub fn comm_stats() -> CommStats {
    CommStats {
        calls: CALLS.load(Ordering::Relaxed),
        bytes: BYTES.load(Ordering::Relaxed),
        seconds: NANOS.load(Ordering::Relaxed) as f64 * 1e-9,
        gradient_reduces: GRADIENT_REDUCES.load(Ordering::Relaxed),
        gradient_bytes: GRADIENT_BYTES.load(Ordering::Relaxed),
    }
}

/// Runs one collective of `bytes` bytes and counts it.
fn timed<T>(bytes: usize, call: impl FnOnce() -> T) -> T {
    let start = Instant::now();
    let out = call();
    CALLS.fetch_add(1, Ordering::Relaxed);
    BYTES.fetch_add(bytes as u64, Ordering::Relaxed);
    NANOS.fetch_add(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
    out
}

/// Runs `call`, which moves `bytes` bytes between ranks, and counts it in [`comm_stats`].
pub fn counted<T>(bytes: usize, call: impl FnOnce() -> T) -> T {
    timed(bytes, call)
}

/// [`Collective::all_reduce`], counted in [`comm_stats`].
pub fn all_reduce(world: &dyn Collective, values: &mut [f64], op: Reduce) {
    timed(std::mem::size_of_val(values), || world.all_reduce(values, op));
}

/// [`Collective::broadcast_f32`], counted in [`comm_stats`].
pub fn broadcast_f32(world: &dyn Collective, values: &mut [f32]) {
    timed(std::mem::size_of_val(values), || world.broadcast_f32(values));
}

/// [`Collective::gather_bytes`], counted in [`comm_stats`].
pub fn gather_bytes(world: &dyn Collective, bytes: &[u8]) -> Option<Vec<Vec<u8>>> {
    timed(bytes.len(), || world.gather_bytes(bytes))
}

/// The gradients of `module`'s parameters averaged over the ranks: every parameter's gradient
/// (zeros where a rank has none) goes into one buffer with, at its end, one presence count per
/// parameter; one all-reduce sums it; a parameter gets the sum divided by the number of ranks
/// if any rank had a gradient for it.
pub fn average_gradients<M: Module>(module: &M, grads: &GradientsParams, world: &dyn Collective) -> GradientsParams {
    struct Flatten<'a> {
        grads: &'a GradientsParams,
        /// (id, shape, device) of every float parameter, in visiting order.
        params: Vec<(ParamId, Vec<usize>, burn::tensor::Device)>,
        values: Vec<f32>,
        present: Vec<f32>,
    }
    impl ModuleVisitor for Flatten<'_> {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
            let value = param.val();
            let shape = value.shape().dims::<D>().to_vec();
            let len: usize = shape.iter().product();
            match self.grads.get::<D>(param.id).and_then(|g| g.into_data().try_to_vec::<f32>().ok()) {
                Some(g) if g.len() == len => {
                    self.values.extend_from_slice(&g);
                    self.present.push(1.0);
                }
                _ => {
                    self.values.resize(self.values.len() + len, 0.0);
                    self.present.push(0.0);
                }
            }
            self.params.push((param.id, shape, value.device().inner()));
        }
    }
    let mut flat = Flatten { grads, params: Vec::new(), values: Vec::new(), present: Vec::new() };
    module.visit(&mut flat);
    let Flatten { params, mut values, present, .. } = flat;
    let grad_len = values.len();
    values.extend_from_slice(&present);
    let bytes = std::mem::size_of_val(values.as_slice());
    timed(bytes, || world.all_reduce_sum_f32(&mut values));
    GRADIENT_REDUCES.fetch_add(1, Ordering::Relaxed);
    GRADIENT_BYTES.store(bytes as u64, Ordering::Relaxed);
    let scale = 1.0 / world.size() as f32;
    let mut out = GradientsParams::new();
    let mut offset = 0;
    for (k, (id, shape, device)) in params.into_iter().enumerate() {
        let len: usize = shape.iter().product();
        let slice = &values[offset..offset + len];
        offset += len;
        if values[grad_len + k] == 0.0 {
            continue;
        }
        let data = TensorData::new(slice.iter().map(|g| g * scale).collect::<Vec<f32>>(), shape.clone());
        register(&mut out, id, data, &device);
    }
    out
}

/// Registers a gradient of any rank up to 6 (burn's tensors carry their rank in the type).
fn register(grads: &mut GradientsParams, id: ParamId, data: TensorData, device: &burn::tensor::Device) {
    match data.shape().len() {
        1 => grads.register::<1>(id, Tensor::from_data(data, device)),
        2 => grads.register::<2>(id, Tensor::from_data(data, device)),
        3 => grads.register::<3>(id, Tensor::from_data(data, device)),
        4 => grads.register::<4>(id, Tensor::from_data(data, device)),
        5 => grads.register::<5>(id, Tensor::from_data(data, device)),
        _ => grads.register::<6>(id, Tensor::from_data(data, device)),
    }
}

/// Fills `out` (`[blocks, rows, width]`, this rank's rows of a batch of `size·rows` in each
/// block) with standard-normal samples: alone, as [`fill_normal`]; in a data-parallel run, the
/// whole batch's samples (`[blocks, size·rows, width]`) are drawn into `scratch` and this rank
/// keeps its rows of each block, so every rank's generator stays in step with one process's.
pub(crate) fn fill_normal_rows(rng: &mut ChaCha8Rng, out: &mut [f32], blocks: usize, scratch: &mut Vec<f32>) {
    let Some(world) = world() else { return fill_normal(rng, out) };
    scratch.resize(out.len() * world.size(), 0.0);
    fill_normal(rng, scratch);
    let block = out.len() / blocks.max(1);
    for (b, own) in out.chunks_exact_mut(block).enumerate() {
        let start = (b * world.size() + world.rank()) * block;
        own.copy_from_slice(&scratch[start..start + block]);
    }
}

/// Shuffled mini-batches of a rollout of `steps` rows of `envs` environments per step (row
/// `t·envs + e`). Alone, [`MiniBatchRows::shuffle`] permutes the rows and each mini-batch is a
/// chunk of the permutation. In a data-parallel run, every rank permutes the rows of the whole
/// batch (`steps · size·envs`, the same permutation on every rank) and keeps, from each chunk,
/// its own rows: rank `r` owns environments `r·envs …`. Its mini-batches then differ in size
/// around `rows / mini_batches`; the loss divides by [`MiniBatchRows::nominal`] so that the
/// average over the ranks is the whole mini-batch's mean.
pub(crate) struct MiniBatchRows {
    envs: usize,
    /// Rows per chunk of the whole batch's permutation.
    chunk: usize,
    /// Whether a last, shorter chunk is a mini-batch too.
    cover_all: bool,
    global: Vec<usize>,
    local: Vec<usize>,
    /// Where each mini-batch of `local` ends.
    ends: Vec<usize>,
    /// Each mini-batch's size over all ranks.
    sizes: Vec<usize>,
}

impl MiniBatchRows {
    /// `mini_batches` mini-batches of `⌊rows / mini_batches⌋` rows of a rollout of `steps` ×
    /// `envs` rows (the remainder sits out), as PPO cuts them.
    pub(crate) fn new(steps: usize, envs: usize, mini_batches: usize) -> Self {
        let total = steps * envs * world().map_or(1, |w| w.size());
        Self::with_chunk(envs, total, total / mini_batches.max(1), false)
    }

    /// Mini-batches of `⌈rows / mini_batches⌉` rows, the last shorter, covering every row (as
    /// the chunk policies' PPO cuts them).
    pub(crate) fn covering(steps: usize, envs: usize, mini_batches: usize) -> Self {
        let total = steps * envs * world().map_or(1, |w| w.size());
        Self::with_chunk(envs, total, total.div_ceil(mini_batches.max(1)), true)
    }

    fn with_chunk(envs: usize, total: usize, chunk: usize, cover_all: bool) -> Self {
        Self {
            envs,
            chunk: chunk.max(1),
            cover_all,
            global: (0..total).collect(),
            local: Vec::new(),
            ends: Vec::new(),
            sizes: Vec::new(),
        }
    }

    /// Draws a new arrangement.
    pub(crate) fn shuffle(&mut self, rng: &mut ChaCha8Rng) {
        // The permutation of the last shuffle is shuffled again, as one process always did.
        self.global.shuffle(rng);
        let (rank, ranks) = world().map_or((0, 1), |w| (w.rank(), w.size()));
        let width = self.envs * ranks;
        self.local.clear();
        self.ends.clear();
        self.sizes.clear();
        let exact = self.global.len() - self.global.len() % self.chunk;
        let cut = if self.cover_all { self.global.len() } else { exact };
        for batch in self.global[..cut].chunks(self.chunk) {
            self.sizes.push(batch.len());
            for &g in batch {
                let (t, e) = (g / width, g % width);
                if e / self.envs == rank {
                    self.local.push(t * self.envs + e % self.envs);
                }
            }
            self.ends.push(self.local.len());
        }
    }

    /// This rank's rows of mini-batch `k` (possibly none).
    pub(crate) fn batch(&self, k: usize) -> &[usize] {
        let start = if k == 0 { 0 } else { self.ends[k - 1] };
        &self.local[start..self.ends[k]]
    }

    /// Mini-batches of the last shuffle.
    pub(crate) fn count(&self) -> usize {
        self.ends.len()
    }

    /// Mini-batch `k`'s size over all ranks divided by the number of ranks: what this rank's
    /// loss sums are divided by (the batch's own size alone).
    pub(crate) fn nominal(&self, k: usize) -> f64 {
        self.sizes[k] as f64 / world().map_or(1, |w| w.size()) as f64
    }
}

/// Standardizes `xs` in place, `(x − mean) / (std + 1e-5)`, with the mean and standard deviation
/// over every rank's values ([`mean_std`]); alone, over `xs`.
pub(crate) fn standardize(xs: &mut [f32]) {
    let (mean, std) = mean_std(xs);
    for a in xs {
        *a = ((*a as f64 - mean) / (std + 1e-5)) as f32;
    }
}

/// Mean and population standard deviation of `values` over every rank's values (this rank's
/// alone outside a data-parallel run), in two passes as one process would compute them.
pub(crate) fn mean_std(values: &[f32]) -> (f64, f64) {
    let mut sums = [values.iter().map(|&a| a as f64).sum::<f64>(), values.len() as f64];
    if let Some(w) = world() {
        all_reduce(w, &mut sums, Reduce::Sum);
    }
    let mean = sums[0] / sums[1];
    let mut sq = [values.iter().map(|&a| (a as f64 - mean).powi(2)).sum::<f64>()];
    if let Some(w) = world() {
        all_reduce(w, &mut sq, Reduce::Sum);
    }
    (mean, (sq[0] / sums[1]).sqrt())
}

/// Sums `values` over the ranks in place; nothing outside a data-parallel run.
pub(crate) fn sum_over_ranks(values: &mut [f64]) {
    if let Some(w) = world() {
        all_reduce(w, values, Reduce::Sum);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn mini_batches_of_one_process_cover_every_row_once_per_shuffle() {
        let mut rows = MiniBatchRows::new(5, 4, 2);
        rows.shuffle(&mut ChaCha8Rng::seed_from_u64(3));
        let mut seen: Vec<usize> = rows.batch(0).iter().chain(rows.batch(1)).copied().collect();
        assert_eq!((rows.count(), rows.batch(0).len() as f64), (2, rows.nominal(0)));
        seen.sort_unstable();
        assert_eq!(seen, (0..20).collect::<Vec<_>>());
        // Covering: 3 mini-batches of 7, 7 and 6 rows.
        let mut rows = MiniBatchRows::covering(5, 4, 3);
        rows.shuffle(&mut ChaCha8Rng::seed_from_u64(3));
        assert_eq!((0..3).map(|k| rows.batch(k).len()).collect::<Vec<_>>(), [7, 7, 6]);
    }
}
