//! Recording each joint's range: torque off, the operator moves every joint through its full
//! range, the lowest and highest present positions become the [`Calibration`].

use std::time::Duration;

use embodia_robots::{Calibration, HardwareMap, JointCalibration};

use crate::driver::{Bus, BusError};
use crate::protocol::StatusFlags;
use crate::servo_protocol::Protocol;
use crate::transport::Port;

/// Ranges seen so far, per joint in map order, ticks.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// Lowest present position per joint.
    pub min: Vec<u16>,
    /// Highest present position per joint.
    pub max: Vec<u16>,
    /// Latest present position per joint.
    pub now: Vec<u16>,
    /// Successful reads so far.
    pub samples: u64,
}

/// Consecutive failed reads after which recording gives up.
pub const MAX_CONSECUTIVE_FAILURES: u32 = 25;

/// Turns torque off on every servo of `map`, then reads their positions every `period` and
/// widens each joint's range until `done` (called after each read) returns true. The ranges
/// become a calibration with each servo's homing offset and the map's directions; check it
/// with [`HardwareMap::calibrated`].
pub fn record_ranges<P: Port, Pr: Protocol>(
    bus: &mut Bus<P, Pr>,
    map: &HardwareMap,
    period: Duration,
    done: &mut dyn FnMut(&Progress) -> bool,
) -> Result<Calibration, BusError> {
    let ids = map.ids();
    let n = ids.len();
    let t = Pr::TABLE;
    bus.sync_write(t.torque_enable.addr, 1, &ids, &vec![0; n])?;
    let mut offsets = Vec::with_capacity(n);
    for &id in &ids {
        let raw = bus.read_value(id, t.homing_offset)?;
        offsets.push(Pr::decode_homing_offset(&raw.to_le_bytes()[..usize::from(t.homing_offset.size)]));
    }
    let size = usize::from(t.present_position.size);
    let mut p = Progress { min: vec![u16::MAX; n], max: vec![0; n], now: vec![0; n], samples: 0 };
    let (mut raw, mut flags) = (vec![0u8; size * n], vec![StatusFlags(0); n]);
    let mut failures = 0;
    loop {
        match bus.sync_read(t.present_position.addr, t.present_position.size, &ids, &mut raw, &mut flags) {
            Ok(()) => {
                failures = 0;
                p.samples += 1;
                for (j, b) in raw.chunks_exact(size).enumerate() {
                    // Outside the encoder (a multi-turn reading) is clamped to its ends.
                    let tick = Pr::decode_position(b).clamp(0, i64::from(t.max_tick)) as u16;
                    p.now[j] = tick;
                    p.min[j] = p.min[j].min(tick);
                    p.max[j] = p.max[j].max(tick);
                }
                if done(&p) {
                    break;
                }
            }
            Err(e) if e.is_transient() && failures + 1 < MAX_CONSECUTIVE_FAILURES => failures += 1,
            Err(e) => return Err(e),
        }
        std::thread::sleep(period);
    }
    let joints = map
        .joints
        .iter()
        .enumerate()
        .map(|(j, s)| {
            let cal = JointCalibration {
                id: s.id,
                drive_mode: u8::from(s.direction < 0.0),
                homing_offset: offsets[j],
                range_min: i64::from(p.min[j]),
                range_max: i64::from(p.max[j]),
            };
            (s.joint.clone(), cal)
        })
        .collect();
    Ok(Calibration { joints })
}
