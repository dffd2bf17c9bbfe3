//! Which shapes may touch: MuJoCo's collision bitmasks as rapier collision groups, and
//! `<contact><exclude>` pairs as a contact filter.
//!
//! MuJoCo lets two geoms touch when `contype` of one and `conaffinity` of the other share a
//! bit, either way round. rapier's [`InteractionTestMode::Or`] is that test with memberships
//! for `contype` and filter for `conaffinity`, when both colliders use it. The scene's own
//! colliders (ground, table, objects) are MuJoCo's default geoms (`contype` = `conaffinity`
//! = 1) under the same test, so that an MJCF robot's shapes touch them as in MuJoCo; robots
//! without bitmasks keep rapier's default groups (everything), which touch everything.

use rapier3d::prelude::*;

/// The collision group that a robot's colliders alone belong to under impulse joints without
/// self-collisions (see [`super::JointModel::Impulse`]). MJCF bitmasks may not use its bit.
pub const SELF_GROUP: Group = Group::GROUP_32;

/// Collision groups of the scene's ground, table and objects: MuJoCo's default geom (bit 1 in
/// both masks) under the either-way test; the filter also holds [`SELF_GROUP`] so that robots
/// kept apart from themselves in that group still touch the scene.
pub const SCENE_GROUPS: InteractionGroups =
    InteractionGroups::new(Group::GROUP_1, Group::GROUP_1.union(SELF_GROUP), InteractionTestMode::Or);

/// The collision groups of a shape with MuJoCo bitmasks `contype` and `conaffinity`. Errors
/// when either uses the bit of [`SELF_GROUP`].
pub fn mjcf_groups(contype: u32, conaffinity: u32) -> Result<InteractionGroups, String> {
    let reserved = SELF_GROUP.bits();
    if (contype | conaffinity) & reserved != 0 {
        return Err(format!(
            "contype {contype} / conaffinity {conaffinity}: bit 32 (value {reserved}) is reserved by embodia"
        ));
    }
    Ok(InteractionGroups::new(
        Group::from_bits_retain(contype),
        Group::from_bits_retain(conaffinity),
        InteractionTestMode::Or,
    ))
}

/// Pairs of rigid bodies whose colliders never touch (MJCF `<contact><exclude>`), as rapier
/// physics hooks. Only colliders with [`ActiveHooks::FILTER_CONTACT_PAIRS`] ask it.
#[derive(Debug, Clone, Default)]
pub struct ExcludedPairs {
    /// Each pair with the smaller handle first.
    pairs: Vec<(RigidBodyHandle, RigidBodyHandle)>,
}

impl ExcludedPairs {
    /// Excludes contacts between `a` and `b` (no-op for a body with itself).
    pub fn insert(&mut self, a: RigidBodyHandle, b: RigidBodyHandle) {
        let pair = ordered(a, b);
        if a != b && !self.pairs.contains(&pair) {
            self.pairs.push(pair);
        }
    }

    /// Whether `body` is in any pair (its colliders need the hook).
    pub fn involves(&self, body: RigidBodyHandle) -> bool {
        self.pairs.iter().any(|&(a, b)| a == body || b == body)
    }

    /// Whether contacts between `a` and `b` are excluded.
    pub fn excludes(&self, a: RigidBodyHandle, b: RigidBodyHandle) -> bool {
        self.pairs.contains(&ordered(a, b))
    }
}

fn ordered(a: RigidBodyHandle, b: RigidBodyHandle) -> (RigidBodyHandle, RigidBodyHandle) {
    if a.into_raw_parts() <= b.into_raw_parts() { (a, b) } else { (b, a) }
}

impl PhysicsHooks for ExcludedPairs {
    fn filter_contact_pair(&self, context: &PairFilterContext) -> Option<SolverFlags> {
        match (context.rigid_body1, context.rigid_body2) {
            (Some(a), Some(b)) if self.excludes(a, b) => None,
            _ => Some(SolverFlags::default()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mjcf_groups_touch_as_mujoco_decides() {
        let touch = |a: (u32, u32), b: (u32, u32)| mjcf_groups(a.0, a.1).unwrap().test(mjcf_groups(b.0, b.1).unwrap());
        assert!(touch((1, 1), (1, 1)));
        assert!(touch((1, 0), (0, 1)), "contype of one and conaffinity of the other");
        assert!(!touch((1, 0), (1, 0)), "contype alone never touches contype alone");
        assert!(!touch((2, 2), (1, 1)));
        // The scene is a default geom: a robot shape with bit 2 only passes through the floor.
        assert!(!mjcf_groups(2, 2).unwrap().test(SCENE_GROUPS));
        assert!(mjcf_groups(0, 1).unwrap().test(SCENE_GROUPS));
        assert!(InteractionGroups::all().test(SCENE_GROUPS), "robots without bitmasks touch the scene");
        assert!(mjcf_groups(1 << 31, 1).unwrap_err().contains("reserved"));
    }

    #[test]
    fn excluded_pairs_are_unordered() {
        let (a, b, c) = (
            RigidBodyHandle::from_raw_parts(1, 0),
            RigidBodyHandle::from_raw_parts(2, 0),
            RigidBodyHandle::from_raw_parts(3, 0),
        );
        let mut pairs = ExcludedPairs::default();
        pairs.insert(b, a);
        assert!(pairs.excludes(a, b) && pairs.excludes(b, a));
        assert!(!pairs.excludes(a, c) && pairs.involves(b) && !pairs.involves(c));
    }
}
