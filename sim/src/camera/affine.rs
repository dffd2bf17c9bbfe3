//! Rigid (and scaled) transforms as 3×3 matrices plus a translation: what the renderer applies
//! to every vertex, cheaper per point than a quaternion.

use crate::view::ViewPose;

/// Three-vector, m (or a unit direction).
pub(crate) type V3 = [f32; 3];

pub(crate) fn sub(a: V3, b: V3) -> V3 {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

pub(crate) fn dot(a: V3, b: V3) -> f32 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

pub(crate) fn cross(a: V3, b: V3) -> V3 {
    [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
}

/// `a` scaled to unit length (`a` itself when it is almost zero).
pub(crate) fn normalize(a: V3) -> V3 {
    let l = dot(a, a).sqrt();
    if l < 1e-12 { a } else { a.map(|x| x / l) }
}

/// `x ↦ m·x + t`; `m` row-major.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Affine {
    pub m: [[f32; 3]; 3],
    pub t: V3,
}

impl Affine {
    pub const IDENTITY: Self = Self { m: [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]], t: [0.0; 3] };

    /// The matrix of a pose (unit quaternion `[x, y, z, w]`).
    pub fn from_pose(p: &ViewPose) -> Self {
        let [x, y, z, w] = p.rotation;
        let m = [
            [1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y - z * w), 2.0 * (x * z + y * w)],
            [2.0 * (x * y + z * w), 1.0 - 2.0 * (x * x + z * z), 2.0 * (y * z - x * w)],
            [2.0 * (x * z - y * w), 2.0 * (y * z + x * w), 1.0 - 2.0 * (x * x + y * y)],
        ];
        Self { m, t: p.translation }
    }

    /// A rotation whose columns are the given axes, then a translation.
    pub fn from_axes(x: V3, y: V3, z: V3, t: V3) -> Self {
        Self { m: [[x[0], y[0], z[0]], [x[1], y[1], z[1]], [x[2], y[2], z[2]]], t }
    }

    pub fn apply(&self, p: V3) -> V3 {
        let m = &self.m;
        [
            m[0][0] * p[0] + m[0][1] * p[1] + m[0][2] * p[2] + self.t[0],
            m[1][0] * p[0] + m[1][1] * p[1] + m[1][2] * p[2] + self.t[1],
            m[2][0] * p[0] + m[2][1] * p[1] + m[2][2] * p[2] + self.t[2],
        ]
    }

    pub fn rotate(&self, v: V3) -> V3 {
        let m = &self.m;
        [
            m[0][0] * v[0] + m[0][1] * v[1] + m[0][2] * v[2],
            m[1][0] * v[0] + m[1][1] * v[1] + m[1][2] * v[2],
            m[2][0] * v[0] + m[2][1] * v[1] + m[2][2] * v[2],
        ]
    }

    /// `self ∘ other`.
    pub fn then(&self, other: &Affine) -> Affine {
        let mut m = [[0.0; 3]; 3];
        for (i, row) in m.iter_mut().enumerate() {
            for (j, v) in row.iter_mut().enumerate() {
                *v = (0..3).map(|k| self.m[i][k] * other.m[k][j]).sum();
            }
        }
        Affine { m, t: self.apply(other.t) }
    }

    /// The inverse of a rigid transform (orthonormal `m`).
    pub fn rigid_inverse(&self) -> Affine {
        let m = &self.m;
        let mt = [[m[0][0], m[1][0], m[2][0]], [m[0][1], m[1][1], m[2][1]], [m[0][2], m[1][2], m[2][2]]];
        let r = Affine { m: mt, t: [0.0; 3] };
        let t = r.apply(self.t).map(|v| -v);
        Affine { m: mt, t }
    }

    /// Scales the frame's axes by `s` (applied before the transform).
    pub fn scaled(&self, s: V3) -> Affine {
        let mut m = self.m;
        for row in &mut m {
            for k in 0..3 {
                row[k] *= s[k];
            }
        }
        Affine { m, t: self.t }
    }
}

/// Rotation by `angle` radians about the unit `axis` (Rodrigues).
pub(crate) fn axis_angle(axis: V3, angle: f32) -> Affine {
    let [x, y, z] = axis;
    let (s, c) = angle.sin_cos();
    let t = 1.0 - c;
    Affine {
        m: [
            [t * x * x + c, t * x * y - s * z, t * x * z + s * y],
            [t * x * y + s * z, t * y * y + c, t * y * z - s * x],
            [t * x * z - s * y, t * y * z + s * x, t * z * z + c],
        ],
        t: [0.0; 3],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: V3, b: V3) -> bool {
        (0..3).all(|k| (a[k] - b[k]).abs() < 1e-5)
    }

    #[test]
    fn matrix_agrees_with_the_quaternion_pose_and_inverts() {
        let n = normalize([0.3, -0.5, 0.8]);
        let (s, c) = (0.6f32).sin_cos();
        let pose = ViewPose { translation: [0.1, -0.2, 0.7], rotation: [n[0] * s, n[1] * s, n[2] * s, c] };
        let a = Affine::from_pose(&pose);
        let p = [0.4, 0.25, -0.3];
        assert!(close(a.apply(p), pose.transform_point(p)));
        assert!(close(a.rigid_inverse().apply(a.apply(p)), p));
        assert!(close(
            axis_angle(n, 1.2).rotate(p),
            Affine::from_pose(&ViewPose {
                translation: [0.0; 3],
                rotation: {
                    let (s, c) = 0.6f32.sin_cos();
                    [n[0] * s, n[1] * s, n[2] * s, c]
                },
            })
            .rotate(p)
        ));
        let b = Affine::from_pose(&ViewPose { translation: [1.0, 2.0, 3.0], rotation: [0.0, 0.0, 0.0, 1.0] });
        assert!(close(a.then(&b).apply(p), a.apply(b.apply(p))));
    }
}
