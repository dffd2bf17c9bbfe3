//! A [`RobotModel`] as a rapier articulation with joint drives, in one of two [`JointModel`]s.
//!
//! Links joined by fixed joints are merged into one rigid body (their mass properties summed,
//! their colliders attached with the fixed offset), as Isaac Lab and MuJoCo do: a fixed joint
//! adds nothing but cost. Every other link is a rigid body, and every revolute, continuous or
//! prismatic joint is a one-DoF joint whose motor implements the actuator: a multibody joint
//! ([`JointModel::Reduced`]) or an impulse joint ([`JointModel::Impulse`]). Mimic joints are
//! DoF couplings (reduced model only). Each actuated joint has its own [`JointDrive`] (mode,
//! gains, effort limit, armature, command range); MJCF collision bitmasks and excluded pairs
//! decide which shapes touch (see [`super::contact_filter`]).

use embodia_robots::{ActuatorConfig, CollisionFilter, ControlMode, Geometry, JointKind, MeshCollision, RobotModel};
use rapier3d::prelude::*;
use serde::{Deserialize, Serialize};

use super::contact_filter::{ExcludedPairs, SELF_GROUP, mjcf_groups};
use crate::SimError;

/// How the joints of an articulation are simulated.
///
/// - `Reduced`: a rapier multibody in reduced (joint) coordinates. Joints are exact (no drift,
///   no separation under any load); passive damping, Coulomb friction, armature and mimic
///   couplings act in generalized coordinates. The cost is a dense generalized mass matrix
///   rebuilt and factored every substep, O(links·dofs²) and more: slow for floating-base robots.
/// - `Impulse`: one rigid body per link (maximal coordinates) held together by impulse joints
///   that rapier's iterative solver enforces together with the contacts: several times faster
///   for floating-base robots, but the joints are only as stiff as the solver converges. Joint
///   anchors drift apart by millimetres under large loads (and are pulled back), limits and PD
///   targets give a little under sustained loads, and:
///   - spawning raises the world's internal PGS iterations to at least
///     [`IMPULSE_PGS_ITERATIONS`] (with one, a standing ant sinks through its ankle limits);
///   - joint damping is folded into the joint motor (exact viscous law, but in position and
///     velocity modes the effort limit bounds the sum of actuator and damping force);
///   - armature acts in torque mode only, as a rotor in the joint motor: a joint-space inertia
///     solved implicitly (see `Dof::motor`) that, like MuJoCo's armature, pushes on no body.
///     The iterative solver does not fully converge on it when it dwarfs the links' inertia
///     (the ant: 1 kg·m² against 0.01): the joints then respond more slowly than in reduced
///     coordinates. In position and velocity modes it is ignored (the PD motor dominates, and
///     a rotor in the same motor weakens the PD's convergence: a standing quadruped sinks);
///   - Coulomb joint friction is ignored;
///   - mimic joints are not supported ([`SimError::InvalidRobot`]);
///   - continuous joint angles are read back wrapped into `[-π, π]`;
///   - without self-collisions, the robot's colliders are put in collision group 32 alone and
///     filter that group out: leave group 32 to robots in the other colliders' groups; MJCF
///     collision bitmasks then cannot be honoured and are refused.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JointModel {
    /// Multibody joints in reduced coordinates: exact, slower.
    #[default]
    Reduced,
    /// Impulse joints between maximal-coordinate bodies: faster, approximate.
    Impulse,
}

/// Internal PGS iterations per solver iteration that [`JointModel::Impulse`] needs at least.
pub const IMPULSE_PGS_ITERATIONS: usize = 3;

/// Where and how to put a robot into a world.
#[derive(Debug, Clone)]
pub struct SpawnOptions {
    /// Pose of the root link in the world.
    pub base_pose: Pose,
    /// Whether the root link is welded to the world (arms) or free (legged robots).
    pub fixed_base: bool,
    /// Whether links of this robot collide with each other (adjacent links never do).
    pub self_collisions: bool,
    /// Coulomb friction coefficient of the robot's colliders.
    pub friction: f32,
    /// Collision groups of the robot's colliders (except those `collision_filters` names).
    pub groups: InteractionGroups,
    /// Multibody or impulse joints.
    pub joint_model: JointModel,
    /// MuJoCo collision bitmasks of some collision shapes (MJCF `contype`/`conaffinity`).
    pub collision_filters: Vec<CollisionFilter>,
    /// Pairs of links (indices into [`RobotModel::links`]) whose shapes never touch (MJCF
    /// `<contact><exclude>`; matters with self-collisions only).
    pub excluded_pairs: Vec<(usize, usize)>,
}

impl Default for SpawnOptions {
    fn default() -> Self {
        Self {
            base_pose: Pose::IDENTITY,
            fixed_base: true,
            self_collisions: false,
            friction: 1.0,
            groups: InteractionGroups::all(),
            joint_model: JointModel::Reduced,
            collision_filters: Vec::new(),
            excluded_pairs: Vec::new(),
        }
    }
}

/// How one actuated joint is driven.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JointDrive {
    /// Mode, gains, effort limit and armature (`latency_steps` and `noise_std` are the scene's).
    pub actuator: ActuatorConfig,
    /// Commands are clipped into `[lower, upper]`, in the mode's units (rad or m, rad/s or
    /// m/s, N·m or N), besides the joint's position limits (position mode) and effort limit
    /// (torque mode). Unbounded unless an MJCF `ctrlrange` says otherwise.
    pub command_range: [f32; 2],
}

impl JointDrive {
    /// A drive by `actuator` with no command range of its own.
    pub fn new(actuator: ActuatorConfig) -> Self {
        Self { actuator, command_range: [f32::NEG_INFINITY, f32::INFINITY] }
    }
}

/// The rapier joint of one degree of freedom.
#[derive(Debug, Clone, Copy)]
enum DofJoint {
    /// A multibody joint and the id of its link in the multibody (stable once the robot is
    /// built).
    Multibody { handle: MultibodyJointHandle, link: usize },
    /// An impulse joint.
    Impulse(ImpulseJointHandle),
}

/// One degree of freedom.
#[derive(Debug, Clone, Copy)]
struct Dof {
    /// The joint moving the child body.
    joint: DofJoint,
    /// rapier axis of the DoF (`AngX` for revolute, `LinX` for prismatic).
    axis: JointAxis,
    /// Parent and child rigid bodies.
    parent: RigidBodyHandle,
    child: RigidBodyHandle,
    /// Joint frames in the parent and the child body (their x axis is the joint axis).
    frame1: Pose,
    frame2: Pose,
    /// Position limits, rad or m.
    lower: f32,
    upper: f32,
    /// Effort limit, N·m or N.
    effort: f32,
    /// Passive viscous damping (N·m·s/rad or N·s/m) and Coulomb friction (N·m or N).
    damping: f32,
    friction: f32,
    /// Armature, kg·m² or kg: its drive's (a mimic joint's: its source's).
    armature: f32,
    /// For a mimic joint: (index in `dofs` of the source, multiplier, offset).
    mimic: Option<(usize, f32, f32)>,
}

impl Dof {
    /// The link id of a multibody joint in its multibody.
    fn multibody_link(&self) -> usize {
        match self.joint {
            DofJoint::Multibody { link, .. } => link,
            DofJoint::Impulse(_) => unreachable!("a multibody articulation has multibody joints only"),
        }
    }

    /// Passive damping `c` and armature rate `J/dt` that this joint's motor carries: an impulse
    /// joint's (a multibody has both in generalized coordinates instead).
    fn passive_in_motor(&self, rotor_rate: f32) -> (f32, f32) {
        match self.joint {
            DofJoint::Impulse(_) => (self.damping, rotor_rate),
            DofJoint::Multibody { .. } => (0.0, 0.0),
        }
    }

    /// Whether a torque-mode effort goes through this joint's motor (an impulse joint with
    /// damping or armature) rather than through a pair of torques on its bodies.
    fn effort_in_motor(&self, rotor_rate: f32) -> bool {
        let (c, rotor) = self.passive_in_motor(rotor_rate);
        c + rotor > 0.0
    }

    /// Motor `(target position, target velocity, stiffness, damping)` of this joint for the
    /// actuator law `kp·(q* − q) + kd·(v* − q̇) + τ` (`τ`: the effort, when
    /// [`Dof::effort_in_motor`]).
    ///
    /// An impulse joint's motor also carries its passive terms, solved implicitly with the rest
    /// over the coming physics step `dt`: the damping `c` (force `−c·q̇`) and, in torque mode,
    /// the armature `J` as a rotor spinning at `q̇` whose momentum is exchanged with the joint
    /// only (as in reduced coordinates, it pushes on no body): force `J·(q̇₀ − q̇)/dt` from the
    /// velocity `q̇₀` at the start of the step. Summed: `kp·(q* − q) + D·(v̄ − q̇)` with
    /// `D = kd + c + J/dt` and `v̄ = (kd·v* + J/dt·q̇₀ + τ)/D`. The effort goes through the
    /// motor rather than as a torque pair so that the solver never has to cancel the huge
    /// velocity a large torque would give light links before the armature acts.
    fn motor(&self, target: (f32, f32), gains: (f32, f32), effort: f32, rotor_rate: f32, qd0: f32) -> [f32; 4] {
        let ((q_target, v_target), (kp, kd)) = (target, gains);
        let (c, rotor) = self.passive_in_motor(rotor_rate);
        let total = kd + c + rotor;
        let v = if total > 0.0 { (kd * v_target + rotor * qd0 + effort) / total } else { 0.0 };
        [q_target, v, kp, total]
    }

    /// World pose of the joint frame on the parent side (the child side coincides up to drift).
    fn parent_frame(&self, world: &PhysicsWorld) -> Pose {
        *world.bodies[self.parent].position() * self.frame1
    }

    /// Joint position and velocity measured from the two bodies (maximal coordinates): the
    /// rotation about (or translation along) the joint axis from the parent's joint frame to
    /// the child's, and the relative angular velocity (or relative velocity of the child's
    /// anchor point) along the axis.
    fn measure(&self, world: &PhysicsWorld) -> (f32, f32) {
        let (parent, child) = (&world.bodies[self.parent], &world.bodies[self.child]);
        let f1 = self.parent_frame(world);
        let f2 = *child.position() * self.frame2;
        let axis = f1.rotation * Vector::X;
        if self.axis == JointAxis::AngX {
            let r = f1.rotation.inverse() * f2.rotation;
            let r = if r.w < 0.0 { -r } else { r };
            (2.0 * r.x.atan2(r.w), (child.angvel() - parent.angvel()).dot(axis))
        } else {
            let anchor = f2.translation;
            let v = child.velocity_at_point(anchor) - parent.velocity_at_point(anchor);
            ((anchor - f1.translation).dot(axis), v.dot(axis))
        }
    }
}

/// A robot spawned into one [`PhysicsWorld`]. Holds handles only: the state lives in the world.
///
/// Joint vectors (positions, velocities, commands) are ordered as
/// [`RobotModel::actuated_joints`].
#[derive(Debug, Clone)]
pub struct Articulation {
    root: RigidBodyHandle,
    /// Mass properties given to the root body (its merged links), in its frame.
    root_mass: MassProperties,
    /// For every URDF link: the rigid body it belongs to and its frame in that body.
    link_frames: Vec<(RigidBodyHandle, Pose)>,
    /// Every one-DoF joint, parents first.
    dofs: Vec<Dof>,
    /// Indices into `dofs` of the actuated joints, in [`RobotModel::actuated_joints`] order.
    actuated: Vec<usize>,
    /// Latest command per actuated joint, clipped to `command_bounds`: position target (rad
    /// or m), velocity target (rad/s or m/s) or effort (N·m or N) depending on its mode.
    commands: Vec<f32>,
    /// How each actuated joint is driven, `[num_actuated]`.
    drives: Vec<JointDrive>,
    /// Per actuated joint, the interval commands are clipped into: the drive's command range
    /// within the joint's position limits (position mode) or effort limit (torque mode).
    command_bounds: Vec<(f32, f32)>,
    /// Latest factor on every drive's gains (domain randomization).
    gain_scale: f32,
    /// Per actuated joint, whether its drive is switched off (no gains: a free joint).
    free: Vec<bool>,
    /// Whether any joint is in torque mode (efforts to apply before every substep).
    has_torque: bool,
    /// Whether an impulse joint in torque mode has armature (its motor is refreshed every
    /// substep).
    has_rotor: bool,
    /// Pairs of bodies whose contacts are excluded (the physics hooks of every step).
    excluded: ExcludedPairs,
    fixed_base: bool,
    /// The multibody of the robot (`None` for a robot that is a single rigid body).
    multibody: Option<MultibodyIndex>,
    /// Target position and velocity per one-DoF joint, `[dofs.len()]` (reset scratch).
    targets: Vec<(f32, f32)>,
    /// Generalized displacement, `[ndofs]` of the multibody (reset scratch).
    displacement: Vec<f32>,
}

fn to_pose(p: &embodia_robots::Pose) -> Pose {
    let [x, y, z, w] = p.quaternion();
    Pose::from_parts(
        Vector::new(p.xyz[0] as f32, p.xyz[1] as f32, p.xyz[2] as f32),
        Rotation::from_xyzw(x as f32, y as f32, z as f32, w as f32).normalize(),
    )
}

fn vec3(v: [f64; 3]) -> Vector {
    Vector::new(v[0] as f32, v[1] as f32, v[2] as f32)
}

/// A rapier collider for a URDF geometry, centred on its own origin with URDF axis conventions.
pub(crate) fn collider_for(geometry: &Geometry) -> Option<ColliderBuilder> {
    let f = |v: f64| v as f32;
    Some(match geometry {
        Geometry::Box { size } => ColliderBuilder::cuboid(f(size[0]) / 2.0, f(size[1]) / 2.0, f(size[2]) / 2.0),
        Geometry::Sphere { radius } => ColliderBuilder::ball(f(*radius)),
        // rapier's cylinder runs along y, URDF's along z.
        Geometry::Cylinder { radius, length } => ColliderBuilder::cylinder(f(*length) / 2.0, f(*radius))
            .position(Pose::from_rotation(Rotation::from_rotation_x(std::f32::consts::FRAC_PI_2))),
        Geometry::Capsule { radius, length } => ColliderBuilder::capsule_z(f(*length) / 2.0, f(*radius)),
        Geometry::Mesh { data, collision, .. } => {
            let points: Vec<Vector> = data.vertices.iter().map(|v| Vector::new(v[0], v[1], v[2])).collect();
            match collision {
                MeshCollision::ConvexHull => ColliderBuilder::convex_hull(&points)?,
                MeshCollision::Trimesh => ColliderBuilder::trimesh(points, data.triangles.clone()).ok()?,
            }
        }
    })
}

/// Mass properties of a URDF inertial placed at `frame` in its body.
fn mass_properties(inertial: &embodia_robots::Inertial, frame: &Pose) -> MassProperties {
    let origin = *frame * to_pose(&inertial.origin);
    let [ixx, ixy, ixz, iyy, iyz, izz] = inertial.inertia.map(|v| v as f32);
    let local = Matrix::from_cols(Vector::new(ixx, ixy, ixz), Vector::new(ixy, iyy, iyz), Vector::new(ixz, iyz, izz));
    let r = Matrix::from_quat(origin.rotation);
    MassProperties::with_inertia_matrix(origin.translation, inertial.mass as f32, r * local * r.transpose())
}

impl Articulation {
    /// Adds `model` to `world`, every joint driven by `actuator`: [`Self::spawn_driven`] with
    /// one drive.
    pub fn spawn(
        world: &mut PhysicsWorld,
        model: &RobotModel,
        actuator: ActuatorConfig,
        options: &SpawnOptions,
    ) -> Result<Self, SimError> {
        let drives = vec![JointDrive::new(actuator); model.actuated_joints().len()];
        Self::spawn_driven(world, model, &drives, options)
    }

    /// Adds `model` to `world`, actuated joint `i` driven by `drives[i]`
    /// (`[num_actuated]`). Errors when a drive is invalid or its command range misses the
    /// joint's limits, a moving link has no mass, a floating joint is not at the root, a mesh
    /// cannot be turned into a collider, a collision bitmask is invalid, or a mimic joint or
    /// collision bitmasks without self-collisions are used with [`JointModel::Impulse`].
    pub fn spawn_driven(
        world: &mut PhysicsWorld,
        model: &RobotModel,
        drives: &[JointDrive],
        options: &SpawnOptions,
    ) -> Result<Self, SimError> {
        let bad = |msg: String| SimError::InvalidRobot(format!("robot \"{}\": {msg}", model.name));
        let actuated_joints = model.actuated_joints();
        if drives.len() != actuated_joints.len() {
            return Err(bad(format!("{} drives for {} actuated joints", drives.len(), actuated_joints.len())));
        }
        for (drive, &j) in drives.iter().zip(&actuated_joints) {
            drive.actuator.validate().map_err(|e| bad(format!("joint \"{}\": {e}", model.joints[j].name)))?;
        }
        let mut drive_of = vec![None; model.joints.len()];
        for (i, &j) in actuated_joints.iter().enumerate() {
            drive_of[j] = Some(i);
        }
        let impulse = options.joint_model == JointModel::Impulse;
        if impulse {
            let pgs = &mut world.integration_parameters.num_internal_pgs_iterations;
            *pgs = (*pgs).max(IMPULSE_PGS_ITERATIONS);
        }
        let order = model.joints_topological();

        // Which body each link belongs to, its frame in that body, and its world pose at q = 0.
        let n = model.links.len();
        let mut body_of = vec![model.root; n];
        let mut frame_in_body = vec![Pose::IDENTITY; n];
        let mut world_pose = vec![options.base_pose; n];
        for &j in &order {
            let joint = &model.joints[j];
            let (p, c) = (joint.parent, joint.child);
            world_pose[c] = world_pose[p] * to_pose(&joint.origin);
            match joint.kind {
                JointKind::Fixed => {
                    body_of[c] = body_of[p];
                    frame_in_body[c] = frame_in_body[p] * to_pose(&joint.origin);
                }
                JointKind::Floating => {
                    return Err(bad(format!("floating joint \"{}\" is only supported at the root", joint.name)));
                }
                _ => {
                    if impulse && joint.mimic.is_some() {
                        return Err(bad(format!(
                            "mimic joint \"{}\" needs the reduced joint model (impulse joints cannot be coupled)",
                            joint.name
                        )));
                    }
                    body_of[c] = c;
                }
            }
        }

        // One rigid body per body link, with the summed mass properties of its merged links.
        let mut handles: Vec<Option<RigidBodyHandle>> = vec![None; n];
        let mut root_mass = MassProperties::default();
        for body in std::iter::once(model.root).chain(order.iter().map(|&j| model.joints[j].child)) {
            if body_of[body] != body {
                continue;
            }
            let mut mprops = MassProperties::default();
            for link in (0..n).filter(|&l| body_of[l] == body) {
                if let Some(inertial) = &model.links[link].inertial {
                    mprops += mass_properties(inertial, &frame_in_body[link]);
                }
            }
            let is_root = body == model.root;
            if is_root {
                root_mass = mprops;
            }
            if mprops.mass() <= 0.0 && !(is_root && options.fixed_base) {
                return Err(bad(format!("link \"{}\" moves but has no mass", model.links[body].name)));
            }
            let builder =
                if is_root && options.fixed_base { RigidBodyBuilder::fixed() } else { RigidBodyBuilder::dynamic() };
            let rb = builder.pose(world_pose[body]).additional_mass_properties(mprops).can_sleep(false);
            handles[body] = Some(world.insert_body(rb));
        }
        let handle_of = |link: usize| handles[body_of[link]].expect("every body link has a handle");

        // A multibody filters its own contacts; impulse-jointed bodies are kept apart by a
        // collision group of their own.
        let apart = impulse && !options.self_collisions;
        if apart && !options.collision_filters.is_empty() {
            return Err(bad(
                "collision bitmasks (MJCF contype/conaffinity) need the reduced joint model or self-collisions".into(),
            ));
        }
        let groups = if apart {
            InteractionGroups {
                memberships: SELF_GROUP,
                filter: options.groups.filter.difference(SELF_GROUP),
                ..options.groups
            }
        } else {
            options.groups
        };
        let mut excluded = ExcludedPairs::default();
        if options.self_collisions {
            for &(a, b) in &options.excluded_pairs {
                excluded.insert(handle_of(a), handle_of(b));
            }
        }
        for (l, link) in model.links.iter().enumerate() {
            for (s, shape) in link.collisions.iter().enumerate() {
                let collider = collider_for(&shape.geometry)
                    .ok_or_else(|| bad(format!("link \"{}\": degenerate collision mesh", link.name)))?;
                let local = frame_in_body[l] * to_pose(&shape.origin) * collider.position;
                let groups = match options.collision_filters.iter().find(|f| (f.link, f.shape) == (l, s)) {
                    Some(f) => mjcf_groups(f.contype, f.conaffinity)
                        .map_err(|e| bad(format!("link \"{}\", collision shape {s}: {e}", link.name)))?,
                    None => groups,
                };
                let mut collider =
                    collider.position(local).density(0.0).friction(options.friction).collision_groups(groups);
                if excluded.involves(handle_of(l)) {
                    collider = collider.active_hooks(ActiveHooks::FILTER_CONTACT_PAIRS);
                }
                world.insert_collider(collider, Some(handle_of(l)));
            }
        }

        // One-DoF joints, parents first. `dof_slot[j]` indexes `dofs` for one-DoF joints.
        let mut dof_slot = vec![None; model.joints.len()];
        let mut dofs = Vec::new();
        for &j in &order {
            let joint = &model.joints[j];
            let (mask, axis) = match joint.kind {
                JointKind::Revolute | JointKind::Continuous => (JointAxesMask::LOCKED_REVOLUTE_AXES, JointAxis::AngX),
                JointKind::Prismatic => (JointAxesMask::LOCKED_PRISMATIC_AXES, JointAxis::LinX),
                JointKind::Fixed | JointKind::Floating => continue,
            };
            let align = Pose::from_rotation(Rotation::from_rotation_arc(Vector::X, vec3(joint.axis).normalize()));
            let frame1 = frame_in_body[joint.parent] * to_pose(&joint.origin) * align;
            let (lower, upper) = match (joint.kind, joint.limit) {
                (JointKind::Continuous, _) | (_, None) => (f32::NEG_INFINITY, f32::INFINITY),
                (_, Some(l)) => (l.lower as f32, l.upper as f32),
            };
            let drive = drive_of[j].or_else(|| drive_of[joint.mimic?.joint]).map(|i| drives[i].actuator);
            let effort =
                drive.and_then(|a| a.effort_limit).or(joint.limit.map(|l| l.effort)).unwrap_or(f64::INFINITY) as f32;
            let armature = drive.map_or(0.0, |a| a.armature as f32);
            let mimic = joint.mimic.and_then(|m| Some((dof_slot[m.joint]?, m.multiplier as f32, m.offset as f32)));
            if joint.mimic.is_some() && mimic.is_none() {
                return Err(bad(format!(
                    "mimic joint \"{}\" must follow a one-DoF joint declared before it",
                    joint.name
                )));
            }
            let (parent, child) = (handle_of(joint.parent), handle_of(joint.child));
            let damping = joint.dynamics.damping as f32;
            let mut builder = GenericJointBuilder::new(mask)
                .local_frame1(frame1)
                .local_frame2(align)
                .contacts_enabled(false)
                .motor_model(axis, MotorModel::ForceBased);
            if lower.is_finite() {
                builder = builder.limits(axis, [lower, upper]);
            }
            let rapier_joint = if impulse {
                // The passive damping as a motor until the first command (`Articulation::drive`).
                if damping > 0.0 {
                    builder = builder.set_motor(axis, 0.0, 0.0, 0.0, damping);
                }
                DofJoint::Impulse(world.insert_impulse_joint(parent, child, builder.build()))
            } else {
                let handle = world
                    .insert_multibody_joint(parent, child, builder.build())
                    .ok_or_else(|| bad(format!("joint \"{}\" closes a kinematic loop", joint.name)))?;
                DofJoint::Multibody { handle, link: 0 }
            };
            let friction = joint.dynamics.friction as f32;
            dofs.push(Dof {
                joint: rapier_joint,
                axis,
                parent,
                child,
                frame1,
                frame2: align,
                lower,
                upper,
                effort,
                damping,
                friction,
                armature,
                mimic,
            });
            dof_slot[j] = Some(dofs.len() - 1);
        }

        let root = handle_of(model.root);
        let actuated: Vec<usize> = actuated_joints.iter().map(|&j| dof_slot[j].expect("one-DoF joint")).collect();
        let mut command_bounds = Vec::with_capacity(actuated.len());
        for ((drive, &d), &j) in drives.iter().zip(&actuated).zip(&actuated_joints) {
            let (dof, [lo, hi]) = (&dofs[d], drive.command_range);
            // The joint's own interval in the mode's units (velocity: none).
            let (what, low, high) = match drive.actuator.mode {
                ControlMode::Position => ("position limits", dof.lower, dof.upper),
                ControlMode::Velocity => ("velocity range", f32::NEG_INFINITY, f32::INFINITY),
                ControlMode::Torque => ("effort limit", -dof.effort, dof.effort),
            };
            let bounds = (low.max(lo), high.min(hi));
            if !(bounds.0 <= bounds.1) {
                let joint = &model.joints[j].name;
                return Err(bad(format!(
                    "joint \"{joint}\": the command range [{lo}, {hi}] misses the joint's {what} [{low}, {high}]"
                )));
            }
            command_bounds.push(bounds);
        }
        let torque = |d: &JointDrive| d.actuator.mode == ControlMode::Torque;
        let mut articulation = Self {
            root,
            root_mass,
            link_frames: (0..n).map(|l| (handle_of(l), frame_in_body[l])).collect(),
            commands: vec![0.0; actuated.len()],
            drives: drives.to_vec(),
            command_bounds,
            gain_scale: 1.0,
            free: vec![false; drives.len()],
            has_torque: drives.iter().any(torque),
            has_rotor: impulse && drives.iter().any(|d| torque(d) && d.actuator.armature > 0.0),
            excluded,
            actuated,
            fixed_base: options.fixed_base,
            displacement: Vec::new(),
            targets: vec![(0.0, 0.0); dofs.len()],
            multibody: None,
            dofs,
        };
        if let Some(root_link) = world.multibody_joints.rigid_body_link(root).copied() {
            articulation.finish_multibody(world, root_link.multibody, options.self_collisions);
        }
        Ok(articulation)
    }

    /// Resolves the multibody link ids of the joints and sets the passive joint dynamics and
    /// mimic couplings in the multibody's generalized coordinates.
    fn finish_multibody(&mut self, world: &mut PhysicsWorld, index: MultibodyIndex, self_collisions: bool) {
        for dof in &mut self.dofs {
            if let DofJoint::Multibody { handle, link } = &mut dof.joint {
                *link = world.multibody_joints.get(*handle).expect("inserted joint").1;
            }
        }
        let mb = world.multibody_joints.get_multibody_mut(index).expect("root multibody exists");
        mb.set_self_contacts_enabled(self_collisions);
        for dof in &self.dofs {
            let index = mb.link(dof.multibody_link()).expect("link of this multibody").assembly_id();
            mb.damping_mut()[index] = dof.damping;
            mb.frictions_mut()[index] = dof.friction;
            mb.armature_mut()[index] = dof.armature;
            if let Some((source, coeff, offset)) = dof.mimic {
                let source = &self.dofs[source];
                mb.add_dof_coupling(MultibodyDofCoupling {
                    link1: source.multibody_link(),
                    dof1: 0,
                    axis1: source.axis as usize,
                    link2: dof.multibody_link(),
                    dof2: 0,
                    axis2: dof.axis as usize,
                    coeff,
                    offset,
                });
            }
        }
        self.displacement = vec![0.0; mb.ndofs()];
        self.multibody = Some(index);
    }

    /// Number of actuated joints (the length of joint vectors and commands).
    pub fn num_actuated(&self) -> usize {
        self.actuated.len()
    }

    /// How actuated joint `i` is driven.
    pub fn drive(&self, i: usize) -> &JointDrive {
        &self.drives[i]
    }

    /// Gains `(kp, kd)` of actuated joint `i` as last commanded (scaled by the gain factor;
    /// zero while the joint is free).
    pub fn gains(&self, i: usize) -> (f32, f32) {
        let a = &self.drives[i].actuator;
        let scale = if self.free[i] { 0.0 } else { self.gain_scale };
        (a.stiffness as f32 * scale, a.damping as f32 * scale)
    }

    /// Switches the position or velocity drive of actuated joint `i` off (`free`: the joint
    /// turns freely, as a servo with torque off) or back on, from the next command on.
    pub fn set_free(&mut self, i: usize, free: bool) {
        self.free[i] = free;
    }

    /// The physics hooks every step of the world must use: the excluded contact pairs.
    pub fn contact_hooks(&self) -> &ExcludedPairs {
        &self.excluded
    }

    /// Position limits `(lower, upper)` of actuated joint `i`, rad or m (infinite when unlimited).
    pub fn limits(&self, i: usize) -> (f32, f32) {
        let d = &self.dofs[self.actuated[i]];
        (d.lower, d.upper)
    }

    /// Effort limit of actuated joint `i`, N·m or N.
    pub fn effort_limit(&self, i: usize) -> f32 {
        self.dofs[self.actuated[i]].effort
    }

    /// The root link's rigid body.
    pub fn root(&self) -> RigidBodyHandle {
        self.root
    }

    /// Mass properties of the root body as built from the description (rapier computes the
    /// body's own copy only at the next step), kg and kg·m².
    pub fn root_mass_properties(&self) -> MassProperties {
        self.root_mass
    }

    /// Scales the gravity every body of the robot feels (0: none, ideal gravity compensation;
    /// 1: full).
    pub fn set_gravity_scale(&self, world: &mut PhysicsWorld, scale: f32) {
        for &(body, _) in &self.link_frames {
            world.bodies[body].set_gravity_scale(scale, true);
        }
    }

    /// World pose of URDF link `link` (index into [`RobotModel::links`]).
    pub fn link_pose(&self, world: &PhysicsWorld, link: usize) -> Pose {
        let (body, frame) = self.link_frames[link];
        *world.bodies[body].position() * frame
    }

    fn multibody<'w>(&self, world: &'w PhysicsWorld) -> Option<&'w Multibody> {
        world.multibody_joints.get_multibody(self.multibody?)
    }

    /// Writes actuated joint positions (rad or m) into `q` and velocities (rad/s or m/s) into
    /// `qd`, each `[num_actuated]`.
    pub fn joint_state(&self, world: &PhysicsWorld, q: &mut [f32], qd: &mut [f32]) {
        let mb = self.multibody(world);
        for (i, &d) in self.actuated.iter().enumerate() {
            let dof = &self.dofs[d];
            (q[i], qd[i]) = match (dof.joint, mb) {
                (DofJoint::Multibody { link, .. }, Some(mb)) => {
                    let link = mb.link(link).expect("articulation link exists");
                    (link.joint().coords()[dof.axis as usize], mb.joint_velocity(link)[0])
                }
                _ => dof.measure(world),
            };
        }
    }

    /// Teleports the robot: root pose and velocity (the velocity is ignored for a fixed base),
    /// actuated joint positions `q` (rad or m) and velocities `qd` (rad/s or m/s),
    /// `[num_actuated]`. Mimic joints follow their source; other passive joints go to zero.
    pub fn set_state(
        &mut self,
        world: &mut PhysicsWorld,
        root_pose: Pose,
        root_linvel: Vector,
        root_angvel: Vector,
        q: &[f32],
        qd: &[f32],
    ) {
        let root = &mut world.bodies[self.root];
        root.set_position(root_pose, true);
        if !self.fixed_base {
            root.set_linvel(root_linvel, true);
            root.set_angvel(root_angvel, true);
        }
        self.targets.fill((0.0, 0.0));
        for (i, &d) in self.actuated.iter().enumerate() {
            self.targets[d] = (q[i], qd[i]);
        }
        for d in 0..self.dofs.len() {
            if let Some((source, coeff, offset)) = self.dofs[d].mimic {
                let (sq, sqd) = self.targets[source];
                self.targets[d] = (coeff * sq + offset, coeff * sqd);
            }
        }
        match self.multibody {
            Some(index) => self.set_multibody_state(world, index, root_linvel, root_angvel),
            None => self.set_impulse_state(world),
        }
    }

    /// [`Self::set_state`] of a multibody: generalized coordinates and velocities.
    fn set_multibody_state(&mut self, world: &mut PhysicsWorld, index: MultibodyIndex, linvel: Vector, angvel: Vector) {
        let mb = world.multibody_joints.get_multibody_mut(index).expect("articulation multibody exists");
        self.displacement.fill(0.0);
        for (dof, &(q, _)) in self.dofs.iter().zip(&self.targets) {
            let link = mb.link(dof.multibody_link()).expect("articulation link exists");
            self.displacement[link.assembly_id()] = q - link.joint().coords()[dof.axis as usize];
        }
        mb.apply_displacements(&self.displacement);
        mb.generalized_velocity_mut().fill(0.0);
        if !self.fixed_base {
            // A free root's generalized velocity is its centre-of-mass linear velocity, then its
            // angular velocity, both in world axes.
            let mut velocities = mb.generalized_velocity_mut();
            for k in 0..3 {
                velocities[k] = linvel[k];
                velocities[3 + k] = angvel[k];
            }
        }
        for (dof, &(_, qd)) in self.dofs.iter().zip(&self.targets) {
            let id = mb.link(dof.multibody_link()).expect("articulation link exists").assembly_id();
            mb.generalized_velocity_mut()[id] = qd;
        }
        mb.forward_kinematics(&world.bodies, true);
        mb.update_rigid_bodies(&mut world.bodies, true);
        for dof in &self.dofs {
            let body = &mut world.bodies[dof.child];
            body.set_linvel(Vector::ZERO, false);
            body.set_angvel(Vector::ZERO, false);
        }
    }

    /// [`Self::set_state`] of impulse joints: forward kinematics parents first, each child at
    /// `parent · frame1 · motion(q) · frame2⁻¹` with the rigid velocity of its parent plus the
    /// joint's own; the joints' accumulated impulses (solver warm start) are cleared.
    fn set_impulse_state(&mut self, world: &mut PhysicsWorld) {
        for (dof, &(q, qd)) in self.dofs.iter().zip(&self.targets) {
            let parent = &world.bodies[dof.parent];
            let (parent_v, parent_w, parent_com) = (parent.linvel(), parent.angvel(), parent.center_of_mass());
            let f1 = dof.parent_frame(world);
            let axis = f1.rotation * Vector::X;
            let motion = match dof.axis {
                JointAxis::AngX => Pose::from_rotation(Rotation::from_rotation_x(q)),
                _ => Pose::from_translation(Vector::X * q),
            };
            let child = &mut world.bodies[dof.child];
            child.set_position(f1 * motion * dof.frame2.inverse(), true);
            let com = child.center_of_mass(); // updated by `set_position`
            let carried = parent_v + parent_w.cross(com - parent_com);
            let (v, w) = match dof.axis {
                JointAxis::AngX => (carried + (axis * qd).cross(com - f1.translation), parent_w + axis * qd),
                _ => (carried + axis * qd, parent_w),
            };
            child.set_linvel(v, true);
            child.set_angvel(w, true);
            if let DofJoint::Impulse(handle) = dof.joint
                && let Some(joint) = world.impulse_joints.get_mut(handle, true)
            {
                joint.impulses = Default::default();
            }
        }
    }

    /// Adds `dv` (m/s, world axes) to the linear velocity of the whole robot: a push.
    pub fn push_root(&self, world: &mut PhysicsWorld, dv: Vector) {
        if self.fixed_base {
            return;
        }
        if let Some(mb) = self.multibody.and_then(|i| world.multibody_joints.get_multibody_mut(i)) {
            // The root's generalized linear velocity moves every link.
            let mut v = mb.generalized_velocity_mut();
            for k in 0..3 {
                v[k] += dv[k];
            }
        }
        let children = self.dofs.iter().filter(|_| self.multibody.is_none()).map(|d| d.child);
        for body in std::iter::once(self.root).chain(children) {
            let rb = &mut world.bodies[body];
            rb.set_linvel(rb.linvel() + dv, true);
        }
    }

    /// Sets the command of every actuated joint, `[num_actuated]`: position targets (rad or m),
    /// velocity targets (rad/s or m/s) or efforts (N·m or N) depending on each joint's mode,
    /// clipped into the joint's command bounds. `gain_scale` scales every drive's gains
    /// (domain randomization; pass 1.0 for nominal). Efforts are applied by
    /// [`Articulation::apply_efforts`] before every physics substep.
    pub fn command(&mut self, world: &mut PhysicsWorld, command: &[f32], gain_scale: f32) {
        self.gain_scale = gain_scale;
        for ((c, &x), &(lo, hi)) in self.commands.iter_mut().zip(command).zip(&self.command_bounds) {
            *c = x.clamp(lo, hi);
        }
        self.drive_motors(world);
    }

    /// Armature of actuated joint `i` over the physics step, `J/dt` (N·m·s/rad or N·s/m),
    /// where impulse joints' motors carry it: in torque mode (see [`JointModel::Impulse`]).
    fn rotor_rate(&self, world: &PhysicsWorld, i: usize) -> f32 {
        let a = &self.drives[i].actuator;
        match a.mode {
            ControlMode::Torque => a.armature as f32 / world.integration_parameters.dt,
            _ => 0.0,
        }
    }

    /// Sets the joint motors from the latest commands: multibody joints in position and velocity
    /// modes, impulse joints always (their motor also carries damping, armature and, in torque
    /// mode, the effort: see [`Dof::motor`]).
    fn drive_motors(&self, world: &mut PhysicsWorld) {
        for (i, &d) in self.actuated.iter().enumerate() {
            let mode = self.drives[i].actuator.mode;
            if self.multibody.is_some() && mode == ControlMode::Torque {
                continue;
            }
            let rotor_rate = self.rotor_rate(world, i);
            let dof = &self.dofs[d];
            let command = self.commands[i];
            let gains = self.gains(i);
            let (target, gains, effort) = match mode {
                ControlMode::Position => ((command, 0.0), gains, 0.0),
                ControlMode::Velocity => ((0.0, command), (0.0, gains.1), 0.0),
                ControlMode::Torque if dof.effort_in_motor(rotor_rate) => ((0.0, 0.0), (0.0, 0.0), command),
                ControlMode::Torque => ((0.0, 0.0), (0.0, 0.0), 0.0),
            };
            let (_, rotor) = dof.passive_in_motor(rotor_rate);
            let qd0 = if rotor > 0.0 { dof.measure(world).1 } else { 0.0 };
            let [pos, vel, stiffness, damping] = dof.motor(target, gains, effort, rotor_rate, qd0);
            // A motor without gains would be a rigid velocity lock in rapier: disable it. In
            // torque mode the effort is clipped already and the passive terms are not bounded.
            let max_force = match (stiffness > 0.0 || damping > 0.0, mode) {
                (false, _) => 0.0,
                (true, ControlMode::Torque) => f32::MAX,
                (true, _) => dof.effort,
            };
            let joint = match dof.joint {
                DofJoint::Multibody { handle, .. } => {
                    let Some((mb, link)) = world.multibody_joints.get_mut(handle) else { continue };
                    &mut mb.link_mut(link).expect("articulation link exists").joint.data
                }
                DofJoint::Impulse(handle) => {
                    let Some(joint) = world.impulse_joints.get_mut(handle, true) else { continue };
                    &mut joint.data
                }
            };
            joint.set_motor(dof.axis, pos, vel, stiffness, damping);
            joint.set_motor_max_force(dof.axis, max_force);
        }
    }

    /// Call before every physics substep. Applies the torque-mode efforts as equal and opposite
    /// wrenches on each joint's child and parent bodies at the joint (a pure generalized force on
    /// that joint; the joint axis moves) unless the joint's motor carries them, and refreshes the
    /// armature term of impulse joints' motors (it depends on the joint velocity at the start of
    /// the substep).
    pub fn apply_efforts(&self, world: &mut PhysicsWorld) {
        if !self.has_torque {
            return;
        }
        if self.has_rotor {
            self.drive_motors(world);
        }
        for dof in &self.dofs {
            for body in [dof.child, dof.parent] {
                world.bodies[body].reset_forces(false);
                world.bodies[body].reset_torques(false);
            }
        }
        for (i, &d) in self.actuated.iter().enumerate() {
            let dof = self.dofs[d];
            if self.drives[i].actuator.mode != ControlMode::Torque || dof.effort_in_motor(self.rotor_rate(world, i)) {
                continue;
            }
            let frame = *world.bodies[dof.child].position() * dof.frame2;
            let axis = frame.rotation * Vector::X;
            let effort = self.commands[i];
            if dof.axis == JointAxis::AngX {
                world.bodies[dof.child].add_torque(axis * effort, true);
                world.bodies[dof.parent].add_torque(-axis * effort, true);
            } else {
                world.bodies[dof.child].add_force_at_point(axis * effort, frame.translation, true);
                world.bodies[dof.parent].add_force_at_point(-axis * effort, frame.translation, true);
            }
        }
    }
}
