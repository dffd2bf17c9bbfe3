//! `<actuator>`: MuJoCo actuators mapped onto embodia's [`ActuatorConfig`].
//!
//! | MJCF | embodia |
//! |---|---|
//! | `<motor gear>` | torque mode; effort limit `gear` times the larger `ctrlrange` bound (and `forcerange`) |
//! | `<position kp kv>` | position mode, stiffness `kp`, damping `kv` |
//! | `<velocity kv>` | velocity mode, damping `kv` |
//! | `<general gainprm="g">` (no bias) | torque mode with `g · gear` per unit control |
//! | `<general gainprm="kp" biasprm="0 -kp -kv" biastype="affine">` | position mode, `kp`, `kv` |
//!
//! Position and velocity actuators must have `gear` 1 (their gains would otherwise scale by
//! `gear²`, which embodia's drives do not model), activation dynamics (`dyntype`,
//! `timeconst`) are refused, and only joint transmissions are read. `forcerange` must be
//! symmetric (`-f f`), as embodia's effort limits are.

use roxmltree::Node;

use super::{MjcfActuator, MjcfError, MjcfErrorKind, Parser, Result};
use crate::actuator::{ActuatorConfig, ControlMode};

impl<'a, 'i> Parser<'a, 'i> {
    pub(super) fn actuators(&mut self, node: Node<'a, 'i>, out: &mut Vec<MjcfActuator>) -> Result<()> {
        let mut lines: Vec<u32> = Vec::new();
        for child in node.children().filter(Node::is_element) {
            let name = child.attribute("name").map_or_else(|| format!("actuator{}", out.len()), String::from);
            if let Some(first) = out.iter().position(|a| a.name == name) {
                let kind = MjcfErrorKind::DuplicateName { what: "actuator", name, first_line: lines[first] };
                return Err(self.error(child, kind));
            }
            let actuator = self.actuator(child, name.clone()).map_err(|e| e.within("actuator", &name))?;
            lines.push(self.line(child));
            out.push(actuator);
        }
        Ok(())
    }

    fn actuator(&self, node: Node<'a, 'i>, name: String) -> Result<MjcfActuator> {
        let tag = node.tag_name().name();
        match tag {
            "motor" | "position" | "velocity" | "general" => {}
            "intvelocity" | "damper" | "cylinder" | "muscle" | "adhesion" | "plugin" => {
                return Err(self.unsupported(
                    node,
                    "this actuator has no embodia counterpart (supported: motor, position, velocity, general)",
                ));
            }
            _ => return Err(self.unsupported(node, "not an MJCF actuator")),
        }
        for transmission in ["tendon", "site", "body", "jointinparent", "cranksite", "slidersite"] {
            if node.attribute(transmission).is_some() {
                let kind = MjcfErrorKind::UnsupportedValue {
                    tag: tag.into(),
                    attribute: transmission.into(),
                    value: node.attribute(transmission).unwrap_or_default().into(),
                    allowed: "only joint transmissions (`joint=`) are supported".into(),
                };
                return Err(self.error_at_attr(node, transmission, kind));
            }
        }
        let joint_name = self.attr(node, "joint")?;
        let joint = *self.joint_index.get(joint_name).ok_or_else(|| {
            self.error_at_attr(node, "joint", MjcfErrorKind::Undefined { what: "joint", name: joint_name.into() })
        })?;
        if !self.joints[joint].is_actuated() {
            let why = if self.joints[joint].mimic.is_some() { "follows another joint" } else { "is fixed" };
            let kind = MjcfErrorKind::Structure(format!("joint \"{joint_name}\" {why} and cannot be driven"));
            return Err(self.error_at_attr(node, "joint", kind));
        }

        let value_error = |attribute: &str, allowed: &str| -> MjcfError {
            let v = self.get(node, attribute).ok().flatten();
            let kind = MjcfErrorKind::UnsupportedValue {
                tag: tag.into(),
                attribute: attribute.into(),
                value: v.map_or(String::new(), |v| v.text.to_string()),
                allowed: allowed.into(),
            };
            self.error_at(v.map_or(node.range().start, |v| v.pos), kind)
        };
        let gear = match self.number_list(node, "gear")? {
            None => 1.0,
            Some(g) if g.len() <= 6 && g[0] != 0.0 && g[1..].iter().all(|&x| x == 0.0) => g[0],
            Some(_) => return Err(value_error("gear", "expected a non-zero first number and zeros after it")),
        };
        let ctrl_range = if self.limited(node, "ctrllimited", "ctrlrange")? {
            match self.numbers::<2>(node, "ctrlrange")? {
                Some([lo, hi]) if lo <= hi => Some([lo, hi]),
                Some(_) => return Err(value_error("ctrlrange", "the lower bound must not exceed the upper bound")),
                None => return Err(self.missing(node, "ctrlrange")),
            }
        } else {
            None
        };
        let force_limit = if self.limited(node, "forcelimited", "forcerange")? {
            match self.numbers::<2>(node, "forcerange")? {
                Some([lo, hi]) if lo == -hi && hi > 0.0 => Some(hi),
                Some(_) => {
                    return Err(value_error(
                        "forcerange",
                        "embodia's effort limits are symmetric: write `-f f` with f > 0",
                    ));
                }
                None => return Err(self.missing(node, "forcerange")),
            }
        } else {
            None
        };
        if self.number(node, "timeconst")?.is_some_and(|t| t != 0.0) {
            return Err(value_error("timeconst", "activation dynamics are not supported (only 0)"));
        }
        if self.get(node, "dyntype")?.is_some_and(|v| v.text != "none") {
            return Err(value_error("dyntype", "activation dynamics are not supported (only none)"));
        }
        let unit_gear = |mode: &str| -> Result<()> {
            if gear == 1.0 { Ok(()) } else { Err(value_error("gear", &format!("{mode} actuators need gear 1"))) }
        };

        // (mode, stiffness, damping, effort per unit control)
        let (mode, stiffness, damping, gain) = match tag {
            "motor" => (ControlMode::Torque, 0.0, 0.0, gear),
            "position" => {
                unit_gear("position")?;
                let kp = self.non_negative(node, "kp", 1.0)?;
                (ControlMode::Position, kp, self.non_negative(node, "kv", 0.0)?, 1.0)
            }
            "velocity" => {
                unit_gear("velocity")?;
                (ControlMode::Velocity, 0.0, self.non_negative(node, "kv", 1.0)?, 1.0)
            }
            _ => self.general(node, gear, &value_error, &unit_gear)?,
        };
        let ctrl_effort = match (mode, ctrl_range) {
            (ControlMode::Torque, Some([lo, hi])) => Some(lo.abs().max(hi.abs()) * gain.abs()),
            _ => None,
        };
        let effort_limit = match (force_limit, ctrl_effort) {
            (Some(f), Some(c)) => Some(f.min(c)),
            (f, c) => f.or(c),
        }
        .filter(|&e| e > 0.0);
        let config = ActuatorConfig {
            mode,
            stiffness,
            damping,
            effort_limit,
            armature: self.armature[joint],
            ..ActuatorConfig::default()
        };
        Ok(MjcfActuator { name, element: tag.to_string(), joint, config, ctrl_range, gear: gain })
    }

    /// `<general>`: a fixed gain with no bias (a motor) or an affine PD bias (a position servo).
    fn general(
        &self,
        node: Node<'a, 'i>,
        gear: f64,
        value_error: &dyn Fn(&str, &str) -> MjcfError,
        unit_gear: &dyn Fn(&str) -> Result<()>,
    ) -> Result<(ControlMode, f64, f64, f64)> {
        if self.get(node, "gaintype")?.is_some_and(|v| v.text != "fixed") {
            return Err(value_error("gaintype", "only fixed gains are supported"));
        }
        let gain = self.number_list(node, "gainprm")?.map_or(1.0, |g| g[0]);
        let bias = self.number_list(node, "biasprm")?.unwrap_or_default();
        let bias_at = |i: usize| bias.get(i).copied().unwrap_or(0.0);
        match self.get(node, "biastype")?.map_or("none", |v| v.text) {
            "none" => Ok((ControlMode::Torque, 0.0, 0.0, gain * gear)),
            "affine" => {
                unit_gear("affine-bias (position)")?;
                let (kp, kv) = (gain, -bias_at(2));
                if bias_at(0) != 0.0 || bias_at(1) != -kp || kp < 0.0 || kv < 0.0 {
                    return Err(value_error(
                        "biasprm",
                        "an affine <general> must be a PD servo: gainprm=\"kp\" biasprm=\"0 -kp -kv\" with kp, kv ≥ 0",
                    ));
                }
                Ok((ControlMode::Position, kp, kv, 1.0))
            }
            _ => Err(value_error("biastype", "expected none or affine")),
        }
    }

    /// Lowers each joint's effort limit to the tightest of its `actuatorfrcrange` and its
    /// actuators' limits.
    pub(super) fn apply_effort_limits(&mut self, actuators: &[MjcfActuator]) {
        for (j, joint) in self.joints.iter_mut().enumerate() {
            let Some(limit) = joint.limit.as_mut() else { continue };
            let from_actuators = actuators
                .iter()
                .filter(|a| a.joint == j)
                .filter_map(|a| a.config.effort_limit)
                .fold(f64::INFINITY, f64::min);
            limit.effort = self.joint_force_limit[j].min(from_actuators);
        }
    }
}
