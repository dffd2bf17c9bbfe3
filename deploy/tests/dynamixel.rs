//! The real driver over Dynamixel protocol 2.0 against the emulated Koch servos: on a
//! pseudo-terminal and in memory, with the same faults as the Feetech bus, and the control
//! loop, safety layer and calibration on top, unchanged.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use embodia_deploy::dynamixel::control_table::{self as dxl, Model};
use embodia_deploy::emulator::Responder;
use embodia_deploy::safety::{Action, Reason};
use embodia_deploy::{
    Bus, BusConfig, BusError, ControlLoop, CycleKind, Dynamixel, EmulatedPort, Fault, JointState, LoopConfig, Policy,
    PtyEmulator, RobotIo, Safety, SafetyConfig, SerialBusPort, ServoChain, ServoGains, ServoRobot, StatusFlags,
};
use embodia_robots::HardwareMap;
use embodia_robots::hardware::KOCH_SERVOS;

/// A generous timeout: these tests check what the driver reports, not how fast, so a busy
/// machine's scheduler should not decide them.
const FAST: BusConfig = BusConfig { timeout: Duration::from_millis(100), retries: 0 };

fn koch_map() -> HardwareMap {
    HardwareMap::builtin("koch", &embodia_robots::builtin("koch").unwrap()).unwrap()
}

fn koch_chain() -> ServoChain {
    let servos: Vec<(u8, Model)> =
        KOCH_SERVOS.iter().map(|&(_, id, model)| (id, Model::from_name(model).unwrap())).collect();
    ServoChain::dynamixel(&servos)
}

fn pty_bus() -> (PtyEmulator, Bus<SerialBusPort, Dynamixel>) {
    let emu = PtyEmulator::start(koch_chain()).expect("pty");
    let port = SerialBusPort::open(emu.path(), 1_000_000).expect("open pty");
    (emu, Bus::with_protocol(port, FAST, Dynamixel::new()))
}

fn memory_bus(config: BusConfig) -> (Arc<Mutex<Responder>>, Bus<EmulatedPort, Dynamixel>) {
    let responder = Arc::new(Mutex::new(Responder::new(koch_chain(), Instant::now())));
    (responder.clone(), Bus::with_protocol(EmulatedPort::new(responder), config, Dynamixel::new()))
}

#[test]
fn round_trips_over_a_pseudo_terminal() {
    let (emu, mut bus) = pty_bus();
    assert_eq!(bus.ping(3), Ok(StatusFlags(0)));
    assert_eq!(bus.read_value(1, dxl::MODEL_NUMBER), Ok(1060));
    assert_eq!(bus.read_value(6, dxl::MODEL_NUMBER), Ok(1200));
    bus.write_value(3, dxl::GOAL_POSITION, 1000).unwrap();
    assert_eq!(bus.read_value(3, dxl::GOAL_POSITION), Ok(1000));
    let ids = [1, 2, 3];
    let goals: Vec<u8> = [1500u32, 2500, 3500].iter().flat_map(|g| g.to_le_bytes()).collect();
    bus.sync_write(dxl::GOAL_POSITION.addr, 4, &ids, &goals).unwrap();
    let (mut out, mut flags) = ([0u8; 12], [StatusFlags(9); 3]);
    bus.sync_read(dxl::GOAL_POSITION.addr, 4, &ids, &mut out, &mut flags).unwrap();
    assert_eq!(out.to_vec(), goals);
    assert_eq!(flags, [StatusFlags(0); 3]);
    // Torque on: the emulated servos move to the goals (the XL430 at 57 rpm: 1000 ticks in
    // about 0.26 s).
    bus.sync_write(dxl::TORQUE_ENABLE.addr, 1, &ids, &[1, 1, 1]).unwrap();
    std::thread::sleep(Duration::from_millis(900));
    bus.sync_read(dxl::PRESENT_POSITION.addr, 4, &ids, &mut out, &mut flags).unwrap();
    assert_eq!(out.to_vec(), goals);
    assert_eq!(bus.ping(7), Err(BusError::Timeout { id: 7, timeout: FAST.timeout }));
    emu.stop().unwrap();
}

#[test]
fn every_reply_fault_is_a_typed_error_and_retries_recover() {
    let (responder, mut bus) = memory_bus(FAST);
    let inject = |fault| responder.lock().unwrap().chain.inject(2, fault, Instant::now());
    inject(Fault::Drop);
    assert!(matches!(bus.ping(2), Err(BusError::Timeout { id: 2, .. })));
    inject(Fault::Corrupt);
    assert_eq!(bus.read_value(2, dxl::PRESENT_POSITION), Err(BusError::Checksum { id: 2 }));
    inject(Fault::Truncate);
    assert!(matches!(bus.read_value(2, dxl::PRESENT_POSITION), Err(BusError::Timeout { id: 2, .. })));
    inject(Fault::Delay(Duration::from_millis(250)));
    assert!(matches!(bus.ping(2), Err(BusError::Timeout { .. })));
    // The late reply arrives before the next request, which still gets its own answer.
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(bus.read_value(1, dxl::ID), Ok(1));
    // A hardware fault: the reply's alert bit, the details in the hardware error status.
    inject(Fault::Overheat(Duration::from_millis(300)));
    assert_eq!(
        bus.write_value(2, dxl::PROFILE_ACCELERATION, 10),
        Err(BusError::Status { id: 2, flags: StatusFlags(StatusFlags::ALERT) })
    );
    let mut raw = [0u8; 1];
    bus.read(2, dxl::HARDWARE_ERROR_STATUS.addr, &mut raw).unwrap();
    assert_eq!(raw[0], dxl::HW_OVERHEAT);
    inject(Fault::Silence(Duration::from_millis(300)));
    let (mut out, mut flags) = ([0u8; 8], [StatusFlags(0); 2]);
    assert!(matches!(
        bus.sync_read(dxl::PRESENT_POSITION.addr, 4, &[1, 2], &mut out, &mut flags),
        Err(BusError::Timeout { id: 2, .. })
    ));
    std::thread::sleep(Duration::from_millis(320));
    // Bounded retries: two lost replies in a row are absorbed by two retries, three are not.
    bus.set_config(BusConfig { retries: 2, timeout: Duration::from_millis(200) });
    inject(Fault::Drop);
    inject(Fault::Drop);
    assert_eq!(bus.ping(2), Ok(StatusFlags(0)));
    inject(Fault::Drop);
    inject(Fault::Drop);
    inject(Fault::Drop);
    assert!(matches!(bus.ping(2), Err(BusError::Timeout { .. })));
    assert_eq!(responder.lock().unwrap().chain.fault_log().len(), 11);
}

#[test]
fn a_refused_write_is_its_own_error_and_is_not_retried() {
    let (responder, mut bus) = memory_bus(BusConfig { timeout: FAST.timeout, retries: 2 });
    bus.write_value(4, dxl::TORQUE_ENABLE, 1).unwrap();
    // The EEPROM area is writable only with torque off: the servo answers with the access error.
    let e = bus.write_value(4, dxl::OPERATING_MODE, 4).unwrap_err();
    assert_eq!(e, BusError::Refused { id: 4, code: 7 });
    assert_eq!(e.to_string(), "servo 4 refused the request: access error");
    assert!(!e.is_transient());
    let r = responder.lock().unwrap();
    assert_eq!(r.chain.servo(4).unwrap().get(dxl::OPERATING_MODE), 3, "the refused write changed nothing");
}

#[test]
fn a_sync_read_has_one_deadline_for_all_its_replies() {
    let (responder, mut bus) = memory_bus(FAST);
    let (mut out, mut flags) = ([0u8; 12], [StatusFlags(0); 3]);
    {
        let mut r = responder.lock().unwrap();
        let now = Instant::now();
        r.chain.inject(2, Fault::Delay(Duration::from_millis(60)), now);
        r.chain.inject(3, Fault::Delay(Duration::from_millis(140)), now);
    }
    // Servo 3 answers 140 ms after the request: within 100 ms of servo 2's reply, but late for
    // the request, so the read fails rather than passing off a late reply as fresh state.
    assert_eq!(
        bus.sync_read(dxl::PRESENT_POSITION.addr, 4, &[1, 2, 3], &mut out, &mut flags),
        Err(BusError::Timeout { id: 3, timeout: FAST.timeout })
    );
}

fn emulated_koch() -> (Arc<Mutex<Responder>>, ServoRobot<EmulatedPort, Dynamixel>) {
    let (responder, bus) = memory_bus(BusConfig { timeout: Duration::from_millis(8), retries: 0 });
    let mut robot = ServoRobot::new(bus, koch_map());
    robot.configure(ServoGains::default()).unwrap();
    (responder, robot)
}

#[test]
fn configure_reads_the_models_and_refuses_a_servo_of_another_model() {
    let (_, robot) = emulated_koch();
    assert_eq!(robot.models(), [1060, 1060, 1200, 1200, 1200, 1200]);
    // The same map on a chain whose servo 3 is an XL430.
    let mut servos: Vec<(u8, Model)> =
        KOCH_SERVOS.iter().map(|&(_, id, model)| (id, Model::from_name(model).unwrap())).collect();
    servos[2].1 = Model::Xl430W250;
    let responder = Arc::new(Mutex::new(Responder::new(ServoChain::dynamixel(&servos), Instant::now())));
    let bus = Bus::with_protocol(EmulatedPort::new(responder), FAST, Dynamixel::new());
    let e = ServoRobot::new(bus, koch_map()).configure(ServoGains::default()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "servo 3: model number 1060 is not the xl330-m288 of joint elbow_flex (Dynamixel protocol 2.0): it is a xl430-w250"
    );
}

#[test]
fn the_state_reads_positions_and_the_hardware_error_behind_an_alert() {
    let (responder, mut robot) = emulated_koch();
    let map = koch_map();
    let mut s = JointState::new(6);
    robot.read_state(&mut s).unwrap();
    assert!(s.position.iter().all(|p| p.abs() < 1e-9), "centred servos read as the map's zero: {:?}", s.position);
    assert_eq!((s.voltage[0], s.voltage[5]), (12.0, 5.0));
    responder.lock().unwrap().chain.move_by_hand(5, 2048.0 + 651.9);
    responder.lock().unwrap().chain.inject(2, Fault::Overload(Duration::from_secs(1)), Instant::now());
    robot.read_state(&mut s).unwrap();
    assert!((s.position[4] - map.joints[4].to_radians(2700.0)).abs() < 1e-9);
    assert_eq!(s.flags[1], StatusFlags(StatusFlags::ALERT | StatusFlags::OVERLOAD));
    assert_eq!(s.flags[1].describe(), "overload, hardware alert");
    assert!(s.flags.iter().enumerate().all(|(j, f)| j == 1 || f.is_ok()));
}

/// Goals swinging ±3 rad around zero on every joint: far beyond the limits and the step bound.
struct Swing(u64);

impl Policy for Swing {
    fn chunk_len(&self) -> usize {
        1
    }
    fn predict(&mut self, state: &JointState, goals: &mut [f64]) -> Result<(), String> {
        self.0 += 1;
        for (j, g) in goals.iter_mut().enumerate().take(state.len()) {
            *g = 3.0 * ((self.0 as f64) * 0.3 + j as f64).sin();
        }
        Ok(())
    }
}

#[test]
fn the_unchanged_control_loop_keeps_dynamixel_goals_within_limits_and_steps() {
    let (responder, mut robot) = emulated_koch();
    let map = koch_map();
    let mut policy = Swing(0);
    let period = Duration::from_millis(10);
    // No load stop here: after a host stall the loop runs its missed cycles back to back, each
    // a full step, and the goals of the fast XL330 joints then run far enough ahead of the
    // emulated servos for their load to pass 95 %. This test is about the goals that are sent.
    let config = SafetyConfig { max_load: f64::INFINITY, ..SafetyConfig::for_robot(&map) };
    let safety = Safety::new(config, &map, period);
    let (lower, upper, step) = {
        let (l, u, s) = safety.bounds();
        (l.to_vec(), u.to_vec(), s.to_vec())
    };
    let mut lp = ControlLoop::new(&mut robot, &mut policy, safety, LoopConfig { hz: 100.0, ..LoopConfig::default() });
    let mut previous: Option<Vec<f64>> = None;
    let mut checked = 0;
    lp.run(150, &|| false, &mut |lp, kind| {
        // A read that a starved machine lets time out holds the cycle, a stall between read
        // and write skips it: either way nothing is sent, and the goals checked are those sent.
        if kind != CycleKind::Sent {
            assert!(matches!(kind, CycleKind::Held | CycleKind::Skipped), "{kind:?}: {:?}", lp.events.last());
            return true;
        }
        let r = responder.lock().unwrap();
        let g: Vec<f64> = map
            .joints
            .iter()
            .map(|j| j.to_radians(f64::from(r.chain.servo(j.id).unwrap().value(dxl::GOAL_POSITION))))
            .collect();
        let tick = std::f64::consts::TAU / 4096.0;
        for j in 0..6 {
            assert!(g[j] >= lower[j] - tick && g[j] <= upper[j] + tick, "joint {j}: {}", g[j]);
            if let Some(p) = &previous {
                assert!((g[j] - p[j]).abs() <= step[j] + tick, "joint {j} stepped {}", g[j] - p[j]);
            }
        }
        previous = Some(g);
        checked += 1;
        true
    })
    .unwrap();
    // How many of the 150 cycles sent goals depends on the machine's load (a late reply holds
    // a cycle); every one that did was checked above.
    assert!(checked > 0, "no cycle of 150 sent goals");
    assert!(lp.events.iter().any(|e| e.action == Action::Clamped));
}

#[test]
fn a_hardware_fault_holds_then_turns_torque_off() {
    for fault in [
        Fault::Overheat(Duration::from_secs(1)),
        Fault::Undervoltage(Duration::from_secs(1)),
        Fault::Overload(Duration::from_secs(1)),
    ] {
        let (responder, mut robot) = emulated_koch();
        let map = koch_map();
        let mut policy = Swing(0);
        let period = Duration::from_millis(10);
        let mut lp = ControlLoop::new(
            &mut robot,
            &mut policy,
            Safety::new(SafetyConfig::for_robot(&map), &map, period),
            LoopConfig { hz: 100.0, ..LoopConfig::default() },
        );
        let mut kinds = Vec::new();
        lp.run(60, &|| false, &mut |lp, kind| {
            kinds.push(kind);
            if lp.cycles() == 5 {
                responder.lock().unwrap().chain.inject(3, fault, Instant::now());
            }
            lp.until_disabled(kind)
        })
        .unwrap();
        assert_eq!(kinds[5], CycleKind::Held, "{fault:?}: {kinds:?}");
        let hold = lp.events.iter().find(|e| e.action == Action::Hold).unwrap();
        let what = match fault {
            Fault::Overheat(_) => "overheat",
            Fault::Undervoltage(_) => "voltage",
            _ => "overload",
        };
        assert!(
            matches!(&hold.reason, Reason::ServoFault { joint: 2, what: w } if w.contains(what)),
            "{fault:?}: {:?}",
            hold.reason
        );
        assert_eq!(*kinds.last().unwrap(), CycleKind::TorqueOff);
        let r = responder.lock().unwrap();
        assert!(KOCH_SERVOS.iter().all(|&(_, id, _)| r.chain.servo(id).unwrap().get(dxl::TORQUE_ENABLE) == 0));
    }
}

#[test]
fn calibration_records_dynamixel_ranges_and_homing_offsets() {
    let (responder, mut robot) = emulated_koch();
    let map = koch_map();
    responder.lock().unwrap().chain.write_register(2, dxl::HOMING_OFFSET.addr, &(-1024i32).to_le_bytes());
    let mut step = 0;
    let cal = embodia_deploy::calibrate::record_ranges(robot.bus(), &map, Duration::from_millis(1), &mut |p| {
        let mut r = responder.lock().unwrap();
        for (j, &(_, id, _)) in KOCH_SERVOS.iter().enumerate() {
            let t = 1000.0 + 100.0 * j as f64 + 2000.0 * (step as f64 / 20.0).min(1.0);
            assert!(r.chain.move_by_hand(id, t), "torque must be off while calibrating");
        }
        step += 1;
        p.samples > 22
    })
    .unwrap();
    let elbow = cal.joints["elbow_flex"];
    assert_eq!((elbow.id, elbow.range_min, elbow.range_max), (3, 1200, 3200));
    assert_eq!(cal.joints["shoulder_lift"].homing_offset, -1024);
    map.calibrated(&cal, "test").unwrap();
}

#[test]
fn connect_picks_the_protocol_from_the_map_and_checks_homing_offsets() {
    let map = koch_map();
    let chain = ServoChain::for_map(&map).expect("koch servos are emulated");
    assert!(chain.is_dynamixel());
    let responder = Arc::new(Mutex::new(Responder::new(chain, Instant::now())));
    responder.lock().unwrap().chain.write_register(5, dxl::HOMING_OFFSET.addr, &300i32.to_le_bytes());
    let mut cal = embodia_robots::Calibration::default();
    for j in &map.joints {
        let c = embodia_robots::JointCalibration {
            id: j.id,
            drive_mode: 0,
            homing_offset: if j.id == 5 { 300 } else { 0 },
            range_min: 1000,
            range_max: 3000,
        };
        cal.joints.insert(j.joint.clone(), c);
    }
    let connect = |cal: &embodia_robots::Calibration| {
        let port = EmulatedPort::new(responder.clone());
        embodia_deploy::servo_io::connect(port, FAST, &map, ServoGains::default(), Some(cal))
    };
    let mut robot = connect(&cal).expect("offsets as calibrated");
    let mut s = JointState::new(6);
    robot.read_state(&mut s).unwrap();
    cal.joints.get_mut("wrist_roll").unwrap().homing_offset = -700;
    let e = connect(&cal).err().expect("an offset that differs").to_string();
    assert_eq!(
        e,
        "servo 5 (wrist_roll): homing offset 300 differs from the calibration's -700: write the calibration's \
         offset into the servo (as LeRobot does) or calibrate again"
    );
}

#[test]
fn setup_rides_over_a_lost_reply_and_keeps_the_loops_timing() {
    let loop_config = BusConfig { timeout: Duration::from_millis(8), retries: 0 };
    let (responder, bus) = memory_bus(loop_config);
    responder.lock().unwrap().chain.inject(3, Fault::Drop, Instant::now());
    let mut robot = ServoRobot::new(bus, koch_map());
    robot.configure(ServoGains::default()).expect("a retry reads servo 3's model");
    assert_eq!(robot.models()[2], 1200);
    assert_eq!(robot.bus().config(), loop_config, "the loop's timeout and retries are back");
    assert_eq!(responder.lock().unwrap().chain.fault_log().len(), 1);
}
