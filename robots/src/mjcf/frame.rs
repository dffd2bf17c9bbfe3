//! Rigid transforms with MJCF's quaternions (`w x y z`), and MJCF's ways of writing an
//! orientation (`quat`, `axisangle`, `euler`, `xyaxes`, `zaxis`).
//!
//! MJCF nests bodies and places joints inside them, while [`RobotModel`](crate::RobotModel)
//! puts each link frame at its joint; moving between the two needs composition and inversion,
//! which are simplest with quaternions. Converting to URDF roll-pitch-yaw happens once, at the
//! end ([`Frame::to_pose`]).

use crate::model::Pose;

/// A rigid transform: rotate by `quat`, then translate by `pos`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Frame {
    /// Translation, m.
    pub pos: [f64; 3],
    /// Unit quaternion `[w, x, y, z]` (MJCF order).
    pub quat: [f64; 4],
}

impl Frame {
    pub const IDENTITY: Self = Self { pos: [0.0; 3], quat: [1.0, 0.0, 0.0, 0.0] };

    pub fn translation(pos: [f64; 3]) -> Self {
        Self { pos, quat: Self::IDENTITY.quat }
    }

    /// `self ∘ other`: `other` expressed in the frame `self` is expressed in.
    pub fn then(&self, other: &Frame) -> Frame {
        Frame { pos: add(self.pos, self.rotate(other.pos)), quat: normalize(qmul(self.quat, other.quat)) }
    }

    #[cfg(test)]
    pub fn inverse(&self) -> Frame {
        let conj = [self.quat[0], -self.quat[1], -self.quat[2], -self.quat[3]];
        let p = rotate(conj, self.pos);
        Frame { pos: [-p[0], -p[1], -p[2]], quat: conj }
    }

    pub fn rotate(&self, v: [f64; 3]) -> [f64; 3] {
        rotate(self.quat, v)
    }

    /// The rotation matrix (rows).
    pub fn matrix(&self) -> [[f64; 3]; 3] {
        matrix(self.quat)
    }

    /// The same transform as a URDF-style [`Pose`] (roll-pitch-yaw).
    pub fn to_pose(self) -> Pose {
        let m = self.matrix();
        let sp = (-m[2][0]).clamp(-1.0, 1.0);
        let rpy = if sp.abs() > 1.0 - 1e-12 {
            // Gimbal lock: only roll ± yaw is determined; put it all in yaw.
            [0.0, std::f64::consts::FRAC_PI_2.copysign(sp), (-m[0][1]).atan2(m[1][1])]
        } else {
            [m[2][1].atan2(m[2][2]), sp.asin(), m[1][0].atan2(m[0][0])]
        };
        Pose { xyz: clean(self.pos), rpy: clean(rpy) }
    }
}

/// Rounds values within 1e-15 of zero to zero, so that a frame written without a rotation
/// reads back without one.
fn clean(v: [f64; 3]) -> [f64; 3] {
    v.map(|x| if x.abs() < 1e-15 { 0.0 } else { x })
}

pub(crate) fn add(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [a[0] + b[0], a[1] + b[1], a[2] + b[2]]
}

pub(crate) fn sub(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

pub(crate) fn dot(a: [f64; 3], b: [f64; 3]) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

pub(crate) fn cross(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
}

pub(crate) fn norm(a: [f64; 3]) -> f64 {
    dot(a, a).sqrt()
}

fn qmul(a: [f64; 4], b: [f64; 4]) -> [f64; 4] {
    [
        a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3],
        a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2],
        a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1],
        a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0],
    ]
}

/// `q` scaled to unit length (MJCF quaternions need not be normalized); `None` for a zero one.
pub(crate) fn unit_quat(q: [f64; 4]) -> Option<[f64; 4]> {
    let n = (q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]).sqrt();
    (n > 0.0 && n.is_finite()).then(|| q.map(|x| x / n))
}

fn normalize(q: [f64; 4]) -> [f64; 4] {
    unit_quat(q).unwrap_or(Frame::IDENTITY.quat)
}

fn rotate(q: [f64; 4], v: [f64; 3]) -> [f64; 3] {
    let m = matrix(q);
    [dot(m[0], v), dot(m[1], v), dot(m[2], v)]
}

fn matrix(q: [f64; 4]) -> [[f64; 3]; 3] {
    let [w, x, y, z] = q;
    [
        [1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y - w * z), 2.0 * (x * z + w * y)],
        [2.0 * (x * y + w * z), 1.0 - 2.0 * (x * x + z * z), 2.0 * (y * z - w * x)],
        [2.0 * (x * z - w * y), 2.0 * (y * z + w * x), 1.0 - 2.0 * (x * x + y * y)],
    ]
}

/// Rotation by `angle` (rad) about `axis` (any non-zero length); `None` for a zero axis.
pub(crate) fn axis_angle(axis: [f64; 3], angle: f64) -> Option<[f64; 4]> {
    let n = norm(axis);
    if n == 0.0 {
        return None;
    }
    let (s, c) = (angle / 2.0).sin_cos();
    Some([c, s * axis[0] / n, s * axis[1] / n, s * axis[2] / n])
}

/// MJCF `euler` with `eulerseq` `seq` (three of `xyzXYZ`): lower-case letters rotate about the
/// moving axes (each new rotation is applied in the frame the previous ones produced),
/// upper-case letters about the fixed axes, as MuJoCo's compiler composes them.
pub(crate) fn euler(angles: [f64; 3], seq: &[u8; 3]) -> [f64; 4] {
    let mut q = Frame::IDENTITY.quat;
    for (&c, angle) in seq.iter().zip(angles) {
        let axis = match c.to_ascii_lowercase() {
            b'x' => [1.0, 0.0, 0.0],
            b'y' => [0.0, 1.0, 0.0],
            _ => [0.0, 0.0, 1.0],
        };
        let r = axis_angle(axis, angle).unwrap_or(Frame::IDENTITY.quat);
        q = if c.is_ascii_lowercase() { qmul(q, r) } else { qmul(r, q) };
    }
    normalize(q)
}

/// The rotation whose x axis is `x` and whose y axis is `y` made orthogonal to it (MJCF
/// `xyaxes`); `None` when they are zero or parallel.
pub(crate) fn xy_axes(x: [f64; 3], y: [f64; 3]) -> Option<[f64; 4]> {
    let nx = norm(x);
    if nx == 0.0 {
        return None;
    }
    let x = x.map(|v| v / nx);
    let y = sub(y, x.map(|v| v * dot(x, y)));
    let ny = norm(y);
    if ny < 1e-12 {
        return None;
    }
    let y = y.map(|v| v / ny);
    let z = cross(x, y);
    Some(from_columns(x, y, z))
}

/// The shortest rotation taking the z axis onto `z` (MJCF `zaxis`, also the frame of a
/// `fromto` capsule or cylinder); `None` for a zero vector.
pub(crate) fn z_axis(z: [f64; 3]) -> Option<[f64; 4]> {
    let n = norm(z);
    if n == 0.0 {
        return None;
    }
    let z = z.map(|v| v / n);
    let axis = cross([0.0, 0.0, 1.0], z);
    let s = norm(axis);
    if s < 1e-12 {
        // Parallel or anti-parallel to z.
        return Some(if z[2] > 0.0 { Frame::IDENTITY.quat } else { [0.0, 1.0, 0.0, 0.0] });
    }
    axis_angle(axis, s.atan2(z[2]))
}

fn from_columns(x: [f64; 3], y: [f64; 3], z: [f64; 3]) -> [f64; 4] {
    // Shepperd's method on the matrix with columns x, y, z.
    let (m00, m11, m22) = (x[0], y[1], z[2]);
    let trace = m00 + m11 + m22;
    let q = if trace > 0.0 {
        let s = (trace + 1.0).sqrt() * 2.0;
        [0.25 * s, (y[2] - z[1]) / s, (z[0] - x[2]) / s, (x[1] - y[0]) / s]
    } else if m00 > m11 && m00 > m22 {
        let s = (1.0 + m00 - m11 - m22).sqrt() * 2.0;
        [(y[2] - z[1]) / s, 0.25 * s, (y[0] + x[1]) / s, (z[0] + x[2]) / s]
    } else if m11 > m22 {
        let s = (1.0 + m11 - m00 - m22).sqrt() * 2.0;
        [(z[0] - x[2]) / s, (y[0] + x[1]) / s, 0.25 * s, (z[1] + y[2]) / s]
    } else {
        let s = (1.0 + m22 - m00 - m11).sqrt() * 2.0;
        [(x[1] - y[0]) / s, (z[0] + x[2]) / s, (z[1] + y[2]) / s, 0.25 * s]
    };
    normalize(q)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: &[f64], b: &[f64]) -> bool {
        a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-12)
    }

    #[test]
    fn composition_with_the_inverse_is_the_identity() {
        let f = Frame { pos: [0.1, -0.2, 0.3], quat: euler([0.3, -1.1, 2.0], b"xyz") };
        let g = f.then(&f.inverse());
        assert!(close(&g.pos, &[0.0; 3]), "{g:?}");
        assert!(close(&g.quat, &[1.0, 0.0, 0.0, 0.0]) || close(&g.quat, &[-1.0, 0.0, 0.0, 0.0]), "{g:?}");
    }

    #[test]
    fn to_pose_round_trips_through_urdf_rpy() {
        let rpy = [0.4, -0.7, 2.5];
        let q = Pose { xyz: [0.0; 3], rpy }.quaternion();
        let frame = Frame { pos: [1.0, 2.0, 3.0], quat: [q[3], q[0], q[1], q[2]] };
        let pose = frame.to_pose();
        assert!(close(&pose.rpy, &rpy), "{pose:?}");
        assert_eq!(pose.xyz, [1.0, 2.0, 3.0]);
    }

    #[test]
    fn intrinsic_and_extrinsic_euler_sequences_differ_as_mujoco_defines() {
        // Intrinsic x then y equals extrinsic y then x.
        let a = euler([0.5, 0.8, 0.0], b"xyz");
        let b = euler([0.0, 0.8, 0.5], b"ZYX");
        assert!(close(&a, &b), "{a:?} {b:?}");
        let c = euler([0.5, 0.8, 0.0], b"XYZ");
        assert!(!close(&a, &c));
    }

    #[test]
    fn xyaxes_and_zaxis_give_the_named_axes() {
        let q = xy_axes([0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]).unwrap();
        let f = Frame { pos: [0.0; 3], quat: q };
        assert!(close(&f.rotate([1.0, 0.0, 0.0]), &[0.0, 1.0, 0.0]));
        assert!(close(&f.rotate([0.0, 0.0, 1.0]), &[0.0, 0.0, 1.0]));
        let z = Frame { pos: [0.0; 3], quat: z_axis([1.0, 1.0, 0.0]).unwrap() };
        let s = std::f64::consts::FRAC_1_SQRT_2;
        assert!(close(&z.rotate([0.0, 0.0, 1.0]), &[s, s, 0.0]));
        assert!(xy_axes([1.0, 0.0, 0.0], [2.0, 0.0, 0.0]).is_none());
        assert!(z_axis([0.0; 3]).is_none());
    }
}
