//! `embodia deploy`, `embodia calibrate` and `embodia servo-emulator`: running a policy on a robot.

use clap::Args;
use std::path::PathBuf;

/// Arguments of `embodia deploy`.
#[derive(Args)]
pub(crate) struct DeployArgs {
    /// Run directory (a PPO or SAC run of a rapier arm task, e.g. `reach`).
    #[arg(long)]
    pub(crate) run: PathBuf,
    /// Robot (hardware map).
    #[arg(long, default_value = "so101")]
    pub(crate) robot: String,
    /// Serial port of the servo bus, e.g. /dev/ttyUSB0 (needs `--calibration`).
    #[arg(long, required_unless_present_any = ["dry_run", "sim"], conflicts_with_all = ["dry_run", "sim"])]
    pub(crate) port: Option<String>,
    /// Calibration file written by `embodia calibrate`.
    #[arg(long, requires = "port")]
    pub(crate) calibration: Option<PathBuf>,
    /// Control rate, Hz.
    #[arg(long, default_value_t = 50.0)]
    pub(crate) hz: f64,
    /// Run against the servo emulator on a pseudo-terminal instead of hardware.
    #[arg(long, conflicts_with = "sim")]
    pub(crate) dry_run: bool,
    /// With --dry-run: the emulated servos move a rapier simulation of the arm (the physics
    /// twin: gravity, inertia, effort limits) instead of their own motion model.
    #[arg(long, requires = "dry_run")]
    pub(crate) physics: bool,
    /// Run against the rapier simulation of the run's task.
    #[arg(long)]
    pub(crate) sim: bool,
    /// Episodes (a new target each; servo robots home to the default pose before each).
    #[arg(long, default_value_t = 5, value_parser = super::episodes)]
    pub(crate) episodes: usize,
    /// Seed of the targets.
    #[arg(long, default_value_t = 0)]
    pub(crate) seed: u64,
    /// Record the episodes (observations and actions at the control rate) into a new LeRobot
    /// v3 dataset in this directory.
    #[arg(long)]
    pub(crate) record: Option<PathBuf>,
    /// Print one JSON object instead of a summary.
    #[arg(long)]
    pub(crate) json: bool,
}

/// The arguments of `embodia calibrate`.
#[derive(Args)]
pub(crate) struct CalibrateArgs {
    /// Serial port of the servo bus, e.g. /dev/ttyUSB0.
    #[arg(long, required_unless_present = "import", conflicts_with = "import")]
    pub(crate) port: Option<String>,
    /// Import a calibration file LeRobot wrote for this robot (per motor: id, drive_mode,
    /// homing_offset, range_min, range_max) instead of recording one.
    #[arg(long, value_name = "FILE.json", conflicts_with = "seconds")]
    pub(crate) import: Option<PathBuf>,
    /// Robot (hardware map).
    #[arg(long, default_value = "so101")]
    pub(crate) robot: String,
    /// Output file (default: calibration-<robot>.json).
    #[arg(long)]
    pub(crate) out: Option<PathBuf>,
    /// Record for this many seconds instead of until Enter (non-interactive).
    #[arg(long, value_parser = super::seconds)]
    pub(crate) seconds: Option<f64>,
}

/// The arguments of `embodia servo-emulator`.
#[derive(Args)]
pub(crate) struct ServoEmulatorArgs {
    /// Robot whose servos to emulate.
    #[arg(long, default_value = "so101")]
    pub(crate) robot: String,
    /// Move the servos' shafts by a rapier simulation of the robot (a physics twin: gravity,
    /// inertia, effort limits) instead of each servo's own motion model.
    #[arg(long)]
    pub(crate) physics: bool,
    /// Emulate a teleoperation leader arm instead: its shafts follow the joint trajectory in
    /// this CSV file (`time_s`, then one position per joint, rad), as an operator's hand would
    /// move them.
    #[arg(long, value_name = "FILE", conflicts_with = "physics")]
    pub(crate) leader: Option<PathBuf>,
}

pub(crate) fn deploy(args: &DeployArgs) -> anyhow::Result<()> {
    let DeployArgs { run, robot, port, calibration, hz, sim, episodes, seed, json, .. } = args;
    let (robot, port, hz, sim, episodes, seed, json) =
        (robot.as_str(), port.as_deref(), *hz, *sim, *episodes, *seed, *json);
    use embodia::deployment::{self, DeploySettings, SimIo, Target};
    anyhow::ensure!(hz > 0.0 && hz <= 1000.0, "invalid value for `--hz`: {hz} (allowed: 0 < hz ≤ 1000)");
    anyhow::ensure!(episodes > 0, "invalid value for `--episodes`: 0 (allowed: ≥ 1)");
    let model = embodia::robots::builtin(robot)?;
    let base_map = embodia::robots::HardwareMap::builtin(robot, &model)?;
    let mut loaded = None;
    let map = match (port, calibration.as_deref()) {
        (Some(_), Some(file)) => {
            let cal = embodia::robots::Calibration::load(file)?;
            let map = base_map.calibrated(&cal, &file.display().to_string())?;
            loaded = Some(cal);
            map
        }
        (Some(port), None) => anyhow::bail!(
            "no calibration for {robot}: run `embodia calibrate --port {port} --robot {robot}` and pass its file with --calibration"
        ),
        // A dry run checks the calibration it was given, as the real run would, then drives the
        // emulator with the uncalibrated map: its servos start centred, where that map puts
        // each joint's zero.
        (None, Some(file)) => {
            let cal = embodia::robots::Calibration::load(file)?;
            base_map.calibrated(&cal, &file.display().to_string())?;
            eprintln!("{}: a valid calibration for {robot}; the emulator runs uncalibrated", file.display());
            base_map
        }
        (None, None) => base_map,
    };
    let mut policy = deployment::load_policy(run, &map)?;
    let settings = DeploySettings {
        hz,
        episodes,
        episode_cycles: None,
        home_cycles: hz as u64,
        seed,
        safety: embodia::deploy::SafetyConfig::for_robot(&map),
        record: args.record.is_some(),
    };
    if let Some(dir) = &args.record {
        // Refuse an occupied path before the robot moves, not after.
        if dir.exists() {
            let empty = std::fs::read_dir(dir).map(|mut d| d.next().is_none());
            anyhow::ensure!(
                empty.is_ok(),
                "{}: exists and is not a directory; choose another --record directory",
                dir.display()
            );
            anyhow::ensure!(empty.is_ok_and(|e| e), "{}: not empty; choose another --record directory", dir.display());
        }
    }
    embodia::deploy::signal::install_stop_handler()?;
    let stop = embodia::deploy::signal::stop_requested;
    let target = if sim {
        "the rapier simulation"
    } else if port.is_some() {
        "the servo bus"
    } else if args.physics {
        "the servo emulator on the physics twin"
    } else {
        "the servo emulator"
    };
    eprintln!(
        "deploying {} on {robot} via {target} at {hz} Hz, {episodes} episodes (in-process policy: deterministic mean action; Ctrl-C stops safely)",
        run.display()
    );
    let report = if sim {
        let mut io = SimIo::new(&policy, seed)?;
        deployment::deploy(&mut policy, Target::Sim(&mut io), &map, &settings, &stop)?
    } else {
        let emulator;
        let path = match port {
            Some(p) => p.to_string(),
            None => {
                emulator = embodia::deploy::PtyEmulator::start(emulated_servos(&map, args.physics)?)?;
                emulator.path().to_string()
            }
        };
        let port =
            embodia::deploy::SerialBusPort::open(&path, 1_000_000).map_err(|e| anyhow::anyhow!("{path}: {e}"))?;
        let bus_config = embodia::deploy::BusConfig { timeout: deployment::bus_timeout(hz), retries: 0 };
        let gains = embodia::deploy::ServoGains::default();
        let mut io = embodia::deploy::servo_io::connect(port, bus_config, &map, gains, loaded.as_ref())
            .map_err(|e| anyhow::anyhow!("{path}: {e}"))?;
        deployment::deploy(&mut policy, Target::Servos(io.as_mut()), &map, &settings, &stop)?
    };
    if json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        print!("{}", deployment::describe(&report));
    }
    if let Some(dir) = &args.record {
        let demos = policy.demonstrations(report.recorded, hz);
        let options = embodia::dataset::WriteOptions { robot_type: Some(robot.to_string()), ..Default::default() };
        embodia::dataset::save(&demos, dir, &options, false)?;
        eprintln!("recorded {} episodes ({} frames) into {}", demos.episodes.len(), demos.num_steps(), dir.display());
    }
    match report.stopped_early {
        Some(why) => Err(EarlyStop { why }.into()),
        None => Ok(()),
    }
}

/// `deploy` ended before its last episode (after reporting and saving what it ran), so that a
/// lab script can tell: exit status 3 when the safety layer or a hardware fault stopped it, 4
/// when a stop request (Ctrl-C, SIGTERM) did. Every other error exits 1, and a command line
/// that does not parse 2.
#[derive(Debug)]
pub(crate) struct EarlyStop {
    /// The torque-off reason, as the report prints it (`torque off: write failed`).
    why: String,
}

impl EarlyStop {
    /// The exit status for this stop.
    pub(crate) fn exit_code(&self) -> u8 {
        if self.why.ends_with("stop requested") { 4 } else { 3 }
    }
}

impl std::fmt::Display for EarlyStop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "deploy stopped early: {}", self.why)
    }
}

impl std::error::Error for EarlyStop {}

/// The emulated servos of `map` (factory-default, ids and models as on the robot), their
/// shafts moved by the physics twin of the robot when `physics`.
fn emulated_servos(map: &embodia::robots::HardwareMap, physics: bool) -> anyhow::Result<embodia::deploy::ServoChain> {
    let chain = embodia::deploy::ServoChain::for_map(map)
        .ok_or_else(|| anyhow::anyhow!("no emulation of the servos of {} ({:?})", map.robot, map.models()))?;
    if !physics {
        return Ok(chain);
    }
    let twin = embodia::servo_twin::ServoTwin::new(&map.robot).map_err(|e| anyhow::anyhow!("--physics: {e}"))?;
    Ok(chain.with_dynamics(Box::new(twin)))
}

pub(crate) fn calibrate(
    port: Option<&str>,
    import: Option<&std::path::Path>,
    robot: &str,
    out: Option<PathBuf>,
    seconds: Option<f64>,
) -> anyhow::Result<()> {
    let model = embodia::robots::builtin(robot)?;
    let map = embodia::robots::HardwareMap::builtin(robot, &model)?;
    let out = out.unwrap_or_else(|| PathBuf::from(format!("calibration-{robot}.json")));
    let cal = match (port, import) {
        (_, Some(file)) => embodia::robots::Calibration::import_lerobot(file)?,
        (Some(port), None) => record_calibration(port, &map, seconds)?,
        (None, None) => anyhow::bail!("`--port` or `--import` is required"),
    };
    // Refuse a calibration that does not fit the robot (or a range that was not moved through)
    // before writing anything.
    let source = import.map_or_else(|| out.display().to_string(), |f| f.display().to_string());
    map.calibrated(&cal, &source)?;
    cal.save(&out)?;
    match import {
        Some(file) => {
            println!("imported {} joints of {robot} from {} into {}", cal.joints.len(), file.display(), out.display());
            eprintln!(
                "deploy checks that each servo holds the homing offset of this file (LeRobot writes it into the servos)"
            );
        }
        None => println!("wrote {}", out.display()),
    }
    Ok(())
}

fn record_calibration(
    port: &str,
    map: &embodia::robots::HardwareMap,
    seconds: Option<f64>,
) -> anyhow::Result<embodia::robots::Calibration> {
    use embodia::deploy::{Bus, BusConfig, Dynamixel, SerialBusPort};
    use embodia::robots::ServoBus;
    let serial = SerialBusPort::open(port, 1_000_000).map_err(|e| anyhow::anyhow!("{port}: {e}"))?;
    match map.bus() {
        ServoBus::Feetech => record_on(&mut Bus::new(serial, BusConfig::default()), map, seconds),
        ServoBus::Dynamixel => {
            record_on(&mut Bus::with_protocol(serial, BusConfig::default(), Dynamixel::new()), map, seconds)
        }
    }
}

fn record_on<P: embodia::deploy::Port, Pr: embodia::deploy::Protocol>(
    bus: &mut embodia::deploy::Bus<P, Pr>,
    map: &embodia::robots::HardwareMap,
    seconds: Option<f64>,
) -> anyhow::Result<embodia::robots::Calibration> {
    use std::sync::atomic::{AtomicBool, Ordering};
    let robot = &map.robot;
    let names: Vec<_> = map.joints.iter().map(|j| j.joint.clone()).collect();
    let enter = std::sync::Arc::new(AtomicBool::new(false));
    match seconds {
        Some(s) => {
            anyhow::ensure!(s > 0.0, "invalid value for `--seconds`: {s} (allowed: > 0)");
            eprintln!("torque off: move every joint of the {robot} through its full range ({s} s)");
        }
        None => {
            eprintln!("torque off: move every joint of the {robot} through its full range, then press Enter");
            let enter = enter.clone();
            std::thread::spawn(move || {
                let mut line = String::new();
                let _ = std::io::stdin().read_line(&mut line);
                enter.store(true, Ordering::SeqCst);
            });
        }
    }
    let start = std::time::Instant::now();
    let mut last_print = start;
    let cal = embodia::deploy::calibrate::record_ranges(bus, map, std::time::Duration::from_millis(20), &mut |p| {
        if last_print.elapsed().as_secs_f64() > 0.5 {
            last_print = std::time::Instant::now();
            let ranges: Vec<_> =
                names.iter().zip(p.min.iter().zip(&p.max)).map(|(n, (lo, hi))| format!("{n} {lo}..{hi}")).collect();
            eprint!("\r{}", ranges.join("  "));
        }
        match seconds {
            Some(s) => start.elapsed().as_secs_f64() >= s,
            None => enter.load(Ordering::SeqCst),
        }
    })?;
    eprintln!();
    Ok(cal)
}

pub(crate) fn servo_emulator(args: &ServoEmulatorArgs) -> anyhow::Result<()> {
    use std::io::Write;
    let ServoEmulatorArgs { robot, physics, leader } = args;
    let (robot, physics) = (robot.as_str(), *physics);
    let model = embodia::robots::builtin(robot)?;
    let map = embodia::robots::HardwareMap::builtin(robot, &model)?;
    let mut chain = emulated_servos(&map, physics)?;
    if let Some(file) = leader {
        let operator = embodia::deploy::scripted_leader::ScriptedLeader::load(file, map.clone())
            .map_err(|e| anyhow::anyhow!("--leader {e}"))?;
        chain = chain.with_dynamics(Box::new(operator));
    }
    embodia::deploy::signal::install_stop_handler()?;
    let emulator = embodia::deploy::PtyEmulator::start(chain)?;
    println!("{}", emulator.path());
    std::io::stdout().flush()?;
    let protocol = match map.bus() {
        embodia::robots::ServoBus::Feetech => "Feetech protocol 0",
        embodia::robots::ServoBus::Dynamixel => "Dynamixel protocol 2.0",
    };
    let motion = match (physics, leader) {
        (true, _) => "shafts moved by a rapier simulation of the arm",
        (false, Some(_)) => "a leader arm: shafts moved by the scripted operator",
        (false, None) => "servo motion model",
    };
    eprintln!(
        "emulating the {robot}'s servos (ids {:?}, models {:?}, {protocol}, 1 Mbaud; {motion}) until Ctrl-C",
        map.ids(),
        map.models()
    );
    while !embodia::deploy::signal::stop_requested() {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    emulator.stop()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_early_stop_exits_3_for_a_fault_and_4_for_a_stop_request() {
        let code = |why: &str| EarlyStop { why: why.into() }.exit_code();
        assert_eq!(code("torque off: write failed"), 3);
        assert_eq!(code("while homing: torque off: servo fault"), 3);
        assert_eq!(code("torque off: stop requested"), 4);
    }
}
