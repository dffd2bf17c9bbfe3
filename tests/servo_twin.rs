//! The physics twin (`embodia servo-emulator --physics`): goals written to the emulated servos
//! move a simulated arm, and the servos' registers report it.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use embodia::deploy::ServoChain;
use embodia::deploy::control_table::{self as ct, Register};
use embodia::robots::{HardwareMap, builtin};
use embodia::servo_twin::ServoTwin;

fn so101_map() -> HardwareMap {
    HardwareMap::builtin("so101", &builtin("so101").unwrap()).unwrap()
}

/// The SO-101's servos, moved by the twin (`physics`) or by their own motion model.
fn chain(physics: bool) -> ServoChain {
    let chain = ServoChain::for_map(&so101_map()).unwrap();
    if physics { chain.with_dynamics(Box::new(ServoTwin::new("so101").unwrap())) } else { chain }
}

fn write(chain: &mut ServoChain, id: u8, reg: Register, value: u16) {
    assert!(chain.write_register(id, reg.addr, &value.to_le_bytes()[..usize::from(reg.size)]));
}

/// Advances `chain` by `seconds` in 10 ms bus exchanges from `t0` (synthetic time).
fn run(chain: &mut ServoChain, t0: &mut Instant, seconds: f64) {
    for _ in 0..(seconds / 0.01).round() as usize {
        *t0 += Duration::from_millis(10);
        chain.advance(0.01, *t0);
    }
}

/// Joint positions, rad, as the servos' present-position registers report them.
fn joints(chain: &ServoChain) -> Vec<f64> {
    let map = so101_map();
    map.joints.iter().map(|j| j.to_radians(f64::from(chain.servo(j.id).unwrap().get(ct::PRESENT_POSITION)))).collect()
}

#[test]
fn goals_written_to_the_twins_servos_move_the_simulated_arm_there() {
    let map = so101_map();
    let targets = [0.4, -0.3, 0.5, -0.4, 0.6, 0.2];
    let mut chain = chain(true);
    let mut t = Instant::now();
    for (j, target) in map.joints.iter().zip(targets) {
        write(&mut chain, j.id, ct::GOAL_POSITION, j.to_ticks(target).round() as u16);
        write(&mut chain, j.id, ct::TORQUE_ENABLE, 1);
    }
    run(&mut chain, &mut t, 2.0);
    let q = joints(&chain);
    println!("twin after 2 s: {q:.3?} for targets {targets:?}");
    for (i, (q, target)) in q.iter().zip(targets).enumerate() {
        // Position drives against gravity (kp 40 N·m/rad, ~0.5 N·m on the shoulder): within 0.05 rad.
        assert!((q - target).abs() < 0.05, "joint {i} at {q} rad, goal {target}");
    }
    // Holding the arm against gravity takes effort: the shoulder reports a load.
    let load = ct::from_sign_magnitude(chain.servo(map.joints[1].id).unwrap().get(ct::PRESENT_LOAD), 10);
    println!("shoulder_lift load holding the arm: {load} ‰");
    assert!(load.abs() > 10, "shoulder_lift load {load} ‰");
}

#[test]
fn the_twins_servos_turn_no_faster_than_their_speed_register() {
    let map = so101_map();
    let lift = &map.joints[1];
    let mut chain = chain(true);
    let mut t = Instant::now();
    // 200 ticks/s is 0.31 rad/s: a 1 rad goal takes over 3 s.
    write(&mut chain, lift.id, ct::GOAL_SPEED, 200);
    write(&mut chain, lift.id, ct::GOAL_POSITION, lift.to_ticks(1.0).round() as u16);
    write(&mut chain, lift.id, ct::TORQUE_ENABLE, 1);
    run(&mut chain, &mut t, 1.0);
    let after_1s = joints(&chain)[1];
    let limit = lift.speed_to_radians(200.0).abs();
    println!("shoulder_lift after 1 s at {limit:.3} rad/s: {after_1s:.3} rad");
    assert!(after_1s > 0.5 * limit && after_1s < 1.2 * limit, "moved {after_1s} rad in 1 s");
}

#[test]
fn with_torque_off_the_twins_arm_hangs_under_gravity_where_the_plain_emulator_stays() {
    let mut t = Instant::now();
    let mut plain = chain(false);
    let mut twin = chain(true);
    run(&mut plain, &mut t, 1.0);
    run(&mut twin, &mut t, 1.0);
    let (still, hanging) = (joints(&plain), joints(&twin));
    println!("torque off for 1 s: plain {still:.3?}, twin {hanging:.3?}");
    assert!(still.iter().all(|q| q.abs() < 1e-3), "the plain emulator's shafts stay put: {still:?}");
    assert!(hanging.iter().any(|q| q.abs() > 0.1), "the twin's arm falls: {hanging:?}");
}

/// The STS3215 bus over a serial port.
type SerialBus = embodia::deploy::Bus<embodia::deploy::SerialBusPort>;

/// `embodia servo-emulator --robot so101 EXTRA…` on its pseudo-terminal: drives `bus` with
/// `session`, then stops the emulator with Ctrl-C and checks it exits cleanly.
fn with_emulator<T>(extra: &[&std::ffi::OsStr], session: impl FnOnce(&mut SerialBus) -> T) -> T {
    let mut child = Command::new(env!("CARGO_BIN_EXE_embodia"))
        .args(["servo-emulator", "--robot", "so101"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
    let path = first.trim();
    assert!(path.starts_with("/dev/pts/"), "first line: {first:?}");
    let port = embodia::deploy::SerialBusPort::open(path, 1_000_000).unwrap();
    let mut bus = embodia::deploy::Bus::new(port, embodia::deploy::BusConfig::default());
    let result = session(&mut bus);
    drop(bus);
    assert!(Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap().success());
    assert_eq!(child.wait().unwrap().code(), Some(0));
    result
}

/// Reads shoulder_pan every 10 ms, at most `tries` times, until it is within `tolerance` of
/// `target` rad: the position then, or `None`.
fn pan_reaches(bus: &mut SerialBus, target: f64, tolerance: f64, tries: usize) -> Option<f64> {
    let pan = &so101_map().joints[0];
    for _ in 0..tries {
        let q = pan.to_radians(f64::from(bus.read_register(pan.id, ct::PRESENT_POSITION).unwrap()));
        if (q - target).abs() < tolerance {
            return Some(q);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    None
}

#[test]
fn servo_emulator_with_physics_serves_the_simulated_arm_on_a_pty() {
    let reached = with_emulator(&["--physics".as_ref()], |bus| {
        let pan = &so101_map().joints[0];
        bus.write_register(pan.id, ct::GOAL_POSITION, pan.to_ticks(0.5).round() as u16).unwrap();
        bus.write_register(pan.id, ct::TORQUE_ENABLE, 1).unwrap();
        // The simulated joint arrives well within a second of bus time.
        pan_reaches(bus, 0.5, 0.02, 500)
    });
    assert!(reached.is_some(), "shoulder_pan never reached 0.5 rad");
}

#[test]
fn servo_emulator_with_a_leader_script_replays_it_on_the_shafts_and_names_a_bad_line() {
    let dir = std::env::temp_dir().join(format!("embodia-leader-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // shoulder_pan to 0.6 rad over 0.5 s, then held.
    let script = dir.join("operator.csv");
    std::fs::write(&script, "time_s,q1,q2,q3,q4,q5,q6\n0,0,0,0,0,0,0\n0.5,0.6,0,0,0,0,0\n").unwrap();
    let seen = with_emulator(&["--leader".as_ref(), script.as_os_str()], |bus| pan_reaches(bus, 0.6, 0.01, 300));
    assert!(seen.is_some(), "the leader's shoulder_pan never reached the script's 0.6 rad");
    std::fs::write(&script, "time_s,q1,q2,q3,q4,q5,q6\n0,0,0,0,0,0,0\n0.5,0.6,0,0,0,0\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_embodia"))
        .args(["servo-emulator", "--robot", "so101", "--leader"])
        .arg(&script)
        .output()
        .unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("operator.csv: line 3: 6 values; expected time_s and 6 joint positions of so101"), "{err}");
}
