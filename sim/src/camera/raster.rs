//! Z-buffered triangle rasterization of one image: meshes in the camera's frame (OpenCV: z
//! forward, x right, y down), clipped at the near plane, flat Lambert shading.

use super::affine::{Affine, V3, cross, dot, normalize};
use super::mesh::Mesh;

/// The image being drawn: `rgb` `[height, width, 3]` and `depth` `[height, width]`, m along
/// the optical axis.
pub(crate) struct Target<'a> {
    pub rgb: &'a mut [u8],
    pub depth: &'a mut [f32],
    pub width: usize,
    pub height: usize,
    /// `[fx, fy, cx, cy]`, pixels.
    pub intrinsics: [f32; 4],
    pub near: f32,
    pub far: f32,
}

/// Light in the camera's frame.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Light {
    /// Unit direction towards the light.
    pub to_light: V3,
    pub intensity: f32,
    pub ambient: f32,
}

impl Target<'_> {
    /// Fills the image with `background` and the depth with `far`.
    pub fn clear(&mut self, background: [u8; 3]) {
        for px in self.rgb.chunks_exact_mut(3) {
            px.copy_from_slice(&background);
        }
        self.depth.fill(self.far);
    }

    /// Draws `mesh` placed by `to_camera` (body frame → camera frame, possibly scaled by at most
    /// `max_scale`), in `color` (RGB in `[0, 1]`) with opacity `alpha`: opaque meshes write depth,
    /// translucent ones blend over what is nearer than them and leave depth alone. `scratch`
    /// holds the transformed vertices.
    #[allow(clippy::too_many_arguments, reason = "what one draw call reads; a struct would only rename it")]
    pub fn draw(
        &mut self,
        mesh: &Mesh,
        to_camera: &Affine,
        max_scale: f32,
        color: V3,
        alpha: f32,
        light: &Light,
        scratch: &mut Vec<V3>,
    ) {
        let (c, r) = mesh.bounds;
        let c = to_camera.apply(c);
        let r = r * max_scale;
        if c[2] + r < self.near || c[2] - r > self.far || self.outside_sides(c, r) {
            return;
        }
        scratch.clear();
        scratch.extend(mesh.vertices.iter().map(|&v| to_camera.apply(v)));
        for t in &mesh.triangles {
            let [a, b, c] = t.map(|i| scratch[i as usize]);
            let mut n = cross(super::affine::sub(b, a), super::affine::sub(c, a));
            // The camera is at the origin: a triangle faces it when its normal points at it.
            if dot(n, a) > 0.0 {
                if mesh.closed {
                    continue;
                }
                n = n.map(|v| -v);
            }
            let n = normalize(n);
            let lit = light.ambient + light.intensity * dot(n, light.to_light).max(0.0);
            let shade = color.map(|ch| (ch * lit).clamp(0.0, 1.0));
            self.clip_and_fill([a, b, c], shade, alpha);
        }
    }

    /// Whether a sphere lies wholly outside one of the four side planes of the view frustum.
    fn outside_sides(&self, c: V3, r: f32) -> bool {
        let [fx, fy, cx, cy] = self.intrinsics;
        let (w, h) = (self.width as f32, self.height as f32);
        // Side planes through the origin with inward normals, from the image borders.
        let planes = [[fx, 0.0, cx], [-fx, 0.0, w - cx], [0.0, fy, cy], [0.0, -fy, h - cy]];
        planes.iter().any(|p| dot(*p, c) < -r * dot(*p, *p).sqrt())
    }

    /// Clips a triangle at the near plane (leaving at most a quad) and fills the rest.
    fn clip_and_fill(&mut self, tri: [V3; 3], shade: V3, alpha: f32) {
        let near = self.near;
        let inside = tri.map(|v| v[2] >= near);
        if inside.iter().all(|&i| i) {
            self.fill(tri, shade, alpha);
            return;
        }
        if !inside.iter().any(|&i| i) {
            return;
        }
        let mut poly = [[0.0f32; 3]; 4];
        let mut n = 0;
        for k in 0..3 {
            let (p, q) = (tri[k], tri[(k + 1) % 3]);
            if inside[k] {
                poly[n] = p;
                n += 1;
            }
            if inside[k] != inside[(k + 1) % 3] {
                let s = (near - p[2]) / (q[2] - p[2]);
                poly[n] = [p[0] + s * (q[0] - p[0]), p[1] + s * (q[1] - p[1]), near];
                n += 1;
            }
        }
        self.fill([poly[0], poly[1], poly[2]], shade, alpha);
        if n == 4 {
            self.fill([poly[0], poly[2], poly[3]], shade, alpha);
        }
    }

    /// Fills a triangle wholly in front of the near plane: every pixel whose centre is inside
    /// (edges included) and whose depth, interpolated as 1/z, is nearer than what is there.
    fn fill(&mut self, tri: [V3; 3], shade: V3, alpha: f32) {
        let [fx, fy, cx, cy] = self.intrinsics;
        let inv_z = [1.0 / tri[0][2], 1.0 / tri[1][2], 1.0 / tri[2][2]];
        let p = [0, 1, 2].map(|k| [fx * tri[k][0] * inv_z[k] + cx, fy * tri[k][1] * inv_z[k] + cy]);
        let area = (p[1][0] - p[0][0]) * (p[2][1] - p[0][1]) - (p[1][1] - p[0][1]) * (p[2][0] - p[0][0]);
        if area.abs() < 1e-12 {
            return;
        }
        let (w, h) = (self.width as f32, self.height as f32);
        let min = |a: f32, b: f32, c: f32| a.min(b).min(c);
        let max = |a: f32, b: f32, c: f32| a.max(b).max(c);
        // Pixel u covers centres at u + 0.5: the columns whose centres lie within the bounds.
        let x0 = ceil_non_negative((min(p[0][0], p[1][0], p[2][0]) - 0.5).max(0.0));
        let y0 = ceil_non_negative((min(p[0][1], p[1][1], p[2][1]) - 0.5).max(0.0));
        let x1 = (max(p[0][0], p[1][0], p[2][0]) - 0.5).min(w - 1.0);
        let y1 = (max(p[0][1], p[1][1], p[2][1]) - 0.5).min(h - 1.0);
        if x1 < x0 as f32 || y1 < y0 as f32 {
            return;
        }
        let (x1, y1) = (x1 as usize, y1 as usize);
        // Barycentric weight of vertex k as an affine function of the pixel centre (the edge
        // function of the opposite edge over the area), and 1/z likewise.
        let inv_area = 1.0 / area;
        let weight = |k: usize| {
            let (a, b) = (p[(k + 1) % 3], p[(k + 2) % 3]);
            [(a[1] - b[1]) * inv_area, (b[0] - a[0]) * inv_area, (a[0] * b[1] - a[1] * b[0]) * inv_area]
        };
        let e = [weight(0), weight(1), weight(2)];
        let iz = [0, 1, 2].map(|j| e[0][j] * inv_z[0] + e[1][j] * inv_z[1] + e[2][j] * inv_z[2]);
        let color = shade.map(|v| v * 255.0);
        let rgb = color.map(|v| (v + 0.5) as u8);
        let opaque = alpha >= 1.0;
        let at = |c: &[f32; 3], x: f32, y: f32| c[0] * x + c[1] * y + c[2];
        for y in y0..=y1 {
            let (sx, sy) = (x0 as f32 + 0.5, y as f32 + 0.5);
            let (mut b0, mut b1, mut b2, mut q) =
                (at(&e[0], sx, sy), at(&e[1], sx, sy), at(&e[2], sx, sy), at(&iz, sx, sy));
            let row = y * self.width;
            for x in x0..=x1 {
                if b0 >= 0.0 && b1 >= 0.0 && b2 >= 0.0 {
                    let z = 1.0 / q;
                    let i = row + x;
                    if z < self.depth[i] {
                        let px = &mut self.rgb[3 * i..3 * i + 3];
                        if opaque {
                            self.depth[i] = z;
                            px.copy_from_slice(&rgb);
                        } else {
                            for k in 0..3 {
                                px[k] = (px[k] as f32 * (1.0 - alpha) + color[k] * alpha + 0.5) as u8;
                            }
                        }
                    }
                }
                b0 += e[0][0];
                b1 += e[1][0];
                b2 += e[2][0];
                q += iz[0];
            }
        }
    }
}

/// `x.ceil()` as an index for a finite `x >= 0`, without a libm call.
fn ceil_non_negative(x: f32) -> usize {
    let t = x as usize;
    t + usize::from((t as f32) < x)
}
