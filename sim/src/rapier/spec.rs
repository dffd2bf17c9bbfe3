//! [`SceneSpec`]: what every environment of a rapier task shares, resolved once from the task
//! config and the robot (joint indices, observation sizes, the language family).

use embodia_robots::{CollisionFilter, RobotModel, SceneRobot};

use super::drives::{JointDrive, drive_origin, mode_of, resolve_drives};
use super::language::LanguageSpec;
use super::objects::ObjectsSpec;
use super::task_config::{
    ActionKind, ObsKind, ObsTerm, RewardKind, RewardTerm, SuccessTerm, TaskConfig, TerminationTerm,
};
use crate::{ActionState, SimError};

/// What every environment of a batch shares: the task and everything derived from it once.
#[derive(Debug)]
pub struct SceneSpec {
    /// The task.
    pub config: TaskConfig,
    /// The robot.
    pub model: RobotModel,
    /// How each actuated joint is driven, `[num_actuated]`.
    pub drives: Vec<JointDrive>,
    /// The robot file's collision bitmasks (MJCF), for the shapes that have them.
    pub collision_filters: Vec<CollisionFilter>,
    /// Pairs of links whose shapes never touch (MJCF `<contact><exclude>`).
    pub excluded_pairs: Vec<(usize, usize)>,
    /// For each action component, the index of its joint among the actuated joints.
    pub driven: Vec<usize>,
    /// Default position per actuated joint, rad or m, `[num_actuated]`.
    pub default_q: Vec<f32>,
    /// Reward terms with the actuated joints each sums over.
    pub rewards: Vec<(RewardTerm, Vec<usize>)>,
    /// Terminations, with the actuated joint of `joint_out` terms.
    pub terminations: Vec<(TerminationTerm, usize)>,
    /// Index of the end-effector link, if the task has one.
    pub end_effector: Option<usize>,
    /// Actor observation length.
    pub obs_dim: usize,
    /// Critic observation length.
    pub critic_dim: usize,
    /// Index among the actuated joints of the gripper driven by the last action component.
    pub gripper: Option<usize>,
    /// What the scenes share about their objects.
    pub objects: ObjectsSpec,
    /// The language family of `command.language`, resolved; `None` for single-task configs.
    pub language: Option<LanguageSpec>,
}

impl SceneSpec {
    /// Resolves joint and link names of `config` against `robot`, and how its joints are
    /// driven (see [`super::drives`]).
    pub fn new(config: TaskConfig, robot: impl Into<SceneRobot>) -> Result<Self, SimError> {
        let bad = SimError::InvalidTask;
        config.validate().map_err(bad)?;
        let robot = robot.into();
        let drives = resolve_drives(&config.scene, &robot).map_err(bad)?;
        let model = &robot.model;
        let actuated = model.actuated_joints();
        let find = |field: &str, name: &str| {
            (0..actuated.len())
                .find(|&i| model.joints[actuated[i]].name == name)
                .ok_or_else(|| bad(format!("`env.{field}`: robot \"{}\" has no actuated joint \"{name}\"", model.name)))
        };
        let find_all = |field: &str, names: &[String]| -> Result<Vec<usize>, SimError> {
            if names.is_empty() {
                return Ok((0..actuated.len()).collect());
            }
            names.iter().map(|name| find(field, name)).collect()
        };
        let gripper = match &config.action.gripper {
            Some(g) => Some(find("action.gripper.joint", &g.joint)?),
            None => None,
        };
        let mut driven = find_all("action.joints", &config.action.joints)?;
        if config.action.joints.is_empty() {
            driven.retain(|&j| Some(j) != gripper);
        }
        let mut default_q = vec![0.0; actuated.len()];
        for (name, &value) in &config.scene.default_joint_positions {
            default_q[find("scene.default_joint_positions", name)?] = value;
        }
        let rewards = config
            .rewards
            .iter()
            .map(|(key, term)| Ok((term.clone(), find_all(&format!("rewards.{key}.joints"), &term.joints)?)))
            .collect::<Result<Vec<_>, SimError>>()?;
        let terminations = config
            .terminations
            .iter()
            .map(|t| match t {
                TerminationTerm::JointOut { joint, .. } => Ok((t.clone(), find("terminations.joint", joint)?)),
                _ => Ok((t.clone(), 0)),
            })
            .collect::<Result<Vec<_>, SimError>>()?;
        for (i, q) in default_q.iter_mut().enumerate() {
            let joint = &model.joints[actuated[i]];
            if let Some(limit) = joint.limit.filter(|_| joint.kind != embodia_robots::JointKind::Continuous) {
                *q = q.clamp(limit.lower as f32, limit.upper as f32);
            }
        }
        let end_effector = match &config.scene.end_effector {
            Some(name) => Some(model.link_index(name).ok_or_else(|| {
                bad(format!("`env.scene.end_effector`: robot \"{}\" has no link \"{name}\"", model.name))
            })?),
            None => None,
        };
        let needs_ee = |terms: &[ObsTerm]| {
            terms.iter().any(|t| {
                matches!(t.term, ObsKind::EePos | ObsKind::EeToTarget | ObsKind::EeToObject | ObsKind::EeTargetOffset)
            })
        };
        let uses_ee = needs_ee(&config.observations.policy)
            || config.observations.critic.as_deref().is_some_and(needs_ee)
            || config.rewards.values().any(|r| {
                matches!(
                    r.term,
                    RewardKind::EeDistance
                        | RewardKind::EeDistanceTanh
                        | RewardKind::EeObjectDistanceTanh
                        | RewardKind::ObjectGrasped
                        | RewardKind::GraspedObjectGoalDistanceTanh
                )
            })
            || matches!(config.success, SuccessTerm::EeNearTarget { .. });
        let language = match &config.command.language {
            Some(l) => Some(LanguageSpec::new(l, config.scene.objects.len()).map_err(bad)?),
            None => None,
        };
        let uses_instruction = |terms: &[ObsTerm]| terms.iter().any(|t| t.term == ObsKind::Instruction);
        if language.is_none()
            && (matches!(config.success, SuccessTerm::Instruction)
                || uses_instruction(&config.observations.policy)
                || config.observations.critic.as_deref().is_some_and(uses_instruction))
        {
            return Err(bad("the `instruction` success term and observation need `env.command.language`".into()));
        }
        let needs_object = |terms: &[ObsTerm]| terms.iter().any(|t| is_object_obs(t.term));
        let uses_object = needs_object(&config.observations.policy)
            || config.observations.critic.as_deref().is_some_and(needs_object)
            || config.rewards.values().any(|r| {
                matches!(
                    r.term,
                    RewardKind::EeObjectDistanceTanh
                        | RewardKind::ObjectLifted
                        | RewardKind::ObjectGrasped
                        | RewardKind::ObjectGoalDistanceTanh
                        | RewardKind::GraspedObjectGoalDistanceTanh
                        | RewardKind::TCoverage
                        | RewardKind::ObjectTargetDistanceTanh
                )
            })
            || matches!(
                config.success,
                SuccessTerm::ObjectAtGoal { .. } | SuccessTerm::TCoverage { .. } | SuccessTerm::Instruction
            );
        if uses_object && config.scene.objects.is_empty() {
            return Err(bad("the task uses object terms but `env.scene.objects` is empty".into()));
        }
        let uses_opening = |terms: &[ObsTerm]| terms.iter().any(|t| t.term == ObsKind::GripperOpening);
        let opening = uses_opening(&config.observations.policy)
            || config.observations.critic.as_deref().is_some_and(uses_opening);
        if opening && gripper.is_none() {
            return Err(bad("the `gripper_opening` observation needs `env.action.gripper`".into()));
        }
        let uses_target_offset = |terms: &[ObsTerm]| terms.iter().any(|t| t.term == ObsKind::EeTargetOffset);
        let target_offset = uses_target_offset(&config.observations.policy)
            || config.observations.critic.as_deref().is_some_and(uses_target_offset);
        if target_offset && !config.action.kind.is_end_effector() {
            return Err(bad(
                "the `ee_target_offset` observation needs `env.action.kind = \"end_effector_delta\"` or `\"end_effector_position\"`"
                    .into(),
            ));
        }
        for (kind, name) in [
            (RewardKind::ObjectGrasped, "object_grasped"),
            (RewardKind::GraspedObjectGoalDistanceTanh, "grasped_object_goal_distance_tanh"),
        ] {
            if gripper.is_none() && config.rewards.values().any(|r| r.term == kind) {
                return Err(bad(format!("the `{name}` reward needs `env.action.gripper`")));
            }
        }
        if config.success == SuccessTerm::None && config.rewards.values().any(|r| r.term == RewardKind::Success) {
            return Err(bad("the `success` reward needs a success criterion in `env.success`".into()));
        }
        if uses_ee && end_effector.is_none() {
            return Err(bad("the task uses end-effector terms but `env.scene.end_effector` is not set".into()));
        }
        let ee_action = config.action.kind.is_end_effector();
        if ee_action && driven.is_empty() {
            return Err(bad("`env.action.joints`: end-effector actions need at least one arm joint".into()));
        }
        let wanted = mode_of(config.action.kind);
        let gripper_joint = gripper.map(|g| (g, embodia_robots::ControlMode::Position, "`env.action.gripper`"));
        let kind = format!("`env.action.kind = \"{}\"`", config.action.kind.name());
        for (i, mode, what) in driven.iter().map(|&i| (i, wanted, kind.as_str())).chain(gripper_joint) {
            let drive = &drives[i].actuator;
            if drive.mode != mode {
                return Err(bad(format!(
                    "{what} needs {} control, but joint \"{}\" is driven in {} mode by {}",
                    mode.name(),
                    model.joints[actuated[i]].name,
                    drive.mode.name(),
                    drive_origin(&config.scene, &robot, i),
                )));
            }
        }
        let arm_actions = if ee_action { 3 } else { driven.len() };
        let (na, n) = (actuated.len(), arm_actions + gripper.is_some() as usize);
        let (no, nv) = (config.scene.objects.len(), language.as_ref().map_or(0, LanguageSpec::len));
        let dim = |terms: &[ObsTerm]| terms.iter().map(|t| obs_dim(t.term, na, n, no, nv)).sum();
        let obs_dim = dim(&config.observations.policy);
        let critic_dim = config.observations.critic.as_deref().map_or(obs_dim, dim);
        let objects = ObjectsSpec::new(&config.scene.objects, config.scene.table.as_ref());
        Ok(Self {
            config,
            drives,
            collision_filters: robot.collision_filters,
            excluded_pairs: robot.excluded_pairs,
            model: robot.model,
            driven,
            default_q,
            rewards,
            terminations,
            end_effector,
            obs_dim,
            critic_dim,
            gripper,
            objects,
            language,
        })
    }

    /// Length of observation term `kind`.
    pub fn term_dim(&self, kind: ObsKind) -> usize {
        let nv = self.language.as_ref().map_or(0, LanguageSpec::len);
        obs_dim(kind, self.default_q.len(), self.num_actions(), self.config.scene.objects.len(), nv)
    }

    /// Number of action components (the arm's, then the gripper's if any).
    pub fn num_actions(&self) -> usize {
        self.arm_actions() + self.gripper.is_some() as usize
    }

    /// Number of action components before the gripper's: one per driven joint, or three
    /// (x, y, z) with end-effector actions. The gripper's component is at this index.
    pub fn arm_actions(&self) -> usize {
        if self.config.action.kind.is_end_effector() { 3 } else { self.driven.len() }
    }

    /// Where the policy observation shows what each action commands (see [`ActionState`]):
    /// with joint-position actions (`target = default + scale × action`) and a `joint_pos`
    /// term (`scale' × (q − default)`), driven joint `k`'s action holding it in place is
    /// `obs[offset + j] / (scale' × scale)`; the gripper's action has none.
    pub fn action_states(&self) -> Vec<Option<ActionState>> {
        let a = &self.config.action;
        if a.kind != ActionKind::JointPosition || a.scale == 0.0 {
            return Vec::new();
        }
        let n = self.num_actions();
        let mut offset = 0;
        for term in &self.config.observations.policy {
            if term.term == ObsKind::JointPos && term.scale != 0.0 {
                let mut states: Vec<Option<ActionState>> = self
                    .driven
                    .iter()
                    .map(|&j| Some(ActionState { column: offset + j, scale: 1.0 / (term.scale * a.scale) }))
                    .collect();
                states.resize(n, None);
                return states;
            }
            offset += self.term_dim(term.term);
        }
        Vec::new()
    }
}

/// Length of an observation term for `na` actuated joints, `n` actions, `no` objects and `nv`
/// instruction variants.
fn obs_dim(kind: ObsKind, na: usize, n: usize, no: usize, nv: usize) -> usize {
    match kind {
        ObsKind::ObjectsPos => 3 * no,
        ObsKind::Instruction => nv,
        ObsKind::JointPos | ObsKind::JointVel => na,
        ObsKind::LastAction => n,
        ObsKind::JointPosCosSin => 2 * na,
        ObsKind::BaseHeight | ObsKind::GripperOpening => 1,
        ObsKind::ObjectYawCosSin => 2,
        ObsKind::ObjectQuat => 4,
        _ => 3,
    }
}

/// Whether an observation term is about the object.
fn is_object_obs(kind: ObsKind) -> bool {
    use ObsKind::*;
    matches!(kind, ObjectPos | ObjectQuat | ObjectYawCosSin | ObjectToGoal | EeToObject | ObjectsPos)
}
