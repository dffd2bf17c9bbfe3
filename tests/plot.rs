//! End-to-end tests of the pictures embodia draws: the curves every run writes (`curves.png`),
//! `embodia plot`, and `embodia render-camera`.
//!
//! Run with `cargo test --release --test plot`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// `embodia::plot::CURVES_SIZE`.
const CURVES_SIZE: (u32, u32) = (1200, 1200);

struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn tmp(name: &str) -> TempDir {
    let dir = std::env::temp_dir().join(format!("embodia-plot-{}-{name}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).expect("temp dir");
    TempDir(dir)
}

/// Runs `embodia args` in `dir`; returns (exit code, stdout, stderr).
fn embodia(dir: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_embodia"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .expect("embodia runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!stderr.contains("panicked"), "embodia {args:?} panicked:\n{stderr}");
    (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned(), stderr)
}

fn ok(dir: &Path, args: &[&str]) -> String {
    let (code, stdout, stderr) = embodia(dir, args);
    assert_eq!(code, Some(0), "embodia {args:?} failed:\n{stdout}\n{stderr}");
    stdout
}

/// Decodes a PNG and returns its size, asserting it is RGB(A) and not blank.
fn png_size(path: &Path) -> (u32, u32) {
    let file = fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut reader = png::Decoder::new(std::io::BufReader::new(file)).read_info().expect("a valid PNG header");
    let mut pixels = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut pixels).expect("valid PNG image data");
    let pixels = &pixels[..info.buffer_size()];
    let dark = pixels.iter().filter(|&&p| p < 128).count();
    assert!(dark > 1000, "{} is nearly blank ({dark} dark samples)", path.display());
    (info.width, info.height)
}

/// A tiny SAC run (2,000 env steps, one evaluation episode) in `dir/run`.
fn tiny_run(dir: &Path, run: &str, seed: &str) -> PathBuf {
    ok(dir, &["train", "--steps", "2000", "--seed", seed, "--set", "eval_episodes=1", "--run-dir", run, "--quiet"]);
    dir.join(run)
}

#[test]
fn train_writes_curves_and_plot_overlays_runs() {
    let t = tmp("overlay");
    let a = tiny_run(&t.0, "runs/a", "1");
    let b = tiny_run(&t.0, "runs/b", "2");
    for run in [&a, &b] {
        assert_eq!(png_size(&run.join("curves.png")), CURVES_SIZE, "{}", run.display());
    }
    let stdout = ok(&t.0, &["plot", "runs/a", "runs/b", "--out", "figs/both.png"]);
    assert!(stdout.contains("figs/both.png"), "{stdout}");
    assert_eq!(png_size(&t.0.join("figs/both.png")), CURVES_SIZE);
    // A file written during training is replaced whole, never left as a temporary.
    assert!(!a.join("curves.tmp.png").exists());
}

#[test]
fn plot_names_the_malformed_file_and_line() {
    let t = tmp("malformed");
    let run = t.0.join("bad");
    fs::create_dir_all(&run).unwrap();
    let header = "env_steps,wall_seconds,return_mean,return_min,return_max,episode_length,success_rate,policy_loss,value_loss,entropy,alpha,kl,learning_rate,fps";
    fs::write(run.join("metrics.csv"), format!("{header}\n1000,0.5,-10,,,,,,,,,,,\n2000,1.0,oops,,,,,,,,,,,\n"))
        .unwrap();
    let (code, _, stderr) = embodia(&t.0, &["plot", "bad", "--out", "x.png"]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("bad/metrics.csv:3:") && stderr.contains("return_mean") && stderr.contains("oops"),
        "{stderr}"
    );
    assert!(!t.0.join("x.png").exists());
    let (code, _, stderr) = embodia(&t.0, &["plot", "missing"]);
    assert_eq!(code, Some(1));
    assert!(stderr.contains("missing/metrics.csv"), "{stderr}");
}

#[test]
fn render_camera_draws_every_camera_and_bench_render_prints_images_per_second() {
    let t = tmp("camera");
    let stderr = {
        let (code, _, stderr) =
            embodia(&t.0, &["render-camera", "--task", "pick-cube", "--envs", "2", "--res", "48", "--out", "cam.png"]);
        assert_eq!(code, Some(0), "{stderr}");
        stderr
    };
    assert!(stderr.contains("front, wrist"), "{stderr}");
    // Two rows (environments) of 48 px plus 4 px gaps; per camera colour and depth side by side.
    assert_eq!(png_size(&t.0.join("cam.png")), (2 * (2 * 48 + 8), 2 * (48 + 4)));
    let stdout =
        ok(&t.0, &["bench", "render", "--envs", "4", "--res", "32", "--frames", "2", "--threads", "1", "--json"]);
    assert!(stdout.contains("res=32x32") && stdout.contains("images/s="), "{stdout}");
    let json = stdout.lines().last().unwrap();
    assert!(json.contains("\"images_per_s\"") && json.contains("\"cameras\":2"), "{stdout}");
    let (code, _, stderr) = embodia(&t.0, &["render-camera", "--task", "pendulum", "--out", "x.png"]);
    assert_ne!(code, Some(0));
    assert!(stderr.contains("cameras need a rapier task"), "{stderr}");
    assert!(!t.0.join("x.png").exists());
}
