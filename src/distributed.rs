//! Training across processes and machines on MPI (`embodia train --dist ddp|actors`, launched
//! by `mpirun` or Slurm's `srun`; cargo feature `mpi`, through the `mpi` crate). This module
//! launches both modes and carries out `ddp`; `actors` is [`crate::rollout_ranks`].
//!
//! # How `ddp` works
//! 1. [`launch`] checks that an MPI launcher started the process (a process started alone would
//!    be a world of one), initializes MPI and joins the process to
//!    [`embodia_algos::data_parallel`] with an MPI
//!    [`Collective`](embodia_algos::data_parallel::Collective).
//! 2. Every rank then builds the same run: rank `r` of `S` steps environments `r·n …` of a batch
//!    of `S·n` (`algo.num_envs = n` per rank), its learner replica starts from rank 0's
//!    parameters ([`sync_learner`]), and the learners average their gradients
//!    ([`embodia_algos::data_parallel`] says how the result equals one process's with `S·n`
//!    environments).
//! 3. Rank 0 alone writes the run directory. At every checkpoint all ranks compare a digest of
//!    their parameters and optimizer state ([`check_replicas`]), and rank 0 saves every rank's
//!    environment state, so `--resume` under the same number of ranks continues exactly.
//! 4. A rank that fails aborts the job ([`abort`]): the other ranks would otherwise wait in
//!    their next collective forever. The last checkpoint stays loadable.

use embodia_algos::data_parallel::{self, Reduce};
use embodia_algos::{Checkpoint, Learner};

use crate::error::RunError;

/// How the processes of a job share the work (`--dist`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DistMode {
    /// Data-parallel learners: every rank steps its own environments and runs a learner
    /// replica; gradients are averaged at every optimizer step.
    Ddp,
    /// One learner (rank 0) whose environments the other ranks step
    /// ([`crate::rollout_ranks`]).
    Actors,
}

/// Membership of an MPI job, held for the whole command: dropping it finalizes MPI.
pub struct DistJob {
    /// This process's rank.
    pub rank: usize,
    /// Number of ranks.
    pub size: usize,
    #[cfg(feature = "mpi")]
    _universe: mpi::environment::Universe,
}

/// Environment variables by which the MPI launchers embodia knows give a process its rank:
/// Open MPI's `mpirun`, MPICH's Hydra (and Slurm's PMI2), PMIx (`srun --mpi=pmix`).
const LAUNCHER_VARS: [&str; 3] = ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"];

fn launch_error(message: String) -> RunError {
    RunError::Io { path: "--dist".into(), message }
}

/// Joins the MPI job this process was launched in, for `mode`.
pub fn launch(mode: DistMode) -> Result<DistJob, RunError> {
    if !LAUNCHER_VARS.iter().any(|v| std::env::var_os(v).is_some()) {
        return Err(launch_error(format!(
            "this process was not started by an MPI launcher (none of {} is set): launch it as \
             `mpirun -np 2 embodia train … --dist ddp` or under Slurm as `srun -n 2 embodia train … --dist ddp`",
            LAUNCHER_VARS.join(", ")
        )));
    }
    join_mpi(mode)
}

#[cfg(not(feature = "mpi"))]
fn join_mpi(_mode: DistMode) -> Result<DistJob, RunError> {
    Err(launch_error(
        "this embodia was built without MPI: build it with `cargo build --release --features mpi` \
         (needs Open MPI or MPICH and libclang: `apt install libopenmpi-dev openmpi-bin libclang-dev`)"
            .into(),
    ))
}

#[cfg(feature = "mpi")]
fn join_mpi(mode: DistMode) -> Result<DistJob, RunError> {
    use mpi::traits::Communicator;
    // Only the training thread calls MPI (rayon's workers never do).
    let (universe, _) = mpi::initialize_with_threading(mpi::Threading::Funneled)
        .ok_or_else(|| launch_error("MPI was already initialized in this process".into()))?;
    let world = universe.world();
    let (rank, size) = (world.rank() as usize, world.size() as usize);
    if size < 2 {
        return Err(launch_error(format!(
            "the MPI job has {size} rank; `--dist` needs at least 2 (`mpirun -np 2 …`), or train without `--dist`"
        )));
    }
    let world = Box::new(mpi_world::MpiWorld::new(world));
    let joined = match mode {
        DistMode::Ddp => data_parallel::join(world).is_ok(),
        DistMode::Actors => crate::rollout_ranks::join(world).is_ok(),
    };
    if !joined {
        return Err(launch_error("this process already belongs to a distributed run".into()));
    }
    Ok(DistJob { rank, size, _universe: universe })
}

/// Ends every rank of the job with `code` after this rank failed (MPI_Abort); returns without
/// doing anything outside a data-parallel run.
pub fn abort(code: i32) {
    #[cfg(feature = "mpi")]
    if data_parallel::world().is_some() || crate::rollout_ranks::rollout_job().is_some() {
        use mpi::traits::Communicator;
        mpi::topology::SimpleCommunicator::world().abort(code);
    }
    let _ = code;
}

/// Makes every rank's learner rank 0's: its parameters, optimizer moments and every other
/// tensor of its checkpoint, sent as one buffer. The ranks built their learners from the same
/// configuration and seed, so only the tensors can differ (an `--init` run read at different
/// times, say).
pub fn sync_learner(learner: &mut dyn Learner) -> Result<(), RunError> {
    let Some(world) = data_parallel::world() else { return Ok(()) };
    let mut ckpt = learner.checkpoint()?;
    let mut flat: Vec<f32> = ckpt.tensors.values().flat_map(|(_, v)| v.iter().copied()).collect();
    let mut lengths = [flat.len() as f64, -(flat.len() as f64)];
    data_parallel::all_reduce(world, &mut lengths, Reduce::Max);
    if lengths[0] != -lengths[1] {
        return Err(RunError::Io {
            path: "--dist".into(),
            message: format!(
                "rank {}'s learner has {} tensor values, another rank's differs: every rank must build the same learner",
                world.rank(),
                flat.len()
            ),
        });
    }
    data_parallel::broadcast_f32(world, &mut flat);
    if world.rank() != 0 {
        let mut offset = 0;
        for (_, values) in ckpt.tensors.values_mut() {
            let len = values.len();
            values.copy_from_slice(&flat[offset..offset + len]);
            offset += len;
        }
        learner.restore(&ckpt)?;
    }
    Ok(())
}

/// Fails on every rank unless every rank's checkpoint tensors (`ckpt`, this rank's) are
/// bit-identical to rank 0's, naming the ranks that differ.
pub fn check_replicas(ckpt: &Checkpoint) -> Result<(), RunError> {
    let Some(world) = data_parallel::world() else { return Ok(()) };
    let mut digest = fnv1a();
    for (name, (_, values)) in &ckpt.tensors {
        digest.write(name.as_bytes());
        for v in values {
            digest.write(&v.to_bits().to_le_bytes());
        }
    }
    // The digest in two exact halves (an f64 holds 32-bit integers exactly), rank 0's broadcast
    // as a sum in which the other ranks put zeros; then each rank's verdict.
    let mine = [(digest.0 >> 32) as f64, (digest.0 & 0xFFFF_FFFF) as f64];
    let mut rank0 = if world.rank() == 0 { mine } else { [0.0; 2] };
    data_parallel::all_reduce(world, &mut rank0, Reduce::Sum);
    let mut differs = vec![0.0; world.size()];
    differs[world.rank()] = f64::from(u8::from(mine != rank0));
    data_parallel::all_reduce(world, &mut differs, Reduce::Sum);
    let ranks: Vec<String> = (0..world.size()).filter(|&r| differs[r] > 0.0).map(|r| r.to_string()).collect();
    if ranks.is_empty() {
        return Ok(());
    }
    Err(RunError::Io {
        path: "--dist ddp".into(),
        message: format!(
            "the learner replicas have drifted apart: rank(s) {} differ from rank 0 at this checkpoint",
            ranks.join(", ")
        ),
    })
}

/// 64-bit FNV-1a, enough to tell replicas apart (not a cryptographic check).
struct Fnv1a(u64);

fn fnv1a() -> Fnv1a {
    Fnv1a(0xcbf2_9ce4_8422_2325)
}

impl Fnv1a {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

#[cfg(feature = "mpi")]
mod mpi_world {
    use std::sync::Mutex;

    use embodia_algos::data_parallel::{Collective, Reduce};
    use mpi::collective::SystemOperation;
    use mpi::topology::SimpleCommunicator;
    use mpi::traits::{Communicator, CommunicatorCollectives, Destination, Root, Source};

    /// [`Collective`] over MPI's world communicator.
    pub(super) struct MpiWorld {
        comm: SimpleCommunicator,
        /// Send buffers of the all-reduces (MPI reduces from one buffer into another).
        f64_send: Mutex<Vec<f64>>,
        f32_send: Mutex<Vec<f32>>,
    }

    impl MpiWorld {
        pub(super) fn new(comm: SimpleCommunicator) -> Self {
            Self { comm, f64_send: Mutex::new(Vec::new()), f32_send: Mutex::new(Vec::new()) }
        }
    }

    // SAFETY: the communicator is a handle that MPI (initialized with `Threading::Funneled`)
    // lets only the thread that initialized it use; embodia makes every collective call from
    // the training thread, which is that thread (`embodia train` trains on its main thread).
    unsafe impl Send for MpiWorld {}
    unsafe impl Sync for MpiWorld {}

    impl Collective for MpiWorld {
        fn rank(&self) -> usize {
            self.comm.rank() as usize
        }

        fn size(&self) -> usize {
            self.comm.size() as usize
        }

        fn all_reduce(&self, values: &mut [f64], op: Reduce) {
            let mut send = self.f64_send.lock().unwrap_or_else(|e| e.into_inner());
            send.clear();
            send.extend_from_slice(values);
            let op = match op {
                Reduce::Sum => SystemOperation::sum(),
                Reduce::Min => SystemOperation::min(),
                Reduce::Max => SystemOperation::max(),
            };
            self.comm.all_reduce_into(&send[..], values, op);
        }

        fn all_reduce_sum_f32(&self, values: &mut [f32]) {
            let mut send = self.f32_send.lock().unwrap_or_else(|e| e.into_inner());
            send.clear();
            send.extend_from_slice(values);
            self.comm.all_reduce_into(&send[..], values, SystemOperation::sum());
        }

        fn broadcast_f32(&self, values: &mut [f32]) {
            self.comm.process_at_rank(0).broadcast_into(values);
        }

        fn gather_bytes(&self, bytes: &[u8]) -> Option<Vec<Vec<u8>>> {
            if self.comm.rank() != 0 {
                self.comm.process_at_rank(0).send(bytes);
                return None;
            }
            let mut all = vec![bytes.to_vec()];
            for r in 1..self.comm.size() {
                all.push(self.comm.process_at_rank(r).receive_vec::<u8>().0);
            }
            Some(all)
        }

        fn send_f32(&self, to: usize, values: &[f32]) {
            self.comm.process_at_rank(to as i32).send(values);
        }

        fn receive_f32(&self, from: usize, values: &mut [f32]) {
            self.comm.process_at_rank(from as i32).receive_into(values);
        }

        fn send_bytes(&self, to: usize, bytes: &[u8]) {
            self.comm.process_at_rank(to as i32).send(bytes);
        }

        fn receive_bytes(&self, from: usize) -> Vec<u8> {
            self.comm.process_at_rank(from as i32).receive_vec::<u8>().0
        }
    }
}
