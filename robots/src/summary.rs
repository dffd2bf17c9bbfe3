//! A human-readable summary of a [`RobotModel`], as `embodia robot check` prints it.

use crate::model::{Joint, JointKind, RobotModel};

impl RobotModel {
    /// A multi-line summary: a headline (name, counts, actuated degrees of freedom, total mass
    /// in kg), then one aligned row per link (name, mass in kg, or `massless`) and per joint
    /// (name, type, `parent -> child`, position range, effort and velocity limits in the
    /// joint's units, and the joint it mimics).
    ///
    /// ```text
    /// robot "arm": 4 links, 3 joints, 2 actuated DoF, total mass 3.5 kg
    /// links:
    ///   base   2 kg
    ///   upper  1.5 kg
    ///   tool   massless
    /// joints:
    ///   shoulder  revolute  base -> upper  [-1.5708, 1.5708] rad  effort 20 N·m  velocity 2 rad/s
    /// ```
    pub fn summary(&self) -> String {
        let mut out = format!(
            "robot \"{}\": {} links, {} joints, {} actuated DoF, total mass {} kg\n",
            self.name,
            self.links.len(),
            self.joints.len(),
            self.actuated_joints().len(),
            number(self.total_mass())
        );
        out.push_str("links:\n");
        let links = self.links.iter().map(|l| {
            let mass = l.inertial.map_or("massless".to_string(), |i| format!("{} kg", number(i.mass)));
            vec![l.name.clone(), mass]
        });
        out.push_str(&table(links.collect()));
        out.push_str("joints:\n");
        out.push_str(&table(self.joints.iter().map(|j| self.joint_row(j)).collect()));
        out
    }

    fn joint_row(&self, joint: &Joint) -> Vec<String> {
        let mut row = vec![
            joint.name.clone(),
            joint.kind.urdf_name().to_string(),
            format!("{} -> {}", self.links[joint.parent].name, self.links[joint.child].name),
        ];
        let (position, force, speed) = match joint.kind {
            JointKind::Prismatic => ("m", "N", "m/s"),
            _ => ("rad", "N·m", "rad/s"),
        };
        if let Some(limit) = joint.limit {
            row.push(if joint.kind == JointKind::Continuous {
                "unbounded".to_string()
            } else {
                format!("[{}, {}] {position}", number(limit.lower), number(limit.upper))
            });
            row.push(format!("effort {} {force}", number(limit.effort)));
            row.push(format!("velocity {} {speed}", number(limit.velocity)));
        }
        if let Some(m) = joint.mimic {
            row.push(format!(
                "mimics {} (multiplier {}, offset {} {position})",
                self.joints[m.joint].name,
                number(m.multiplier),
                number(m.offset)
            ));
        }
        row
    }
}

/// `rows` indented by two spaces, columns left-aligned and separated by two spaces.
fn table(rows: Vec<Vec<String>>) -> String {
    let mut widths = Vec::new();
    for row in &rows {
        widths.resize(widths.len().max(row.len()), 0);
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in rows {
        let cells: Vec<String> = row.iter().zip(&widths).map(|(cell, &w)| format!("{cell:<w$}")).collect();
        out.push_str("  ");
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

/// `x` with about five significant digits and no trailing zeros (`inf` for infinity).
fn number(x: f64) -> String {
    if x == 0.0 {
        return "0".to_string();
    }
    if !x.is_finite() {
        return x.to_string();
    }
    let decimals = (4 - x.abs().log10().floor() as i32).clamp(0, 12) as usize;
    let s = format!("{x:.decimals$}");
    let s = if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.') } else { &s };
    s.to_string()
}
