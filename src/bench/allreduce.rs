//! `mpirun -np N embodia bench allreduce`: what one gradient all-reduce of a data-parallel run
//! costs between these ranks ([`embodia_algos::data_parallel::average_gradients`] sends one
//! fused `f32` buffer per optimizer step: the parameters' gradients and one presence count per
//! parameter tensor), for the networks of the learners that would send it: PPO on a task
//! (`ppo:<task>`, its preset's actor and critic) and the VLA presets (`vla:tiny`, `small`,
//! `base`). Latency from the slowest rank's view (every call ends with the slowest rank), and
//! the algorithm bandwidth, bytes / latency.

use std::time::Instant;

use embodia_algos::data_parallel::{Collective, Reduce};
use serde::Serialize;

use crate::config::{ConfigSources, resolve};
use crate::run::{RunError, build_learner, make_env};

/// One buffer size's figures.
#[derive(Debug, Clone, Serialize)]
pub struct AllReduceTiming {
    /// `ppo:<task>` or `vla:<preset>`.
    pub network: String,
    /// Parameters (gradient values).
    pub parameters: usize,
    /// Bytes each rank sends into one all-reduce.
    pub bytes: usize,
    /// Median and fastest call, microseconds, slowest rank's.
    pub median_us: f64,
    /// Fastest call, microseconds.
    pub min_us: f64,
    /// bytes / median latency, GB/s.
    pub algorithm_gbps: f64,
}

/// The gradient values of `network` (`ppo:<task>` or `vla:<preset>`).
pub fn gradient_values(network: &str) -> Result<usize, RunError> {
    let unknown = || RunError::Io {
        path: "--networks".into(),
        message: format!(
            "unknown network `{network}`; valid: ppo:<task> (e.g. ppo:ant-run), vla:tiny, vla:small, vla:base"
        ),
    };
    match network.split_once(':') {
        Some(("vla", name)) => Ok(crate::bench::vla_model::preset(name).ok_or_else(unknown)?.param_count()),
        Some(("ppo", task)) => {
            let config = resolve(&ConfigSources { task: Some(task), algorithm: Some("ppo"), ..Default::default() })?;
            let env = make_env(&config, 1)?;
            let learner = build_learner(&config, env.as_ref(), &crate::device::default_device())?;
            Ok(learner.checkpoint()?.params("model").values().map(|(_, v)| v.len()).sum())
        }
        _ => Err(unknown()),
    }
}

/// Times `reps` all-reduces (after 3 warm-up calls) of each network's gradient buffer over
/// `world`'s ranks. Every rank must call it with the same arguments.
pub fn allreduce_bench(
    world: &dyn Collective,
    networks: &[String],
    reps: usize,
) -> Result<Vec<AllReduceTiming>, RunError> {
    let mut out = Vec::new();
    for network in networks {
        let parameters = gradient_values(network)?;
        // One presence count per parameter tensor: a few dozen values, immaterial.
        let mut buffer = vec![1.0f32; parameters + 64];
        let mut micros = Vec::with_capacity(reps);
        for rep in 0..reps + 3 {
            let start = Instant::now();
            world.all_reduce_sum_f32(&mut buffer);
            let mut slowest = [start.elapsed().as_secs_f64() * 1e6];
            world.all_reduce(&mut slowest, Reduce::Max);
            if rep >= 3 {
                micros.push(slowest[0]);
            }
            buffer.fill(1.0);
        }
        micros.sort_by(f64::total_cmp);
        let median_us = micros[micros.len() / 2];
        let bytes = buffer.len() * 4;
        out.push(AllReduceTiming {
            network: network.clone(),
            parameters,
            bytes,
            median_us,
            min_us: micros[0],
            algorithm_gbps: bytes as f64 / (median_us * 1e-6) / 1e9,
        });
    }
    Ok(out)
}
