//! Where a rapier task's cameras stand: [`RenderConfig::for_task`]. The renderer ([`crate::camera`])
//! knows nothing about tasks; this places its cameras from a task's scene.

use super::task_config::TaskConfig;
use crate::camera::{CameraConfig, Lens, Lighting, Mount, Randomization, RenderConfig};

impl RenderConfig {
    /// Cameras for a rapier task at `width × height`: `front`, fixed, looking at the table
    /// (or the robot's base) from the front and above (for language tasks, at the area their
    /// objects are drawn in, closer), and, where the task names an end
    /// effector, `wrist`, on it, looking along its approach axis. Distractors, when enabled, stand
    /// on the table.
    pub fn for_task(task: &TaskConfig, width: usize, height: usize) -> Self {
        let scene = &task.scene;
        let (center, surface, half) = match &scene.table {
            Some(t) => ([t.center[0], t.center[1], t.height], t.height, [t.size[0] / 2.0, t.size[1] / 2.0]),
            None => (scene.base_position, 0.0, [0.3, 0.3]),
        };
        let reach = half[0].max(half[1]);
        let eye = [center[0] + 1.1 * reach + 0.2, center[1], center[2] + 0.9 * reach + 0.2];
        let mut front = CameraConfig {
            name: "front".into(),
            width,
            height,
            lens: Lens::Fov { vertical_deg: 50.0 },
            mount: Mount::LookAt { eye, target: [center[0] - 0.2 * reach, center[1], center[2] + 0.05] },
            near: 0.02,
            far: 6.0,
        };
        if task.command.language.is_some() && !scene.objects.is_empty() {
            // Language tasks are about which object is which: frame the area the objects are
            // drawn in (from the front and above, 40° field of view) so that they are larger.
            let (mut lo, mut hi) = ([f32::INFINITY; 2], [f32::NEG_INFINITY; 2]);
            for o in &scene.objects {
                (lo[0], hi[0]) = (lo[0].min(o.x[0]), hi[0].max(o.x[1]));
                (lo[1], hi[1]) = (lo[1].min(o.y[0]), hi[1].max(o.y[1]));
            }
            let mid = [(lo[0] + hi[0]) / 2.0, (lo[1] + hi[1]) / 2.0];
            let extent = ((hi[0] - lo[0]).max(hi[1] - lo[1])) / 2.0 + 0.08;
            front.lens = Lens::Fov { vertical_deg: 40.0 };
            front.mount = Mount::LookAt {
                eye: [mid[0] + 1.5 * extent + 0.1, mid[1], surface + 1.2 * extent + 0.15],
                target: [mid[0] - 0.05, mid[1], surface],
            };
        }
        let mut cameras = vec![front];
        if let Some(ee) = &scene.end_effector {
            // Behind the end effector, off its approach axis and tilted back towards it, so the
            // jaws and what lies between them stay in view. The SO-101's gripper frame
            // approaches along x, the arm7's tcp along z.
            let (xyz, rpy) = match scene.robot.as_str() {
                "so101" => ([-0.08, 0.0, 0.06], [0.0, std::f32::consts::FRAC_PI_2 + 0.4, 0.0]),
                _ => ([0.1, 0.0, -0.1], [0.0, -0.4, 0.0]),
            };
            cameras.push(CameraConfig {
                name: "wrist".into(),
                width,
                height,
                lens: Lens::Fov { vertical_deg: 70.0 },
                mount: Mount::Body { body: format!("robot/{ee}"), xyz, rpy },
                near: 0.01,
                far: 3.0,
            });
        }
        let randomization = Randomization {
            distractor_area: [[center[0] - half[0], center[0] + half[0]], [center[1] - half[1], center[1] + half[1]]],
            distractor_surface: surface,
            ..Randomization::default()
        };
        Self { cameras, lighting: Lighting::default(), randomization, translucent: false }
    }
}
