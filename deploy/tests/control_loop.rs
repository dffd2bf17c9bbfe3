//! The control loop and safety layer on emulated SO-101 servos.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use embodia_deploy::control_table as ct;
use embodia_deploy::emulator::Responder;
use embodia_deploy::safety::{Action, Mode, Reason};
use embodia_deploy::{
    Bus, BusConfig, ControlLoop, CycleKind, EmulatedPort, Fault, JointState, LoopConfig, Policy, Safety, SafetyConfig,
    ServoChain, ServoRobot,
};
use embodia_robots::{HardwareMap, hardware::SO101_SERVOS};

const BUS: BusConfig = BusConfig { timeout: Duration::from_millis(4), retries: 0 };

fn so101_map() -> HardwareMap {
    HardwareMap::builtin("so101", &embodia_robots::builtin("so101").unwrap()).unwrap()
}

fn emulated_so101() -> (Arc<Mutex<Responder>>, ServoRobot<EmulatedPort>) {
    let ids: Vec<u8> = SO101_SERVOS.iter().map(|s| s.1).collect();
    let responder = Arc::new(Mutex::new(Responder::new(ServoChain::new(&ids), Instant::now())));
    let bus = Bus::new(EmulatedPort::new(responder.clone()), BUS);
    (responder, ServoRobot::new(bus, so101_map()))
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

fn goal_radians(responder: &Mutex<Responder>, map: &HardwareMap) -> Vec<f64> {
    let r = responder.lock().unwrap();
    map.joints.iter().map(|j| j.to_radians(f64::from(r.chain.servo(j.id).unwrap().get(ct::GOAL_POSITION)))).collect()
}

#[test]
fn goals_reaching_the_servos_stay_within_limits_and_steps() {
    let (responder, mut robot) = emulated_so101();
    let map = so101_map();
    let mut policy = Swing(0);
    let period = Duration::from_millis(5);
    let safety = Safety::new(SafetyConfig::default(), &map, period);
    let (lower, upper, step) = {
        let (l, u, s) = safety.bounds();
        (l.to_vec(), u.to_vec(), s.to_vec())
    };
    let mut lp = ControlLoop::new(&mut robot, &mut policy, safety, LoopConfig { hz: 200.0, ..LoopConfig::default() });
    let mut previous: Option<Vec<f64>> = None;
    let mut checked = 0;
    lp.run(150, &|| false, &mut |_, kind| {
        assert_eq!(kind, CycleKind::Sent);
        let g = goal_radians(&responder, &map);
        for j in 0..6 {
            // Half a tick of rounding.
            let tick = std::f64::consts::TAU / 4096.0;
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
    assert_eq!(checked, 150);
    let clamps = lp.events.iter().filter(|e| e.action == Action::Clamped).count();
    assert!(clamps > 100, "the swing must hit the clamps ({clamps})");
    assert!(lp.events.iter().any(|e| matches!(e.reason, Reason::PositionLimit { .. })));
    assert_eq!(lp.timing.latency_us.len(), 150);
    // The emulated arm followed: each servo is near its goal.
    let r = responder.lock().unwrap();
    assert!(r.chain.servo(1).unwrap().get(ct::TORQUE_ENABLE) == 1);
}

#[test]
fn a_silent_servo_holds_within_two_periods_then_torque_goes_off() {
    let (responder, mut robot) = emulated_so101();
    let map = so101_map();
    let mut policy = Swing(0);
    let period = Duration::from_millis(10);
    let config = SafetyConfig { disable_after: Duration::from_millis(100), ..SafetyConfig::default() };
    let mut lp = ControlLoop::new(
        &mut robot,
        &mut policy,
        Safety::new(config, &map, period),
        LoopConfig { hz: 100.0, ..LoopConfig::default() },
    );
    let mut fault_at = None;
    let mut kinds = Vec::new();
    lp.run(100, &|| false, &mut |lp, kind| {
        kinds.push(kind);
        if lp.cycles() == 10 {
            let now = Instant::now();
            responder.lock().unwrap().chain.inject(3, Fault::Silence(Duration::from_secs(5)), now);
            fault_at = Some((lp.cycles(), now));
        }
        lp.until_disabled(kind)
    })
    .unwrap();
    let (fault_cycle, at) = fault_at.unwrap();
    let hold = lp.events.iter().find(|e| e.action == Action::Hold).expect("a hold");
    assert!(matches!(&hold.reason, Reason::ReadFailed(m) if m.contains("servo 3")), "{:?}", hold.reason);
    assert!(hold.cycle <= fault_cycle + 1 && hold.at - at <= 2 * period, "hold {:?} after the fault", hold.at - at);
    let off = lp.events.iter().find(|e| e.action == Action::TorqueOff).expect("torque off");
    assert!(matches!(off.reason, Reason::WatchdogTimeout { .. }));
    assert_eq!(lp.safety.mode(), Mode::Disabled);
    assert_eq!(*kinds.last().unwrap(), CycleKind::TorqueOff);
    assert!(kinds[fault_cycle as usize..kinds.len() - 1].iter().all(|k| *k == CycleKind::Skipped));
    let r = responder.lock().unwrap();
    assert!(SO101_SERVOS.iter().all(|(_, id)| r.chain.servo(*id).unwrap().get(ct::TORQUE_ENABLE) == 0));
}

#[test]
fn overheat_and_undervoltage_hold_the_present_position_then_disable() {
    for fault in [
        Fault::Overheat(Duration::from_secs(1)),
        Fault::Undervoltage(Duration::from_secs(1)),
        Fault::Overload(Duration::from_secs(1)),
    ] {
        let (responder, mut robot) = emulated_so101();
        let map = so101_map();
        let mut policy = Swing(0);
        let period = Duration::from_millis(10);
        let mut lp = ControlLoop::new(
            &mut robot,
            &mut policy,
            Safety::new(SafetyConfig::default(), &map, period),
            LoopConfig { hz: 100.0, ..LoopConfig::default() },
        );
        let mut kinds = Vec::new();
        lp.run(60, &|| false, &mut |lp, kind| {
            kinds.push(kind);
            if lp.cycles() == 5 {
                responder.lock().unwrap().chain.inject(2, fault, Instant::now());
            }
            lp.until_disabled(kind)
        })
        .unwrap();
        assert_eq!(kinds[5], CycleKind::Held, "{fault:?}: {kinds:?}");
        assert!(matches!(
            &lp.events.iter().find(|e| e.action == Action::Hold).unwrap().reason,
            Reason::ServoFault { joint: 1, .. }
        ));
        assert_eq!(*kinds.last().unwrap(), CycleKind::TorqueOff);
        let r = responder.lock().unwrap();
        assert_eq!(r.chain.servo(4).unwrap().get(ct::TORQUE_ENABLE), 0);
    }
}

#[test]
fn sigint_is_a_safe_stop() {
    embodia_deploy::signal::install_stop_handler().unwrap();
    let (responder, mut robot) = emulated_so101();
    let map = so101_map();
    let mut policy = Swing(0);
    let mut lp = ControlLoop::new(
        &mut robot,
        &mut policy,
        Safety::new(SafetyConfig::default(), &map, Duration::from_millis(10)),
        LoopConfig { hz: 100.0, ..LoopConfig::default() },
    );
    let mut kinds = Vec::new();
    lp.run(200, &embodia_deploy::signal::stop_requested, &mut |lp, kind| {
        kinds.push(kind);
        if lp.cycles() == 20 {
            // SAFETY: raising a signal whose handler only sets a flag.
            assert_eq!(unsafe { libc::raise(libc::SIGINT) }, 0);
        }
        lp.until_disabled(kind)
    })
    .unwrap();
    embodia_deploy::signal::clear_stop_request();
    assert_eq!(kinds[20], CycleKind::Held, "{kinds:?}");
    assert_eq!(*kinds.last().unwrap(), CycleKind::TorqueOff);
    assert!(kinds.len() < 40);
    assert!(matches!(lp.events[lp.events.len() - 1].reason, Reason::StopRequested));
    assert_eq!(responder.lock().unwrap().chain.servo(6).unwrap().get(ct::TORQUE_ENABLE), 0);
}

#[test]
fn calibration_records_the_ranges_the_joints_were_moved_through() {
    let (responder, mut robot) = emulated_so101();
    let map = so101_map();
    let mut step = 0;
    let cal = embodia_deploy::calibrate::record_ranges(robot.bus(), &map, Duration::from_millis(1), &mut |p| {
        // A hand sweeps joint j from 1000 + 100 j to 3000 + 100 j over 20 samples.
        let mut r = responder.lock().unwrap();
        for (j, (_, id)) in SO101_SERVOS.iter().enumerate() {
            let t = 1000.0 + 100.0 * j as f64 + 2000.0 * (step as f64 / 20.0).min(1.0);
            assert!(r.chain.move_by_hand(*id, t), "torque must be off while calibrating");
        }
        step += 1;
        p.samples > 22
    })
    .unwrap();
    let wrist = cal.joints["wrist_flex"];
    assert_eq!((wrist.id, wrist.range_min, wrist.range_max), (4, 1300, 3300));
    // The first sample is the untouched middle (2048); the sweep covers the rest.
    assert_eq!(cal.joints["shoulder_pan"].range_min, 1000);
    let calibrated = map.calibrated(&cal, "test").unwrap();
    assert_eq!(calibrated.joints[3].zero_ticks, 2300.0);
}
