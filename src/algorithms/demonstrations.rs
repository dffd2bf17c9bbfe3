//! Demonstrations of a task's scripted expert recorded in memory, for the behaviour-cloning
//! algorithms that are not given a dataset.

use embodia_sim::SimError;
use embodia_sim::demonstrations::Demonstrations;

use crate::error::RunError;

/// Offset of the seed demonstrations are recorded from, relative to the training seed: each
/// environment's random stream depends on the seed only, so recording from the training seed
/// would start the first training episodes from the demonstrations' initial states.
pub const DEMO_SEED_OFFSET: u64 = 2_000_029;

/// `count` successful episodes of the task's scripted expert, recorded in memory from seed
/// `seed + DEMO_SEED_OFFSET` (rounds of `count` episodes until enough succeed; at most 10
/// rounds), its executed actions perturbed by `noise_std` (a fraction of the action clip; see
/// `record_expert_perturbed`).
pub fn record_demos(
    task: &str,
    env: Option<&embodia_sim::TaskConfig>,
    count: usize,
    seed: u64,
    noise_std: f32,
) -> Result<Demonstrations, RunError> {
    use embodia_sim::rapier::expert_runs::record_task_expert_perturbed;
    successful_demos(task, count, seed, |n, seed| record_task_expert_perturbed(task, env, 16, n, seed, noise_std))
}

/// `count` successful episodes of `record(episodes, seed)` from seed `seed + DEMO_SEED_OFFSET`:
/// rounds of `count` episodes until enough succeed, at most 10 rounds.
pub(super) fn successful_demos(
    task: &str,
    count: usize,
    seed: u64,
    record: impl Fn(usize, u64) -> Result<Demonstrations, SimError>,
) -> Result<Demonstrations, RunError> {
    let seed = seed.wrapping_add(DEMO_SEED_OFFSET);
    let mut demos = record(count, seed)?;
    demos.episodes.retain(|e| e.success);
    for round in 1..10 {
        if demos.episodes.len() >= count {
            break;
        }
        let more = record(count, seed.wrapping_add(round))?;
        demos.episodes.extend(more.episodes.into_iter().filter(|e| e.success));
    }
    if demos.episodes.len() < count {
        return Err(RunError::Io {
            path: task.to_string(),
            message: format!(
                "the scripted expert succeeded in only {} of {} episodes; cannot record {count} demonstrations",
                demos.episodes.len(),
                10 * count
            ),
        });
    }
    demos.episodes.truncate(count);
    Ok(demos)
}
