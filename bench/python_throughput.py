"""Environment steps per second from Python (embodia.make_vec, 64 environments, uniformly
random actions drawn in numpy every step) against `embodia bench sim` on the same task and
batch (the Rust loop without Python), and, for ant-run, against gymnasium's MuJoCo Ant-v5
vector environment (64 environments, synchronous), all in this one run.

Each figure is the median of --repeat measurements, Python's and the CLI's taken in turn (their
difference is within the machine's noise from one measurement to the next). embodia steps the
batch on every core (rayon); gymnasium's synchronous vector environment steps on one.
Output: one line per task with the three figures, Python's overhead over the CLI and the ratio
to MuJoCo; with --json, one JSON object per line as well.
Usage: python bench/python_throughput.py [--steps N] [--envs N] [--repeat N] [--tasks ant-run,reach] [--json]
"""

import argparse
import json
import os
import statistics
import subprocess
import time

import numpy as np

import embodia


def python_steps_per_s(task, envs, steps):
    env = embodia.make_vec(task, num_envs=envs, seed=0)
    env.reset()
    rng = np.random.default_rng(0)
    low, high = env.single_action_space.low, env.single_action_space.high
    shape = env.action_space.shape
    for _ in range(20):  # warm-up
        env.step(rng.uniform(low, high, shape).astype(np.float32))
    start, iterations = time.perf_counter(), max(1, steps // envs)
    for _ in range(iterations):
        env.step(rng.uniform(low, high, shape).astype(np.float32))
    return iterations * envs / (time.perf_counter() - start)


def cli_steps_per_s(task, envs, steps):
    binary = os.environ.get("EMBODIA_BIN", "target/release/embodia")
    out = subprocess.run(
        [binary, "bench", "sim", "--task", task, "--envs", str(envs), "--measure-steps", str(steps), "--json"],
        check=True, capture_output=True, text=True,
    ).stdout
    line = next(l for l in out.splitlines() if l.startswith("{"))
    return json.loads(line)["results"][0]["steps_per_s"]


def mujoco_ant_steps_per_s(envs, steps):
    import gymnasium as gym

    env = gym.make_vec("Ant-v5", num_envs=envs, vectorization_mode="sync")
    env.reset(seed=0)
    env.action_space.seed(0)
    for _ in range(20):
        env.step(env.action_space.sample())
    start, iterations = time.perf_counter(), max(1, steps // envs)
    for _ in range(iterations):
        env.step(env.action_space.sample())
    return iterations * envs / (time.perf_counter() - start)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=40_000)
    parser.add_argument("--envs", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--tasks", default="ant-run,reach")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    for task in args.tasks.split(","):
        pythons, clis = [], []
        for _ in range(args.repeat):
            pythons.append(python_steps_per_s(task, args.envs, args.steps))
            clis.append(cli_steps_per_s(task, args.envs, args.steps))
        python, cli = statistics.median(pythons), statistics.median(clis)
        result = {"task": task, "envs": args.envs, "python": python, "cli": cli, "overhead": cli / python - 1}
        line = f"task={task} envs={args.envs} python={python:.0f} cli={cli:.0f} env-steps/s, python overhead {result['overhead']:+.1%}"
        if task == "ant-run":
            mujoco = statistics.median(mujoco_ant_steps_per_s(args.envs, args.steps) for _ in range(args.repeat))
            result["mujoco_ant_v5"] = mujoco
            line += f"; gymnasium MuJoCo Ant-v5 {mujoco:.0f} env-steps/s, embodia/MuJoCo {python / mujoco:.2f}x"
        print(line, flush=True)
        if args.json:
            print(json.dumps(result))


if __name__ == "__main__":
    main()
