//! Replay of initial states that GRPO groups failed from (`replay_failed_states`).
//!
//! GRPO learns nothing from a group whose episodes all fail: every member gets advantage 0.
//! When a policy fails from a region of initial states (pick-cube-ee: cubes drawn at y > 0.15 m,
//! where 3 of 20 demonstrations start), fresh reset states rarely give it the occasional success
//! that would teach it. This pool keeps the initial states of groups that
//! did not all succeed and starts a fraction of the next iterations' groups from them, so a hard
//! state gets several groups' worth of samples until one succeeds (a curriculum over reset
//! states in the spirit of prioritized level replay, Jiang et al. 2021). The rest of the groups
//! start from fresh states, so the policy keeps seeing the task's own distribution. On
//! pick-cube-ee it lowered success in both tries (README), so it is off by default.

use std::collections::VecDeque;

use embodia_sim::{EnvSnapshot, RngState};

/// Times a state is replayed at most; a state no group solved in that many tries is dropped
/// (it may be beyond the policy for now, and replaying it forever would crowd out the others).
pub const MAX_REPLAYS: u32 = 3;

/// One environment's rows of an [`EnvSnapshot`] taken right after a reset (each possibly
/// empty: rapier snapshots keep only the generators).
#[derive(Debug, Clone, PartialEq)]
struct InitialState {
    state: Vec<f64>,
    elapsed: Vec<u32>,
    running_return: Vec<f64>,
    rng: Vec<RngState>,
    obs: Vec<f32>,
    /// Times it has been replayed.
    replays: u32,
}

/// First-in first-out pool of initial states that groups failed from.
#[derive(Debug, Clone, Default)]
pub struct FailedStateReplay {
    states: VecDeque<InitialState>,
    capacity: usize,
    /// The states the present iteration's first groups restarted from, in group order.
    replaying: Vec<InitialState>,
}

impl FailedStateReplay {
    /// An empty pool holding at most `capacity` states (the oldest are dropped first).
    pub fn new(capacity: usize) -> Self {
        Self { states: VecDeque::new(), capacity, replaying: Vec::new() }
    }

    /// States waiting to be replayed.
    pub fn len(&self) -> usize {
        self.states.len()
    }

    /// Whether no state waits.
    pub fn is_empty(&self) -> bool {
        self.states.is_empty()
    }

    /// Makes the first up to `groups` groups of `group_size` consecutive environments of
    /// `snapshot` start from the oldest waiting states (every member of a group from the same
    /// one), taking them out of the pool. Returns the number of groups replayed.
    pub fn restart_groups(&mut self, snapshot: &mut EnvSnapshot, group_size: usize, groups: usize) -> usize {
        let n = snapshot.rng.len();
        self.replaying.clear();
        let count = groups.min(self.states.len()).min(n / group_size);
        for g in 0..count {
            let Some(state) = self.states.pop_front() else { break };
            for i in g * group_size..(g + 1) * group_size {
                write_row(snapshot, n, i, &state);
            }
            self.replaying.push(state);
        }
        count
    }

    /// After the episodes of an iteration started from `snapshot` ended: puts the initial state
    /// of every group of `group_size` whose episodes did not all succeed (`success`, `[n]`, at
    /// the episode's end) into the pool. A replayed state (of the groups the last
    /// [`FailedStateReplay::restart_groups`] restarted) goes back with its replay count raised, until
    /// [`MAX_REPLAYS`]; a solved one is forgotten.
    pub fn record(&mut self, snapshot: &EnvSnapshot, group_size: usize, success: &[bool]) {
        let n = snapshot.rng.len();
        let mut replayed = std::mem::take(&mut self.replaying).into_iter();
        for (g, group) in success.chunks(group_size).enumerate() {
            let previous = replayed.next();
            if group.iter().all(|&s| s) {
                continue;
            }
            let state = match previous {
                Some(state) if state.replays + 1 >= MAX_REPLAYS => continue,
                Some(state) => InitialState { replays: state.replays + 1, ..state },
                None => read_row(snapshot, n, g * group_size),
            };
            if self.states.len() == self.capacity {
                self.states.pop_front();
            }
            if self.capacity > 0 {
                self.states.push_back(state);
            }
        }
    }
}

/// Environment `i`'s rows of `snapshot` (`n` environments).
fn read_row(snapshot: &EnvSnapshot, n: usize, i: usize) -> InitialState {
    InitialState {
        state: row(&snapshot.state, n, i).to_vec(),
        elapsed: row(&snapshot.elapsed, n, i).to_vec(),
        running_return: row(&snapshot.running_return, n, i).to_vec(),
        rng: row(&snapshot.rng, n, i).to_vec(),
        obs: row(&snapshot.obs, n, i).to_vec(),
        replays: 0,
    }
}

/// Overwrites environment `i`'s rows of `snapshot` with `state`'s (where the widths agree).
fn write_row(snapshot: &mut EnvSnapshot, n: usize, i: usize, state: &InitialState) {
    set_row(&mut snapshot.state, n, i, &state.state);
    set_row(&mut snapshot.elapsed, n, i, &state.elapsed);
    set_row(&mut snapshot.running_return, n, i, &state.running_return);
    set_row(&mut snapshot.rng, n, i, &state.rng);
    set_row(&mut snapshot.obs, n, i, &state.obs);
}

/// Row `i` of `v` read as `[n, v.len() / n]`; empty when `n` is 0.
fn row<T>(v: &[T], n: usize, i: usize) -> &[T] {
    let width = v.len().checked_div(n).unwrap_or(0);
    &v[i * width..(i + 1) * width]
}

/// Overwrites row `i` of `v` (`[n, v.len() / n]`) with `values` if it is that wide.
fn set_row<T: Clone>(v: &mut [T], n: usize, i: usize, values: &[T]) {
    let width = v.len().checked_div(n).unwrap_or(0);
    if values.len() == width {
        v[i * width..(i + 1) * width].clone_from_slice(values);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A snapshot of `n` environments whose rows hold `i` (state row width 2, obs width 1).
    fn snapshot(n: usize, offset: u64) -> EnvSnapshot {
        EnvSnapshot {
            task: "t".into(),
            state: (0..n).flat_map(|i| [i as f64 + offset as f64; 2]).collect(),
            elapsed: vec![0; n],
            running_return: vec![0.0; n],
            rng: (0..n as u64).map(|i| RngState { seed: [0; 32], stream: i + offset, word_pos: 0 }).collect(),
            obs: (0..n).map(|i| (i as u64 + offset) as f32).collect(),
        }
    }

    #[test]
    fn failed_groups_are_replayed_until_solved_or_tried_max_replays_times() {
        let mut pool = FailedStateReplay::new(8);
        // Iteration 1, fresh states 0..6 in groups of 2: group 0 all succeeds, group 1 all fails,
        // group 2 half succeeds.
        let first = snapshot(6, 0);
        pool.record(&first, 2, &[true, true, false, false, true, false]);
        assert_eq!(pool.len(), 2, "the two groups that did not all succeed");

        // Iteration 2 from fresh states 100..106: the first two groups restart from the failed
        // states (leaders 2 and 4), every member of a group alike; the last keeps its own.
        let mut next = snapshot(6, 100);
        assert_eq!(pool.restart_groups(&mut next, 2, 2), 2);
        assert!(pool.is_empty());
        assert_eq!(next.rng.iter().map(|r| r.stream).collect::<Vec<_>>(), [2, 2, 4, 4, 104, 105]);
        assert_eq!(next.state, [2.0, 2.0, 2.0, 2.0, 4.0, 4.0, 4.0, 4.0, 104.0, 104.0, 105.0, 105.0]);
        assert_eq!(next.obs, [2.0, 2.0, 4.0, 4.0, 104.0, 105.0]);
        // State 2 is solved now, state 4 and the fresh state 104 fail again.
        pool.record(&next, 2, &[true, true, false, true, false, false]);
        assert_eq!(pool.len(), 2);

        // State 4 fails on every replay: after MAX_REPLAYS replays it is dropped.
        let mut replays_of_4 = 1;
        loop {
            let mut s = snapshot(6, 200);
            pool.restart_groups(&mut s, 2, 3);
            let leaders: Vec<u64> = s.rng.iter().step_by(2).map(|r| r.stream).collect();
            if !leaders.contains(&4) {
                break;
            }
            replays_of_4 += 1;
            pool.record(&s, 2, &[false; 6]);
        }
        assert_eq!(replays_of_4, MAX_REPLAYS);
    }

    #[test]
    fn the_pool_keeps_the_newest_states_up_to_its_capacity() {
        let mut pool = FailedStateReplay::new(2);
        pool.record(&snapshot(6, 0), 2, &[false; 6]);
        assert_eq!(pool.len(), 2);
        let mut s = snapshot(6, 100);
        pool.restart_groups(&mut s, 2, 3);
        assert_eq!(s.rng.iter().step_by(2).map(|r| r.stream).collect::<Vec<_>>(), [2, 4, 104], "state 0 was dropped");
        // Rapier snapshots keep only the generators: the other rows are empty.
        let rng_only = |offset| EnvSnapshot { state: Vec::new(), obs: Vec::new(), ..snapshot(4, offset) };
        let mut pool = FailedStateReplay::new(4);
        pool.record(&rng_only(0), 2, &[true, false, true, true]);
        let mut s = rng_only(100);
        assert_eq!(pool.restart_groups(&mut s, 2, 2), 1);
        assert_eq!(s.rng.iter().map(|r| r.stream).collect::<Vec<_>>(), [0, 0, 102, 103]);
        let mut none = FailedStateReplay::new(0);
        none.record(&snapshot(4, 0), 2, &[false; 4]);
        assert!(none.is_empty());
    }
}
