//! [`SceneView`] of rapier environments: robot links with their URDF visuals, objects, the
//! table and the ground, and the target (and, for planar goals, a ghost of the object at its
//! goal pose).

use embodia_robots::{Geometry, Pose as UrdfPose, Shape};
use rapier3d::prelude::*;

use super::env::RapierEnv;
use super::objects::{ObjectShape, TABLE_THICKNESS};
use crate::view::{Marker, SceneView, ViewPose, VisualBody};

/// Half the thickness of the drawn `place` target pad (visual only), m.
const PAD_HALF_HEIGHT: f32 = 0.001;

/// Side of the square of ground drawn, m.
const GROUND_SIZE: f64 = 2.0;

fn view_pose(p: &Pose) -> ViewPose {
    let t = p.translation;
    let r = p.rotation;
    ViewPose { translation: [t.x, t.y, t.z], rotation: [r.x, r.y, r.z, r.w] }
}

fn shape(origin: [f64; 3], geometry: Geometry, rgba: [f32; 4]) -> Shape {
    Shape { name: None, origin: UrdfPose::translation(origin[0], origin[1], origin[2]), geometry, rgba: Some(rgba) }
}

/// The boxes of an object's shape in its frame.
fn object_shapes(s: &ObjectShape, rgba: [f32; 4]) -> Vec<Shape> {
    let h = 2.0 * s.half_height() as f64;
    let (rects, n) = s.footprint();
    rects[..n]
        .iter()
        .map(|&(c, half)| {
            let size = [2.0 * half[0] as f64, 2.0 * half[1] as f64, h];
            shape([c[0] as f64, c[1] as f64, 0.0], Geometry::Box { size }, rgba)
        })
        .collect()
}

impl RapierEnv {
    fn goal_ghost(&self) -> Option<&super::objects::ObjectConfig> {
        let c = &self.spec().config;
        c.command.target_yaw.and(c.scene.objects.first())
    }

    /// The `place` target pad of a language family, if it has one.
    fn place_pad(&self) -> Option<&super::language::PlaceTarget> {
        self.spec().language.as_ref().and_then(|l| l.config.place.as_ref())
    }

    fn base_pose(&self, env: usize) -> Pose {
        let scene = &self.scenes()[env];
        *scene.world().bodies[scene.robot().root()].position()
    }
}

impl SceneView for RapierEnv {
    fn bodies(&self) -> Vec<VisualBody> {
        let c = &self.spec().config;
        let mut bodies = Vec::new();
        if c.scene.ground {
            let size = [GROUND_SIZE, GROUND_SIZE, 0.002];
            let rgba = [0.82, 0.82, 0.80, 1.0];
            bodies.push(VisualBody {
                path: "ground".into(),
                shapes: vec![shape([0.0, 0.0, -0.001], Geometry::Box { size }, rgba)],
                fixed: true,
            });
        }
        if let Some(t) = &c.scene.table {
            let size = [t.size[0] as f64, t.size[1] as f64, TABLE_THICKNESS as f64];
            let center = [t.center[0] as f64, t.center[1] as f64, (t.height - TABLE_THICKNESS / 2.0) as f64];
            let rgba = [0.72, 0.58, 0.42, 1.0];
            bodies.push(VisualBody {
                path: "table".into(),
                shapes: vec![shape(center, Geometry::Box { size }, rgba)],
                fixed: true,
            });
        }
        for link in &self.spec().model.links {
            if !link.visuals.is_empty() {
                bodies.push(VisualBody {
                    path: format!("robot/{}", link.name),
                    shapes: link.visuals.clone(),
                    fixed: false,
                });
            }
        }
        for o in &c.scene.objects {
            bodies.push(VisualBody {
                path: format!("objects/{}", o.name),
                shapes: object_shapes(&o.shape, o.color),
                fixed: false,
            });
        }
        if let Some(o) = self.goal_ghost() {
            let [r, g, b, _] = o.color;
            bodies.push(VisualBody {
                path: "goal".into(),
                shapes: object_shapes(&o.shape, [r, g, b, 0.3]),
                fixed: false,
            });
        }
        if let Some(p) = self.place_pad() {
            let side = 2.0 * p.radius as f64;
            bodies.push(VisualBody {
                path: "target_pad".into(),
                shapes: vec![shape(
                    [0.0, 0.0, 0.0],
                    Geometry::Box { size: [side, side, 2.0 * PAD_HALF_HEIGHT as f64] },
                    p.color,
                )],
                fixed: false,
            });
        }
        bodies
    }

    fn poses(&self, env: usize, out: &mut Vec<ViewPose>) {
        out.clear();
        let c = &self.spec().config;
        let scene = &self.scenes()[env];
        if c.scene.ground {
            out.push(ViewPose::IDENTITY);
        }
        if c.scene.table.is_some() {
            out.push(ViewPose::IDENTITY);
        }
        for (i, link) in self.spec().model.links.iter().enumerate() {
            if !link.visuals.is_empty() {
                out.push(view_pose(&scene.robot().link_pose(scene.world(), i)));
            }
        }
        out.extend(scene.object_poses().map(|p| view_pose(&p)));
        if let Some(o) = self.goal_ghost() {
            let goal = Pose::from_parts(scene.target(), Rotation::from_rotation_z(scene.target_yaw()));
            let mut pose = self.base_pose(env) * goal;
            // The goal lies on the table like the object: its frame half a height above the top.
            if let Some(t) = &c.scene.table {
                pose.translation.z = t.height + o.shape.half_height();
            }
            out.push(view_pose(&pose));
        }
        if self.place_pad().is_some() {
            let at = scene.place_target();
            out.push(view_pose(&Pose::from_translation(at + Vector::Z * PAD_HALF_HEIGHT)));
        }
    }

    fn markers(&self, env: usize, out: &mut Vec<Marker>) {
        out.clear();
        if self.spec().config.command.target.is_some() {
            let p = self.base_pose(env) * self.scenes()[env].target();
            out.push(Marker {
                path: "target".into(),
                position: [p.x, p.y, p.z],
                radius: 0.015,
                rgba: [0.1, 0.8, 0.2, 1.0],
            });
        }
    }

    fn step_seconds(&self) -> f32 {
        self.spec().config.scene.control_dt()
    }
}

#[cfg(test)]
mod tests {
    use crate::VecEnv;

    #[test]
    fn view_lists_links_objects_and_target_with_world_poses() {
        let task = crate::rapier::rapier_tasks().into_iter().find(|t| t.info.name == "pick-cube").unwrap();
        let config = (task.config)();
        let model = embodia_robots::scene_robot(&config.scene.robot).unwrap();
        let mut env = super::RapierEnv::new(task.info, config, model, 2).unwrap();
        env.reset(3);
        let actions = vec![0.3f32; 2 * env.action_spec().bounds.dim()];
        for _ in 0..5 {
            env.step(&actions).unwrap();
        }
        let view = env.scene_view().expect("rapier tasks have a view");
        let bodies = view.bodies();
        let paths: Vec<&str> = bodies.iter().map(|b| b.path.as_str()).collect();
        assert!(paths.contains(&"table") && paths.iter().any(|p| p.starts_with("objects/")), "{paths:?}");
        assert!(paths.iter().filter(|p| p.starts_with("robot/")).count() >= 3, "{paths:?}");
        assert!(bodies.iter().all(|b| !b.shapes.is_empty()));
        let mut poses = Vec::new();
        view.poses(1, &mut poses);
        assert_eq!(poses.len(), bodies.len());
        // Link poses are the articulation's, objects the rigid bodies'.
        let rapier = &env;
        let scene = &rapier.scenes()[1];
        let links = &rapier.spec().model.links;
        let (i, link) = links.iter().enumerate().rev().find(|(_, l)| !l.visuals.is_empty()).unwrap();
        let k = paths.iter().position(|p| *p == format!("robot/{}", link.name)).unwrap();
        let expected = scene.robot().link_pose(scene.world(), i).translation;
        assert_eq!(poses[k].translation, [expected.x, expected.y, expected.z]);
        let k = paths.iter().position(|p| p.starts_with("objects/")).unwrap();
        let expected = scene.object_pose(0).translation;
        assert_eq!(poses[k].translation, [expected.x, expected.y, expected.z]);
        let mut markers = Vec::new();
        view.markers(1, &mut markers);
        assert_eq!(markers.len(), 1);
        assert!(view.step_seconds() > 0.0);
        // Classic tasks have nothing to draw.
        assert!(crate::make("pendulum", 1).unwrap().scene_view().is_none());
    }
}
