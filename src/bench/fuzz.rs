//! `embodia bench fuzz`: every parser of user or device input run on mutated inputs, counting
//! panics (there must be none) and the slowest input.
//!
//! How it works:
//! 1. each [`FuzzTarget`] has a seed corpus of valid inputs: the shipped robot descriptions,
//!    or files embodia itself writes into a temporary directory (a checkpoint, a
//!    dataset, calibrations, servo-bus traffic captured from the driver and the emulator);
//! 2. every input is a seed after 1–8 random edits ([`mutate`]): bit flips, random bytes,
//!    insertions, deletions, duplicated ranges, splices of another seed, and numbers replaced
//!    by the values parsers get wrong (`NaN`, `inf`, `1e308`, `-1`, `0`, `2^64`, 300 digits);
//! 3. the target parses it under `catch_unwind`: an error is a correct answer, a panic is a
//!    failure (the first one's message and input are kept), and every input is timed.
//!
//! Generation is seeded, so a run is reproducible; there is no coverage guidance here. The
//! parsers with few dependencies (robot files, calibrations, the emulator's requests) also have
//! coverage-guided AFL++ harnesses (`fuzz/afl/`, `bench/fuzz_afl.sh`), which start from the
//! seed corpora this module writes (`bench fuzz --write-seeds DIR`).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use crate::config::{ConfigSources, TrainConfig, resolve};

/// Inputs, each a byte string.
type Corpus = Vec<Vec<u8>>;

/// Parses one input; `true` when it was accepted.
type Parse = Box<dyn FnMut(&[u8]) -> bool>;

/// One parser and the inputs it starts from.
pub struct FuzzTarget {
    /// Name on the command line (`--targets`).
    pub name: &'static str,
    /// What it parses.
    pub what: &'static str,
    seeds: Corpus,
    parse: Parse,
}

impl FuzzTarget {
    /// The valid inputs the mutations start from.
    pub fn seeds(&self) -> &[Vec<u8>] {
        &self.seeds
    }
}

/// What one target did over its inputs.
#[derive(Debug, Clone, Serialize)]
pub struct FuzzReport {
    /// The target.
    pub target: String,
    /// Inputs run.
    pub inputs: u64,
    /// Inputs the parser accepted (the others were refused with an error).
    pub accepted: u64,
    /// Inputs that panicked.
    pub panics: u64,
    /// The first panic's message and input (lossy UTF-8, at most 400 characters).
    pub first_panic: Option<(String, String)>,
    /// The slowest input, seconds.
    pub slowest_seconds: f64,
    /// Inputs that took over one second.
    pub over_one_second: u64,
    /// The inputs that panicked or took over one second, by index (at most 16 kept).
    #[serde(skip)]
    pub failing_inputs: Vec<(u64, Vec<u8>)>,
    /// Wall time of the whole target, seconds.
    pub seconds: f64,
}

/// Every target name, in the order they run.
pub const TARGETS: [&str; 14] = [
    "urdf",
    "mjcf",
    "config-file",
    "config-set",
    "run-config",
    "checkpoint-state",
    "checkpoint-tensors",
    "dataset-info",
    "dataset-parquet",
    "calibration",
    "lerobot-calibration",
    "observations",
    "servo-replies",
    "servo-requests",
];

/// Numbers that parsers mishandle.
const NASTY_NUMBERS: [&str; 12] = [
    "NaN",
    "inf",
    "-inf",
    "1e308",
    "-1e308",
    "-1",
    "0",
    "18446744073709551616",
    "9223372036854775807",
    "4294967296",
    "1e-320",
    "100000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000001",
];

/// Applies 1–8 random edits to `input` (module docs, step 2); `others` are the corpus to splice
/// from.
pub fn mutate(rng: &mut ChaCha8Rng, input: &[u8], others: &[Vec<u8>]) -> Vec<u8> {
    let mut out = input.to_vec();
    for _ in 0..rng.random_range(1..=8) {
        let len = out.len();
        let at = if len == 0 { 0 } else { rng.random_range(0..len) };
        match rng.random_range(0..8) {
            0 if len > 0 => out[at] ^= 1 << rng.random_range(0..8),
            1 if len > 0 => out[at] = rng.random(),
            2 => out.insert(at, rng.random()),
            3 if len > 0 => {
                let end = (at + rng.random_range(1..=64)).min(len);
                out.drain(at..end);
            }
            4 if len > 0 => {
                let end = (at + rng.random_range(1..=256)).min(len);
                let copy = out[at..end].to_vec();
                let to = rng.random_range(0..=out.len());
                out.splice(to..to, copy);
            }
            5 if !others.is_empty() => {
                let other = &others[rng.random_range(0..others.len())];
                if !other.is_empty() {
                    let from = rng.random_range(0..other.len());
                    let end = (from + rng.random_range(1..=512)).min(other.len());
                    let to_end = (at + rng.random_range(0..=64)).min(len);
                    out.splice(at..to_end, other[from..end].iter().copied());
                }
            }
            _ => replace_number(rng, &mut out),
        }
    }
    out
}

/// Replaces one run of digits (with its sign, point and exponent) by a [`NASTY_NUMBERS`] entry.
fn replace_number(rng: &mut ChaCha8Rng, out: &mut Vec<u8>) {
    let digits: Vec<usize> = out.iter().enumerate().filter(|(_, b)| b.is_ascii_digit()).map(|(i, _)| i).collect();
    let nasty = NASTY_NUMBERS[rng.random_range(0..NASTY_NUMBERS.len())].as_bytes();
    let Some(&at) = digits.get(rng.random_range(0..digits.len().max(1))) else {
        let to = rng.random_range(0..=out.len());
        out.splice(to..to, nasty.iter().copied());
        return;
    };
    let numeric = |b: &u8| b.is_ascii_digit() || matches!(b, b'.' | b'-' | b'+' | b'e' | b'E');
    let start = (0..at).rev().take_while(|&i| numeric(&out[i])).last().unwrap_or(at);
    let end = (at..out.len()).find(|&i| !numeric(&out[i])).unwrap_or(out.len());
    out.splice(start..end, nasty.iter().copied());
}

/// Runs `target` on `inputs` mutated inputs generated from `seed`.
pub fn run_target(target: &mut FuzzTarget, inputs: u64, seed: u64) -> FuzzReport {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut report = FuzzReport {
        target: target.name.into(),
        inputs: 0,
        accepted: 0,
        panics: 0,
        first_panic: None,
        slowest_seconds: 0.0,
        over_one_second: 0,
        failing_inputs: Vec::new(),
        seconds: 0.0,
    };
    // Panics are counted here, not printed by the default hook.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let start = Instant::now();
    for i in 0..inputs {
        let base = &target.seeds[(i as usize) % target.seeds.len()];
        // Every 16th input is a seed itself, so that the corpus is checked to parse.
        let input = if i % 16 == 0 { base.clone() } else { mutate(&mut rng, base, &target.seeds) };
        let t = Instant::now();
        let outcome = catch_unwind(AssertUnwindSafe(|| (target.parse)(&input)));
        let elapsed = t.elapsed();
        report.inputs += 1;
        report.slowest_seconds = report.slowest_seconds.max(elapsed.as_secs_f64());
        let slow = elapsed > Duration::from_secs(1);
        report.over_one_second += u64::from(slow);
        if (slow || outcome.is_err()) && report.failing_inputs.len() < 16 {
            report.failing_inputs.push((i, input.clone()));
        }
        match outcome {
            Ok(accepted) => report.accepted += u64::from(accepted),
            Err(payload) => {
                report.panics += 1;
                if report.first_panic.is_none() {
                    let message = payload
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_default();
                    let text: String = String::from_utf8_lossy(&input).chars().take(400).collect();
                    report.first_panic = Some((message, text));
                }
            }
        }
    }
    report.seconds = start.elapsed().as_secs_f64();
    std::panic::set_hook(hook);
    report
}

/// Builds the target called `name`, writing what its seeds need under `scratch` (a directory
/// embodia owns for the run).
pub fn target(name: &str, scratch: &Path) -> anyhow::Result<FuzzTarget> {
    let dir = scratch.join(name);
    std::fs::create_dir_all(&dir)?;
    Ok(match name {
        "urdf" => FuzzTarget {
            name: "urdf",
            what: "URDF robot descriptions (robot check, robot tasks)",
            seeds: robot_files("urdf")?,
            parse: Box::new(|b| embodia_robots::parse_urdf(&String::from_utf8_lossy(b), None).is_ok()),
        },
        "mjcf" => FuzzTarget {
            name: "mjcf",
            what: "MJCF robot descriptions",
            seeds: robot_files("xml")?,
            parse: Box::new(|b| embodia_robots::parse_mjcf(&String::from_utf8_lossy(b), None).is_ok()),
        },
        "config-file" => {
            let path = dir.join("config.toml");
            FuzzTarget {
                name: "config-file",
                what: "config files (train --config)",
                seeds: full_configs()?,
                parse: Box::new(move |b| {
                    std::fs::write(&path, b).is_ok()
                        && resolve(&ConfigSources { file: Some(&path), ..ConfigSources::default() }).is_ok()
                }),
            }
        }
        "config-set" => FuzzTarget {
            name: "config-set",
            what: "--set KEY=VALUE overrides",
            seeds: [
                "algo.policy_lr=3e-5",
                "algo.critic_hidden=[64, 64]",
                "algo.num_envs=16",
                "algo.group_size=4",
                "algo.reward=\"success\"",
                "eval_episodes=10",
                "algo.clip_ratio=0.2",
            ]
            .iter()
            .map(|s| s.as_bytes().to_vec())
            .collect(),
            parse: Box::new(|b| {
                let overrides = [String::from_utf8_lossy(b).into_owned()];
                let sources = ConfigSources {
                    task: Some("pick-cube"),
                    algorithm: Some("ppo-flow-sde"),
                    overrides: &overrides,
                    ..ConfigSources::default()
                };
                resolve(&sources).is_ok()
            }),
        },
        "run-config" => {
            let path = dir.join("config.toml");
            FuzzTarget {
                name: "run-config",
                what: "a run's config.toml (eval, resume)",
                seeds: full_configs()?,
                parse: Box::new(move |b| std::fs::write(&path, b).is_ok() && TrainConfig::from_file(&path).is_ok()),
            }
        }
        "checkpoint-state" => checkpoint_target("checkpoint-state", &dir)?,
        "checkpoint-tensors" => checkpoint_target("checkpoint-tensors", &dir)?,
        "dataset-info" => dataset_target("dataset-info", &dir)?,
        "dataset-parquet" => dataset_target("dataset-parquet", &dir)?,
        "calibration" => calibration_target("calibration", &dir)?,
        "lerobot-calibration" => calibration_target("lerobot-calibration", &dir)?,
        "observations" => FuzzTarget {
            name: "observations",
            what: "observation text (act, run-onnx)",
            seeds: ["0.1 0.2 0.3\n", "0.1,0.2,0.3\n-1 2 3e-2\n", "[0.5, -0.5, 1.0]\n", "1 2 3\n\n4 5 6\n"]
                .iter()
                .map(|s| s.as_bytes().to_vec())
                .collect(),
            parse: Box::new(|b| crate::actions::parse_observations(&String::from_utf8_lossy(b), "fuzz", 3).is_ok()),
        },
        "servo-replies" => servo_replies_target()?,
        "servo-requests" => servo_requests_target()?,
        other => anyhow::bail!("no fuzz target `{other}` (targets: {})", TARGETS.join(", ")),
    })
}

/// Whole configurations as runs write them, one per algorithm of the registry, each on a task
/// of its family (VLA algorithms on lang-cubes, the other chunk policies on pick-cube, SAC and
/// PPO on pendulum) and on push-t for the flow presets' other layout.
fn full_configs() -> anyhow::Result<Corpus> {
    let task_of = |algorithm: &str| match algorithm {
        "sac" | "ppo" => "pendulum",
        a if a.starts_with("vla-") => "lang-cubes",
        _ => "pick-cube",
    };
    let mut pairs: Vec<(&str, &str)> =
        crate::algorithms::ALGORITHMS.iter().map(|a| (task_of(a.name), a.name)).collect();
    pairs.push(("push-t", "ppo-flow-sde"));
    pairs
        .iter()
        .map(|&(task, algorithm)| {
            let sources = ConfigSources { task: Some(task), algorithm: Some(algorithm), ..Default::default() };
            Ok(resolve(&sources)?.to_toml().into_bytes())
        })
        .collect()
}

/// The shipped robot descriptions with extension `ext`.
fn robot_files(ext: &str) -> anyhow::Result<Corpus> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/robots");
    files_with_extension(&dir, ext)
}

fn files_with_extension(dir: &Path, ext: &str) -> anyhow::Result<Corpus> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    paths.sort();
    anyhow::ensure!(!paths.is_empty(), "no .{ext} files in {}", dir.display());
    Ok(paths.iter().map(std::fs::read).collect::<Result<_, _>>()?)
}

/// A PPO checkpoint of pendulum written into `dir/seed`; the target mutates one of its files
/// (`state.json` or the tensors) in a copy and loads it.
fn checkpoint_target(name: &'static str, dir: &Path) -> anyhow::Result<FuzzTarget> {
    use embodia_algos::{Checkpoint, STATE_FILE, TENSORS_FILE};
    let sources = ConfigSources { task: Some("pendulum"), algorithm: Some("ppo"), ..Default::default() };
    let config = resolve(&sources)?;
    let env = embodia_sim::make(&config.task, 1)?;
    let learner = crate::run::build_learner(&config, env.as_ref(), &crate::device::default_device())?;
    let original = dir.join("original");
    learner.checkpoint()?.save(&original)?;
    let copy = dir.join("copy");
    std::fs::create_dir_all(&copy)?;
    for entry in std::fs::read_dir(&original)? {
        let entry = entry?;
        std::fs::copy(entry.path(), copy.join(entry.file_name()))?;
    }
    let file = if name == "checkpoint-state" { STATE_FILE } else { TENSORS_FILE };
    let path = copy.join(file);
    Ok(FuzzTarget {
        name,
        what: if name == "checkpoint-state" { "a checkpoint's state.json" } else { "a checkpoint's tensor file" },
        seeds: vec![std::fs::read(&path)?],
        parse: Box::new(move |b| std::fs::write(&path, b).is_ok() && Checkpoint::load(&copy).is_ok()),
    })
}

/// A LeRobot dataset of 2 reach demonstrations written into `dir`; the target mutates its
/// `meta/info.json` or its first Parquet file and reads it.
fn dataset_target(name: &'static str, dir: &Path) -> anyhow::Result<FuzzTarget> {
    let root = dir.join("data");
    let _ = std::fs::remove_dir_all(&root);
    let demos = crate::algorithms::record_demos("reach", None, 2, 1, 0.0)?;
    embodia_dataset::write(&demos, &root, &embodia_dataset::WriteOptions::default())?;
    let path = if name == "dataset-info" {
        root.join("meta/info.json")
    } else {
        let chunk = root.join("data/chunk-000");
        let mut files: Vec<PathBuf> = std::fs::read_dir(&chunk)?.filter_map(|e| e.ok().map(|e| e.path())).collect();
        files.sort();
        files.into_iter().next().ok_or_else(|| anyhow::anyhow!("{}: no Parquet file written", chunk.display()))?
    };
    Ok(FuzzTarget {
        name,
        what: if name == "dataset-info" { "a dataset's meta/info.json" } else { "a dataset's Parquet file" },
        seeds: vec![std::fs::read(&path)?],
        parse: Box::new(move |b| std::fs::write(&path, b).is_ok() && embodia_dataset::read(&root).is_ok()),
    })
}

/// A LeRobot calibration of two motors, written into `dir`.
fn write_lerobot_seed(dir: &Path) -> anyhow::Result<PathBuf> {
    let path = dir.join("lerobot-seed.json");
    std::fs::write(&path, LEROBOT_SEED)?;
    Ok(path)
}

const LEROBOT_SEED: &str = r#"{"shoulder_pan": {"id": 1, "drive_mode": 0, "homing_offset": -12, "range_min": 800, "range_max": 3300},
"elbow_flex": {"id": 3, "drive_mode": 1, "homing_offset": 40, "range_min": 950, "range_max": 3000}}"#;

/// Calibration files: embodia's own (converted from a LeRobot one) or LeRobot's.
fn calibration_target(name: &'static str, dir: &Path) -> anyhow::Result<FuzzTarget> {
    let path = dir.join("calibration.json");
    let seed = if name == "calibration" {
        serde_json::to_vec_pretty(&embodia_robots::Calibration::import_lerobot(&write_lerobot_seed(dir)?)?)?
    } else {
        LEROBOT_SEED.as_bytes().to_vec()
    };
    let lerobot = name == "lerobot-calibration";
    Ok(FuzzTarget {
        name,
        what: if lerobot { "LeRobot calibration files (calibrate --import)" } else { "calibration files (deploy)" },
        seeds: vec![seed],
        parse: Box::new(move |b| {
            std::fs::write(&path, b).is_ok()
                && match lerobot {
                    true => embodia_robots::Calibration::import_lerobot(&path).is_ok(),
                    false => embodia_robots::Calibration::load(&path).is_ok(),
                }
        }),
    })
}

/// A port that swallows requests and answers reads with the bytes it was given, then with an
/// error (so a transaction whose reply is incomplete ends at once instead of at its deadline).
struct ReplayPort {
    replies: Vec<u8>,
    sent: Vec<u8>,
}

impl embodia_deploy::transport::Port for ReplayPort {
    fn send(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.sent.extend_from_slice(bytes);
        Ok(())
    }

    fn recv(&mut self, buf: &mut [u8], _timeout: Duration) -> std::io::Result<usize> {
        if self.replies.is_empty() {
            return Err(std::io::Error::other("the fuzz input is used up"));
        }
        let n = self.replies.len().min(buf.len());
        buf[..n].copy_from_slice(&self.replies[..n]);
        self.replies.drain(..n);
        Ok(n)
    }

    fn clear_input(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Transaction `kind % 3` of the fuzzed driver: a ping of servo 1, a read of 2 bytes of servo
/// 2, or a sync read of 2 bytes of servos 1–3; `true` when it succeeded.
fn transaction<Pr: embodia_deploy::Protocol>(bus: &mut embodia_deploy::Bus<ReplayPort, Pr>, kind: u8) -> bool {
    let mut out = [0u8; 6];
    let mut flags = [embodia_deploy::StatusFlags(0); 3];
    match kind % 3 {
        0 => bus.ping(1).is_ok(),
        1 => bus.read(2, 56, &mut out[..2]).is_ok(),
        _ => bus.sync_read(56, 2, &[1, 2, 3], &mut out, &mut flags).is_ok(),
    }
}

/// A Feetech (protocol 0) or Dynamixel (2.0) chain of servos 1–3.
fn chain(dynamixel: bool) -> embodia_deploy::ServoChain {
    use embodia_deploy::dynamixel::control_table::Model;
    match dynamixel {
        false => embodia_deploy::ServoChain::new(&[1, 2, 3]),
        true => embodia_deploy::ServoChain::dynamixel(&[1, 2, 3].map(|id| (id, Model::Xl330M288))),
    }
}

/// Each transaction's request and the emulator's replies to it, for both protocols, each
/// prefixed by its `(protocol, transaction)` byte: `protocol · 3 + transaction`.
fn emulated_traffic() -> anyhow::Result<(Corpus, Corpus)> {
    use embodia_deploy::emulator::Responder;
    use embodia_deploy::{Bus, BusConfig, Dynamixel};
    let config = BusConfig { timeout: Duration::ZERO, retries: 0 };
    let (mut requests, mut replies) = (Vec::new(), Vec::new());
    for code in 0u8..6 {
        let (dynamixel, kind) = (code >= 3, code % 3);
        let port = ReplayPort { replies: Vec::new(), sent: Vec::new() };
        let sent = match dynamixel {
            false => {
                let mut bus = Bus::new(port, config);
                transaction(&mut bus, kind);
                std::mem::take(&mut bus.port_mut().sent)
            }
            true => {
                let mut bus = Bus::with_protocol(port, config, Dynamixel::new());
                transaction(&mut bus, kind);
                std::mem::take(&mut bus.port_mut().sent)
            }
        };
        let now = Instant::now();
        let mut responder = Responder::new(chain(dynamixel), now);
        responder.receive(&sent, now);
        let mut out = Vec::new();
        responder.transmit(now + Duration::from_secs(1), &mut out);
        anyhow::ensure!(!out.is_empty(), "the emulator sent no reply to transaction {code}");
        requests.push([&[code][..], &sent].concat());
        replies.push([&[code][..], &out].concat());
    }
    Ok((requests, replies))
}

/// The bus driver reading replies (both protocols): what a faulty servo or a noisy line sends.
/// An input's first byte picks the protocol and transaction ([`emulated_traffic`]).
fn servo_replies_target() -> anyhow::Result<FuzzTarget> {
    use embodia_deploy::{Bus, BusConfig, Dynamixel};
    let (_, replies) = emulated_traffic()?;
    let config = BusConfig { timeout: Duration::from_secs(1), retries: 0 };
    Ok(FuzzTarget {
        name: "servo-replies",
        what: "servo-bus replies read by the driver (Feetech and Dynamixel)",
        seeds: replies,
        parse: Box::new(move |b| {
            let Some((&code, replies)) = b.split_first() else { return false };
            let port = ReplayPort { replies: replies.to_vec(), sent: Vec::new() };
            match code % 6 >= 3 {
                false => transaction(&mut Bus::new(port, config), code % 3),
                true => transaction(&mut Bus::with_protocol(port, config, Dynamixel::new()), code % 3),
            }
        }),
    })
}

/// The servo emulator reading requests (both protocols); an input's first byte picks the
/// protocol.
fn servo_requests_target() -> anyhow::Result<FuzzTarget> {
    use embodia_deploy::emulator::Responder;
    let (requests, _) = emulated_traffic()?;
    Ok(FuzzTarget {
        name: "servo-requests",
        what: "servo-bus requests read by the emulator (Feetech and Dynamixel)",
        seeds: requests,
        parse: Box::new(|b| {
            let Some((&code, requests)) = b.split_first() else { return false };
            let now = Instant::now();
            let mut responder = Responder::new(chain(code % 6 >= 3), now);
            responder.receive(requests, now);
            let mut out = Vec::new();
            responder.transmit(now + Duration::from_secs(1), &mut out);
            !out.is_empty()
        }),
    })
}
