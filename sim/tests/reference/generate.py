#!/usr/bin/env python3
"""Record reference trajectories of gymnasium's classic-control tasks for embodia-sim.

Generated with gymnasium==1.4.0 and numpy==2.4.6 (see requirements.txt; numpy 2's scalar
promotion rules matter: an f32 action makes parts of the step f32 arithmetic).

    python3 -m venv .venv && .venv/bin/pip install -r sim/tests/reference/requirements.txt
    .venv/bin/python sim/tests/reference/generate.py

writes `pendulum.json` and `mountain_car_continuous.json` next to this script. Each holds a list
of episodes, each run from `env.reset(seed=...)` until gymnasium reports terminated or truncated:

    {"gymnasium": version, "numpy": version, "task": embodia task name, "env_id": gymnasium id,
     "episodes": [{"seed", "policy", "initial_state": [f64 exact], "initial_obs": [f32],
                   "actions": [f32 exact, one per step],
                   "obs": [[f32], ...], "reward": [...],
                   "terminated": [0|1, ...], "truncated": [0|1, ...]}]}

Actions are float32 arrays (what embodia passes) and are written exactly (the f64 repr of the f32
value); initial states are written exactly; observations and rewards with the shortest repr that
round-trips to f32, which is what the Rust side compares to 1e-5.
"""

import json
import math
import os

import gymnasium as gym
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def f32_short(x):
    """Shortest decimal that round-trips the f32 value of x."""
    return float(str(np.float32(x)))


def run_episode(env_id, seed, policy, name, state=None):
    env = gym.make(env_id)
    obs, _ = env.reset(seed=seed)
    if state is not None:
        # A start outside the reset distribution (gymnasium keeps `state` as an f64 array after
        # reset, so this is what a reset to that state would be).
        env.unwrapped.state = np.array(state, dtype=np.float64)
        obs = np.array(env.unwrapped.state, dtype=np.float32)
    initial_state = [float(v) for v in env.unwrapped.state]
    rng = np.random.default_rng(1000 + seed)
    ep = {
        "seed": seed,
        "policy": name,
        "initial_state": initial_state,
        "initial_obs": [f32_short(v) for v in obs],
        "actions": [],
        "obs": [],
        "reward": [],
        "terminated": [],
        "truncated": [],
    }
    t = 0
    while True:
        a = np.array([policy(obs, t, rng)], dtype=np.float32)
        obs, reward, terminated, truncated, _ = env.step(a)
        ep["actions"].append(float(a[0]))
        ep["obs"].append([f32_short(v) for v in obs])
        ep["reward"].append(f32_short(reward))
        ep["terminated"].append(int(terminated))
        ep["truncated"].append(int(truncated))
        t += 1
        if terminated or truncated:
            break
    env.close()
    return ep


# --- pendulum policies (obs = [cos th, sin th, thdot]) -------------------------------------

def pend_uniform_wide(obs, t, rng):
    return rng.uniform(-3.0, 3.0)  # beyond ±2: exercises the torque clip


def pend_uniform(obs, t, rng):
    return rng.uniform(-2.0, 2.0)


def pend_pump(obs, t, rng):
    # Push along the velocity: spins up to the ±8 rad/s clip and wraps the angle many times.
    return 2.5 if obs[2] >= 0 else -2.5


def pend_swing_up(obs, t, rng):
    c, s, w = obs
    th = math.atan2(s, c)
    if c > 0.8:
        u = -(8.0 * th + 1.5 * w)  # balance near upright
    else:
        u = 2.0 if w >= 0 else -2.0  # pump energy
    return u + rng.normal(0.0, 0.1)


# --- mountain car policies (obs = [x, v]) -------------------------------------------------

def car_pump(obs, t, rng):
    return (1.0 if obs[1] >= 0 else -1.0) * rng.uniform(0.7, 1.0)  # in bounds


def car_pump_clipped(obs, t, rng):
    return (1.7 if obs[1] >= 0 else -1.7) + rng.normal(0.0, 0.05)  # beyond ±1: force clipped


def car_left_wall(obs, t, rng):
    if t < 70:
        return -1.0 if t % 40 < 20 or obs[1] < 0 else 1.0  # hit the left wall first
    return 1.0 if obs[1] >= 0 else -1.0


def car_push_right(obs, t, rng):
    return 1.0 if t % 50 < 45 else -1.0


def car_random(obs, t, rng):
    return rng.uniform(-1.5, 1.5)  # runs to the 999-step time limit


def main():
    tasks = [
        ("pendulum", "Pendulum-v1", "pendulum.json",
         [(0, pend_uniform_wide), (1, pend_uniform), (2, pend_pump), (3, pend_swing_up)]),
        ("mountain-car-continuous", "MountainCarContinuous-v0", "mountain_car_continuous.json",
         [(0, car_pump), (1, car_pump_clipped), (2, car_left_wall), (3, car_random),
          # Starts fast at the bottom of the valley: the velocity clip at 0.07 acts.
          (4, car_push_right, [-0.55, 0.0695])]),
    ]
    for task, env_id, fname, episodes in tasks:
        data = {
            "gymnasium": gym.__version__,
            "numpy": np.__version__,
            "task": task,
            "env_id": env_id,
            "episodes": [run_episode(env_id, e[0], e[1], e[1].__name__, *e[2:]) for e in episodes],
        }
        path = os.path.join(HERE, fname)
        with open(path, "w") as f:
            json.dump(data, f, separators=(",", ":"))
            f.write("\n")
        lens = [len(e["actions"]) for e in data["episodes"]]
        ends = ["terminated" if e["terminated"][-1] else "truncated" for e in data["episodes"]]
        print(f"{fname}: {os.path.getsize(path)} bytes, episode lengths {lens}, ends {ends}")


if __name__ == "__main__":
    main()
