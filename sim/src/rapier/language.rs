//! Language-conditioned task families: one scene, many instructions.
//!
//! A task whose [`CommandConfig::language`](super::task_config::CommandConfig::language) is set draws,
//! for every episode of every environment, one *variant* of a family: a verb applied to one of
//! the coloured objects of the scene (and, for stacking, onto another), with its instruction
//! string ("pick up the red cube", "push the green cube to the left", "stack the blue cube on
//! the yellow cube"), its success criterion and its target. The object the instruction names
//! becomes *the* object of every object term (observations, rewards), so the terms of
//! single-object tasks work unchanged; [`ObsKind::Instruction`](super::task_config::ObsKind) puts the
//! variant's one-hot into the vector observation for policies that do not read language, and
//! [`VecEnv::instruction`](crate::VecEnv::instruction) gives the string.
//!
//! Variants are numbered in a fixed order ([`variants`]): every `pick` (object order), then every
//! `push` (object-major, left then right), then every `stack` (object-major, onto every other
//! object in order), then every `place` (object order; onto the target pad, a visual-only square
//! drawn per episode on the table). Held-out variants ([`LanguageConfig::held_out`]) are never drawn in the
//! `train` split and are the only ones drawn in the `held_out` split, to measure generalization
//! to unseen verb/colour combinations.

use serde::{Deserialize, Serialize};

/// Which variants episodes are drawn from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Split {
    /// Every variant except the held-out ones (training).
    #[default]
    Train,
    /// Only the held-out variants (generalization evaluation).
    HeldOut,
    /// Every variant.
    All,
}

/// A language-conditioned family over the scene's objects (see the module documentation).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LanguageConfig {
    /// Colour word of each object of `env.scene.objects`, in order (`"red"`, …), `[num_objects]`;
    /// every object is a cube the instructions call "the <colour> cube".
    pub colors: Vec<String>,
    /// Which verbs the family has: any of `pick`, `push`, `stack`.
    pub verbs: Vec<Verb>,
    /// Instructions (exact strings of [`variants`]) held out of training.
    #[serde(default)]
    pub held_out: Vec<String>,
    /// Which variants are drawn.
    #[serde(default)]
    pub split: Split,
    /// `pick`: the object counts as picked when its centre is this far above its resting height, m.
    pub lift_height: f32,
    /// `push`: the object counts as pushed when it moved this far along the direction, m,
    /// staying on the table (less than 1 cm above its resting height).
    pub push_distance: f32,
    /// `stack`: largest horizontal offset between the two objects' centres, m.
    pub stack_tolerance: f32,
    /// `place`: the target pad, a visual-only square of side `2 × radius` on the table, drawn
    /// per episode in this area and at least `clearance` from every object (see
    /// [`PlaceTarget`]); `None` when the family has no `place` verb.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub place: Option<PlaceTarget>,
}

/// The target pad of the `place` verb.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlaceTarget {
    /// The pad's centre is drawn uniformly in `[x, y]` ranges, m (world frame).
    pub area: [[f32; 2]; 2],
    /// Half side of the pad, m; the object counts as placed when its centre is within it.
    pub radius: f32,
    /// Smallest distance from the pad's centre to any object's centre at reset, m (redrawn up
    /// to 32 times, keeping the farthest draw).
    pub clearance: f32,
    /// RGBA colour of the pad in `[0, 1]` (for cameras and viewers).
    pub color: [f32; 4],
}

/// What an instruction asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verb {
    /// Pick the object up ("pick up the red cube").
    Pick,
    /// Push the object sideways along the table ("push the red cube to the left"/"right";
    /// left is the robot base's +y).
    Push,
    /// Put the object on top of another ("stack the red cube on the blue cube") and let go.
    Stack,
    /// Put the object on the target pad ("put the red cube on the target") and let go.
    Place,
}

/// One variant of a family.
#[derive(Debug, Clone, PartialEq)]
pub struct Variant {
    /// What is asked.
    pub verb: Verb,
    /// Index of the object acted on (into `env.scene.objects`).
    pub object: usize,
    /// `stack`: the object to stack on; `None` otherwise.
    pub onto: Option<usize>,
    /// `push`: direction in the base frame, `+1` left (+y) or `-1` right (−y); 0 otherwise.
    pub direction: f32,
    /// The instruction string.
    pub instruction: String,
}

/// The variants of `config`, in the order of the module documentation.
pub fn variants(config: &LanguageConfig) -> Vec<Variant> {
    let mut out = Vec::new();
    let colors = &config.colors;
    let mut verbs = config.verbs.clone();
    verbs.sort_by_key(|v| *v as u8);
    verbs.dedup();
    for verb in verbs {
        for (i, c) in colors.iter().enumerate() {
            match verb {
                Verb::Pick => out.push(Variant {
                    verb,
                    object: i,
                    onto: None,
                    direction: 0.0,
                    instruction: format!("pick up the {c} cube"),
                }),
                Verb::Push => {
                    for (direction, side) in [(1.0, "left"), (-1.0, "right")] {
                        out.push(Variant {
                            verb,
                            object: i,
                            onto: None,
                            direction,
                            instruction: format!("push the {c} cube to the {side}"),
                        });
                    }
                }
                Verb::Place => out.push(Variant {
                    verb,
                    object: i,
                    onto: None,
                    direction: 0.0,
                    instruction: format!("put the {c} cube on the target"),
                }),
                Verb::Stack => {
                    for (j, d) in colors.iter().enumerate().filter(|&(j, _)| j != i) {
                        out.push(Variant {
                            verb,
                            object: i,
                            onto: Some(j),
                            direction: 0.0,
                            instruction: format!("stack the {c} cube on the {d} cube"),
                        });
                    }
                }
            }
        }
    }
    out
}

/// A family resolved once for a batch: its variants and which of them are drawn.
#[derive(Debug, Clone, PartialEq)]
pub struct LanguageSpec {
    /// The configuration.
    pub config: LanguageConfig,
    /// Every variant, `[num_variants]`.
    pub variants: Vec<Variant>,
    /// Whether each variant is held out, `[num_variants]`.
    pub held_out: Vec<bool>,
    /// Indices of the variants episodes are drawn from (the split), uniformly.
    pub drawn: Vec<usize>,
}

impl LanguageSpec {
    /// Resolves `config` for a scene of `num_objects` objects; errors name the field at fault.
    pub fn new(config: &LanguageConfig, num_objects: usize) -> Result<Self, String> {
        let field = "env.command.language";
        if config.colors.len() != num_objects {
            return Err(format!(
                "`{field}.colors` has {} colours; `env.scene.objects` has {num_objects} objects",
                config.colors.len()
            ));
        }
        if let Some((i, c)) =
            config.colors.iter().enumerate().find(|(i, c)| c.is_empty() || config.colors[..*i].contains(c))
        {
            return Err(format!("`{field}.colors[{i}]`: \"{c}\" is empty or used twice"));
        }
        if config.verbs.is_empty() {
            return Err(format!("`{field}.verbs`: at least one verb is needed"));
        }
        if config.verbs.contains(&Verb::Stack) && num_objects < 2 {
            return Err(format!("`{field}.verbs`: `stack` needs at least two objects"));
        }
        for (name, v) in [
            ("lift_height", config.lift_height),
            ("push_distance", config.push_distance),
            ("stack_tolerance", config.stack_tolerance),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return Err(format!("`{field}.{name}` must be a positive number, got {v}"));
            }
        }
        match &config.place {
            None if config.verbs.contains(&Verb::Place) => {
                return Err(format!("`{field}.place`: the `place` verb needs a target pad"));
            }
            Some(p) => {
                let ok = |v: f32| v.is_finite() && v > 0.0;
                if !(ok(p.radius) && p.clearance.is_finite() && p.clearance >= 0.0) {
                    return Err(format!("`{field}.place`: radius must be positive and clearance >= 0"));
                }
                if !p.area.iter().all(|r| r[0].is_finite() && r[1].is_finite() && r[0] <= r[1]) {
                    return Err(format!("`{field}.place.area` must be [[x_min, x_max], [y_min, y_max]]"));
                }
            }
            None => {}
        }
        let variants = variants(config);
        let mut held_out = vec![false; variants.len()];
        for (k, text) in config.held_out.iter().enumerate() {
            let Some(i) = variants.iter().position(|v| &v.instruction == text) else {
                return Err(format!("`{field}.held_out[{k}]`: \"{text}\" is not an instruction of this family"));
            };
            held_out[i] = true;
        }
        let drawn: Vec<usize> = (0..variants.len())
            .filter(|&i| match config.split {
                Split::Train => !held_out[i],
                Split::HeldOut => held_out[i],
                Split::All => true,
            })
            .collect();
        if drawn.is_empty() {
            return Err(format!("`{field}.split`: {:?} leaves no variant to draw", config.split));
        }
        Ok(Self { config: config.clone(), variants, held_out, drawn })
    }

    /// Number of variants (the width of the instruction one-hot).
    pub fn len(&self) -> usize {
        self.variants.len()
    }

    /// Whether the family has no variants (never true for a resolved spec).
    pub fn is_empty(&self) -> bool {
        self.variants.is_empty()
    }

    /// Index of the variant whose instruction is `text`.
    pub fn find(&self, text: &str) -> Option<usize> {
        self.variants.iter().position(|v| v.instruction == text)
    }
}
