//! Actuator models: how a controller's command becomes a joint effort.
//!
//! URDF says what a joint can do (limits); an [`ActuatorConfig`] says how it is driven. The
//! simulator applies position and velocity control as implicit PD drives solved inside the
//! physics step (stable at large gains and time steps, like PhysX drives in Isaac Lab), and
//! torque control as a generalized force. Latency and noise model the real command path; all
//! of these are what domain randomization perturbs.

use serde::{Deserialize, Serialize};

/// What the controller commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum ControlMode {
    /// Joint position target; effort `τ = kp·(q* − q) + kd·(0 − q̇)`, clipped to the effort limit.
    #[default]
    Position,
    /// Joint velocity target; effort `τ = kd·(q̇* − q̇)`, clipped to the effort limit.
    Velocity,
    /// Joint effort, N·m or N, clipped to the effort limit.
    Torque,
}

impl ControlMode {
    /// The name a config writes (`position`, `velocity`, `torque`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Position => "position",
            Self::Velocity => "velocity",
            Self::Torque => "torque",
        }
    }
}

/// How one group of joints is driven.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ActuatorConfig {
    /// Command type.
    pub mode: ControlMode,
    /// Position gain `kp`, N·m/rad or N/m (position mode).
    pub stiffness: f64,
    /// Velocity gain `kd`, N·m·s/rad or N·s/m (position and velocity modes).
    pub damping: f64,
    /// Effort limit, N·m or N; `None` takes the joint's URDF `<limit effort>`.
    pub effort_limit: Option<f64>,
    /// Rotor inertia reflected to the joint, kg·m² (stabilizes light links driven through
    /// gearboxes).
    pub armature: f64,
    /// Commands take effect this many control steps after they are issued (0: immediately).
    pub latency_steps: u32,
    /// Standard deviation of Gaussian noise added to each command, in the command's units.
    pub noise_std: f64,
}

impl Default for ActuatorConfig {
    /// Position control with `kp = 100`, `kd = 10`, URDF effort limits, no armature, latency
    /// or noise.
    fn default() -> Self {
        Self {
            mode: ControlMode::Position,
            stiffness: 100.0,
            damping: 10.0,
            effort_limit: None,
            armature: 0.0,
            latency_steps: 0,
            noise_std: 0.0,
        }
    }
}

impl ActuatorConfig {
    /// Position control with the given gains and URDF effort limits.
    pub fn position(stiffness: f64, damping: f64) -> Self {
        Self { stiffness, damping, ..Self::default() }
    }

    /// Torque control with URDF effort limits.
    pub fn torque() -> Self {
        Self { mode: ControlMode::Torque, stiffness: 0.0, damping: 0.0, ..Self::default() }
    }

    /// Checks that every number is finite and non-negative, naming the field at fault.
    pub fn validate(&self) -> Result<(), String> {
        let fields = [
            ("stiffness", self.stiffness),
            ("damping", self.damping),
            ("effort_limit", self.effort_limit.unwrap_or(1.0)),
            ("armature", self.armature),
            ("noise_std", self.noise_std),
        ];
        for (name, v) in fields {
            if !v.is_finite() || v < 0.0 {
                return Err(format!("actuator {name} must be finite and >= 0, got {v}"));
            }
        }
        if self.effort_limit == Some(0.0) {
            return Err("actuator effort_limit must be > 0".into());
        }
        Ok(())
    }
}
