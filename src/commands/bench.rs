//! `embodia bench …`: the benchmarks that print figures (solve, flow, sim, vla, render, export latency, deploy, mcu).

use clap::Args;
use std::path::{Path, PathBuf};

use crate::Settings;
use embodia::algos::EvalMode;
use embodia::bench::{CONFIRM_EPISODES, GATE_EPISODES, SOLVE_EVAL_EPISODES, median, solve};
use embodia::config::TrainConfig;
use embodia::sim::SolveMetric;

/// The arguments of `embodia bench flow`.
#[derive(Args)]
pub(crate) struct BenchFlowArgs {
    /// Tasks, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "pick-cube,push-t")]
    pub(crate) tasks: Vec<String>,
    /// Flow-RL variant: ppo-flow-sde, ppo-flow-noise or dsrl (SAC on the frozen clone's initial
    /// noise); or dppo (the SFT trains a diffusion policy instead).
    #[arg(long, default_value = "ppo-flow-sde")]
    pub(crate) algo: String,
    /// Successful scripted demonstrations for SFT (default: the task's `sft` preset, as
    /// `embodia train --algo sft` uses: 20, push-t 200).
    #[arg(long)]
    pub(crate) demos: Option<usize>,
    /// SFT gradient steps (default: the task's `sft` preset).
    #[arg(long)]
    pub(crate) sft_steps: Option<u64>,
    /// Override one SFT setting, e.g. --sft-set algo.policy.chunk=1 (repeatable).
    #[arg(long = "sft-set", value_name = "KEY=VALUE")]
    pub(crate) sft_overrides: Vec<String>,
    /// Wall-time budget of flow RL per task and seed, seconds (default 300 without
    /// `--rl-steps`, unlimited with it); RL stops at the first budget it reaches.
    #[arg(long, value_parser = super::seconds)]
    pub(crate) rl_seconds: Option<f64>,
    /// Env-step budget of flow RL per task and seed.
    #[arg(long)]
    pub(crate) rl_steps: Option<u64>,
    /// Parallel environments of flow RL (default: the flow-RL config's `algo.num_envs`).
    #[arg(long)]
    pub(crate) envs: Option<usize>,
    /// Evaluation episodes for S0 and S1.
    #[arg(long, default_value_t = 100)]
    pub(crate) eval_episodes: usize,
    /// Number of seeds: `--seed` and the N − 1 after it.
    #[arg(long, default_value_t = 1)]
    pub(crate) seeds: u64,
    /// First seed, so that seeds can run as separate processes.
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
    /// TOML file overriding the flow-RL run's defaults, as `embodia train --config` reads.
    #[arg(long)]
    pub(crate) config: Option<PathBuf>,
    /// Override one flow-RL setting, e.g. --set algo.policy_lr=1e-5 (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub(crate) overrides: Vec<String>,
    /// Write learning curves (metrics.csv, curves.png) under DIR/<task>-seed<N>/<algo>/, and the
    /// SFT and RL policies as runs in DIR/<task>-seed<N>/sft/ and …/<algo>/ (for eval, distill, export).
    #[arg(long, value_name = "DIR", default_value = "runs/bench-flow")]
    pub(crate) out: PathBuf,
    /// Also train Gaussian PPO from scratch for as many env steps as flow RL took and report its success.
    #[arg(long)]
    pub(crate) baseline: bool,
    /// Also print one JSON object per result.
    #[arg(long)]
    pub(crate) json: bool,
}

/// The arguments of `embodia bench solve`.
#[derive(Args)]
pub(crate) struct BenchSolveArgs {
    #[command(flatten)]
    pub(crate) settings: Settings,
    /// Number of seeds: `--seed` (default 1) and the N − 1 after it, so that seeds can run
    /// as separate processes.
    #[arg(long, default_value_t = 5)]
    pub(crate) seeds: u64,
    /// Also print one JSON object with all results.
    #[arg(long)]
    pub(crate) json: bool,
}

/// The arguments of `embodia bench mcu`.
#[derive(Args)]
pub(crate) struct BenchMcuArgs {
    /// Trained runs to measure as well (repeatable).
    #[arg(long)]
    pub(crate) run: Vec<PathBuf>,
    /// Also measure the no_std Rust export (needs `rustup target add thumbv7em-none-eabihf`).
    #[arg(long)]
    pub(crate) rust: bool,
    /// Also run the same policies with RLtools' ARM dense layers (its headers in
    /// RLTOOLS_INCLUDE: `export RLTOOLS_INCLUDE="$(bash bench/rltools_include.sh)"`); ELU
    /// policies are skipped, RLtools has no ELU.
    #[arg(long)]
    pub(crate) rltools: bool,
    /// Keep the firmware build directories here instead of a temporary directory.
    #[arg(long, value_name = "DIR")]
    pub(crate) keep: Option<PathBuf>,
    /// Also print the figures as one JSON line.
    #[arg(long)]
    pub(crate) json: bool,
}

/// The arguments of `embodia bench deploy`.
#[derive(Args)]
pub(crate) struct BenchDeployArgs {
    /// Robot whose servos to emulate: so101 (Feetech STS3215) or koch (Dynamixel XL430/XL330).
    #[arg(long, default_value = "so101")]
    pub(crate) robot: String,
    /// Run whose policy drives the arm (default: a joint sweep beyond the limits).
    #[arg(long)]
    pub(crate) run: Option<PathBuf>,
    /// Control rate, Hz.
    #[arg(long, default_value_t = 50.0)]
    pub(crate) hz: f64,
    /// Seconds of the timing phase.
    #[arg(long, default_value_t = 60.0, value_parser = super::seconds)]
    pub(crate) seconds: f64,
    /// Faults to inject.
    #[arg(long, default_value_t = 1000)]
    pub(crate) faults: usize,
    /// Seed of the fault schedule.
    #[arg(long, default_value_t = 0)]
    pub(crate) seed: u64,
    /// Also print one JSON object with all results.
    #[arg(long)]
    pub(crate) json: bool,
}

/// The arguments of `embodia bench vla`.
#[derive(Args)]
pub(crate) struct BenchVlaArgs {
    /// The language-conditioned family.
    #[arg(long, default_value = "lang-cubes")]
    pub(crate) task: String,
    /// RL algorithm: vla-ppo-flow-sde, vla-ppo-flow-noise or vla-dsrl.
    #[arg(long, default_value = "vla-ppo-flow-sde")]
    pub(crate) algo: String,
    /// SFT gradient steps.
    #[arg(long, default_value_t = 3000)]
    pub(crate) sft_steps: u64,
    /// Wall-time budget of RL, seconds.
    #[arg(long, default_value_t = 1800.0, value_parser = super::seconds)]
    pub(crate) rl_seconds: f64,
    /// Evaluation episodes per split (training and held-out variants), each policy.
    #[arg(long, default_value_t = 64)]
    pub(crate) eval_episodes: usize,
    /// Seed.
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
    /// Override one SFT setting, e.g. --sft-set algo.demos=460 (repeatable).
    #[arg(long = "sft-set", value_name = "KEY=VALUE")]
    pub(crate) sft_overrides: Vec<String>,
    /// Override one RL setting, e.g. --rl-set algo.policy_lr=1e-4 (repeatable).
    #[arg(long = "rl-set", value_name = "KEY=VALUE")]
    pub(crate) rl_overrides: Vec<String>,
    /// Start RL from this finished vla-sft run instead of training one (--sft-steps and
    /// --sft-set unused).
    #[arg(long, value_name = "RUN_DIR")]
    pub(crate) sft_run: Option<PathBuf>,
    /// Then distill the RL policy into a fresh VLA (PLD): vla-sft with the SFT run's
    /// settings for this many gradient steps on the demonstrations and the RL policy's
    /// successful episodes (S2); 0: no distillation.
    #[arg(long, default_value_t = 0)]
    pub(crate) distill_steps: u64,
    /// Successful RL episodes (sampled, training variants) the distillation trains on.
    #[arg(long, default_value_t = 1000)]
    pub(crate) distill_episodes: usize,
    /// Directory of the SFT run (<out>/sft, a run directory), the RL curves (<out>/rl) and
    /// with distillation the RL episodes (<out>/rl-episodes) and the distilled run
    /// (<out>/distilled).
    #[arg(long, default_value = "bench-vla")]
    pub(crate) out: PathBuf,
    /// Also print one JSON object with the result.
    #[arg(long)]
    pub(crate) json: bool,
}

/// The arguments of `embodia bench allreduce`.
#[derive(Args)]
pub(crate) struct BenchAllreduceArgs {
    /// Networks whose gradients are reduced: `ppo:<task>` (the PPO preset's actor and critic)
    /// and `vla:<preset>`, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "ppo:pendulum,ppo:ant-run,vla:tiny,vla:small,vla:base")]
    pub(crate) networks: Vec<String>,
    /// Timed all-reduces per network, after three warm-up calls.
    #[arg(long, default_value_t = 20)]
    pub(crate) reps: usize,
    /// Also print one JSON object with all results.
    #[arg(long)]
    pub(crate) json: bool,
}

/// The arguments of `embodia bench vla-model`.
#[derive(Args)]
pub(crate) struct BenchVlaModelArgs {
    /// Presets, comma-separated: tiny (1.2M parameters), small (10.8M), base (105M).
    #[arg(long, value_delimiter = ',', default_value = "tiny,small")]
    pub(crate) presets: Vec<String>,
    /// Batch sizes, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,64")]
    pub(crate) batches: Vec<usize>,
    /// Camera views per sample (1 or 2).
    #[arg(long, default_value_t = 1)]
    pub(crate) views: usize,
    /// Timed calls per figure, after two warm-up calls.
    #[arg(long, default_value_t = 7)]
    pub(crate) reps: usize,
    /// Also time SFT gradient steps (flow-matching loss, backward, Adam).
    #[arg(long)]
    pub(crate) train: bool,
    /// Also print one JSON object with all results.
    #[arg(long)]
    pub(crate) json: bool,
}

/// The arguments of `embodia bench lang`.
#[derive(Args)]
pub(crate) struct BenchLangArgs {
    /// The family.
    #[arg(long, default_value = "lang-cubes")]
    pub(crate) task: String,
    /// Expert episodes per variant (0: skip the expert figures).
    #[arg(long, default_value_t = 10, value_parser = super::episodes)]
    pub(crate) episodes: usize,
    /// Batch size of the throughput figures.
    #[arg(long, default_value_t = 64, value_parser = super::envs)]
    pub(crate) envs: usize,
    /// Camera image side, pixels.
    #[arg(long, default_value_t = 64)]
    pub(crate) res: usize,
    /// Batch steps timed per throughput figure.
    #[arg(long, default_value_t = 50)]
    pub(crate) steps: usize,
    /// Also print one JSON object with all results.
    #[arg(long)]
    pub(crate) json: bool,
}

/// The arguments of `embodia bench fuzz`.
#[derive(Args)]
pub(crate) struct BenchFuzzArgs {
    /// Targets, comma-separated (default: all).
    #[arg(long, value_delimiter = ',')]
    pub(crate) targets: Vec<String>,
    /// Mutated inputs per target.
    #[arg(long, default_value_t = 1_000_000)]
    pub(crate) inputs: u64,
    /// Seed of the mutations.
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
    /// Print one JSON line per target.
    #[arg(long)]
    pub(crate) json: bool,
    /// Write the inputs that panicked or took over 1 s into this directory, as
    /// `<target>-<index>.bin` (at most 16 per target), to reproduce them.
    #[arg(long)]
    pub(crate) keep: Option<std::path::PathBuf>,
    /// Write each target's seed corpus (the valid inputs the mutations start from) into
    /// `DIR/<target>/seed-<N>` and fuzz nothing: the starting corpus of the coverage-guided
    /// harnesses (`bench/fuzz_afl.sh`). DIR must not exist.
    #[arg(long, value_name = "DIR")]
    pub(crate) write_seeds: Option<std::path::PathBuf>,
}

/// `embodia bench fuzz`: fails (exit 1) when any input panicked or took over a second.
pub(crate) fn bench_fuzz(args: &BenchFuzzArgs) -> anyhow::Result<()> {
    use embodia::bench::fuzz::{TARGETS, run_target, target};
    let names: Vec<String> =
        if args.targets.is_empty() { TARGETS.iter().map(|t| t.to_string()).collect() } else { args.targets.clone() };
    // A directory of this process's own, removed at the end.
    let scratch = std::env::temp_dir().join(format!("embodia-fuzz-{}", std::process::id()));
    anyhow::ensure!(!scratch.exists(), "{}: exists already; remove it or run again", scratch.display());
    if let Some(dir) = &args.write_seeds {
        anyhow::ensure!(!dir.exists(), "--write-seeds {}: exists already; name a new directory", dir.display());
    }
    let mut failures = Vec::new();
    for name in &names {
        let built = target(name, &scratch);
        let mut t = match built {
            Ok(t) => t,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&scratch);
                return Err(e);
            }
        };
        if let Some(dir) = &args.write_seeds {
            let dir = dir.join(name);
            std::fs::create_dir_all(&dir)?;
            for (i, seed) in t.seeds().iter().enumerate() {
                std::fs::write(dir.join(format!("seed-{i}")), seed)?;
            }
            println!("{name}: {} seeds in {}", t.seeds().len(), dir.display());
            continue;
        }
        let r = run_target(&mut t, args.inputs, args.seed);
        if args.json {
            println!("{}", serde_json::to_string(&r)?);
        } else {
            println!(
                "{:<20} {:>9} inputs, {:>9} accepted, {} panics, slowest {:.4} s, {} over 1 s, {:.0} s  ({})",
                r.target, r.inputs, r.accepted, r.panics, r.slowest_seconds, r.over_one_second, r.seconds, t.what
            );
        }
        if let Some((message, input)) = &r.first_panic {
            eprintln!(
                "{}: first panic: {message}
  input: {input:?}",
                r.target
            );
        }
        if let Some(dir) = &args.keep {
            std::fs::create_dir_all(dir)?;
            for (index, input) in &r.failing_inputs {
                let path = dir.join(format!("{}-{index}.bin", r.target));
                std::fs::write(&path, input)?;
                eprintln!("{}: kept input {index} in {}", r.target, path.display());
            }
        }
        if r.panics > 0 || r.over_one_second > 0 {
            failures.push(r.target);
        }
    }
    let _ = std::fs::remove_dir_all(&scratch);
    anyhow::ensure!(failures.is_empty(), "inputs panicked or took over 1 s in: {}", failures.join(", "));
    Ok(())
}

/// The arguments of `embodia bench render`.
#[derive(Args)]
pub(crate) struct BenchRenderArgs {
    /// Rapier task.
    #[arg(long, default_value = "pick-cube")]
    pub(crate) task: String,
    /// Batch size.
    #[arg(long, default_value_t = 64, value_parser = super::envs)]
    pub(crate) envs: usize,
    /// Image sides, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "64,128")]
    pub(crate) res: Vec<usize>,
    /// Only this camera (default: all of the task's, `front` and `wrist`).
    #[arg(long)]
    pub(crate) camera: Option<String>,
    /// With visual domain randomization (3 distractors and the rest).
    #[arg(long)]
    pub(crate) randomize: bool,
    /// rayon thread counts, comma-separated (default: all cores).
    #[arg(long, value_delimiter = ',')]
    pub(crate) threads: Vec<usize>,
    /// Batch renders timed per measurement.
    #[arg(long, default_value_t = 50)]
    pub(crate) frames: usize,
    /// Also print one JSON object with all results.
    #[arg(long)]
    pub(crate) json: bool,
}

/// The arguments of `embodia bench export-latency`.
#[derive(Args)]
pub(crate) struct BenchExportLatencyArgs {
    /// Layer widths: observation, hidden…, action.
    #[arg(long, value_delimiter = ',', default_value = "17,256,256,6")]
    pub(crate) layers: Vec<usize>,
    /// Timed calls per implementation.
    #[arg(long, default_value_t = 10_000)]
    pub(crate) calls: usize,
    /// Directory to write model.onnx into (new; default: a temporary one, removed after).
    #[arg(long)]
    pub(crate) out: Option<PathBuf>,
    /// onnxruntime shared library for the ort row (default: $ORT_DYLIB_PATH; the row is
    /// skipped without one).
    #[arg(long, value_name = "libonnxruntime.so")]
    pub(crate) ort_lib: Option<PathBuf>,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub(crate) json: bool,
}

/// The arguments of `embodia bench sim`.
#[derive(Args)]
pub(crate) struct BenchSimArgs {
    #[command(flatten)]
    pub(crate) settings: Settings,
    /// Batch sizes, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "64", value_parser = super::envs)]
    pub(crate) envs: Vec<usize>,
    /// rayon thread counts, comma-separated (default: all cores).
    #[arg(long, value_delimiter = ',')]
    pub(crate) threads: Vec<usize>,
    /// Environment steps per measurement.
    #[arg(long = "measure-steps", default_value_t = 20_000)]
    pub(crate) measure_steps: u64,
    /// Also measure the task's tensor environment on `--device` (stepped on the device with
    /// device-side random actions, results left there).
    #[arg(long)]
    pub(crate) tensor: bool,
    /// With --tensor and --algo ppo: also train PPO (`--set` applies) for this many iterations
    /// with its rollouts kept on the device, and report training env-steps/s.
    #[arg(long, value_name = "N", requires = "tensor")]
    pub(crate) ppo_iterations: Option<u64>,
    /// Also print one JSON object with all results.
    #[arg(long)]
    pub(crate) json: bool,
}

pub(crate) fn bench_solve(settings: &Settings, seeds: u64, json: bool) -> anyhow::Result<()> {
    anyhow::ensure!(seeds > 0, "invalid value for `--seeds`: 0 (allowed: ≥ 1)");
    let base = settings.resolve()?;
    let info = embodia::sim::tasks().iter().find(|t| t.name == base.task);
    let gate = if info.is_some_and(|t| t.solved_by == SolveMetric::SuccessRate) {
        format!(" (success rate; then on {GATE_EPISODES} more episodes)")
    } else {
        String::new()
    };
    println!(
        "bench solve: {} on {}, deterministic eval of {SOLVE_EVAL_EPISODES} episodes after every iteration, threshold {}{gate}, budget {} steps",
        base.algorithm,
        base.task,
        info.map_or(f32::NAN, |t| t.solve_threshold),
        base.total_steps
    );
    let mut results = Vec::new();
    let first = settings.seed.unwrap_or(1);
    for seed in first..first + seeds {
        let config = TrainConfig { seed, ..base.clone() };
        // A seed can train for many minutes: a line on stderr at most every 30 s shows it is alive.
        let mut shown = 0.0;
        let r = solve(&config, &mut |steps, wall, ret, success| {
            if wall - shown >= 30.0 {
                shown = wall;
                let success = success.map(|s| format!(" success={s:.2}")).unwrap_or_default();
                eprintln!("  seed={seed} env_steps={steps} wall_s={wall:.0} eval_return={ret:.1}{success}");
            }
        })?;
        let confirm = match (r.confirm_success, r.confirm_return) {
            (Some(s), _) => format!(" confirm_success={s:.3} ({CONFIRM_EPISODES} fresh initial states)"),
            (None, Some(ret)) => format!(" confirm_return={ret:.1} ({CONFIRM_EPISODES} fresh initial states)"),
            (None, None) => String::new(),
        };
        println!(
            "seed={} solved={} env_steps={} wall_s={:.2} last_eval_return={:.1}{confirm}",
            r.seed, r.solved, r.env_steps, r.wall_seconds, r.last_eval_return
        );
        results.push(r);
    }
    let solved: Vec<_> = results.iter().filter(|r| r.solved).collect();
    let med_steps = median(solved.iter().map(|r| r.env_steps as f64).collect());
    let med_wall = median(solved.iter().map(|r| r.wall_seconds).collect());
    match (med_steps, med_wall) {
        (Some(s), Some(w)) => {
            println!("solved {}/{} median env_steps={s:.0} wall_s={w:.2}", solved.len(), results.len())
        }
        _ => println!("solved 0/{}", results.len()),
    }
    if json {
        let out = serde_json::json!({
            "task": base.task, "algo": base.algorithm, "seeds": results,
            "solved": solved.len(), "median_env_steps": med_steps, "median_wall_s": med_wall,
        });
        println!("{out}");
    }
    Ok(())
}

#[allow(clippy::too_many_arguments, reason = "one argument per `bench flow` flag group")]
pub(crate) fn bench_flow(
    tasks: &[String],
    spec: embodia::bench::FlowBenchSpec,
    seeds: u64,
    json: bool,
) -> anyhow::Result<()> {
    anyhow::ensure!(
        spec.num_envs != Some(0) && spec.eval_episodes > 0 && seeds > 0,
        "--envs, --eval-episodes and --seeds must be ≥ 1"
    );
    let budget = match (spec.rl_seconds.is_finite(), spec.rl_steps) {
        (true, Some(n)) => format!("{} s or {n} env steps", spec.rl_seconds),
        (false, Some(n)) => format!("{n} env steps"),
        (_, None) => format!("{} s", spec.rl_seconds),
    };
    println!(
        "bench flow: SFT (the task's sft preset{}), then {} for {budget} with {} envs{}; success over {} episodes in every evaluation mode (sampled, zero, fixed draw)",
        match (spec.demos, spec.sft_steps) {
            (None, None) => String::new(),
            (d, s) => format!(
                "{}{}",
                d.map_or_else(String::new, |d| format!(", {d} demos")),
                s.map_or_else(String::new, |s| format!(", {s} steps"))
            ),
        },
        spec.algorithm,
        spec.num_envs.map_or_else(|| "the config's".to_string(), |n| n.to_string()),
        if spec.baseline { ", and Gaussian PPO from scratch for the same env steps" } else { "" },
        spec.eval_episodes
    );
    let root = spec.out.clone().unwrap_or_default();
    // One benchmark writes into its output directory at a time.
    let _lock = match &spec.out {
        Some(out) => {
            std::fs::create_dir_all(out).map_err(|e| anyhow::anyhow!("{}: {e}", out.display()))?;
            Some(embodia::run_lock::RunLock::acquire(out)?)
        }
        None => None,
    };
    for task in tasks {
        let mut results = Vec::new();
        for seed in spec.seed..spec.seed + seeds {
            let out = root.join(format!("{task}-seed{seed}"));
            let spec =
                embodia::bench::FlowBenchSpec { task: task.clone(), seed, out: Some(out.clone()), ..spec.clone() };
            // A line a minute, so that a 20-minute RL phase shows where it is.
            let mut next_report = 60.0;
            let r = embodia::bench::flow_bench(&spec, &mut |row| {
                if row.wall_seconds >= next_report {
                    next_report += 60.0;
                    eprintln!(
                        "  {task} seed {seed}: RL {:.0} s, {} env steps, rollout success {}",
                        row.wall_seconds,
                        row.env_steps,
                        row.success_rate.map_or_else(|| "-".to_string(), |s| format!("{s:.2}"))
                    );
                }
            })?;
            let baseline = match (r.baseline_success, r.baseline_env_steps) {
                (Some(s), Some(n)) => format!(" ppo-from-scratch={s:.2} after {n} env steps;"),
                _ => String::new(),
            };
            println!(
                "task={} seed={seed} S0={} ({} demos, {} steps, {:.0} s) S1={} after {} env steps / {:.0} s; S1−S0 (paired 95% CI) {};{baseline} rollout chunk_steps/s={:.0}; time sim/inference/update = {:.0}/{:.0}/{:.0} s; curves in {}",
                r.task,
                mode_rates(&r.sft_success),
                r.demos,
                r.sft_steps,
                r.sft_seconds,
                mode_rates(&r.rl_success),
                r.rl_env_steps,
                r.rl_seconds,
                mode_gains(&r.rl_gain),
                r.chunk_steps_per_s,
                r.sim_seconds,
                r.inference_seconds,
                r.update_seconds,
                out.display()
            );
            if json {
                println!("{}", serde_json::to_string(&r)?);
            }
            results.push(r);
        }
        let median = |f: &dyn Fn(&embodia::bench::FlowBenchResult) -> Option<f64>| {
            embodia::bench::median(results.iter().filter_map(f).collect())
                .map_or_else(|| "-".to_string(), |m| format!("{m:.2}"))
        };
        let medians = |f: &dyn Fn(&embodia::bench::FlowBenchResult) -> embodia::bench::ModeSuccess| {
            // A mode not measured (NaN: no fixed draw for dsrl) has no median.
            EvalMode::ALL
                .map(|m| format!("{} {}", m, median(&|r| Some(f(r).get(m)).filter(|v| !v.is_nan()))))
                .join(" / ")
        };
        println!(
            "task={task} median over {seeds} seed(s): S0={} S1={}{}",
            medians(&|r| r.sft_success),
            medians(&|r| r.rl_success),
            if spec.baseline {
                format!(" ppo-from-scratch={}", median(&|r| r.baseline_success))
            } else {
                String::new()
            }
        );
    }
    Ok(())
}

/// `sampled 0.46 / zero 0.40 / fixed-draw 0.15`: success in every evaluation mode.
pub(crate) fn mode_rates(r: &embodia::bench::ModeSuccess) -> String {
    EvalMode::ALL
        .map(|m| match r.get(m) {
            v if v.is_nan() => format!("{m} n/a"),
            v => format!("{m} {v:.2}"),
        })
        .join(" / ")
}

/// `sampled +0.12 [+0.03, +0.21] / …`: a paired difference in every evaluation mode.
pub(crate) fn mode_gains(g: &embodia::bench::ModeGain) -> String {
    EvalMode::ALL
        .map(|m| match g.get(m) {
            [d, ..] if d.is_nan() => format!("{m} n/a"),
            [d, lo, hi] => format!("{m} {d:+.2} [{lo:+.2}, {hi:+.2}]"),
        })
        .join(" / ")
}

pub(crate) fn bench_allreduce(networks: &[String], reps: usize, json: bool) -> anyhow::Result<()> {
    let job = embodia::distributed::launch(embodia::distributed::DistMode::Ddp)?;
    let world = embodia::algos::data_parallel::world().expect("launch joined a world of at least two ranks");
    let timings = embodia::bench::allreduce::allreduce_bench(world, networks, reps.max(1))?;
    if job.rank != 0 {
        return Ok(());
    }
    println!("all-reduce of one gradient buffer over {} ranks ({} calls each, slowest rank's latency)", job.size, reps);
    println!(
        "{:<16} {:>12} {:>12} {:>12} {:>10} {:>10}",
        "network", "parameters", "bytes", "median µs", "min µs", "GB/s"
    );
    for t in &timings {
        println!(
            "{:<16} {:>12} {:>12} {:>12.1} {:>10.1} {:>10.2}",
            t.network, t.parameters, t.bytes, t.median_us, t.min_us, t.algorithm_gbps
        );
    }
    if json {
        println!("{}", serde_json::json!({ "ranks": job.size, "reps": reps, "timings": timings }));
    }
    Ok(())
}

pub(crate) fn bench_vla_model(spec: &embodia::bench::vla_model::VlaModelBenchSpec, json: bool) -> anyhow::Result<()> {
    anyhow::ensure!(!spec.batches.contains(&0), "invalid value for `--batches`: 0 (allowed: ≥ 1)");
    let timings = embodia::bench::vla_model::vla_model_bench(spec, &embodia::device::plain_device())?;
    println!(
        "bench vla-model: {} view(s), 7-D proprio and actions, median (min) of {} calls after 2 warm-ups, ms",
        spec.views, spec.reps
    );
    println!(
        "{:<6} {:>10} {:>6} {:>6} {:>18} {:>22} {:>10} {:>20} {:>12}",
        "preset",
        "params",
        "image",
        "batch",
        "prefix ms",
        "chunk ms (prefix+K)",
        "chunks/s",
        "SFT step ms",
        "samples/s"
    );
    for t in &timings {
        let (step, samples) = match t.train_step_ms {
            Some((median, min)) => {
                (format!("{median:.2} ({min:.2})"), format!("{:.0}", t.batch as f64 / (median / 1e3)))
            }
            None => ("-".into(), "-".into()),
        };
        println!(
            "{:<6} {:>10} {:>6} {:>6} {:>18} {:>22} {:>10.1} {:>20} {:>12}",
            t.preset,
            t.parameters,
            t.image_size,
            t.batch,
            format!("{:.2} ({:.2})", t.prefix_ms.0, t.prefix_ms.1),
            format!("{:.2} ({:.2})", t.chunk_ms.0, t.chunk_ms.1),
            t.batch as f64 / (t.chunk_ms.0 / 1e3),
            step,
            samples
        );
    }
    if json {
        println!("{}", serde_json::to_string(&timings)?);
    }
    Ok(())
}

pub(crate) fn bench_vla(spec: &embodia::bench::vla::VlaBenchSpec, json: bool) -> anyhow::Result<()> {
    anyhow::ensure!(spec.eval_episodes > 0, "invalid value for `--eval-episodes`: 0 (allowed: ≥ 1)");
    anyhow::ensure!(spec.distill_episodes > 0, "invalid value for `--distill-episodes`: 0 (allowed: ≥ 1)");
    let sft = match &spec.sft_run {
        Some(dir) => format!("SFT run {}", dir.display()),
        None => format!("{} SFT steps", spec.sft_steps),
    };
    println!(
        "bench vla: {sft}, then {} for {} s on every training variant; {} episodes per split and policy",
        spec.algorithm, spec.rl_seconds, spec.eval_episodes
    );
    let r = embodia::bench::vla::vla_bench(spec)?;
    let show = |s: &embodia::bench::vla::SplitSuccess| {
        format!(
            "train {:.3} held-out {:.3} (sampled: train {:.3} held-out {:.3})",
            s.train, s.held_out, s.train_sampled, s.held_out_sampled
        )
    };
    println!(
        "task={} seed={} params={} demos={} sft: {} steps in {:.0} s; S0 {}",
        r.task,
        r.seed,
        r.parameters,
        r.demos,
        r.sft_steps,
        r.sft_seconds,
        show(&r.s0)
    );
    println!(
        "{}: {} env steps in {:.0} s ({:.0} env-steps/s); time sim+render/inference/update = {:.0}/{:.0}/{:.0} s; S1 {}",
        r.algorithm,
        r.rl_env_steps,
        r.rl_seconds,
        r.rl_env_steps as f64 / r.rl_seconds.max(1e-9),
        r.sim_seconds,
        r.inference_seconds,
        r.update_seconds,
        show(&r.s1)
    );
    let gain = |name: &str, g: &Option<embodia::bench::vla::SplitGain>| match g {
        Some(g) => {
            let f = |[d, lo, hi]: [f64; 3]| format!("{:+.1} [{:+.1}, {:+.1}]", 100.0 * d, 100.0 * lo, 100.0 * hi);
            println!(
                "{name} − S0, points (paired, 95% CI): train {} held-out {} (sampled: train {} held-out {})",
                f(g.train),
                f(g.held_out),
                f(g.train_sampled),
                f(g.held_out_sampled)
            );
        }
        None => println!("{name} − S0: not paired (the RL settings draw other episodes)"),
    };
    gain("S1", &r.s1_gain);
    if let Some(d) = &r.distilled {
        println!(
            "distilled: {} successful RL episodes of {} ({} frames), {} SFT steps, {:.0} s; S2 {}",
            d.episodes,
            d.attempted,
            d.frames,
            d.steps,
            d.seconds,
            show(&d.s2)
        );
        gain("S2", &d.s2_gain);
    }
    let sft_dir = spec.sft_run.clone().unwrap_or_else(|| spec.out.join("sft"));
    println!("runs: {} (SFT), {} (RL curves)", sft_dir.display(), spec.out.join("rl").display());
    if json {
        println!("{}", serde_json::to_string(&r)?);
    }
    Ok(())
}

#[allow(clippy::too_many_arguments, reason = "one argument per `bench lang` flag")]
pub(crate) fn bench_lang(
    task: &str,
    episodes: usize,
    envs: usize,
    res: usize,
    steps: usize,
    json: bool,
) -> anyhow::Result<()> {
    use embodia::bench::lang::{expert_per_variant, step_rate};
    anyhow::ensure!(envs > 0 && steps > 0, "`--envs` and `--steps` must be ≥ 1");
    anyhow::ensure!((8..=1024).contains(&res), "invalid value for `--res`: {res} (allowed: 8..=1024)");
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("bench lang: {task}, {threads} threads");
    let mut variants = Vec::new();
    if episodes > 0 {
        println!("scripted expert, {episodes} episodes per variant:");
        variants = expert_per_variant(task, episodes, 1000)?;
        for v in &variants {
            println!(
                "  success={:>5.1}%  length={:>6.1}  {}{}",
                100.0 * v.success_rate,
                v.mean_length,
                v.instruction,
                if v.held_out { "  (held out)" } else { "" }
            );
        }
        let mean = |held: bool| {
            let s: Vec<f64> = variants.iter().filter(|v| v.held_out == held).map(|v| v.success_rate).collect();
            100.0 * s.iter().sum::<f64>() / s.len().max(1) as f64
        };
        println!("  mean success: training variants {:.1}%, held-out variants {:.1}%", mean(false), mean(true));
    }
    // Three rounds, settings interleaved, the best of each kept: on a shared machine the
    // slowest rounds measure the other load, not the environment.
    let settings = [&[][..], &["front"][..], &["front", "wrist"][..]];
    let mut rates: Vec<embodia::bench::lang::StepRate> = Vec::new();
    for _ in 0..3 {
        for (k, cameras) in settings.iter().enumerate() {
            let r = step_rate(task, envs, res, cameras, steps)?;
            match rates.get_mut(k) {
                Some(best) if best.env_steps_per_s >= r.env_steps_per_s => {}
                Some(best) => *best = r,
                None => rates.push(r),
            }
        }
    }
    for r in &rates {
        println!("envs={:<4} {:<22} env_steps/s={:>9.0} (best of 3)", r.envs, r.setting, r.env_steps_per_s);
    }
    if json {
        println!("{}", serde_json::json!({ "variants": variants, "step_rates": rates }));
    }
    Ok(())
}

#[allow(clippy::too_many_arguments, reason = "one argument per `bench render` flag")]
pub(crate) fn bench_render(
    task: &str,
    envs: usize,
    res: &[usize],
    camera: Option<&str>,
    randomize: bool,
    threads: &[usize],
    frames: usize,
    json: bool,
) -> anyhow::Result<()> {
    anyhow::ensure!(envs > 0 && frames > 0, "`--envs` and `--frames` must be ≥ 1");
    anyhow::ensure!(res.iter().all(|r| (8..=1024).contains(r)), "invalid value for `--res`: sides must be in 8..=1024");
    anyhow::ensure!(threads.iter().all(|&n| n > 0), "invalid value for `--threads`: thread counts must be ≥ 1");
    let all = [std::thread::available_parallelism().map_or(1, |n| n.get())];
    let threads = if threads.is_empty() { &all[..] } else { threads };
    println!(
        "bench render: {task}, {envs} envs, {} camera(s), colour + depth, {frames} batch renders per measurement{}",
        camera.unwrap_or("all"),
        if randomize { ", randomized" } else { "" }
    );
    let mut results = Vec::new();
    for &r in res {
        for &t in threads {
            let m = embodia::camera::render_throughput(task, envs, r, camera, randomize, t, frames)?;
            println!(
                "res={:<4} cameras={} threads={} images/s={:>9.0} ms/batch={:>8.2}",
                format!("{r}x{r}"),
                m.cameras,
                m.threads,
                m.images_per_s,
                m.ms_per_batch
            );
            results.push(m);
        }
    }
    if json {
        println!("{}", serde_json::json!({ "results": results }));
    }
    Ok(())
}

pub(crate) fn bench_sim(
    settings: &Settings,
    envs: &[usize],
    threads: &[usize],
    steps: u64,
    json: bool,
) -> anyhow::Result<()> {
    anyhow::ensure!(envs.iter().all(|&n| n > 0), "invalid value for `--envs`: batch sizes must be ≥ 1");
    anyhow::ensure!(threads.iter().all(|&n| n > 0), "invalid value for `--threads`: thread counts must be ≥ 1");
    let config = settings.resolve()?;
    let all = [std::thread::available_parallelism().map_or(1, |n| n.get())];
    let threads = if threads.is_empty() { &all[..] } else { threads };
    println!("bench sim: {} with uniform random actions, {steps} env steps per measurement", config.task);
    let mut results = Vec::new();
    for &n in envs {
        for &t in threads {
            let r = embodia::bench::sim_throughput(&config, n, t, steps)?;
            println!(
                "envs={:<5} threads={} env_steps/s={:>10.0} per_thread={:>10.0} resets={}",
                r.envs,
                r.threads,
                r.steps_per_s,
                r.steps_per_s / t as f64,
                r.resets
            );
            results.push(r);
        }
    }
    if json {
        println!("{}", serde_json::json!({ "task": config.task, "results": results }));
    }
    Ok(())
}

pub(crate) fn bench_export_latency(
    layers: &[usize],
    calls: usize,
    out: Option<PathBuf>,
    ort_lib: Option<PathBuf>,
    json: bool,
) -> anyhow::Result<()> {
    use embodia::bench::export_latency::{LatencyConfig, export_latency};
    use embodia::deploy::onnx_runtime::Runtime;
    let [obs_dim, hidden @ .., action_dim] = layers else {
        anyhow::bail!("--layers needs at least an observation and an action width, got {layers:?}");
    };
    let config = LatencyConfig {
        obs_dim: *obs_dim,
        hidden: hidden.to_vec(),
        action_dim: *action_dim,
        calls,
        ..LatencyConfig::default()
    };
    let mut runtimes = vec![Runtime::Tract];
    let mut skipped = Vec::new();
    match ort_lib {
        Some(library) => runtimes.push(Runtime::Ort { library }),
        None => skipped.push("ort: no onnxruntime library (set ORT_DYLIB_PATH or --ort-lib)".to_string()),
    }
    let temporary = out.is_none();
    let dir =
        out.unwrap_or_else(|| std::env::temp_dir().join(format!("embodia-export-latency-{}", std::process::id())));
    let result = export_latency(&config, &dir, &runtimes);
    if temporary {
        let _ = std::fs::remove_dir_all(&dir);
    }
    let (results, not_compiled) = result?;
    skipped.extend(not_compiled);
    if json {
        let value = serde_json::json!({ "layers": layers, "calls": calls, "results": results, "skipped": skipped });
        println!("{value}");
        return Ok(());
    }
    println!("batch-1 latency of a {layers:?} MLP policy, {calls} calls each (µs per call)");
    println!("{:<18} {:>10} {:>10} {:>14}", "implementation", "median", "p99", "median / ours");
    let ours = results[0].median_us;
    for r in &results {
        println!("{:<18} {:>10.2} {:>10.2} {:>14.2}", r.name, r.median_us, r.p99_us, r.median_us / ours);
    }
    for s in &skipped {
        println!("not measured: {s}");
    }
    Ok(())
}

pub(crate) fn bench_deploy(
    robot: &str,
    run: Option<&Path>,
    hz: f64,
    seconds: f64,
    faults: usize,
    seed: u64,
    json: bool,
) -> anyhow::Result<()> {
    anyhow::ensure!(hz > 0.0 && hz <= 1000.0, "invalid value for `--hz`: {hz} (allowed: 0 < hz ≤ 1000)");
    anyhow::ensure!(seconds >= 0.0, "invalid value for `--seconds`: {seconds} (allowed: ≥ 0)");
    let r = embodia::deployment::bench(robot, run, hz, seconds, faults, seed)?;
    print!("{}", embodia::deployment::describe_bench(&r));
    if json {
        println!("{}", serde_json::to_string(&r)?);
    }
    Ok(())
}

pub(crate) fn bench_mcu(
    runs: &[PathBuf],
    rust: bool,
    rltools: bool,
    keep: Option<PathBuf>,
    json: bool,
) -> anyhow::Result<()> {
    use embodia::bench::mcu::{CHECKED_INPUTS, COUNTED_INPUTS, McuCase, default_cases, describe, measure, run_case};
    use embodia::deploy::mcu::{Implementation, OPT_FLAGS, Toolchain};
    let toolchain = Toolchain::find()?;
    println!(
        "bench mcu: Cortex-M4F on QEMU {}.{} mps2-an386, {} ({}, hard float); instructions counted from \
         QEMU's one-instruction-per-block execution trace over {COUNTED_INPUTS} observations (QEMU models no \
         cycle timing; its DWT cycle counter does not count); cycles estimated from the Cortex-M4 manual's \
         instruction timings without memory wait states (taken branches 1 + {}); actions checked on \
         {CHECKED_INPUTS} observations; µs@168MHz = estimated cycles at the Crazyflie's clock",
        toolchain.qemu_version.0,
        toolchain.qemu_version.1,
        toolchain.gcc_version,
        OPT_FLAGS.join(" "),
        embodia::deploy::mcu::cycles::BRANCH_REFILL
    );
    let mut cases = default_cases()?;
    for r in runs {
        cases.push(run_case(r)?);
    }
    let work =
        keep.clone().unwrap_or_else(|| std::env::temp_dir().join(format!("embodia-bench-mcu-{}", std::process::id())));
    let mut implementations = vec![Implementation::C];
    implementations.extend(rust.then_some(Implementation::Rust));
    implementations.extend(rltools.then_some(Implementation::RlTools));
    let runs_on = |case: &McuCase, implementation: Implementation| {
        implementation != Implementation::RlTools || embodia::deploy::mcu::rltools::check(&case.spec).is_ok()
    };
    let figures: Result<Vec<_>, _> = cases
        .iter()
        .flat_map(|case| implementations.iter().map(move |&implementation| (case, implementation)))
        .filter(|&(case, implementation)| runs_on(case, implementation))
        .map(|(case, implementation)| measure(&toolchain, case, implementation, &work))
        .collect();
    if keep.is_none() {
        let _ = std::fs::remove_dir_all(&work);
    }
    let figures = figures?;
    print!("{}", describe(&figures));
    if json {
        println!("{}", serde_json::to_string(&figures)?);
    }
    Ok(())
}

pub(crate) fn bench_tensor_sim(
    settings: &Settings,
    envs: &[usize],
    steps: u64,
    device: &str,
    json: bool,
) -> anyhow::Result<()> {
    let config = settings.resolve()?;
    println!(
        "bench sim --tensor: {} on {device}, device-side uniform random actions, at least {steps} env steps",
        config.task
    );
    let mut results = Vec::new();
    for &n in envs {
        let r = embodia::bench::tensor_sim_throughput(
            &config.task,
            n,
            &embodia::device::plain_device(),
            steps,
            config.seed,
        )?;
        println!("envs={:<8} tensor env_steps/s={:>12.0} resets={}", r.envs, r.steps_per_s, r.resets);
        results.push(r);
    }
    if json {
        println!("{}", serde_json::json!({ "task": config.task, "device": device, "tensor_results": results }));
    }
    Ok(())
}

pub(crate) fn bench_tensor_ppo(
    settings: &Settings,
    envs: &[usize],
    iterations: u64,
    device: &str,
    json: bool,
) -> anyhow::Result<()> {
    anyhow::ensure!(iterations > 0, "invalid value for `--ppo-iterations`: 0 (allowed: ≥ 1)");
    let config = settings.resolve()?;
    anyhow::ensure!(
        config.algo.get::<embodia::algos::PpoConfig>().is_some(),
        "--ppo-iterations trains PPO: add `--algo ppo` (the config resolved to `{}`)",
        config.algorithm
    );
    println!(
        "bench sim --ppo-iterations: PPO on {} with its rollouts on {device}, {iterations} iterations",
        config.task
    );
    let mut results = Vec::new();
    for &n in envs {
        let r = embodia::bench::tensor_ppo_throughput(&config, n, iterations)?;
        println!(
            "envs={:<8} ppo env_steps/s={:>12.0} (rollout + update) return {:.1} -> {:.1}",
            r.envs, r.steps_per_s, r.first_return, r.last_return
        );
        results.push(r);
    }
    if json {
        println!("{}", serde_json::json!({ "task": config.task, "device": device, "ppo_results": results }));
    }
    Ok(())
}

// glibc's allocator returned and re-faulted pages on every update of the small-network
// learners (~10% of SAC's time in malloc, free and page faults); mimalloc keeps them.
