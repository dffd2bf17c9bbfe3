//! Forward latency of the VLA on the CPU: prefix encoding (vision, text, shared transformer)
//! and a whole deterministic action chunk (prefix + K expert steps), for the `tiny` and `small`
//! presets at batch 1 and 64, 64×64 images.
//!
//! `cargo run --release -p embodia-policies --example vla_bench [-- --views 2 --reps 10]`

use std::time::Instant;

use burn::tensor::{Device, Tensor};
use embodia_policies::seeded_init;
use embodia_policies::vla::{VlaConfig, VlaInput, VlaModel};

fn input(model: &VlaModel, batch: usize, views: usize) -> VlaInput {
    let s = model.config().vision.image_size;
    let images = (0..batch * views * s * s * 3).map(|i| (i * 31 % 251) as u8).collect();
    let texts: Vec<&str> =
        (0..batch).map(|i| if i % 2 == 0 { "pick up the red cube" } else { "push the blue block left" }).collect();
    let proprio = vec![0.1; batch * model.config().proprio_dim];
    VlaInput::new(&model.tokenizer(), batch, views, s, s, images, &texts, proprio).expect("valid input")
}

/// Median and minimum of `reps` timed calls after one warm-up call, milliseconds.
fn time(reps: usize, mut f: impl FnMut()) -> (f64, f64) {
    f();
    let mut ms: Vec<f64> = (0..reps)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    ms.sort_by(|a, b| a.total_cmp(b));
    (ms[ms.len() / 2], ms[0])
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |name: &str, default: usize| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let views = arg("--views", 1);
    let reps = arg("--reps", 7);
    let device = Device::flex();
    println!(
        "VLA forward latency, CPU (burn flex), 64x64 images, {views} view(s), 7-D proprio and actions, median (min) of {reps} calls"
    );
    println!(
        "{:<6} {:>10} {:>6} {:>8} {:>18} {:>22} {:>14}",
        "preset", "params", "batch", "K", "prefix ms", "chunk ms (prefix+K)", "chunks/s"
    );
    let base = VlaConfig::base(7, 7);
    println!(
        "base preset (not run): {} parameters, {} prefix tokens per view",
        base.param_count(),
        base.vision.tokens_per_view()
    );
    for (name, config) in [("tiny", VlaConfig::tiny(7, 7)), ("small", VlaConfig::small(7, 7))] {
        let model = seeded_init(&device, 0, || config.init(&device).expect("valid preset"));
        for batch in [1usize, 64] {
            let data = model.prepare(&input(&model, batch, views), &device).expect("valid input");
            let (enc, enc_min) = time(reps, || {
                let ctx = model.encode(&data);
                let _ = ctx.pooled.into_data();
            });
            let (full, full_min) = time(reps, || {
                let a = model.predict(&data, Tensor::zeros([batch, config.horizon, config.action_dim], &device));
                let _ = a.into_data();
            });
            println!(
                "{:<6} {:>10} {:>6} {:>8} {:>18} {:>22} {:>14.1}",
                name,
                model.num_params(),
                batch,
                config.denoise_steps,
                format!("{enc:.2} ({enc_min:.2})"),
                format!("{full:.2} ({full_min:.2})"),
                batch as f64 / (full / 1e3)
            );
        }
    }
}
