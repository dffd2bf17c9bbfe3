#!/usr/bin/env python3
"""Peer figure for `env_throughput`: gymnasium's own env-steps/s on the same tasks.

    .venv/bin/python sim/benches/gymnasium_peer.py [seconds per configuration, default 2]

Single environments made with `gym.make` (with its default wrappers, as users step them) and
`SyncVectorEnv` batches (gymnasium has no numpy-vectorized Pendulum or MountainCarContinuous),
stepped with random in-bounds float32 actions drawn before timing. Requirements: see
`sim/tests/reference/requirements.txt`.
"""

import sys
import time

import gymnasium as gym
import numpy as np

SECS = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0


def bench_single(env_id):
    env = gym.make(env_id)
    env.reset(seed=0)
    low, high = env.action_space.low, env.action_space.high
    acts = np.random.default_rng(0).uniform(low, high, size=(1024, 1)).astype(np.float32)
    steps, k = 0, 0
    start = time.perf_counter()
    while time.perf_counter() - start < SECS:
        for _ in range(256):
            _, _, term, trunc, _ = env.step(acts[k])
            k = (k + 1) % 1024
            if term or trunc:
                env.reset()
        steps += 256
    return steps / (time.perf_counter() - start)


def bench_vector(env_id, n):
    env = gym.vector.SyncVectorEnv([lambda: gym.make(env_id) for _ in range(n)])
    env.reset(seed=0)
    low, high = env.single_action_space.low, env.single_action_space.high
    acts = np.random.default_rng(0).uniform(low, high, size=(16, n, 1)).astype(np.float32)
    steps, k = 0, 0
    start = time.perf_counter()
    while time.perf_counter() - start < SECS:
        env.step(acts[k])  # autoreset is built in
        k = (k + 1) % 16
        steps += 1
    return steps * n / (time.perf_counter() - start)


def main():
    print(f"gymnasium {gym.__version__}, numpy {np.__version__}, {SECS} s per configuration")
    print(f"{'task':<26} {'num_envs':>9} {'env-steps/s':>14}")
    for env_id in ["Pendulum-v1", "MountainCarContinuous-v0"]:
        print(f"{env_id:<26} {1:>9} {bench_single(env_id):>14.0f}")
        print(f"{env_id:<26} {256:>9} {bench_vector(env_id, 256):>14.0f}")


if __name__ == "__main__":
    main()
