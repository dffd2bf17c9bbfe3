//! Recording each joint's range: torque off, the operator moves every joint through its full
//! range, the lowest and highest present positions become the [`Calibration`].

use std::time::Duration;

use embodia_robots::{Calibration, HardwareMap, JointCalibration};

use crate::control_table::{self as ct, from_sign_magnitude};
use crate::driver::{Bus, BusError};
use crate::protocol::StatusFlags;
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
pub fn record_ranges<P: Port>(
    bus: &mut Bus<P>,
    map: &HardwareMap,
    period: Duration,
    done: &mut dyn FnMut(&Progress) -> bool,
) -> Result<Calibration, BusError> {
    let ids = map.ids();
    let n = ids.len();
    bus.sync_write(ct::TORQUE_ENABLE.addr, 1, &ids, &vec![0; n])?;
    let mut offsets = Vec::with_capacity(n);
    for &id in &ids {
        offsets.push(from_sign_magnitude(bus.read_register(id, ct::HOMING_OFFSET)?, 11));
    }
    let mut p = Progress { min: vec![u16::MAX; n], max: vec![0; n], now: vec![0; n], samples: 0 };
    let (mut raw, mut flags) = (vec![0u8; 2 * n], vec![StatusFlags(0); n]);
    let mut failures = 0;
    loop {
        match bus.sync_read(ct::PRESENT_POSITION.addr, 2, &ids, &mut raw, &mut flags) {
            Ok(()) => {
                failures = 0;
                p.samples += 1;
                for (j, b) in raw.chunks_exact(2).enumerate() {
                    let t = u16::from_le_bytes([b[0], b[1]]);
                    p.now[j] = t;
                    p.min[j] = p.min[j].min(t);
                    p.max[j] = p.max[j].max(t);
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
