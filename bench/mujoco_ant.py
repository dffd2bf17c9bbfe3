"""MuJoCo peer for embodia's simulation throughput: gymnasium Ant-v5 env-steps per second.

What it measures (single process, one thread):
  * env: `gymnasium.make(ENV)` (default Ant-v5, the standard wrappers included) stepped with
    uniformly random actions in the action space for --steps env steps; when an episode
    terminates or is truncated (Ant-v5: 1000 steps) the env is reset and the reset's time is
    counted. Actions are drawn in vectorised chunks of 10,000 (numpy PCG64, seeded), their cost
    included. The first 1,000 steps are a warm-up and are not timed.
  * raw: `mujoco.mj_step` on the same model with a fresh MjData, a new random ctrl every
    frame_skip physics steps (as the env does) and mj_resetData every 1000 env steps' worth,
    so the physics cost is known on its own: Ant-v5 has frame_skip 5 (5 physics steps of
    0.01 s, RK4, per env step), so env-steps/s <= mj_step/s / 5; the rest of an env step is
    Python: observation, reward, wrappers.

Output: `mujoco Ant-v5: <rate> env-steps/s (<N> steps, single process, 1 core)`, then the raw
mj_step line, and with --json one JSON object line.

Usage (through bench/mujoco_peer.sh, which creates bench/.venv-mujoco):
  bash bench/mujoco_peer.sh [--env Ant-v5] [--steps 100000] [--raw-steps 200000] [--seed 0]
                            [--pin CPU] [--json]
"""

import os

# One thread for every library that might spawn some (MuJoCo itself is single-threaded).
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import gymnasium  # noqa: E402
import mujoco  # noqa: E402
import numpy as np  # noqa: E402

WARMUP = 1_000
CHUNK = 10_000


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def action_chunks(space, rng):
    low = np.broadcast_to(space.low, space.shape)
    high = np.broadcast_to(space.high, space.shape)
    while True:
        batch = rng.uniform(low, high, size=(CHUNK,) + space.shape).astype(space.dtype)
        yield from batch


def bench_env(env_id, steps, seed):
    env = gymnasium.make(env_id)
    rng = np.random.default_rng(seed)
    actions = action_chunks(env.action_space, rng)
    env.reset(seed=seed)
    for _ in range(WARMUP):
        _, _, terminated, truncated, _ = env.step(next(actions))
        if terminated or truncated:
            env.reset()
    env.reset()
    resets = 0
    t0 = time.perf_counter()
    for _ in range(steps):
        _, _, terminated, truncated, _ = env.step(next(actions))
        if terminated or truncated:
            env.reset()
            resets += 1
    wall = time.perf_counter() - t0
    unwrapped = env.unwrapped
    info = {
        "frame_skip": getattr(unwrapped, "frame_skip", None),
        "model": getattr(unwrapped, "model", None),
        "init_qpos": getattr(unwrapped, "init_qpos", None),
    }
    env.close()
    return wall, resets, info


def bench_raw(model, init_qpos, frame_skip, steps, seed):
    """mj_step rate; a new random ctrl every frame_skip steps, reset every 1000 env steps."""
    data = mujoco.MjData(model)
    rng = np.random.default_rng(seed + 1)
    lo, hi = model.actuator_ctrlrange[:, 0], model.actuator_ctrlrange[:, 1]
    env_steps = steps // frame_skip
    ctrls = rng.uniform(lo, hi, size=(env_steps, model.nu))

    def reset():
        mujoco.mj_resetData(model, data)
        if init_qpos is not None:
            data.qpos[:] = init_qpos
        mujoco.mj_forward(model, data)

    reset()
    for _ in range(WARMUP):
        mujoco.mj_step(model, data)
    reset()
    t0 = time.perf_counter()
    for i in range(env_steps):
        if i % 1000 == 0 and i:
            reset()
        data.ctrl[:] = ctrls[i]
        for _ in range(frame_skip):
            mujoco.mj_step(model, data)
    wall = time.perf_counter() - t0
    return env_steps * frame_skip, wall


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--env", default="Ant-v5", help="gymnasium env id (default Ant-v5)")
    p.add_argument("--steps", type=int, default=100_000, help="timed env steps (default 100000)")
    p.add_argument("--raw-steps", type=int, default=200_000,
                   help="timed mj_step calls for the raw physics rate (default 200000; 0 skips)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--pin", type=int, default=None, help="pin the process to this CPU")
    p.add_argument("--json", action="store_true", help="also print one JSON object line")
    args = p.parse_args()
    if args.pin is not None:
        os.sched_setaffinity(0, {args.pin})

    wall, resets, info = bench_env(args.env, args.steps, args.seed)
    rate = args.steps / wall
    print(f"mujoco {args.env}: {rate:.0f} env-steps/s ({args.steps} steps, single process, 1 core)")

    result = {
        "peer": "mujoco",
        "env": args.env,
        "env_steps": args.steps,
        "resets": resets,
        "wall_s": round(wall, 3),
        "env_steps_per_s": round(rate, 1),
        "us_per_env_step": round(1e6 * wall / args.steps, 2),
    }
    model, frame_skip = info["model"], info["frame_skip"]
    if args.raw_steps and model is not None and frame_skip:
        n, raw_wall = bench_raw(model, info["init_qpos"], frame_skip, args.raw_steps, args.seed)
        raw = n / raw_wall
        share = (1 / (raw / frame_skip)) / (1 / rate)
        print(
            f"mujoco {args.env} raw mj_step: {raw:.0f} physics-steps/s = {raw / frame_skip:.0f} env-steps/s "
            f"equivalent (frame_skip {frame_skip}, timestep {model.opt.timestep:g} s, "
            f"{'RK4' if model.opt.integrator == mujoco.mjtIntegrator.mjINT_RK4 else 'integrator ' + str(model.opt.integrator)}; "
            f"{n} steps); physics is {share:.0%} of an env step"
        )
        result.update(
            {
                "frame_skip": frame_skip,
                "timestep_s": model.opt.timestep,
                "mj_steps": n,
                "mj_step_per_s": round(raw, 1),
                "mj_step_env_equiv_per_s": round(raw / frame_skip, 1),
                "physics_share": round(share, 3),
            }
        )
    result["versions"] = {
        "python": platform.python_version(),
        "mujoco": mujoco.__version__,
        "gymnasium": gymnasium.__version__,
        "numpy": np.__version__,
    }
    result["cpu"] = cpu_name()
    result["threads"] = os.environ.get("OMP_NUM_THREADS")
    if args.pin is not None:
        result["pinned_cpu"] = args.pin
    if args.json:
        print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
