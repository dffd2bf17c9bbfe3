//! Training curves as PNG, without a viewer: `runs/<name>/curves.png` after every checkpoint and
//! `embodia plot` over several runs.
//!
//! The figure is a 2 × 4 grid of panels, always [`CURVES_SIZE`] pixels:
//!
//! | | |
//! |---|---|
//! | episode return vs env steps (mean line, min–max band) | episode return vs wall time |
//! | success rate vs env steps | success rate vs wall time |
//! | (without success: episode length) | (without success: env steps/s) |
//! | policy loss | value (critic) loss |
//! | policy entropy | SAC temperature α, or PPO KL when no run has α |
//!
//! Panels without data (e.g. success rate on pendulum) say so instead of drawing axes. Text is
//! drawn with a bundled subset of DejaVu Sans, so nothing depends on the system's fonts.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Once;

use embodia_algos::MetricRow;
use plotters::coord::Shift;
use plotters::prelude::*;

/// File name of the per-iteration metrics inside a run directory (the training loop writes it,
/// this module reads it).
pub const METRICS_FILE: &str = "metrics.csv";
/// File name of the curves inside a run directory.
pub const CURVES_FILE: &str = "curves.png";
/// Width and height of every curves PNG, in pixels.
pub const CURVES_SIZE: (u32, u32) = (1200, 1200);

pub(crate) const FONT: &str = "sans-serif";
static FONT_BYTES: &[u8] = include_bytes!("../assets/fonts/DejaVuSans-subset.ttf");

/// Errors of reading metrics and drawing curves, naming the file (and line) at fault.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// A malformed metrics file.
    #[error("{path}:{line}: {message}")]
    Metrics {
        /// The file.
        path: String,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// A file could not be read or written.
    #[error("{path}: {message}")]
    Io {
        /// The file.
        path: String,
        /// What went wrong.
        message: String,
    },
}

/// One run's metrics under a legend label.
#[derive(Debug, Clone)]
pub struct RunCurves {
    /// Legend label (the run directory's name).
    pub label: String,
    /// The rows of its `metrics.csv`.
    pub rows: Vec<MetricRow>,
}

impl RunCurves {
    /// Reads `dir/metrics.csv`; the label is the directory's name.
    pub fn from_run_dir(dir: &Path) -> Result<Self, PlotError> {
        let label = dir
            .canonicalize()
            .ok()
            .as_deref()
            .and_then(Path::file_name)
            .or_else(|| dir.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| dir.display().to_string());
        Ok(Self { label, rows: read_metrics(&dir.join(METRICS_FILE))? })
    }
}

/// Parses a `metrics.csv` written by the training loop. Columns are found by their header
/// name, so files with fewer or extra columns still read; `env_steps` and `wall_seconds` are
/// required. Empty fields are `None`.
pub fn read_metrics(path: &Path) -> Result<Vec<MetricRow>, PlotError> {
    let text = fs::read_to_string(path)
        .map_err(|e| PlotError::Io { path: path.display().to_string(), message: e.to_string() })?;
    parse_metrics(&text, &path.display().to_string())
}

/// [`read_metrics`] on text; `path` names it in errors.
pub fn parse_metrics(text: &str, path: &str) -> Result<Vec<MetricRow>, PlotError> {
    let err = |line: usize, message: String| PlotError::Metrics { path: path.to_string(), line, message };
    let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l.trim_end_matches('\r')));
    let Some((_, header)) = lines.next() else {
        return Err(err(1, "empty file (expected the header line)".into()));
    };
    let columns: Vec<&str> = header.split(',').map(str::trim).collect();
    for required in ["env_steps", "wall_seconds"] {
        if !columns.contains(&required) {
            return Err(err(1, format!("header has no `{required}` column (header: `{header}`)")));
        }
    }
    let mut rows = Vec::new();
    for (n, line) in lines {
        if line.trim().is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        if fields.len() != columns.len() {
            return Err(err(n, format!("expected {} fields as in the header, found {}", columns.len(), fields.len())));
        }
        let mut row = MetricRow::default();
        for (&name, &field) in columns.iter().zip(&fields) {
            let value = if field.is_empty() {
                None
            } else {
                Some(field.parse::<f64>().map_err(|_| err(n, format!("column `{name}`: `{field}` is not a number")))?)
            };
            let slot = match name {
                "env_steps" => {
                    let v = value.ok_or_else(|| err(n, "column `env_steps` is empty".into()))?;
                    if v < 0.0 || v.fract() != 0.0 {
                        return Err(err(n, format!("column `env_steps`: `{field}` is not a step count")));
                    }
                    row.env_steps = v as u64;
                    continue;
                }
                "wall_seconds" => {
                    row.wall_seconds = value.ok_or_else(|| err(n, "column `wall_seconds` is empty".into()))?;
                    continue;
                }
                "return_mean" => &mut row.return_mean,
                "return_min" => &mut row.return_min,
                "return_max" => &mut row.return_max,
                "episode_length" => &mut row.episode_length,
                "success_rate" => &mut row.success_rate,
                "policy_loss" => &mut row.policy_loss,
                "value_loss" => &mut row.value_loss,
                "entropy" => &mut row.entropy,
                "alpha" => &mut row.alpha,
                "kl" => &mut row.kl,
                "learning_rate" => &mut row.learning_rate,
                "fps" => &mut row.fps,
                "aux_loss" => &mut row.aux_loss,
                "val_loss" => &mut row.val_loss,
                "val_aux_loss" => &mut row.val_aux_loss,
                "clip_fraction" => &mut row.clip_fraction,
                "mixed_groups" => &mut row.mixed_groups,
                _ => continue,
            };
            *slot = value;
        }
        rows.push(row);
    }
    Ok(rows)
}

/// Reads `dir/metrics.csv` and writes `dir/curves.png`; returns the PNG's path.
pub fn write_run_curves(dir: &Path) -> Result<PathBuf, PlotError> {
    let run = RunCurves::from_run_dir(dir)?;
    let out = dir.join(CURVES_FILE);
    plot_runs(&[run], &out)?;
    Ok(out)
}

/// Which horizontal axis a panel uses.
#[derive(Clone, Copy)]
enum XAxis {
    Steps,
    Wall,
}

impl XAxis {
    fn of(self, row: &MetricRow) -> f64 {
        match self {
            XAxis::Steps => row.env_steps as f64,
            XAxis::Wall => row.wall_seconds,
        }
    }

    fn label(self) -> &'static str {
        match self {
            XAxis::Steps => "env steps",
            XAxis::Wall => "wall time (s)",
        }
    }
}

type Field = fn(&MetricRow) -> Option<f64>;

struct Panel {
    title: &'static str,
    x: XAxis,
    y: Field,
    /// Lower and upper edge of a shaded band around the line.
    band: Option<(Field, Field)>,
    log_hint: bool,
}

const COLORS: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

pub(crate) fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // The bundled font is known to parse; a failure would only leave text undrawn.
        let _ = plotters::style::register_font(FONT, FontStyle::Normal, FONT_BYTES);
    });
}

/// Draws the curves of `runs` (one color per run, legend = label) into the PNG `out`.
pub fn plot_runs(runs: &[RunCurves], out: &Path) -> Result<(), PlotError> {
    register_font();
    let draw_err =
        |e: &dyn std::fmt::Display| PlotError::Io { path: out.display().to_string(), message: e.to_string() };
    let has_success = runs.iter().any(|r| r.rows.iter().any(|row| row.success_rate.is_some()));
    let has_alpha = runs.iter().any(|r| r.rows.iter().any(|row| row.alpha.is_some()));
    let last: Panel = if has_alpha {
        Panel { title: "SAC temperature α", x: XAxis::Steps, y: |r| r.alpha, band: None, log_hint: true }
    } else {
        Panel { title: "approximate KL (PPO)", x: XAxis::Steps, y: |r| r.kl, band: None, log_hint: false }
    };
    let band: Option<(Field, Field)> = Some((|r| r.return_min, |r| r.return_max));
    let panels = [
        Panel {
            title: "episode return (mean, min–max)", x: XAxis::Steps, y: |r| r.return_mean, band, log_hint: false
        },
        Panel {
            title: "episode return (mean, min–max)", x: XAxis::Wall, y: |r| r.return_mean, band, log_hint: false
        },
        if has_success {
            Panel { title: "success rate", x: XAxis::Steps, y: |r| r.success_rate, band: None, log_hint: false }
        } else {
            Panel { title: "episode length", x: XAxis::Steps, y: |r| r.episode_length, band: None, log_hint: false }
        },
        if has_success {
            Panel { title: "success rate", x: XAxis::Wall, y: |r| r.success_rate, band: None, log_hint: false }
        } else {
            Panel { title: "throughput (env steps/s)", x: XAxis::Steps, y: |r| r.fps, band: None, log_hint: true }
        },
        Panel { title: "policy loss", x: XAxis::Steps, y: |r| r.policy_loss, band: None, log_hint: false },
        Panel { title: "value loss", x: XAxis::Steps, y: |r| r.value_loss, band: None, log_hint: true },
        Panel { title: "policy entropy", x: XAxis::Steps, y: |r| r.entropy, band: None, log_hint: false },
        last,
    ];
    if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent).map_err(|e| draw_err(&e))?;
    }
    // Written beside and renamed: a failed draw never leaves a truncated curves file behind,
    // nor the temporary one.
    let tmp = out.with_extension("tmp.png");
    let drawn = (|| {
        let root = BitMapBackend::new(&tmp, CURVES_SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(|e| draw_err(&e))?;
        for (area, panel) in root.split_evenly((4, 2)).iter().zip(&panels) {
            draw_panel(area, panel, runs).map_err(|e| draw_err(&e))?;
        }
        root.present().map_err(|e| draw_err(&e))?;
        drop(root);
        fs::rename(&tmp, out).map_err(|e| draw_err(&e))
    })();
    if drawn.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    drawn
}

fn draw_panel(
    area: &DrawingArea<BitMapBackend<'_>, Shift>,
    panel: &Panel,
    runs: &[RunCurves],
) -> Result<(), Box<dyn std::error::Error>> {
    let finite = |v: Option<f64>| v.filter(|x| x.is_finite());
    // Per run: line points and band polygons.
    let mut series = Vec::new();
    let (mut x0, mut x1, mut y0, mut y1) = (f64::INFINITY, f64::NEG_INFINITY, f64::INFINITY, f64::NEG_INFINITY);
    for run in runs {
        let points: Vec<(f64, f64)> =
            run.rows.iter().filter_map(|r| finite((panel.y)(r)).map(|y| (panel.x.of(r), y))).collect();
        let band: Vec<(f64, f64, f64)> = match panel.band {
            Some((lo, hi)) => {
                run.rows.iter().filter_map(|r| Some((panel.x.of(r), finite(lo(r))?, finite(hi(r))?))).collect()
            }
            None => Vec::new(),
        };
        for &(x, y) in &points {
            (x0, x1, y0, y1) = (x0.min(x), x1.max(x), y0.min(y), y1.max(y));
        }
        for &(_, lo, hi) in &band {
            (y0, y1) = (y0.min(lo), y1.max(hi));
        }
        series.push((run.label.as_str(), points, band));
    }
    let title_style = (FONT, 18).into_font();
    if x0 > x1 {
        area.titled(panel.title, title_style.clone())?;
        let (w, h) = area.dim_in_pixel();
        area.draw(&Text::new(
            "no data in these runs",
            (w as i32 / 2 - 80, h as i32 / 2),
            (FONT, 15).into_font().color(&RGBColor(120, 120, 120)),
        ))?;
        return Ok(());
    }
    if x1 - x0 < 1e-12 {
        x1 = x0 + 1.0;
    }
    let pad = ((y1 - y0) * 0.05).max(1e-9 * y1.abs().max(1.0));
    let (y0, y1) = if y1 - y0 < 1e-12 { (y0 - 0.5 - pad, y1 + 0.5 + pad) } else { (y0 - pad, y1 + pad) };
    let log = title_is_log(panel, y0, y1);
    let title = if log { format!("{} (log scale)", panel.title) } else { panel.title.into() };
    let mut builder = ChartBuilder::on(area);
    builder.caption(title, title_style).margin(12).x_label_area_size(38).y_label_area_size(64);
    // Ticks at zero come out of the axis arithmetic as ±1e-17 and the like.
    let snap = |v: f64, span: f64| if v.abs() < 1e-9 * span { 0.0 } else { v };
    let x_fmt = |x: &f64| compact(snap(*x, x1 - x0));
    let y_fmt = |y: &f64| compact(snap(*y, y1 - y0));
    macro_rules! body {
        ($chart:ident) => {{
            $chart
                .configure_mesh()
                .x_desc(panel.x.label())
                .x_label_formatter(&x_fmt)
                .y_label_formatter(&y_fmt)
                .label_style((FONT, 13))
                .axis_desc_style((FONT, 14))
                .light_line_style(RGBColor(235, 235, 235))
                .bold_line_style(RGBColor(205, 205, 205))
                .x_labels(6)
                .y_labels(6)
                .draw()?;
            for (i, (label, points, band)) in series.iter().enumerate() {
                let color = COLORS[i % COLORS.len()];
                if band.len() > 1 {
                    let polygon: Vec<(f64, f64)> = band
                        .iter()
                        .map(|&(x, _, hi)| (x, hi))
                        .chain(band.iter().rev().map(|&(x, lo, _)| (x, lo)))
                        .collect();
                    $chart.draw_series(std::iter::once(Polygon::new(polygon, color.mix(0.15).filled())))?;
                }
                let line = $chart.draw_series(LineSeries::new(points.iter().copied(), color.stroke_width(2)))?;
                if runs.len() > 1 {
                    line.label(*label)
                        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
                }
                if points.len() == 1 {
                    $chart.draw_series(points.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
                }
            }
            if runs.len() > 1 {
                $chart
                    .configure_series_labels()
                    .position(SeriesLabelPosition::LowerRight)
                    .background_style(WHITE.mix(0.85))
                    .border_style(RGBColor(180, 180, 180))
                    .label_font((FONT, 13))
                    .draw()?;
            }
        }};
    }
    if log {
        let mut chart = builder.build_cartesian_2d(x0..x1, (y0.max(f64::MIN_POSITIVE)..y1).log_scale())?;
        body!(chart);
    } else {
        let mut chart = builder.build_cartesian_2d(x0..x1, y0..y1)?;
        body!(chart);
    }
    Ok(())
}

fn title_is_log(panel: &Panel, y0: f64, y1: f64) -> bool {
    panel.log_hint && y0 > 0.0 && y1 / y0 > 1e3
}

/// Short axis labels: 1.5M, 20k, 0.25, 1e-4.
fn compact(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        trim(format!("{:.2}", v / 1e6)) + "M"
    } else if a >= 1e4 {
        trim(format!("{:.1}", v / 1e3)) + "k"
    } else if a >= 100.0 || a == 0.0 {
        format!("{v:.0}")
    } else if a >= 0.01 {
        trim(format!("{v:.3}"))
    } else {
        format!("{v:.0e}")
    }
}

fn trim(s: String) -> String {
    if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_string() } else { s }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_written_rows_and_names_the_bad_line() {
        let row = MetricRow {
            env_steps: 100,
            wall_seconds: 1.5,
            return_mean: Some(-3.0),
            alpha: Some(0.2),
            clip_fraction: Some(0.25),
            mixed_groups: Some(0.5),
            ..Default::default()
        };
        let text = format!("{}\n{}\n", MetricRow::CSV_HEADER, row.csv_values());
        let rows = parse_metrics(&text, "m.csv").unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].env_steps, 100);
        assert_eq!(rows[0].return_mean, Some(-3.0));
        assert_eq!(rows[0].alpha, Some(0.2));
        assert_eq!(rows[0].clip_fraction, Some(0.25));
        assert_eq!(rows[0].mixed_groups, Some(0.5));
        assert_eq!(rows[0].success_rate, None);
        let bad = format!("{text}200,2.0,abc,,,,,,,,,,,,,,,,\n");
        let e = parse_metrics(&bad, "m.csv").unwrap_err().to_string();
        assert!(e.starts_with("m.csv:3: column `return_mean`"), "{e}");
        let short = format!("{text}200,2.0\n");
        assert!(parse_metrics(&short, "m.csv").unwrap_err().to_string().starts_with("m.csv:3: expected 19 fields"));
        assert!(
            parse_metrics("a,b\n", "m.csv").unwrap_err().to_string().starts_with("m.csv:1: header has no `env_steps`")
        );
    }

    #[test]
    fn compact_labels() {
        assert_eq!(compact(1_500_000.0), "1.5M");
        assert_eq!(compact(20_000.0), "20k");
        assert_eq!(compact(250.0), "250");
        assert_eq!(compact(0.25), "0.25");
        assert_eq!(compact(0.0001), "1e-4");
    }
}
