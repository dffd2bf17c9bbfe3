//! Rigid-body quadrotor dynamics with first-order motors, integrated with RK4, written once
//! for any [`Scalar`] (one `f32` environment or a batch of tensor columns).
//!
//! Frames: world z up, body x forward, y left, z up along the rotor axes. State: position and
//! velocity in the world frame (m, m/s), orientation as a unit quaternion body→world, angular
//! velocity in the body frame (rad/s) and the four rotor speeds (RPM). Rotor `i` makes thrust
//! `k_f · rpm_i²` along body z and a yaw reaction torque `± k_m · thrust_i`; its speed follows
//! its command with `d rpm/dt = (rpm_cmd − rpm) / T_m`. The command is held over the control
//! step; [`rk4_step`] integrates it in one RK4 step (L2F integrates the same way at 100 Hz).

use super::scalar::{Scalar, Vec3};
use embodia_robots::QuadrotorParams;

/// A unit quaternion `w + xi + yj + zk`, rotating body vectors into the world frame.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Quat<S> {
    /// Real part.
    pub w: S,
    /// i component.
    pub x: S,
    /// j component.
    pub y: S,
    /// k component.
    pub z: S,
}

impl<S: Scalar> Quat<S> {
    /// Rotation matrix, row-major `[r00, r01, r02, r10, …, r22]` (world = R · body).
    pub fn matrix(&self) -> [S; 9] {
        let Quat { w, x, y, z } = self.clone();
        let (xx, yy, zz) = (x.clone() * x.clone(), y.clone() * y.clone(), z.clone() * z.clone());
        let (xy, xz, yz) = (x.clone() * y.clone(), x.clone() * z.clone(), y.clone() * z.clone());
        let (wx, wy, wz) = (w.clone() * x, w.clone() * y, w * z);
        [
            -(yy.clone() + zz.clone()) * 2.0 + 1.0,
            (xy.clone() - wz.clone()) * 2.0,
            (xz.clone() + wy.clone()) * 2.0,
            (xy + wz) * 2.0,
            -(xx.clone() + zz) * 2.0 + 1.0,
            (yz.clone() - wx.clone()) * 2.0,
            (xz - wy) * 2.0,
            (yz + wx) * 2.0,
            -(xx + yy) * 2.0 + 1.0,
        ]
    }

    /// The same rotation with unit norm (undoes the drift of integration).
    pub fn normalized(self) -> Self {
        let n = (self.w.clone().square() + self.x.clone().square() + self.y.clone().square() + self.z.clone().square())
            .sqrt();
        Quat { w: self.w / n.clone(), x: self.x / n.clone(), y: self.y / n.clone(), z: self.z / n }
    }
}

/// Quadrotor state (see the module docs for frames and units).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QuadState<S> {
    /// Position in the world frame, m.
    pub position: Vec3<S>,
    /// Orientation, body → world.
    pub orientation: Quat<S>,
    /// Linear velocity in the world frame, m/s.
    pub velocity: Vec3<S>,
    /// Angular velocity in the body frame, rad/s.
    pub angular_velocity: Vec3<S>,
    /// Rotor speeds, RPM.
    pub rpm: [S; 4],
}

/// Number of scalars in a [`QuadState`].
pub const STATE_DIM: usize = 17;

impl<S: Scalar> QuadState<S> {
    /// The state as `[px, py, pz, qw, qx, qy, qz, vx, vy, vz, ωx, ωy, ωz, rpm0..rpm3]`.
    pub fn to_array(self) -> [S; STATE_DIM] {
        let Self { position: p, orientation: q, velocity: v, angular_velocity: w, rpm: [r0, r1, r2, r3] } = self;
        [p.x, p.y, p.z, q.w, q.x, q.y, q.z, v.x, v.y, v.z, w.x, w.y, w.z, r0, r1, r2, r3]
    }

    /// Inverse of [`QuadState::to_array`].
    pub fn from_array(a: [S; STATE_DIM]) -> Self {
        let [px, py, pz, qw, qx, qy, qz, vx, vy, vz, wx, wy, wz, r0, r1, r2, r3] = a;
        Self {
            position: Vec3::new(px, py, pz),
            orientation: Quat { w: qw, x: qx, y: qy, z: qz },
            velocity: Vec3::new(vx, vy, vz),
            angular_velocity: Vec3::new(wx, wy, wz),
            rpm: [r0, r1, r2, r3],
        }
    }
}

/// Parameters that domain randomization varies per environment (tensors: `[num_envs]` columns).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QuadBody<S> {
    /// Mass, kg.
    pub mass: S,
    /// Thrust coefficient, N/RPM².
    pub thrust_coefficient: S,
    /// Motor time constant, s.
    pub motor_time_constant: S,
}

/// The parameters every environment shares, in `f32`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QuadConstants {
    /// Gravitational acceleration, m/s².
    pub gravity: f32,
    /// Inertia diagonal, kg·m².
    pub inertia: [f32; 3],
    /// Rotor positions in the body frame `[rotor][x, y]`, m.
    pub rotor_xy: [[f32; 2]; 4],
    /// Yaw torque sign per rotor.
    pub rotor_yaw_sign: [f32; 4],
    /// Yaw torque per newton of thrust, m.
    pub torque_coefficient: f32,
    /// Largest RPM command.
    pub max_rpm: f32,
}

impl From<&QuadrotorParams> for QuadConstants {
    fn from(p: &QuadrotorParams) -> Self {
        Self {
            gravity: p.gravity as f32,
            inertia: p.inertia.map(|v| v as f32),
            rotor_xy: p.rotor_xy.map(|r| r.map(|v| v as f32)),
            rotor_yaw_sign: p.rotor_yaw_sign.map(|v| v as f32),
            torque_coefficient: p.torque_coefficient as f32,
            max_rpm: p.max_rpm as f32,
        }
    }
}

/// Time derivative of `s` under the rotor speed commands `rpm_cmd` (RPM).
pub fn derivative<S: Scalar>(
    s: &QuadState<S>,
    rpm_cmd: &[S; 4],
    body: &QuadBody<S>,
    c: &QuadConstants,
) -> QuadState<S> {
    let thrust: [S; 4] = std::array::from_fn(|i| s.rpm[i].clone().square() * body.thrust_coefficient.clone());
    let sum = |f: &dyn Fn(usize) -> f32| (1..4).fold(thrust[0].clone() * f(0), |acc, i| acc + thrust[i].clone() * f(i));
    let total = sum(&|_| 1.0);
    // Rotor i at (x, y, 0) pushing along +z gives the torque r × F = (y F, −x F, 0).
    let torque = Vec3::new(
        sum(&|i| c.rotor_xy[i][1]),
        sum(&|i| -c.rotor_xy[i][0]),
        sum(&|i| c.rotor_yaw_sign[i] * c.torque_coefficient),
    );

    // Acceleration: R · (0, 0, total / m) − g e_z; R · e_z is R's third column.
    let q = &s.orientation;
    let (w, x, y, z) = (q.w.clone(), q.x.clone(), q.y.clone(), q.z.clone());
    let a = total / body.mass.clone();
    let accel = Vec3::new(
        (x.clone() * z.clone() + w.clone() * y.clone()) * a.clone() * 2.0,
        (y.clone() * z.clone() - w.clone() * x.clone()) * a.clone() * 2.0,
        (-(x.clone().square() + y.clone().square()) * 2.0 + 1.0) * a - c.gravity,
    );

    // Euler's equation: J ω̇ = τ − ω × (J ω).
    let om = s.angular_velocity.clone();
    let j = c.inertia;
    let j_om = Vec3::new(om.x.clone() * j[0], om.y.clone() * j[1], om.z.clone() * j[2]);
    let net = torque.sub(om.clone().cross(j_om));
    let om_dot = Vec3::new(net.x / j[0], net.y / j[1], net.z / j[2]);

    // q̇ = ½ q ⊗ (0, ω).
    let (ox, oy, oz) = (om.x, om.y, om.z);
    let q_dot = Quat {
        w: -(x.clone() * ox.clone() + y.clone() * oy.clone() + z.clone() * oz.clone()) * 0.5,
        x: (w.clone() * ox.clone() + y.clone() * oz.clone() - z.clone() * oy.clone()) * 0.5,
        y: (w.clone() * oy.clone() - x.clone() * oz.clone() + z * ox.clone()) * 0.5,
        z: (w * oz + x * oy - y * ox) * 0.5,
    };

    let rpm_dot = std::array::from_fn(|i| (rpm_cmd[i].clone() - s.rpm[i].clone()) / body.motor_time_constant.clone());
    QuadState {
        position: s.velocity.clone(),
        orientation: q_dot,
        velocity: accel,
        angular_velocity: om_dot,
        rpm: rpm_dot,
    }
}

/// `s + h · k`, component by component.
fn axpy<S: Scalar>(s: &QuadState<S>, h: f32, k: &QuadState<S>) -> QuadState<S> {
    let (s, k) = (s.clone().to_array(), k.clone().to_array());
    let mut k = k.into_iter();
    QuadState::from_array(s.map(|v| v + k.next().expect("same length") * h))
}

/// One RK4 step of `dt` seconds with the commands held; the quaternion is renormalized after.
pub fn rk4_step<S: Scalar>(
    s: &QuadState<S>,
    rpm_cmd: &[S; 4],
    body: &QuadBody<S>,
    c: &QuadConstants,
    dt: f32,
) -> QuadState<S> {
    let k1 = derivative(s, rpm_cmd, body, c);
    let k2 = derivative(&axpy(s, 0.5 * dt, &k1), rpm_cmd, body, c);
    let k3 = derivative(&axpy(s, 0.5 * dt, &k2), rpm_cmd, body, c);
    let k4 = derivative(&axpy(s, dt, &k3), rpm_cmd, body, c);
    let [k1, k2, k3, k4] = [k1, k2, k3, k4].map(QuadState::to_array);
    let mut parts = k1.into_iter().zip(k2).zip(k3).zip(k4);
    let next = s.clone().to_array().map(|v| {
        let (((a, b), c), d) = parts.next().expect("same length");
        v + (a + (b + c) * 2.0 + d) * (dt / 6.0)
    });
    let mut next = QuadState::from_array(next);
    next.orientation = next.orientation.normalized();
    next
}

/// Rotor speed commands for normalized actions in `[-1, 1]` (clipped): −1 ↦ 0, 1 ↦ `max_rpm`.
pub fn rpm_command<S: Scalar>(action: [S; 4], c: &QuadConstants) -> [S; 4] {
    action.map(|a| (a.clamp(-1.0, 1.0) + 1.0) * (0.5 * c.max_rpm))
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::{Device, Tensor};

    const DT: f32 = 0.01;

    fn crazyflie() -> (QuadConstants, QuadBody<f32>) {
        let p = QuadrotorParams::CRAZYFLIE;
        let body = QuadBody {
            mass: p.mass as f32,
            thrust_coefficient: p.thrust_coefficient as f32,
            motor_time_constant: p.motor_time_constant as f32,
        };
        (QuadConstants::from(&p), body)
    }

    fn at_rest(rpm: f32) -> QuadState<f32> {
        let zero = Vec3::new(0.0, 0.0, 0.0);
        QuadState {
            position: zero,
            orientation: Quat { w: 1.0, x: 0.0, y: 0.0, z: 0.0 },
            velocity: zero,
            angular_velocity: zero,
            rpm: [rpm; 4],
        }
    }

    #[test]
    fn free_fall_follows_gravity_and_keeps_attitude() {
        let (c, body) = crazyflie();
        let mut s = at_rest(0.0);
        for _ in 0..100 {
            s = rk4_step(&s, &[0.0; 4], &body, &c, DT);
        }
        // RK4 is exact for a constant acceleration: z = −g t²/2, v = −g t after 1 s.
        assert!((s.position.z + 0.5 * 9.81).abs() < 1e-4, "{:?}", s.position);
        assert!((s.velocity.z + 9.81).abs() < 1e-4);
        assert_eq!((s.position.x, s.position.y), (0.0, 0.0));
        assert_eq!(s.orientation, Quat { w: 1.0, x: 0.0, y: 0.0, z: 0.0 });
    }

    #[test]
    fn hover_thrust_equals_weight_and_holds_position() {
        let (c, body) = crazyflie();
        let hover = QuadrotorParams::CRAZYFLIE.hover_rpm() as f32;
        let mut s = at_rest(hover);
        for _ in 0..200 {
            s = rk4_step(&s, &[hover; 4], &body, &c, DT);
        }
        assert!(s.position.norm_sq().sqrt() < 1e-4, "drifted to {:?}", s.position);
        assert!(s.angular_velocity.norm_sq().sqrt() < 1e-4);
        // A little more thrust climbs, a little less sinks.
        let climb = rk4_step(&at_rest(hover * 1.01), &[hover * 1.01; 4], &body, &c, DT);
        assert!(climb.velocity.z > 0.0);
    }

    #[test]
    fn opposite_rotor_pairs_spin_it_about_z_only() {
        let (c, body) = crazyflie();
        let hover = QuadrotorParams::CRAZYFLIE.hover_rpm() as f32;
        // Rotors 1 and 3 (yaw sign +1) faster, 0 and 2 slower: no roll or pitch torque.
        let cmd = [hover - 500.0, hover + 500.0, hover - 500.0, hover + 500.0];
        let mut s = at_rest(hover);
        for _ in 0..100 {
            s = rk4_step(&s, &cmd, &body, &c, DT);
        }
        let w = &s.angular_velocity;
        assert!(w.z > 1.0, "yaw rate {}", w.z);
        assert!(w.x.abs() < 1e-4 && w.y.abs() < 1e-4, "{w:?}");
        let q = &s.orientation;
        assert!(q.z.abs() > 0.1, "it turned about z: {q:?}");
        assert!(q.x.abs() < 1e-5 && q.y.abs() < 1e-5, "{q:?}");
        assert!(s.position.x.abs() < 1e-6 && s.position.y.abs() < 1e-6);
    }

    #[test]
    fn rotation_matrix_of_a_yaw_quarter_turn() {
        let h = std::f32::consts::FRAC_1_SQRT_2;
        let r = Quat { w: h, x: 0.0, y: 0.0, z: h }.matrix();
        let want = [0.0, -1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0];
        for (a, b) in r.iter().zip(want) {
            assert!((a - b).abs() < 1e-6, "{r:?}");
        }
    }

    #[test]
    fn tensor_batch_follows_the_f32_trajectories() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let (c, body) = crazyflie();
        let n = 6;
        let mut states: Vec<QuadState<f32>> = (0..n)
            .map(|_| {
                let mut s = at_rest(rng.random_range(8_000.0..20_000.0));
                s.position = Vec3::new(rng.random_range(-1.0..1.0), rng.random_range(-1.0..1.0), 0.0);
                s.velocity = Vec3::new(rng.random_range(-1.0..1.0), 0.0, rng.random_range(-1.0..1.0));
                s.angular_velocity = Vec3::new(rng.random_range(-2.0..2.0), rng.random_range(-2.0..2.0), 1.0);
                s.orientation = Quat { w: 0.9, x: rng.random_range(-0.3..0.3), y: 0.2, z: -0.1 }.normalized();
                s
            })
            .collect();
        let device = Device::flex();
        let column = |f: &dyn Fn(&QuadState<f32>) -> f32, states: &[QuadState<f32>]| {
            Tensor::<1>::from_floats(states.iter().map(f).collect::<Vec<_>>().as_slice(), &device)
        };
        let flat: Vec<[f32; STATE_DIM]> = states.iter().map(|s| s.to_array()).collect();
        let mut batch = QuadState::from_array(std::array::from_fn(|k| {
            Tensor::<1>::from_floats(flat.iter().map(|a| a[k]).collect::<Vec<_>>().as_slice(), &device)
        }));
        let tbody = QuadBody {
            mass: column(&|_| body.mass, &states),
            thrust_coefficient: column(&|_| body.thrust_coefficient, &states),
            motor_time_constant: column(&|_| body.motor_time_constant, &states),
        };
        for _ in 0..50 {
            let actions: Vec<[f32; 4]> = (0..n).map(|_| std::array::from_fn(|_| rng.random_range(-1.0..1.0))).collect();
            for (s, a) in states.iter_mut().zip(&actions) {
                *s = rk4_step(s, &rpm_command(*a, &c), &body, &c, DT);
            }
            let cmd = rpm_command(
                std::array::from_fn(|j| {
                    Tensor::<1>::from_floats(actions.iter().map(|a| a[j]).collect::<Vec<_>>().as_slice(), &device)
                }),
                &c,
            );
            batch = rk4_step(&batch, &cmd, &tbody, &c, DT);
        }
        let columns = batch.to_array().map(|t| t.into_data().try_to_vec::<f32>().unwrap());
        for (i, s) in states.iter().enumerate() {
            for (k, v) in s.to_array().iter().enumerate() {
                let t = columns[k][i];
                assert!((t - v).abs() <= 1e-4 * v.abs().max(1.0), "env {i} component {k}: tensor {t} vs f32 {v}");
            }
        }
    }
}
