//! `embodia distill`: a one-step student of a flow policy, then its report against the teacher.

use std::path::{Path, PathBuf};

use crate::commands::train::Progress;
use embodia::algos::DistillMethod;
use embodia::run::Run;

pub(crate) fn distill(
    req: &embodia::distill::DistillRequest,
    out: Option<PathBuf>,
    settings: embodia::distill::ReportSettings,
    json: bool,
    quiet: bool,
) -> anyhow::Result<()> {
    anyhow::ensure!(settings.episodes > 0, "invalid value for `--eval-episodes`: 0 (allowed: ≥ 1)");
    anyhow::ensure!(settings.seeds > 0, "invalid value for `--eval-seeds`: 0 (allowed: ≥ 1)");
    anyhow::ensure!(settings.calls > 0, "invalid value for `--latency-calls`: 0 (allowed: ≥ 1)");
    let config = embodia::distill::distill_config(req)?;
    let dir = out.unwrap_or_else(|| {
        let teacher = req.teacher.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let method = if req.method == DistillMethod::MeanFlow { "meanflow" } else { "consistency" };
        let base = Path::new("runs").join(format!("{teacher}-distill-{method}"));
        let mut dir = base.clone();
        let mut k = 2;
        while dir.exists() {
            dir = PathBuf::from(format!("{}-{k}", base.display()));
            k += 1;
        }
        dir
    });
    let mut run = Run::create(&dir, config.clone())?;
    eprintln!(
        "distilling {} into a one-step student on {} ({} gradient steps) in {}",
        req.teacher.display(),
        config.task,
        config.total_steps,
        dir.display()
    );
    let start = std::time::Instant::now();
    let mut progress = Progress::new(config.total_steps, 0, quiet);
    let result = run.train(&mut [&mut progress]);
    progress.bar.finish_and_clear();
    result?;
    run.final_eval(config.eval_episodes)?;
    eprintln!(
        "student saved in {} after {:.0} s; evaluating teacher and student",
        dir.display(),
        start.elapsed().as_secs_f64()
    );
    let report = embodia::distill::report(&dir, settings)?;
    print!("{}", embodia::distill::describe(&report));
    if json {
        println!("{}", serde_json::to_string(&report)?);
    }
    Ok(())
}
