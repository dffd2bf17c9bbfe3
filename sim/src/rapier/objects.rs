//! Objects on a table: the things manipulation tasks move.
//!
//! A task lists its objects in [`SceneConfig::objects`](super::task_config::SceneConfig::objects):
//! boxes or a compound T block, each a dynamic rapier rigid body (never sleeping) with its
//! mass, friction and colour, placed at reset resting on the table at a uniformly drawn planar
//! pose. The first object is *the* object that object terms (observations, rewards, success)
//! refer to; further objects are clutter. [`Objects`] holds one scene's bodies and computes
//! those terms; [`ObjectsSpec`] what every scene of a batch shares (the coverage grid).

use rand_chacha::ChaCha8Rng;
use rapier3d::prelude::*;
use serde::{Deserialize, Serialize};

use super::contact_filter::SCENE_GROUPS;
use super::sampling::{Range, uniform};

/// Spacing of the grid of points that [`Objects::coverage`] samples the goal footprint with, m.
pub const COVERAGE_CELL: f32 = 0.005;

/// A dynamic object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ObjectConfig {
    /// Name (for viewers and messages).
    pub name: String,
    /// Geometry.
    pub shape: ObjectShape,
    /// Mass, kg.
    pub mass: f32,
    /// Coulomb friction coefficient (rapier averages it with the other collider's).
    pub friction: f32,
    /// RGBA colour in `[0, 1]` (for viewers).
    pub color: [f32; 4],
    /// At reset, the object's x is uniform in this range, m (world frame).
    pub x: Range,
    /// At reset, the object's y is uniform in this range, m (world frame).
    pub y: Range,
    /// At reset, the object's yaw is uniform in this range, rad.
    pub yaw: Range,
    /// At reset, the pose is redrawn (up to 16 times, keeping the farthest draw) while the
    /// object's centre is closer than this to the end effector in the plane, m (0: never).
    #[serde(default)]
    pub min_ee_distance: f32,
    /// At reset, the position is redrawn (up to 32 times, keeping the draw farthest from its
    /// nearest neighbour) while the object's centre is closer than this to an object placed
    /// before it in the plane, m (0: never).
    #[serde(default)]
    pub min_object_distance: f32,
}

/// Geometry of an object. Its frame is at the centre of its height; it rests on the table with
/// that frame `half height` above the table top.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum ObjectShape {
    /// A box with these half extents `[x, y, z]`, m, centred on the frame.
    Box {
        /// Half side lengths, m.
        half_extents: [f32; 3],
    },
    /// A T made of two boxes (Push-T): a bar `bar[0]` long (x) and `bar[1]` wide (y) centred
    /// on the frame, and a stem `stem[0]` wide (x) and `stem[1]` long (y) below it, along −y,
    /// both `height` tall.
    TBlock {
        /// Bar length (x) and width (y), m.
        bar: [f32; 2],
        /// Stem width (x) and length (y), m.
        stem: [f32; 2],
        /// Height, m.
        height: f32,
    },
}

/// An axis-aligned rectangle `(centre, half extents)` of a footprint, in the object's frame.
pub type Rect = ([f32; 2], [f32; 2]);

impl ObjectShape {
    /// Half of the height, m.
    pub fn half_height(&self) -> f32 {
        match *self {
            Self::Box { half_extents } => half_extents[2],
            Self::TBlock { height, .. } => height / 2.0,
        }
    }

    /// The footprint (the shape seen from above) as one or two disjoint rectangles.
    pub fn footprint(&self) -> ([Rect; 2], usize) {
        match *self {
            Self::Box { half_extents: [x, y, _] } => ([([0.0, 0.0], [x, y]); 2], 1),
            Self::TBlock { bar, stem, .. } => (
                [
                    ([0.0, 0.0], [bar[0] / 2.0, bar[1] / 2.0]),
                    ([0.0, -(bar[1] + stem[1]) / 2.0], [stem[0] / 2.0, stem[1] / 2.0]),
                ],
                2,
            ),
        }
    }

    /// Whether the point `p` of the object's plane (its frame) is inside the footprint.
    pub fn contains(&self, p: [f32; 2]) -> bool {
        let (rects, n) = self.footprint();
        rects[..n].iter().any(|&(c, h)| (p[0] - c[0]).abs() <= h[0] && (p[1] - c[1]).abs() <= h[1])
    }

    /// Distance from the point `p` (object frame) to the footprint, m (0 inside).
    pub fn distance(&self, p: [f32; 2]) -> f32 {
        let q = self.closest(p);
        (p[0] - q[0]).hypot(p[1] - q[1])
    }

    /// The point of the footprint closest to `p` (object frame; `p` itself inside).
    pub fn closest(&self, p: [f32; 2]) -> [f32; 2] {
        let (rects, n) = self.footprint();
        rects[..n]
            .iter()
            .map(|&(c, h)| [p[0].clamp(c[0] - h[0], c[0] + h[0]), p[1].clamp(c[1] - h[1], c[1] + h[1])])
            .min_by(|a, b| (p[0] - a[0]).hypot(p[1] - a[1]).total_cmp(&(p[0] - b[0]).hypot(p[1] - b[1])))
            .expect("a footprint has a rectangle")
    }

    /// Points at the centres of a `cell`-spaced grid covering the footprint (object frame).
    pub fn grid(&self, cell: f32) -> Vec<[f32; 2]> {
        let (rects, n) = self.footprint();
        let mut points = Vec::new();
        for (k, &(c, h)) in rects[..n].iter().enumerate() {
            let (nx, ny) =
                ((2.0 * h[0] / cell).round().max(1.0) as usize, (2.0 * h[1] / cell).round().max(1.0) as usize);
            for i in 0..nx {
                for j in 0..ny {
                    let p = [
                        c[0] - h[0] + (i as f32 + 0.5) * 2.0 * h[0] / nx as f32,
                        c[1] - h[1] + (j as f32 + 0.5) * 2.0 * h[1] / ny as f32,
                    ];
                    // Rectangles share edges at most; keep a point once.
                    let earlier = rects[..k]
                        .iter()
                        .any(|&(c2, h2)| (p[0] - c2[0]).abs() <= h2[0] && (p[1] - c2[1]).abs() <= h2[1]);
                    if !earlier {
                        points.push(p);
                    }
                }
            }
        }
        points
    }

    /// Colliders of the shape with the object's mass split by volume.
    fn colliders(&self, mass: f32) -> Vec<ColliderBuilder> {
        match *self {
            Self::Box { half_extents: [x, y, z] } => vec![ColliderBuilder::cuboid(x, y, z).mass(mass)],
            Self::TBlock { height, .. } => {
                let (rects, _) = self.footprint();
                let areas = rects.map(|(_, h)| h[0] * h[1]);
                let total = areas[0] + areas[1];
                rects
                    .iter()
                    .zip(areas)
                    .map(|(&(c, h), area)| {
                        ColliderBuilder::cuboid(h[0], h[1], height / 2.0)
                            .translation(Vector::new(c[0], c[1], 0.0))
                            .mass(mass * area / total)
                    })
                    .collect()
            }
        }
    }
}

/// A static table: a slab whose top is at `height`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableConfig {
    /// Centre of the top, `[x, y]`, m (world frame).
    pub center: [f32; 2],
    /// Size of the top, `[x, y]`, m.
    pub size: [f32; 2],
    /// Height of the top, m (world z).
    pub height: f32,
    /// Coulomb friction coefficient.
    pub friction: f32,
}

/// Thickness of the table slab, m.
pub const TABLE_THICKNESS: f32 = 0.05;

impl ObjectConfig {
    /// Checks values the simulator cannot use, naming the field.
    pub fn validate(&self, field: &str) -> Result<(), String> {
        let positive = |v: f32| v.is_finite() && v > 0.0;
        if !positive(self.mass) {
            return Err(format!("`{field}.mass` must be a positive number, got {}", self.mass));
        }
        if !(self.friction.is_finite() && self.friction >= 0.0) {
            return Err(format!("`{field}.friction` must be >= 0, got {}", self.friction));
        }
        let sizes: &[f32] = match &self.shape {
            ObjectShape::Box { half_extents } => half_extents,
            ObjectShape::TBlock { bar, stem, height } => &[bar[0], bar[1], stem[0], stem[1], *height],
        };
        if !sizes.iter().all(|&v| positive(v)) {
            return Err(format!("`{field}.shape` sizes must be positive numbers"));
        }
        for (name, v) in [("min_ee_distance", self.min_ee_distance), ("min_object_distance", self.min_object_distance)]
        {
            if !(v.is_finite() && v >= 0.0) {
                return Err(format!("`{field}.{name}` must be >= 0, got {v}"));
            }
        }
        for (name, [lo, hi]) in [("x", self.x), ("y", self.y), ("yaw", self.yaw)] {
            if !(lo.is_finite() && hi.is_finite() && lo <= hi) {
                return Err(format!("`{field}.{name}` must be [low, high] with low <= high, got [{lo}, {hi}]"));
            }
        }
        Ok(())
    }
}

/// What the scenes of a batch share about their objects.
#[derive(Debug, Clone, Default)]
pub struct ObjectsSpec {
    /// Grid points inside the footprint of the first object (its frame), for coverage.
    pub grid: Vec<[f32; 2]>,
    /// Height of the table top (or the ground), m.
    pub table_top: f32,
}

impl ObjectsSpec {
    /// Precomputes the coverage grid of the first object of `objects`.
    pub fn new(objects: &[ObjectConfig], table: Option<&TableConfig>) -> Self {
        Self {
            grid: objects.first().map(|o| o.shape.grid(COVERAGE_CELL)).unwrap_or_default(),
            table_top: table.map_or(0.0, |t| t.height),
        }
    }
}

/// Planar pose `(x, y, yaw)` of a pose (yaw of its rotation about world z).
pub fn planar(pose: &Pose) -> [f32; 3] {
    [pose.translation.x, pose.translation.y, yaw_of(pose.rotation)]
}

/// Yaw (rotation about z) of `r`, rad.
pub fn yaw_of(r: Rotation) -> f32 {
    (2.0 * (r.w * r.z + r.x * r.y)).atan2(1.0 - 2.0 * (r.y * r.y + r.z * r.z))
}

/// Fraction of the goal footprint's grid points (`grid`, in the object's frame, placed at the
/// planar pose `goal`) that lie inside `shape` placed at `current`: the overlap area over the
/// goal area, to within the grid's resolution. Allocates nothing.
pub fn coverage(shape: &ObjectShape, grid: &[[f32; 2]], goal: [f32; 3], current: [f32; 3]) -> f32 {
    if grid.is_empty() {
        return 0.0;
    }
    // The goal frame expressed in the current object's frame: p_cur = R(-θc)(R(θg) p + tg − tc).
    let (sg, cg) = goal[2].sin_cos();
    let (sc, cc) = current[2].sin_cos();
    let (dx, dy) = (goal[0] - current[0], goal[1] - current[1]);
    let inside = grid
        .iter()
        .filter(|p| {
            let wx = cg * p[0] - sg * p[1] + dx;
            let wy = sg * p[0] + cg * p[1] + dy;
            shape.contains([cc * wx + sc * wy, -sc * wx + cc * wy])
        })
        .count();
    inside as f32 / grid.len() as f32
}

/// The objects and the table of one scene.
#[derive(Debug, Clone, Default)]
pub struct Objects {
    bodies: Vec<RigidBodyHandle>,
    table: Option<ColliderHandle>,
}

impl Objects {
    /// Adds the table and the objects to `world` (objects at their frames' origin until reset),
    /// as MuJoCo's default geoms for collision purposes ([`SCENE_GROUPS`]).
    pub fn build(world: &mut PhysicsWorld, objects: &[ObjectConfig], table: Option<&TableConfig>) -> Self {
        let table = table.map(|t| {
            let body = world.insert_body(RigidBodyBuilder::fixed());
            world.insert_collider(
                ColliderBuilder::cuboid(t.size[0] / 2.0, t.size[1] / 2.0, TABLE_THICKNESS / 2.0)
                    .translation(Vector::new(t.center[0], t.center[1], t.height - TABLE_THICKNESS / 2.0))
                    .friction(t.friction)
                    .collision_groups(SCENE_GROUPS),
                Some(body),
            )
        });
        let bodies = objects
            .iter()
            .map(|o| {
                let body = world.insert_body(RigidBodyBuilder::dynamic().can_sleep(false));
                for collider in o.shape.colliders(o.mass) {
                    world.insert_collider(collider.friction(o.friction).collision_groups(SCENE_GROUPS), Some(body));
                }
                body
            })
            .collect();
        Self { bodies, table }
    }

    /// Number of objects.
    pub fn len(&self) -> usize {
        self.bodies.len()
    }

    /// Whether the scene has no objects.
    pub fn is_empty(&self) -> bool {
        self.bodies.is_empty()
    }

    /// World pose of object `i`.
    pub fn pose(&self, world: &PhysicsWorld, i: usize) -> Pose {
        *world.bodies[self.bodies[i]].position()
    }

    /// Places every object at a drawn pose resting on the table, at rest, and sets the
    /// friction of objects and table to their nominal values times `friction_scale`. `ee` is
    /// the end effector's world position (for `min_ee_distance`).
    pub fn reset(
        &self,
        world: &mut PhysicsWorld,
        configs: &[ObjectConfig],
        table: Option<&TableConfig>,
        rng: &mut ChaCha8Rng,
        ee: Option<Vector>,
        friction_scale: f32,
    ) {
        let top = table.map_or(0.0, |t| t.height);
        if let (Some(handle), Some(t)) = (self.table, table) {
            world.colliders[handle].set_friction(t.friction * friction_scale);
        }
        for (k, (&body, o)) in self.bodies.iter().zip(configs).enumerate() {
            let draw = |rng: &mut ChaCha8Rng| (uniform(rng, o.x), uniform(rng, o.y), uniform(rng, o.yaw));
            let (mut x, mut y, mut yaw) = draw(rng);
            if o.min_object_distance > 0.0 && k > 0 {
                // Distance to the nearest object placed before this one (no allocation: their
                // poses are already in the world).
                let nearest = |world: &PhysicsWorld, x: f32, y: f32| {
                    self.bodies[..k]
                        .iter()
                        .map(|&b| {
                            let t = world.bodies[b].position().translation;
                            (t.x - x).hypot(t.y - y)
                        })
                        .fold(f32::INFINITY, f32::min)
                };
                let mut far = nearest(world, x, y);
                for _ in 0..32 {
                    if far >= o.min_object_distance {
                        break;
                    }
                    let (x2, y2, yaw2) = draw(rng);
                    let d = nearest(world, x2, y2);
                    if d > far {
                        (x, y, yaw, far) = (x2, y2, yaw2, d);
                    }
                }
            }
            if let Some(ee) = ee.filter(|_| o.min_ee_distance > 0.0) {
                // Redraw while too close; failing 16 times, keep the farthest draw.
                let mut far = (x - ee.x).hypot(y - ee.y);
                for _ in 0..16 {
                    if far >= o.min_ee_distance {
                        break;
                    }
                    let (x2, y2, yaw2) = draw(rng);
                    let d = (x2 - ee.x).hypot(y2 - ee.y);
                    if d > far {
                        (x, y, yaw, far) = (x2, y2, yaw2, d);
                    }
                }
            }
            let rb = &mut world.bodies[body];
            let z = top + o.shape.half_height() + 5e-4;
            rb.set_position(Pose::from_parts(Vector::new(x, y, z), Rotation::from_rotation_z(yaw)), true);
            rb.set_linvel(Vector::ZERO, true);
            rb.set_angvel(Vector::ZERO, true);
            for k in 0..world.bodies[body].colliders().len() {
                let c = world.bodies[body].colliders()[k];
                world.colliders[c].set_friction(o.friction * friction_scale);
            }
        }
    }
}
