//! Hardware maps: which servo drives which joint, and how servo ticks become joint angles.
//!
//! A [`HardwareMap`] lists, for each actuated joint of a robot model, its servo id on the bus,
//! direction, encoder resolution, gear ratio and the tick at which the joint is at zero. A
//! [`Calibration`] (a JSON file in LeRobot's calibration format: per joint `id`, `drive_mode`,
//! `homing_offset`, `range_min`, `range_max`) records the range each joint really moved
//! through; [`HardwareMap::calibrated`] checks it against the map and places each joint's zero
//! in the recorded range where the URDF limits put it (the middle for a symmetric joint, as in
//! LeRobot's SO-101 calibration and the `so101` URDF).

use std::collections::BTreeMap;
use std::f64::consts::TAU;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::RobotModel;

/// One joint driven by one servo.
#[derive(Debug, Clone, PartialEq)]
pub struct ServoJoint {
    /// Joint name in the robot model.
    pub joint: String,
    /// Servo id on the bus (1–253).
    pub id: u8,
    /// Servo model, LeRobot's name: `"sts3215"`, `"xl330-m288"`, `"xl430-w250"`, …
    pub model: &'static str,
    /// +1 when a positive servo tick change turns the joint positively, −1 otherwise.
    pub direction: f64,
    /// Encoder ticks per servo output revolution (4096 for the STS3215).
    pub ticks_per_rev: f64,
    /// Servo revolutions per joint revolution (1 for a joint on the servo horn).
    pub gear_ratio: f64,
    /// Servo tick at which the joint is at 0 rad.
    pub zero_ticks: f64,
    /// Lowest allowed joint position, rad.
    pub lower: f64,
    /// Highest allowed joint position, rad.
    pub upper: f64,
    /// Largest joint speed, rad/s.
    pub max_velocity: f64,
}

impl ServoJoint {
    /// Ticks per joint radian (signed by the direction).
    fn ticks_per_rad(&self) -> f64 {
        self.direction * self.ticks_per_rev * self.gear_ratio / TAU
    }

    /// Servo ticks for a joint position in rad.
    pub fn to_ticks(&self, rad: f64) -> f64 {
        self.zero_ticks + rad * self.ticks_per_rad()
    }

    /// Joint position in rad for servo ticks.
    pub fn to_radians(&self, ticks: f64) -> f64 {
        (ticks - self.zero_ticks) / self.ticks_per_rad()
    }

    /// Joint speed in rad/s for a servo speed in ticks/s.
    pub fn speed_to_radians(&self, ticks_per_s: f64) -> f64 {
        ticks_per_s / self.ticks_per_rad()
    }
}

/// The servos of a robot, one per actuated joint, in the model's actuated-joint order.
#[derive(Debug, Clone, PartialEq)]
pub struct HardwareMap {
    /// Robot name, e.g. `"so101"`.
    pub robot: String,
    /// One entry per actuated joint.
    pub joints: Vec<ServoJoint>,
}

/// Errors of hardware maps and calibration files, naming the file and field at fault.
#[derive(Debug, thiserror::Error)]
pub enum HardwareError {
    /// No built-in hardware map for this robot.
    #[error("no hardware map for robot `{0}` (built-in maps: so101, koch)")]
    NoMap(String),
    /// The calibration file could not be read or parsed.
    #[error("{path}: {message}")]
    File {
        /// The file.
        path: String,
        /// What went wrong.
        message: String,
    },
    /// The calibration does not fit the hardware map.
    #[error("{path}: {field}: {message}")]
    Invalid {
        /// The file (or `calibration` when not from a file).
        path: String,
        /// The field at fault, e.g. `elbow_flex.range_min`.
        field: String,
        /// What is wrong.
        message: String,
    },
}

/// The STS3215's encoder resolution.
pub const STS3215_TICKS_PER_REV: f64 = 4096.0;
/// The encoder resolution of the Dynamixel X series (XL330, XL430).
pub const DYNAMIXEL_X_TICKS_PER_REV: f64 = 4096.0;

/// SO-101 joint names and servo ids, as in LeRobot's `so101_follower` (all STS3215).
pub const SO101_SERVOS: [(&str, u8); 6] = [
    ("shoulder_pan", 1),
    ("shoulder_lift", 2),
    ("elbow_flex", 3),
    ("wrist_flex", 4),
    ("wrist_roll", 5),
    ("gripper", 6),
];

/// Koch v1.1 follower joint names, servo ids and models, as in LeRobot's `koch_follower`.
pub const KOCH_SERVOS: [(&str, u8, &str); 6] = [
    ("shoulder_pan", 1, "xl430-w250"),
    ("shoulder_lift", 2, "xl430-w250"),
    ("elbow_flex", 3, "xl330-m288"),
    ("wrist_flex", 4, "xl330-m288"),
    ("wrist_roll", 5, "xl330-m288"),
    ("gripper", 6, "xl330-m288"),
];

/// The servo protocol a robot's bus speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServoBus {
    /// Feetech protocol 0 (STS3215).
    Feetech,
    /// Dynamixel protocol 2.0 (XL330, XL430).
    Dynamixel,
}

impl ServoBus {
    /// The protocol of a servo model (LeRobot's name), `None` if unknown.
    pub fn of_model(model: &str) -> Option<Self> {
        match model {
            "sts3215" => Some(ServoBus::Feetech),
            "xl330-m288" | "xl330-m077" | "xl430-w250" => Some(ServoBus::Dynamixel),
            _ => None,
        }
    }
}

impl HardwareMap {
    /// The uncalibrated map of a built-in robot: servo ids as LeRobot assigns them, direction
    /// +1, joint zero at the servo's middle tick (2048) and the model's joint limits.
    pub fn builtin(robot: &str, model: &RobotModel) -> Result<Self, HardwareError> {
        let servos: Vec<(&str, u8, &'static str)> = match robot {
            "so101" => SO101_SERVOS.iter().map(|&(name, id)| (name, id, "sts3215")).collect(),
            "koch" => KOCH_SERVOS.to_vec(),
            _ => return Err(HardwareError::NoMap(robot.to_string())),
        };
        let joints = servos
            .into_iter()
            .map(|(name, id, servo)| {
                let joint = model.joints.iter().find(|j| j.name == name).ok_or_else(|| HardwareError::Invalid {
                    path: format!("robot {robot}"),
                    field: name.to_string(),
                    message: "no such joint in the robot model".into(),
                })?;
                let limit = joint.limit.unwrap_or(crate::JointLimit {
                    lower: -std::f64::consts::PI,
                    upper: std::f64::consts::PI,
                    effort: 1.0,
                    velocity: 1.0,
                });
                Ok(ServoJoint {
                    joint: name.to_string(),
                    id,
                    model: servo,
                    direction: 1.0,
                    ticks_per_rev: match ServoBus::of_model(servo) {
                        Some(ServoBus::Dynamixel) => DYNAMIXEL_X_TICKS_PER_REV,
                        _ => STS3215_TICKS_PER_REV,
                    },
                    gear_ratio: 1.0,
                    zero_ticks: 2048.0,
                    lower: limit.lower,
                    upper: limit.upper,
                    max_velocity: limit.velocity,
                })
            })
            .collect::<Result<Vec<_>, HardwareError>>()?;
        Ok(Self { robot: robot.to_string(), joints })
    }

    /// The protocol of the map's servos (all of one family; an empty map is Feetech).
    pub fn bus(&self) -> ServoBus {
        self.joints.first().and_then(|j| ServoBus::of_model(j.model)).unwrap_or(ServoBus::Feetech)
    }

    /// Servo models (LeRobot's names) in joint order.
    pub fn models(&self) -> Vec<&'static str> {
        self.joints.iter().map(|j| j.model).collect()
    }

    /// Servo ids in joint order.
    pub fn ids(&self) -> Vec<u8> {
        self.joints.iter().map(|j| j.id).collect()
    }

    /// This map with each joint's zero, direction and limits taken from `cal`; `path` names the
    /// calibration in errors. Refuses a calibration with missing or unknown joints, other ids,
    /// ranges outside the encoder, inverted or too narrow ranges.
    pub fn calibrated(&self, cal: &Calibration, path: &str) -> Result<Self, HardwareError> {
        let invalid =
            |field: String, message: String| HardwareError::Invalid { path: path.to_string(), field, message };
        if let Some(unknown) = cal.joints.keys().find(|k| !self.joints.iter().any(|j| &j.joint == *k)) {
            return Err(invalid(unknown.clone(), format!("no such joint on {}", self.robot)));
        }
        let mut out = self.clone();
        for j in &mut out.joints {
            let c =
                cal.joints.get(&j.joint).ok_or_else(|| invalid(j.joint.clone(), "missing (not calibrated)".into()))?;
            let field = |f: &str| format!("{}.{f}", j.joint);
            if c.id != j.id {
                return Err(invalid(field("id"), format!("{} differs from the servo id {} of this joint", c.id, j.id)));
            }
            if c.drive_mode > 1 {
                return Err(invalid(
                    field("drive_mode"),
                    format!("{} (allowed: 0 = direct, 1 = inverted)", c.drive_mode),
                ));
            }
            let max_tick = j.ticks_per_rev as i64 - 1;
            for (name, v) in [("range_min", c.range_min), ("range_max", c.range_max)] {
                if !(0..=max_tick).contains(&v) {
                    return Err(invalid(field(name), format!("{v} is outside the encoder's 0..={max_tick}")));
                }
            }
            if c.range_max - c.range_min < MIN_RANGE_TICKS {
                return Err(invalid(
                    field("range_max"),
                    format!(
                        "range {}..{} spans {} ticks, less than {MIN_RANGE_TICKS}: was the joint moved through its range?",
                        c.range_min,
                        c.range_max,
                        c.range_max - c.range_min
                    ),
                ));
            }
            j.direction = if c.drive_mode == 1 { -1.0 } else { 1.0 };
            // Put the joint's zero where the model's limits put it within the range, then keep
            // the tighter of the recorded and the model's limits.
            let (lo, hi) = (c.range_min as f64, c.range_max as f64);
            let frac = if j.upper > j.lower { (-j.lower / (j.upper - j.lower)).clamp(0.0, 1.0) } else { 0.5 };
            let (near, far) = if j.direction > 0.0 { (lo, hi) } else { (hi, lo) };
            j.zero_ticks = near + frac * (far - near);
            let (a, b) = (j.to_radians(lo), j.to_radians(hi));
            j.lower = j.lower.max(a.min(b));
            j.upper = j.upper.min(a.max(b));
        }
        Ok(out)
    }
}

/// Narrowest range a calibrated joint may have, ticks (~9°).
pub const MIN_RANGE_TICKS: i64 = 100;

/// The recorded range of one joint (LeRobot's calibration fields).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JointCalibration {
    /// Servo id.
    pub id: u8,
    /// 0: ticks increase with the joint angle; 1: they decrease.
    pub drive_mode: u8,
    /// The servo's homing-offset register when recorded, ticks (ranges are in present-position
    /// ticks, which already include it).
    #[serde(default)]
    pub homing_offset: i32,
    /// Lowest present position seen, ticks.
    pub range_min: i64,
    /// Highest present position seen, ticks.
    pub range_max: i64,
}

/// A robot's calibration: joint name → recorded range.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Calibration {
    /// Per joint, by name.
    pub joints: BTreeMap<String, JointCalibration>,
}

impl Calibration {
    /// Reads a calibration JSON file.
    pub fn load(path: &Path) -> Result<Self, HardwareError> {
        let file = |message: String| HardwareError::File { path: path.display().to_string(), message };
        let text = std::fs::read_to_string(path).map_err(|e| file(e.to_string()))?;
        serde_json::from_str(&text).map_err(|e| file(format!("line {}, column {}: {e}", e.line(), e.column())))
    }

    /// Reads a calibration file LeRobot wrote (`~/.cache/huggingface/lerobot/calibration/…/ID.json`):
    /// one object per motor, keyed by motor name, each with the integer fields `id`,
    /// `drive_mode`, `homing_offset`, `range_min` and `range_max` (LeRobot's
    /// `MotorCalibration`). A missing field, one that is not an integer or out of its type's
    /// range is an error naming the motor and the field; other fields are ignored.
    pub fn import_lerobot(path: &Path) -> Result<Self, HardwareError> {
        let file = |message: String| HardwareError::File { path: path.display().to_string(), message };
        let text = std::fs::read_to_string(path).map_err(|e| file(e.to_string()))?;
        let value: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| file(format!("line {}, column {}: {e}", e.line(), e.column())))?;
        let motors = value
            .as_object()
            .ok_or_else(|| file(format!("expected an object of motors keyed by name, found {}", kind(&value))))?;
        if motors.is_empty() {
            return Err(file("no motors".into()));
        }
        let mut joints = BTreeMap::new();
        for (motor, entry) in motors {
            let invalid = |field: &str, message: String| HardwareError::Invalid {
                path: path.display().to_string(),
                field: format!("{motor}.{field}"),
                message,
            };
            let fields = entry.as_object().ok_or_else(|| {
                invalid(
                    "",
                    format!(
                        "expected an object with id, drive_mode, homing_offset, range_min, range_max, found {}",
                        kind(entry)
                    ),
                )
            })?;
            let int = |field: &str, lo: i64, hi: i64| -> Result<i64, HardwareError> {
                let v = fields.get(field).ok_or_else(|| invalid(field, "missing".into()))?;
                let n = v.as_i64().ok_or_else(|| invalid(field, format!("expected an integer, found {}", kind(v))))?;
                if !(lo..=hi).contains(&n) {
                    return Err(invalid(field, format!("{n} is outside {lo}..={hi}")));
                }
                Ok(n)
            };
            let cal = JointCalibration {
                id: int("id", 0, 253)? as u8,
                drive_mode: int("drive_mode", 0, 255)? as u8,
                homing_offset: int("homing_offset", i64::from(i32::MIN), i64::from(i32::MAX))? as i32,
                range_min: int("range_min", i64::MIN, i64::MAX)?,
                range_max: int("range_max", i64::MIN, i64::MAX)?,
            };
            joints.insert(motor.clone(), cal);
        }
        Ok(Self { joints })
    }

    /// Writes the calibration as pretty JSON.
    pub fn save(&self, path: &Path) -> Result<(), HardwareError> {
        let file = |message: String| HardwareError::File { path: path.display().to_string(), message };
        let text = serde_json::to_string_pretty(self).map_err(|e| file(e.to_string()))?;
        std::fs::write(path, text + "\n").map_err(|e| file(e.to_string()))
    }
}

/// What a JSON value is, for error messages: `a string ("abc")`, `null`, …
fn kind(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Null => "null".into(),
        serde_json::Value::Bool(b) => format!("a boolean ({b})"),
        serde_json::Value::Number(n) => format!("a non-integer number ({n})"),
        serde_json::Value::String(s) => format!("a string ({s:?})"),
        serde_json::Value::Array(_) => "an array".into(),
        serde_json::Value::Object(_) => "an object".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn so101() -> HardwareMap {
        HardwareMap::builtin("so101", &crate::builtin("so101").unwrap()).unwrap()
    }

    fn full_cal() -> Calibration {
        let joints = SO101_SERVOS
            .iter()
            .map(|&(n, id)| {
                (
                    n.to_string(),
                    JointCalibration { id, drive_mode: 0, homing_offset: 0, range_min: 800, range_max: 3300 },
                )
            })
            .collect();
        Calibration { joints }
    }

    #[test]
    fn so101_map_follows_lerobot_ids_and_the_urdf_limits() {
        let map = so101();
        assert_eq!(map.ids(), [1, 2, 3, 4, 5, 6]);
        assert_eq!(map.joints[0].joint, "shoulder_pan");
        assert!((map.joints[0].upper - 1.91986).abs() < 1e-9);
        // 4096 ticks per revolution: a quarter turn is 1024 ticks.
        let j = &map.joints[1];
        assert!((j.to_ticks(std::f64::consts::FRAC_PI_2) - 3072.0).abs() < 1e-9);
        assert!((j.to_radians(1024.0) + std::f64::consts::FRAC_PI_2).abs() < 1e-12);
    }

    #[test]
    fn calibration_places_zero_and_direction() {
        let mut cal = full_cal();
        cal.joints.get_mut("elbow_flex").unwrap().drive_mode = 1;
        let map = so101().calibrated(&cal, "cal.json").unwrap();
        let elbow = &map.joints[2];
        assert_eq!((elbow.zero_ticks, elbow.direction), (2050.0, -1.0));
        assert!((elbow.to_radians(2050.0 - 1024.0) - std::f64::consts::FRAC_PI_2).abs() < 1e-12);
        // Gripper: URDF -10°..100°, so zero sits 1/11 of the way into the range.
        let g = &map.joints[5];
        assert!((g.zero_ticks - (800.0 + 2500.0 / 11.0)).abs() < 0.5, "{}", g.zero_ticks);
        // Recorded range narrower than the URDF's: limits shrink to it.
        assert!(map.joints[0].upper < 1.91986 && map.joints[0].upper > 1.9);
    }

    #[test]
    fn bad_calibrations_name_the_field() {
        let err = |f: &dyn Fn(&mut Calibration)| {
            let mut c = full_cal();
            f(&mut c);
            so101().calibrated(&c, "cal.json").unwrap_err().to_string()
        };
        assert_eq!(
            err(&|c| {
                c.joints.remove("gripper");
            }),
            "cal.json: gripper: missing (not calibrated)"
        );
        assert!(
            err(&|c| c.joints.get_mut("wrist_roll").unwrap().id = 9).starts_with("cal.json: wrist_roll.id: 9 differs")
        );
        assert!(
            err(&|c| c.joints.get_mut("wrist_flex").unwrap().range_max = 5000)
                .starts_with("cal.json: wrist_flex.range_max: 5000 is outside")
        );
        assert!(
            err(&|c| c.joints.get_mut("shoulder_lift").unwrap().range_min = 3290)
                .contains("shoulder_lift.range_max: range 3290..3300 spans 10 ticks")
        );
        assert!(err(&|c| c.joints.get_mut("shoulder_pan").unwrap().drive_mode = 2).contains("shoulder_pan.drive_mode"));
        let mut c = full_cal();
        let extra = c.joints["gripper"];
        c.joints.insert("tail".into(), extra);
        assert!(so101().calibrated(&c, "x").unwrap_err().to_string().contains("tail: no such joint"));
    }

    #[test]
    fn calibration_files_round_trip_and_report_parse_errors_with_lines() {
        let dir = std::env::temp_dir().join(format!("embodia-cal-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("so101.json");
        full_cal().save(&path).unwrap();
        assert_eq!(Calibration::load(&path).unwrap(), full_cal());
        std::fs::write(&path, "{\n \"gripper\": {\"id\": 6, \"drive_mode\": 0, \"range_min\": 1}\n}").unwrap();
        let e = Calibration::load(&path).unwrap_err().to_string();
        assert!(e.contains("so101.json: line 2") && e.contains("range_max"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A calibration file as LeRobot writes one for an SO-101 follower (`MotorCalibration`:
    /// id, drive_mode, homing_offset, range_min, range_max per motor name).
    const LEROBOT_SO101: &str = r#"{
    "shoulder_pan": {"id": 1, "drive_mode": 0, "homing_offset": -1470, "range_min": 758, "range_max": 3292},
    "shoulder_lift": {"id": 2, "drive_mode": 0, "homing_offset": 153, "range_min": 830, "range_max": 3212},
    "elbow_flex": {"id": 3, "drive_mode": 0, "homing_offset": 1371, "range_min": 888, "range_max": 3096},
    "wrist_flex": {"id": 4, "drive_mode": 0, "homing_offset": -1290, "range_min": 870, "range_max": 3162},
    "wrist_roll": {"id": 5, "drive_mode": 0, "homing_offset": 1877, "range_min": 0, "range_max": 4095},
    "gripper": {"id": 6, "drive_mode": 0, "homing_offset": 1218, "range_min": 2038, "range_max": 3442}
}"#;

    fn write_temp(name: &str, text: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("embodia-lerobot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn a_lerobot_calibration_imports_and_fits_the_so101_map() {
        let path = write_temp("so101_follower.json", LEROBOT_SO101);
        let cal = Calibration::import_lerobot(&path).unwrap();
        assert_eq!(cal.joints.len(), 6);
        assert_eq!(
            cal.joints["elbow_flex"],
            JointCalibration { id: 3, drive_mode: 0, homing_offset: 1371, range_min: 888, range_max: 3096 }
        );
        let map = so101().calibrated(&cal, "so101_follower.json").unwrap();
        // The pan joint's zero is the middle of its recorded range (symmetric URDF limits).
        assert!((map.joints[0].zero_ticks - (758.0 + 3292.0) / 2.0).abs() < 1e-9);
    }

    #[test]
    fn the_koch_map_follows_lerobot_ids_and_models_on_a_dynamixel_bus() {
        let map = HardwareMap::builtin("koch", &crate::builtin("koch").unwrap()).unwrap();
        assert_eq!(map.ids(), [1, 2, 3, 4, 5, 6]);
        assert_eq!(map.models(), ["xl430-w250", "xl430-w250", "xl330-m288", "xl330-m288", "xl330-m288", "xl330-m288"]);
        assert_eq!(map.bus(), ServoBus::Dynamixel);
        assert_eq!(so101().bus(), ServoBus::Feetech);
        // A LeRobot Koch calibration (Dynamixel ranges, large homing offsets) fits the map.
        let text = r#"{
            "shoulder_pan": {"id": 1, "drive_mode": 0, "homing_offset": -2048, "range_min": 1020, "range_max": 3080},
            "shoulder_lift": {"id": 2, "drive_mode": 1, "homing_offset": 1024, "range_min": 900, "range_max": 3100},
            "elbow_flex": {"id": 3, "drive_mode": 0, "homing_offset": -1024, "range_min": 950, "range_max": 3000},
            "wrist_flex": {"id": 4, "drive_mode": 0, "homing_offset": 0, "range_min": 1000, "range_max": 3100},
            "wrist_roll": {"id": 5, "drive_mode": 0, "homing_offset": 2048, "range_min": 100, "range_max": 4000},
            "gripper": {"id": 6, "drive_mode": 0, "homing_offset": 0, "range_min": 2000, "range_max": 3200}
        }"#;
        let cal = Calibration::import_lerobot(&write_temp("koch_follower.json", text)).unwrap();
        let calibrated = map.calibrated(&cal, "koch_follower.json").unwrap();
        assert_eq!(calibrated.joints[1].direction, -1.0);
    }

    #[test]
    fn a_lerobot_import_names_the_motor_and_field_at_fault() {
        let err = |text: &str| Calibration::import_lerobot(&write_temp("bad.json", text)).unwrap_err().to_string();
        let missing = LEROBOT_SO101.replace(r#""range_min": 888, "range_max": 3096"#, r#""range_min": 888"#);
        assert!(err(&missing).ends_with("bad.json: elbow_flex.range_max: missing"), "{}", err(&missing));
        let string = LEROBOT_SO101.replace(r#""id": 5, "drive_mode": 0"#, r#""id": 5, "drive_mode": "0""#);
        assert!(
            err(&string).ends_with(r#"wrist_roll.drive_mode: expected an integer, found a string ("0")"#),
            "{}",
            err(&string)
        );
        let float = LEROBOT_SO101.replace(r#""homing_offset": 1218"#, r#""homing_offset": 12.5"#);
        assert!(err(&float).contains("gripper.homing_offset: expected an integer, found a non-integer number (12.5)"));
        let id = LEROBOT_SO101.replace(r#""id": 1,"#, r#""id": 300,"#);
        assert!(err(&id).contains("shoulder_pan.id: 300 is outside 0..=253"), "{}", err(&id));
        assert!(err(r#"{"gripper": 6}"#).contains("gripper.: expected an object"));
        assert!(err("[1, 2]").contains("expected an object of motors keyed by name, found an array"));
        assert!(err("{").contains("line 1"));
    }
}
