//! A [`RobotModel`] as a rapier multibody articulation (reduced coordinates) with joint drives.
//!
//! Links joined by fixed joints are merged into one rigid body (their mass properties summed,
//! their colliders attached with the fixed offset), as Isaac Lab and MuJoCo do: a fixed joint
//! in reduced coordinates adds nothing but cost. Every other link is a body of the multibody,
//! and every revolute, continuous or prismatic joint is a one-DoF multibody joint whose motor
//! implements the actuator. Mimic joints are DoF couplings.

use embodia_robots::{ActuatorConfig, ControlMode, Geometry, JointKind, MeshCollision, RobotModel};
use rapier3d::prelude::*;

use crate::SimError;

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
    /// Collision groups of the robot's colliders.
    pub groups: InteractionGroups,
}

impl Default for SpawnOptions {
    fn default() -> Self {
        Self {
            base_pose: Pose::IDENTITY,
            fixed_base: true,
            self_collisions: false,
            friction: 1.0,
            groups: InteractionGroups::all(),
        }
    }
}

/// One actuated degree of freedom.
#[derive(Debug, Clone, Copy)]
struct Dof {
    /// Multibody joint moving the child body.
    handle: MultibodyJointHandle,
    /// rapier axis of the DoF (`AngX` for revolute, `LinX` for prismatic).
    axis: JointAxis,
    /// Parent and child rigid bodies (for torque pairs).
    parent: RigidBodyHandle,
    child: RigidBodyHandle,
    /// Joint frame in the child body (its x axis is the joint axis).
    frame2: Pose,
    /// Position limits, rad or m.
    lower: f32,
    upper: f32,
    /// Effort limit, N·m or N.
    effort: f32,
    /// For a mimic joint: (index in `dofs` of the source, multiplier, offset).
    mimic: Option<(usize, f32, f32)>,
    /// Internal link id in the multibody (stable once the robot is built).
    link: usize,
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
    /// Latest effort command per actuated joint (torque mode), N·m or N.
    torque: Vec<f32>,
    actuator: ActuatorConfig,
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
    /// Adds `model` to `world`, driven by `actuator`. Errors when a moving link has no mass, a
    /// floating joint is not at the root, or a mesh cannot be turned into a collider.
    pub fn spawn(
        world: &mut PhysicsWorld,
        model: &RobotModel,
        actuator: ActuatorConfig,
        options: &SpawnOptions,
    ) -> Result<Self, SimError> {
        let bad = |msg: String| SimError::InvalidRobot(format!("robot \"{}\": {msg}", model.name));
        actuator.validate().map_err(bad)?;
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
                _ => body_of[c] = c,
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

        for (l, link) in model.links.iter().enumerate() {
            for shape in &link.collisions {
                let collider = collider_for(&shape.geometry)
                    .ok_or_else(|| bad(format!("link \"{}\": degenerate collision mesh", link.name)))?;
                let local = frame_in_body[l] * to_pose(&shape.origin) * collider.position;
                let collider =
                    collider.position(local).density(0.0).friction(options.friction).collision_groups(options.groups);
                world.insert_collider(collider, Some(handle_of(l)));
            }
        }

        // Multibody joints, parents first. `dof_slot[j]` indexes `dofs` for one-DoF joints.
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
            let effort = actuator.effort_limit.or(joint.limit.map(|l| l.effort)).unwrap_or(f64::INFINITY) as f32;
            let mut builder = GenericJointBuilder::new(mask)
                .local_frame1(frame1)
                .local_frame2(align)
                .contacts_enabled(false)
                .motor_model(axis, MotorModel::ForceBased);
            if lower.is_finite() {
                builder = builder.limits(axis, [lower, upper]);
            }
            let (parent, child) = (handle_of(joint.parent), handle_of(joint.child));
            let handle = world
                .insert_multibody_joint(parent, child, builder.build())
                .ok_or_else(|| bad(format!("joint \"{}\" closes a kinematic loop", joint.name)))?;
            let mimic = joint.mimic.and_then(|m| Some((dof_slot[m.joint]?, m.multiplier as f32, m.offset as f32)));
            if joint.mimic.is_some() && mimic.is_none() {
                return Err(bad(format!("mimic joint \"{}\" must follow a one-DoF joint declared before it", joint.name)));
            }
            dof_slot[j] = Some(dofs.len());
            dofs.push(Dof { handle, axis, parent, child, frame2: align, lower, upper, effort, mimic, link: 0 });
        }

        let root = handle_of(model.root);
        let actuated: Vec<usize> = model.actuated_joints().iter().map(|&j| dof_slot[j].expect("one-DoF joint")).collect();
        let mut articulation = Self {
            root,
            root_mass,
            link_frames: (0..n).map(|l| (handle_of(l), frame_in_body[l])).collect(),
            torque: vec![0.0; actuated.len()],
            actuated,
            actuator,
            fixed_base: options.fixed_base,
            displacement: Vec::new(),
            targets: Vec::new(),
            multibody: None,
            dofs: Vec::new(),
        };
        let Some(root_link) = world.multibody_joints.rigid_body_link(root).copied() else {
            return Ok(articulation); // a single rigid body: nothing to drive
        };

        // Passive joint dynamics and mimic couplings, in the multibody's generalized coordinates.
        let link_of = |h: MultibodyJointHandle| world.multibody_joints.get(h).expect("inserted joint").1;
        for dof in &mut dofs {
            dof.link = link_of(dof.handle);
        }
        let mut passive = Vec::new();
        let mut couplings = Vec::new();
        for (j, joint) in model.joints.iter().enumerate() {
            let Some(slot) = dof_slot[j] else { continue };
            let dof = &dofs[slot];
            let link = link_of(dof.handle);
            passive.push((link, joint.dynamics.damping as f32, joint.dynamics.friction as f32));
            if let Some((source, coeff, offset)) = dof.mimic {
                couplings.push(MultibodyDofCoupling {
                    link1: link_of(dofs[source].handle),
                    dof1: 0,
                    axis1: dofs[source].axis as usize,
                    link2: link,
                    dof2: 0,
                    axis2: dof.axis as usize,
                    coeff,
                    offset,
                });
            }
        }
        let mb = world.multibody_joints.get_multibody_mut(root_link.multibody).expect("root multibody exists");
        mb.set_self_contacts_enabled(options.self_collisions);
        for (link, damping, friction) in passive {
            let index = mb.link(link).expect("link of this multibody").assembly_id();
            mb.damping_mut()[index] = damping;
            mb.frictions_mut()[index] = friction;
            mb.armature_mut()[index] = actuator.armature as f32;
        }
        for coupling in couplings {
            mb.add_dof_coupling(coupling);
        }
        articulation.displacement = vec![0.0; mb.ndofs()];
        articulation.targets = vec![(0.0, 0.0); dofs.len()];
        articulation.multibody = Some(root_link.multibody);
        articulation.dofs = dofs;
        Ok(articulation)
    }

    /// Number of actuated joints (the length of joint vectors and commands).
    pub fn num_actuated(&self) -> usize {
        self.actuated.len()
    }

    /// The driving actuator configuration.
    pub fn actuator(&self) -> &ActuatorConfig {
        &self.actuator
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

    /// Whether the root is welded to the world.
    pub fn fixed_base(&self) -> bool {
        self.fixed_base
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
        let Some(mb) = self.multibody(world) else { return };
        for (i, &d) in self.actuated.iter().enumerate() {
            let dof = &self.dofs[d];
            let link = mb.link(dof.link).expect("articulation link exists");
            q[i] = link.joint().coords()[dof.axis as usize];
            qd[i] = mb.joint_velocity(link)[0];
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
        let Some(index) = self.multibody else { return };
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
        let mb = world.multibody_joints.get_multibody_mut(index).expect("articulation multibody exists");
        self.displacement.fill(0.0);
        for (dof, &(q, _)) in self.dofs.iter().zip(&self.targets) {
            let link = mb.link(dof.link).expect("articulation link exists");
            self.displacement[link.assembly_id()] = q - link.joint().coords()[dof.axis as usize];
        }
        mb.apply_displacements(&self.displacement);
        let mut velocities = mb.generalized_velocity_mut();
        velocities.fill(0.0);
        if !self.fixed_base {
            // A free root's generalized velocity is its centre-of-mass linear velocity, then its
            // angular velocity, both in world axes.
            for k in 0..3 {
                velocities[k] = root_linvel[k];
                velocities[3 + k] = root_angvel[k];
            }
        }
        for (dof, &(_, qd)) in self.dofs.iter().zip(&self.targets) {
            let index = mb.link(dof.link).expect("articulation link exists").assembly_id();
            mb.generalized_velocity_mut()[index] = qd;
        }
        mb.forward_kinematics(&world.bodies, true);
        mb.update_rigid_bodies(&mut world.bodies, true);
        for dof in &self.dofs {
            let body = &mut world.bodies[dof.child];
            body.set_linvel(Vector::ZERO, false);
            body.set_angvel(Vector::ZERO, false);
        }
    }

    /// Adds `dv` (m/s, world axes) to the root's linear velocity: a push.
    pub fn push_root(&self, world: &mut PhysicsWorld, dv: Vector) {
        if self.fixed_base {
            return;
        }
        if let Some(mb) = self.multibody.and_then(|i| world.multibody_joints.get_multibody_mut(i)) {
            let mut v = mb.generalized_velocity_mut();
            for k in 0..3 {
                v[k] += dv[k];
            }
        }
        let root = &mut world.bodies[self.root];
        root.set_linvel(root.linvel() + dv, true);
    }

    /// Sets the command of every actuated joint, `[num_actuated]`: position targets (rad or m),
    /// velocity targets (rad/s or m/s) or efforts (N·m or N) depending on the actuator mode.
    /// `stiffness` and `damping` scale the configured gains per joint (domain randomization;
    /// pass 1.0 for nominal). Efforts are applied by [`Articulation::apply_efforts`] before
    /// every physics substep.
    pub fn command(&mut self, world: &mut PhysicsWorld, command: &[f32], gain_scale: f32) {
        let kp = self.actuator.stiffness as f32 * gain_scale;
        let kd = self.actuator.damping as f32 * gain_scale;
        for (i, &d) in self.actuated.iter().enumerate() {
            let dof = self.dofs[d];
            match self.actuator.mode {
                ControlMode::Torque => self.torque[i] = command[i].clamp(-dof.effort, dof.effort),
                mode => {
                    let Some((mb, link)) = world.multibody_joints.get_mut(dof.handle) else { continue };
                    let joint = &mut mb.link_mut(link).expect("articulation link exists").joint.data;
                    match mode {
                        ControlMode::Position => {
                            joint.set_motor(dof.axis, command[i].clamp(dof.lower, dof.upper), 0.0, kp, kd)
                        }
                        _ => joint.set_motor(dof.axis, 0.0, command[i], 0.0, kd),
                    };
                    joint.set_motor_max_force(dof.axis, dof.effort);
                }
            }
        }
    }

    /// Applies the torque-mode efforts as equal and opposite wrenches on each joint's child and
    /// parent bodies at the joint: a pure generalized force on that joint. Call before every
    /// physics substep (the joint axis moves); does nothing in the other modes.
    pub fn apply_efforts(&self, world: &mut PhysicsWorld) {
        if self.actuator.mode != ControlMode::Torque {
            return;
        }
        for dof in &self.dofs {
            for body in [dof.child, dof.parent] {
                world.bodies[body].reset_forces(false);
                world.bodies[body].reset_torques(false);
            }
        }
        for (i, &d) in self.actuated.iter().enumerate() {
            let dof = self.dofs[d];
            let frame = *world.bodies[dof.child].position() * dof.frame2;
            let axis = frame.rotation * Vector::X;
            let effort = self.torque[i];
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
