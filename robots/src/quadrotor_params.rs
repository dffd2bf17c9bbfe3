//! Physical parameters of a quadrotor: a rigid body lifted by four rotors in x configuration.
//!
//! The built-in model is the Crazyflie 2.x as identified in "Learning to Fly in Seconds"
//! (Eschmann, Albani, Loianno, IEEE RA-L 2024; the RLtools `l2f` simulator, file
//! `rl/environments/l2f/parameters/dynamics/crazy_flie.h`), the model its policies were trained
//! on before flying the real vehicle:
//!
//! | quantity | value | note |
//! |---|---|---|
//! | take-off mass | 0.027 kg | Bitcraze data sheet, 27 g |
//! | rotor positions | (±0.028, ±0.028, 0) m | arm 0.0396 m = 0.056 m motor-to-motor diagonal / √2 |
//! | inertia (diagonal) | 3.85e-6, 3.85e-6, 5.9675e-6 kg·m² | L2F identification; Förster (ETH 2015) measured 1.4e-5, 1.4e-5, 2.17e-5 for a Crazyflie with markers and a different reference |
//! | thrust | 3.16e-10 · rpm² N per rotor | L2F thrust curve (quadratic in RPM, no constant or linear term) |
//! | rotor torque | 0.005964552 m · thrust | yaw torque per newton of thrust |
//! | motor time constant | 0.15 s | first-order RPM response |
//! | RPM range | 0 … 21,702 | action −1 … 1 maps linearly onto it |
//!
//! Hover needs `√(m g / (4 k_f))` ≈ 14,476 RPM per rotor, 66.7 % of the range.

/// Physical constants of one quadrotor (SI units, body frame x forward, y left, z up).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QuadrotorParams {
    /// Take-off mass, kg.
    pub mass: f64,
    /// Gravitational acceleration, m/s² (acts along −z of the world frame).
    pub gravity: f64,
    /// Diagonal of the inertia tensor about the centre of mass, `[Jxx, Jyy, Jzz]`, kg·m².
    pub inertia: [f64; 3],
    /// Rotor positions in the body frame, `[rotor][x, y]`, m (all rotors lie in z = 0).
    pub rotor_xy: [[f64; 2]; 4],
    /// Spin direction of each rotor as seen from above: +1 makes a positive (counter-clockwise)
    /// reaction torque about body z, −1 a negative one.
    pub rotor_yaw_sign: [f64; 4],
    /// Thrust coefficient `k_f`: thrust = `k_f · rpm²`, N/RPM².
    pub thrust_coefficient: f64,
    /// Yaw torque per newton of thrust, m (torque = `k_m · thrust`, N·m).
    pub torque_coefficient: f64,
    /// Time constant of the first-order RPM response, s.
    pub motor_time_constant: f64,
    /// Largest RPM command (the smallest is 0).
    pub max_rpm: f64,
}

impl QuadrotorParams {
    /// The Crazyflie 2.x of "Learning to Fly in Seconds" (values and sources in the module docs).
    pub const CRAZYFLIE: Self = Self {
        mass: 0.027,
        gravity: 9.81,
        inertia: [3.85e-6, 3.85e-6, 5.9675e-6],
        rotor_xy: [[0.028, -0.028], [-0.028, -0.028], [-0.028, 0.028], [0.028, 0.028]],
        rotor_yaw_sign: [-1.0, 1.0, -1.0, 1.0],
        thrust_coefficient: 3.16e-10,
        torque_coefficient: 0.005964552,
        motor_time_constant: 0.15,
        max_rpm: 21_702.0,
    };

    /// RPM at which the four rotors together carry the weight, `√(m g / (4 k_f))`.
    pub fn hover_rpm(&self) -> f64 {
        (self.mass * self.gravity / (4.0 * self.thrust_coefficient)).sqrt()
    }

    /// Thrust-to-weight ratio at full RPM on all rotors.
    pub fn thrust_to_weight(&self) -> f64 {
        4.0 * self.thrust_coefficient * self.max_rpm * self.max_rpm / (self.mass * self.gravity)
    }
}

impl Default for QuadrotorParams {
    /// Same as [`QuadrotorParams::CRAZYFLIE`].
    fn default() -> Self {
        Self::CRAZYFLIE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crazyflie_hovers_at_two_thirds_of_its_rpm_range() {
        let p = QuadrotorParams::CRAZYFLIE;
        // L2F states the hover RPM as 14475.8 and the relative hover throttle as 0.667.
        assert!((p.hover_rpm() - 14_475.8).abs() < 1.0, "{}", p.hover_rpm());
        assert!((p.hover_rpm() / p.max_rpm - 0.667).abs() < 1e-3);
        assert!((p.thrust_to_weight() - 2.248).abs() < 1e-2, "{}", p.thrust_to_weight());
    }

    #[test]
    fn rotor_torques_cancel_at_equal_rpm() {
        let p = QuadrotorParams::CRAZYFLIE;
        assert_eq!(p.rotor_yaw_sign.iter().sum::<f64>(), 0.0);
        let (sx, sy): (f64, f64) = p.rotor_xy.iter().fold((0.0, 0.0), |(a, b), r| (a + r[0], b + r[1]));
        assert_eq!((sx, sy), (0.0, 0.0));
    }
}
