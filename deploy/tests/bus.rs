//! The real driver against the emulator: on a pseudo-terminal and in memory.

use std::time::{Duration, Instant};

use embodia_deploy::control_table as ct;
use embodia_deploy::{
    Bus, BusConfig, BusError, EmulatedPort, Fault, PtyEmulator, SerialBusPort, ServoChain, StatusFlags,
};

const FAST: BusConfig = BusConfig { timeout: Duration::from_millis(20), retries: 0 };

fn pty_bus(ids: &[u8]) -> (PtyEmulator, Bus<SerialBusPort>) {
    let emu = PtyEmulator::start(ServoChain::new(ids)).expect("pty");
    assert!(emu.path().starts_with("/dev/pts/"), "{}", emu.path());
    let port = SerialBusPort::open(emu.path(), 1_000_000).expect("open pty");
    (emu, Bus::new(port, FAST))
}

#[test]
fn round_trips_over_a_pseudo_terminal() {
    let (emu, mut bus) = pty_bus(&[1, 2, 3]);
    assert_eq!(bus.ping(2), Ok(StatusFlags(0)));
    assert_eq!(bus.read_register(1, ct::MODEL_NUMBER), Ok(777));
    bus.write_register(3, ct::GOAL_POSITION, 1000).unwrap();
    assert_eq!(bus.read_register(3, ct::GOAL_POSITION), Ok(1000));
    let ids = [1, 2, 3];
    let goals: Vec<u8> = [1500u16, 2500, 3500].iter().flat_map(|g| g.to_le_bytes()).collect();
    bus.sync_write(ct::GOAL_POSITION.addr, 2, &ids, &goals).unwrap();
    let (mut out, mut flags) = ([0u8; 6], [StatusFlags(9); 3]);
    bus.sync_read(ct::GOAL_POSITION.addr, 2, &ids, &mut out, &mut flags).unwrap();
    assert_eq!(out.to_vec(), goals);
    assert_eq!(flags, [StatusFlags(0); 3]);
    // Torque on: the emulated servos move to the goals.
    bus.sync_write(ct::TORQUE_ENABLE.addr, 1, &ids, &[1, 1, 1]).unwrap();
    std::thread::sleep(Duration::from_millis(700));
    bus.sync_read(ct::PRESENT_POSITION.addr, 2, &ids, &mut out, &mut flags).unwrap();
    assert_eq!(out.to_vec(), goals);
    assert_eq!(bus.ping(7), Err(BusError::Timeout { id: 7, timeout: FAST.timeout }));
    emu.stop().unwrap();
}

#[test]
fn every_reply_fault_is_a_typed_error_and_retries_recover() {
    let (emu, mut bus) = pty_bus(&[1, 2]);
    let inject = |fault| emu.responder().lock().unwrap().chain.inject(2, fault, Instant::now());
    inject(Fault::Drop);
    assert!(matches!(bus.ping(2), Err(BusError::Timeout { id: 2, .. })));
    inject(Fault::Corrupt);
    assert_eq!(bus.read_register(2, ct::PRESENT_POSITION), Err(BusError::Checksum { id: 2 }));
    inject(Fault::Truncate);
    assert!(matches!(bus.read_register(2, ct::PRESENT_POSITION), Err(BusError::Timeout { id: 2, .. })));
    inject(Fault::Delay(Duration::from_millis(40)));
    assert!(matches!(bus.ping(2), Err(BusError::Timeout { .. })));
    // The late reply arrives during the next request, which still gets its own answer.
    std::thread::sleep(Duration::from_millis(30));
    assert_eq!(bus.read_register(1, ct::ID), Ok(1));
    inject(Fault::Overheat(Duration::from_millis(60)));
    assert_eq!(
        bus.write_register(2, ct::ACCELERATION, 10),
        Err(BusError::Status { id: 2, flags: StatusFlags(StatusFlags::OVERHEAT) })
    );
    inject(Fault::Undervoltage(Duration::from_millis(60)));
    let (mut out, mut flags) = ([0u8; 4], [StatusFlags(0); 2]);
    bus.sync_read(ct::PRESENT_POSITION.addr, 2, &[1, 2], &mut out, &mut flags).unwrap();
    assert_eq!(flags[1].0 & StatusFlags::VOLTAGE, StatusFlags::VOLTAGE);
    inject(Fault::Silence(Duration::from_millis(100)));
    assert!(matches!(
        bus.sync_read(ct::PRESENT_POSITION.addr, 2, &[1, 2], &mut out, &mut flags),
        Err(BusError::Timeout { id: 2, .. })
    ));
    std::thread::sleep(Duration::from_millis(120));
    // Bounded retries: two lost replies in a row are absorbed by two retries, three are not.
    // A generous timeout, so that the answered attempt is not lost to a busy machine's scheduler.
    bus.set_config(BusConfig { retries: 2, timeout: Duration::from_millis(200) });
    inject(Fault::Drop);
    inject(Fault::Drop);
    assert_eq!(bus.ping(2), Ok(StatusFlags(0)));
    inject(Fault::Drop);
    inject(Fault::Drop);
    inject(Fault::Drop);
    assert!(matches!(bus.ping(2), Err(BusError::Timeout { .. })));
    let log = emu.responder().lock().unwrap().chain.fault_log().len();
    assert_eq!(log, 12);
    emu.stop().unwrap();
}

#[test]
fn the_in_memory_port_runs_the_same_driver() {
    let responder = std::sync::Arc::new(std::sync::Mutex::new(embodia_deploy::emulator::Responder::new(
        ServoChain::new(&[5]),
        Instant::now(),
    )));
    let mut bus = Bus::new(EmulatedPort::new(responder.clone()), FAST);
    assert_eq!(bus.read_register(5, ct::MAX_POSITION_LIMIT), Ok(4095));
    responder.lock().unwrap().chain.inject(5, Fault::Delay(Duration::from_millis(5)), Instant::now());
    assert_eq!(bus.ping(5), Ok(StatusFlags(0)), "a reply late by less than the timeout is accepted");
}

#[test]
fn a_sync_read_has_one_deadline_for_all_its_replies() {
    let responder = std::sync::Arc::new(std::sync::Mutex::new(embodia_deploy::emulator::Responder::new(
        ServoChain::new(&[1, 2, 3]),
        Instant::now(),
    )));
    let mut bus = Bus::new(EmulatedPort::new(responder.clone()), FAST);
    let (mut out, mut flags) = ([0u8; 6], [StatusFlags(0); 3]);
    {
        let mut r = responder.lock().unwrap();
        let now = Instant::now();
        r.chain.inject(2, Fault::Delay(Duration::from_millis(12)), now);
        r.chain.inject(3, Fault::Delay(Duration::from_millis(28)), now);
    }
    // Servo 3 answers 28 ms after the request: within 20 ms of servo 2's reply, but late for
    // the request, so the read fails rather than passing off a late reply as fresh state. (It
    // names servo 3 unless a stalled host also made servo 2's reply late: the machine's load,
    // not the driver, decides which.)
    let read = bus.sync_read(ct::PRESENT_POSITION.addr, 2, &[1, 2, 3], &mut out, &mut flags);
    assert!(matches!(read, Err(BusError::Timeout { id: 2 | 3, timeout }) if timeout == FAST.timeout), "{read:?}");
}
