//! Triangle meshes of visual shapes: primitives tessellated once, URDF meshes as they are.

use std::f32::consts::{FRAC_PI_2, TAU};

use super::affine::{Affine, V3, dot, sub};
use crate::view::{Geometry, Shape, ViewPose};

/// Segments around the axis of round primitives. 16 keeps a 5 cm cylinder within 0.5 mm of its
/// true silhouette at a sixth of the triangles of a smooth-looking 64.
const SEGMENTS: usize = 16;
/// Latitude bands per hemisphere of spheres and capsule caps.
const BANDS: usize = 4;

/// Triangles in one frame (a body's), wound counter-clockwise seen from outside when `closed`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Mesh {
    /// Vertex positions, m.
    pub vertices: Vec<V3>,
    /// Vertex-index triples.
    pub triangles: Vec<[u32; 3]>,
    /// Whether the mesh is closed with outward winding, so triangles facing away from the
    /// camera can be skipped. URDF meshes are not trusted to be.
    pub closed: bool,
    /// Centre and radius of a sphere holding every vertex, m (for frustum culling).
    pub bounds: (V3, f32),
}

impl Mesh {
    fn push_quad(&mut self, a: u32, b: u32, c: u32, d: u32) {
        self.triangles.push([a, b, c]);
        self.triangles.push([a, c, d]);
    }

    fn push_vertex(&mut self, p: V3) -> u32 {
        self.vertices.push(p);
        (self.vertices.len() - 1) as u32
    }

    fn finish(mut self, origin: &Affine) -> Self {
        for v in &mut self.vertices {
            *v = origin.apply(*v);
        }
        let n = self.vertices.len().max(1) as f32;
        let c = self.vertices.iter().fold([0.0; 3], |a, v| [a[0] + v[0], a[1] + v[1], a[2] + v[2]]).map(|x| x / n);
        let r = self.vertices.iter().map(|&v| dot(sub(v, c), sub(v, c))).fold(0.0f32, f32::max).sqrt();
        self.bounds = (c, r);
        self
    }

    /// A box of full side lengths `size`, centred on the origin.
    pub fn cuboid(size: V3) -> Self {
        let h = size.map(|s| s / 2.0);
        let mut m = Mesh { closed: true, ..Mesh::default() };
        for i in 0..8 {
            let s = |bit: usize| if i & bit != 0 { 1.0 } else { -1.0 };
            m.push_vertex([s(1) * h[0], s(2) * h[1], s(4) * h[2]]);
        }
        // Faces -x, +x, -y, +y, -z, +z, counter-clockwise from outside.
        for [a, b, c, d] in [[0, 4, 6, 2], [1, 3, 7, 5], [0, 1, 5, 4], [2, 6, 7, 3], [0, 2, 3, 1], [4, 5, 7, 6]] {
            m.push_quad(a, b, c, d);
        }
        m.finish(&Affine::IDENTITY)
    }

    /// A surface of revolution about z through the `(radius, z)` profile, bottom to top, closed
    /// by a vertex on the axis at each end where the profile does not end there.
    fn revolve(profile: &[(f32, f32)]) -> Self {
        let mut m = Mesh { closed: true, ..Mesh::default() };
        let mut rings = Vec::with_capacity(profile.len());
        for &(r, z) in profile {
            let start = m.vertices.len() as u32;
            for k in 0..SEGMENTS {
                let a = k as f32 / SEGMENTS as f32 * TAU;
                m.push_vertex([r * a.cos(), r * a.sin(), z]);
            }
            rings.push(start);
        }
        let ring = |start: u32, k: usize| start + (k % SEGMENTS) as u32;
        for w in rings.windows(2) {
            for k in 0..SEGMENTS {
                m.push_quad(ring(w[0], k), ring(w[0], k + 1), ring(w[1], k + 1), ring(w[1], k));
            }
        }
        let (bottom, top) = (profile[0].1, profile[profile.len() - 1].1);
        let b = m.push_vertex([0.0, 0.0, bottom]);
        let t = m.push_vertex([0.0, 0.0, top]);
        let (first, last) = (rings[0], rings[rings.len() - 1]);
        for k in 0..SEGMENTS {
            m.triangles.push([b, ring(first, k + 1), ring(first, k)]);
            m.triangles.push([t, ring(last, k), ring(last, k + 1)]);
        }
        m
    }

    /// A cylinder along z of `radius` and full `length`, centred on the origin.
    pub fn cylinder(radius: f32, length: f32) -> Self {
        Self::revolve(&[(radius, -length / 2.0), (radius, length / 2.0)]).finish(&Affine::IDENTITY)
    }

    /// A capsule along z: a cylinder of `length` with hemispherical caps of `radius` (a sphere
    /// when `length` is 0).
    pub fn capsule(radius: f32, length: f32) -> Self {
        let h = length / 2.0;
        let mut profile = Vec::with_capacity(2 * BANDS);
        // Latitudes from the south pole's first ring up to the north pole's last.
        for k in 1..=BANDS {
            let a = -FRAC_PI_2 + k as f32 / BANDS as f32 * FRAC_PI_2;
            profile.push((radius * a.cos(), -h + radius * a.sin()));
        }
        for k in 0..BANDS {
            let a = k as f32 / BANDS as f32 * FRAC_PI_2;
            profile.push((radius * a.cos(), h + radius * a.sin()));
        }
        let mut m = Self::revolve(&profile);
        // The end vertices of `revolve` sit at the outermost rings' heights; move them to the poles.
        let n = m.vertices.len();
        m.vertices[n - 2][2] = -h - radius;
        m.vertices[n - 1][2] = h + radius;
        m.finish(&Affine::IDENTITY)
    }

    /// The mesh of a visual shape, placed by its origin in the body's frame.
    pub fn of_shape(shape: &Shape) -> Self {
        let origin = Affine::from_pose(&ViewPose::from_urdf(&shape.origin));
        let m = match &shape.geometry {
            Geometry::Box { size } => Self::cuboid(size.map(|s| s as f32)),
            Geometry::Sphere { radius } => Self::capsule(*radius as f32, 0.0),
            Geometry::Cylinder { radius, length } => Self::cylinder(*radius as f32, *length as f32),
            Geometry::Capsule { radius, length } => Self::capsule(*radius as f32, *length as f32),
            Geometry::Mesh { data, .. } => {
                Mesh { vertices: data.vertices.clone(), triangles: data.triangles.clone(), ..Mesh::default() }
            }
        };
        m.finish(&origin)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::camera::affine::cross;

    /// Signed volume by the divergence theorem: positive and exact for outward winding.
    fn volume(m: &Mesh) -> f32 {
        m.triangles
            .iter()
            .map(|t| {
                let [a, b, c] = t.map(|i| m.vertices[i as usize]);
                dot(a, cross(b, c)) / 6.0
            })
            .sum()
    }

    #[test]
    fn primitives_are_closed_outward_and_the_right_size() {
        let b = Mesh::cuboid([0.1, 0.2, 0.3]);
        assert!((volume(&b) - 0.006).abs() < 1e-7, "{}", volume(&b));
        assert!((b.bounds.1 - (0.05f32.powi(2) + 0.1f32.powi(2) + 0.15f32.powi(2)).sqrt()).abs() < 1e-6);
        let c = Mesh::cylinder(0.1, 0.4);
        // A 16-gon prism: (16/2)·sin(2π/16)·r²·h.
        let expected = 8.0 * (TAU / 16.0).sin() * 0.01 * 0.4;
        assert!((volume(&c) - expected).abs() < 1e-6, "{} vs {expected}", volume(&c));
        let s = Mesh::capsule(0.1, 0.0);
        let sphere = 4.0 / 3.0 * std::f32::consts::PI * 1e-3;
        assert!(volume(&s) > 0.85 * sphere && volume(&s) < sphere, "{} vs {sphere}", volume(&s));
        let cap = Mesh::capsule(0.1, 0.2);
        assert!((volume(&cap) - volume(&s) - 0.2 * 8.0 * (TAU / 16.0).sin() * 0.01).abs() < 1e-5);
        assert!(cap.vertices.iter().all(|v| v[2].abs() <= 0.2 + 1e-6));
    }
}
