//! A leader arm moved by a scripted operator (`embodia servo-emulator --leader FILE`): a joint
//! trajectory replayed on the shafts of emulated servos, as a person's hand would move a
//! teleoperation leader arm (its torque off), so that teleoperation and human-in-the-loop code
//! can be tested without a person.
//!
//! The trajectory is a CSV file: a header, then one row per instant, `time_s` followed by one
//! position per joint of the robot (rad, in the hardware map's joint order), times strictly
//! increasing from 0. Between rows the positions are interpolated linearly; after the last row
//! the arm stays where it ended.

use std::path::Path;

use embodia_robots::HardwareMap;

use crate::emulator::{Shaft, ShaftDynamics};

/// A joint trajectory replayed on a chain's shafts.
#[derive(Debug, Clone)]
pub struct ScriptedLeader {
    map: HardwareMap,
    /// Row times, s, strictly increasing from 0, `[rows]`.
    times: Vec<f64>,
    /// Joint positions, rad, `[rows, joints]`.
    positions: Vec<f64>,
    /// Time since the replay started, s.
    now: f64,
}

impl ScriptedLeader {
    /// Reads the trajectory of `map`'s joints from `path`. Errors name the file, the line and
    /// what is wrong.
    pub fn load(path: &Path, map: HardwareMap) -> Result<Self, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Self::parse(&text, map).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// [`ScriptedLeader::load`] from the file's text.
    pub fn parse(text: &str, map: HardwareMap) -> Result<Self, String> {
        let joints = map.joints.len();
        let (mut times, mut positions) = (Vec::new(), Vec::new());
        for (index, line) in text.lines().enumerate().skip(1).filter(|(_, l)| !l.trim().is_empty()) {
            let at = |what: String| format!("line {}: {what}", index + 1);
            let values: Vec<f64> = line
                .split(',')
                .map(|v| v.trim().parse::<f64>().map_err(|_| at(format!("`{}` is not a number", v.trim()))))
                .collect::<Result<_, _>>()?;
            if values.len() != joints + 1 {
                return Err(at(format!(
                    "{} values; expected time_s and {joints} joint positions of {} ({})",
                    values.len(),
                    map.robot,
                    map.joints.iter().map(|j| j.joint.as_str()).collect::<Vec<_>>().join(", ")
                )));
            }
            if values.iter().any(|v| !v.is_finite()) {
                return Err(at("values must be finite".into()));
            }
            let expected_first = times.is_empty() && values[0] != 0.0;
            if expected_first || times.last().is_some_and(|&t| values[0] <= t) {
                return Err(at(format!("time {} s: times start at 0 and increase strictly", values[0])));
            }
            times.push(values[0]);
            positions.extend_from_slice(&values[1..]);
        }
        if times.is_empty() {
            return Err("no rows after the header (time_s, then one position per joint, rad)".into());
        }
        Ok(Self { map, times, positions, now: 0.0 })
    }

    /// The scripted position of joint `j` at time `t`, rad.
    fn position(&self, j: usize, t: f64) -> f64 {
        let joints = self.map.joints.len();
        let row = self.times.partition_point(|&s| s <= t);
        if row >= self.times.len() {
            return self.positions[(self.times.len() - 1) * joints + j];
        }
        let (t0, t1) = (self.times[row - 1], self.times[row]);
        let (q0, q1) = (self.positions[(row - 1) * joints + j], self.positions[row * joints + j]);
        q0 + (q1 - q0) * (t - t0) / (t1 - t0)
    }
}

impl ShaftDynamics for ScriptedLeader {
    fn advance(&mut self, dt: f64, shafts: &mut [Shaft]) {
        let before = self.now;
        self.now += dt.max(0.0);
        for (j, shaft) in shafts.iter_mut().enumerate() {
            let joint = &self.map.joints[j];
            let (q0, q1) = (self.position(j, before), self.position(j, self.now));
            shaft.position = joint.to_ticks(q1);
            shaft.speed = if dt > 0.0 { (joint.to_ticks(q1) - joint.to_ticks(q0)) / dt } else { 0.0 };
            // The operator's hand moves the shaft; the servo itself exerts nothing.
            shaft.load = 0.0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn so101() -> HardwareMap {
        HardwareMap::builtin("so101", &embodia_robots::builtin("so101").unwrap()).unwrap()
    }

    const TRAJECTORY: &str = "time_s,a,b,c,d,e,f\n0,0,0,0,0,0,0\n1,0.5,-0.5,0,0,0,0.2\n2,0.5,-0.5,0.3,0,0,0.2\n";

    #[test]
    fn the_leader_follows_the_script_linearly_and_holds_its_end() {
        let mut leader = ScriptedLeader::parse(TRAJECTORY, so101()).unwrap();
        let map = so101();
        let mut shafts = vec![Shaft::default(); 6];
        let radians = |shafts: &[Shaft], j: usize| map.joints[j].to_radians(shafts[j].position);
        leader.advance(0.5, &mut shafts);
        assert!((radians(&shafts, 0) - 0.25).abs() < 1e-9 && (radians(&shafts, 1) + 0.25).abs() < 1e-9);
        assert!((map.joints[0].speed_to_radians(shafts[0].speed) - 0.5).abs() < 1e-9, "0.5 rad/s");
        leader.advance(1.0, &mut shafts);
        assert!((radians(&shafts, 2) - 0.15).abs() < 1e-9);
        leader.advance(5.0, &mut shafts);
        leader.advance(0.1, &mut shafts);
        assert!((radians(&shafts, 2) - 0.3).abs() < 1e-9 && shafts[2].speed.abs() < 1e-9, "holds the last row");
    }

    #[test]
    fn bad_trajectories_name_the_line_and_what_is_wrong() {
        let err = |text: &str| ScriptedLeader::parse(text, so101()).unwrap_err();
        assert!(err("time_s\n0,1,2\n").starts_with("line 2: 3 values; expected time_s and 6 joint positions of so101"));
        assert!(err("h\n0,0,0,0,0,0,x\n").contains("line 2: `x` is not a number"));
        assert!(err("h\n0,0,0,0,0,0,0\n0,0,0,0,0,0,0\n").contains("line 3: time 0 s: times start at 0 and increase"));
        assert!(err("h\n1,0,0,0,0,0,0\n").contains("line 2: time 1 s"));
        assert!(err("h\n").contains("no rows"));
    }
}
