"""Stable-Baselines3 peer for `embodia bench solve`: time to solve Pendulum-v1.

What it measures, per seed 1..=N and per algorithm (SAC, PPO):
  * env_steps: training environment steps taken when the policy was first
    judged solved, i.e. mean return of 10 deterministic evaluation episodes
    >= -200 on gymnasium Pendulum-v1;
  * wall_s: seconds from the start of training (model construction excluded)
    to that point, evaluation time included, as on the Rust side.
A seed that does not solve within --max-steps is reported solved=False and
left out of the medians.

How it matches embodia's protocol:
  * SAC evaluates every 1,000 env steps (a callback, so after the update
    schedule SB3 has run up to that step); PPO evaluates after every
    iteration (rollout + update). Training stops at the first solve.
  * Budget: --max-steps (default 50,000 SAC / 200,000 PPO). PPO follows SB3's
    own `learn(total_timesteps)` rule: iterations run while env_steps <
    budget, so the last one may overshoot by at most one rollout.
  * Hyperparameters: SAC uses SB3 defaults (with --zoo: rl-baselines3-zoo's
    Pendulum-v1 entry, which only sets learning_rate=1e-3). PPO always uses
    the zoo's tuned Pendulum-v1 entry (SB3's PPO defaults do not learn
    Pendulum): n_envs=4, n_steps=1024, gae_lambda=0.95, gamma=0.9,
    n_epochs=10, ent_coef=0.0, learning_rate=1e-3, clip_range=0.2,
    use_sde=True, sde_sample_freq=4 (hyperparams/ppo.yml, no normalize).
  * Training env seeded with the seed; the evaluation env with 10,000+seed,
    seeded once, so successive evaluations see fresh start states.
  * --matched (SAC): embodia's pendulum preset and protocol instead of SB3's
    defaults: 64x64 ReLU actor and critics, batch 100, learning rate 1e-3,
    learning_starts 1,000, buffer 10^6, tau 0.005, gamma 0.99, one update per
    step, automatic entropy (initial alpha 1, target -dim(A)); the evaluation
    env is re-seeded before every evaluation, so each evaluation sees the same
    ten start states (as `embodia bench solve`'s screen does); the solving
    policy's mean return over 1,000 fresh start states is then reported
    (`confirm_return`, outside the timing), as embodia reports it. Left as
    SB3 has it: log-std clamped to [-20, 2] (embodia: [-5, 2]).

Output: one `seed=.. algo=.. solved=.. env_steps=.. wall_s=..` line per run,
then `median env_steps=.. wall_s=..` over solved seeds per algorithm, and with
--json one JSON object line per algorithm.
"""

import argparse
import json
import os
import statistics
import time

# Must precede the torch import: OpenMP busy-waiting makes SAC's small
# matmuls ~10x slower on a 2-core machine.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import gymnasium  # noqa: E402
import stable_baselines3  # noqa: E402
import torch  # noqa: E402
from stable_baselines3 import PPO, SAC  # noqa: E402
from stable_baselines3.common.callbacks import BaseCallback  # noqa: E402
from stable_baselines3.common.env_util import make_vec_env  # noqa: E402
from stable_baselines3.common.evaluation import evaluate_policy  # noqa: E402

ENV_ID = "Pendulum-v1"
SOLVED_RETURN = -200.0
EVAL_EPISODES = 10
SAC_EVAL_EVERY = 1_000
DEFAULT_BUDGET = {"sac": 50_000, "ppo": 200_000}
# rl-baselines3-zoo hyperparams/ppo.yml, Pendulum-v1 ("# Tuned").
PPO_ZOO = dict(n_steps=1024, gae_lambda=0.95, gamma=0.9, n_epochs=10, ent_coef=0.0,
               learning_rate=1e-3, clip_range=0.2, use_sde=True, sde_sample_freq=4)
PPO_ZOO_N_ENVS = 4
# rl-baselines3-zoo hyperparams/sac.yml, Pendulum-v1.
SAC_ZOO = dict(learning_rate=1e-3)
# embodia's pendulum SAC preset (assets/configs/pendulum-sac.toml over SacConfig's defaults).
SAC_EMBODIA = dict(learning_rate=1e-3, batch_size=100, learning_starts=1_000, buffer_size=1_000_000,
                   tau=0.005, gamma=0.99, train_freq=1, gradient_steps=1, ent_coef="auto_1.0",
                   policy_kwargs=dict(net_arch=[64, 64]))
CONFIRM_EPISODES = 1_000
CONFIRM_SEED_OFFSET = 7_919


def solved(model, eval_env, reseed=None):
    """Mean return of 10 deterministic episodes >= -200; with `reseed`, the evaluation env is
    seeded with it first, so that every evaluation sees the same start states."""
    if reseed is not None:
        eval_env.seed(reseed)
    mean, _ = evaluate_policy(model, eval_env, n_eval_episodes=EVAL_EPISODES, deterministic=True)
    return mean >= SOLVED_RETURN


class EvalEvery(BaseCallback):
    """Evaluates every `every` env steps; stops training at the first solve."""

    def __init__(self, eval_env, every, reseed=None):
        super().__init__()
        self.eval_env, self.every, self.solved_at, self.reseed = eval_env, every, None, reseed

    def _on_step(self):
        if self.num_timesteps % self.every == 0 and solved(self.model, self.eval_env, self.reseed):
            self.solved_at = self.num_timesteps
            return False
        return True


def confirm_return(model, seed):
    """Mean return of the policy over CONFIRM_EPISODES fresh start states (deterministic)."""
    env = make_vec_env(ENV_ID, n_envs=1, seed=10_000 + seed + CONFIRM_SEED_OFFSET)
    mean, _ = evaluate_policy(model, env, n_eval_episodes=CONFIRM_EPISODES, deterministic=True)
    return round(float(mean), 1)


def run(algo, seed, max_steps, zoo, matched=False):
    """Returns (solved, env_steps, wall_s, confirm_return) for one seed."""
    eval_env = make_vec_env(ENV_ID, n_envs=1, seed=10_000 + seed)
    if algo == "sac":
        env = make_vec_env(ENV_ID, n_envs=1, seed=seed)
        settings = SAC_EMBODIA if matched else SAC_ZOO if zoo else {}
        model = SAC("MlpPolicy", env, seed=seed, device="cpu", **settings)
        cb = EvalEvery(eval_env, SAC_EVAL_EVERY, reseed=10_000 + seed if matched else None)
        t0 = time.perf_counter()
        model.learn(total_timesteps=max_steps, callback=cb)
        wall = time.perf_counter() - t0
        confirm = confirm_return(model, seed) if matched and cb.solved_at is not None else None
        return cb.solved_at is not None, cb.solved_at or model.num_timesteps, wall, confirm
    env = make_vec_env(ENV_ID, n_envs=PPO_ZOO_N_ENVS, seed=seed)
    model = PPO("MlpPolicy", env, seed=seed, device="cpu", **PPO_ZOO)
    rollout = PPO_ZOO["n_steps"] * PPO_ZOO_N_ENVS
    t0 = time.perf_counter()
    while model.num_timesteps < max_steps:
        # One iteration per call; reset_num_timesteps=False keeps the env
        # state and step counter, so this is the same loop as one learn().
        model.learn(total_timesteps=rollout, reset_num_timesteps=False)
        if solved(model, eval_env):
            return True, model.num_timesteps, time.perf_counter() - t0, None
    return False, model.num_timesteps, time.perf_counter() - t0, None


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--algo", choices=["sac", "ppo", "both"], default="sac")
    p.add_argument("--seeds", type=int, default=5, help="run seeds 1..=N")
    p.add_argument("--max-steps", type=int, help="env-step budget (default 50k SAC, 200k PPO)")
    p.add_argument("--zoo", action="store_true", help="SAC: rl-zoo Pendulum settings (lr 1e-3)")
    p.add_argument("--matched", action="store_true",
                   help="SAC: embodia's pendulum preset and evaluation protocol (see the module docs)")
    # 1 thread measured faster than 2 on the 2-core dev machine (see sb3_solve.sh).
    p.add_argument("--threads", type=int, default=1, help="torch.set_num_threads")
    p.add_argument("--json", action="store_true", help="also print one JSON line per algo")
    args = p.parse_args()

    torch.set_num_threads(args.threads)
    print(f"# sb3 {stable_baselines3.__version__} torch {torch.__version__} "
          f"gymnasium {gymnasium.__version__} threads={args.threads} "
          f"OMP_WAIT_POLICY={os.environ['OMP_WAIT_POLICY']}", flush=True)
    for algo in (["sac", "ppo"] if args.algo == "both" else [args.algo]):
        budget = args.max_steps or DEFAULT_BUDGET[algo]
        rows = []
        for seed in range(1, args.seeds + 1):
            ok, steps, wall, confirm = run(algo, seed, budget, args.zoo, args.matched)
            rows.append({"seed": seed, "solved": ok, "env_steps": steps, "wall_s": round(wall, 3),
                         "confirm_return": confirm})
            print(f"seed={seed} algo={algo} solved={ok} env_steps={steps} wall_s={wall:.3f} "
                  f"confirm_return={confirm}", flush=True)
        won = [r for r in rows if r["solved"]]
        med_steps = statistics.median(r["env_steps"] for r in won) if won else None
        med_wall = round(statistics.median(r["wall_s"] for r in won), 3) if won else None
        print(f"median env_steps={med_steps} wall_s={med_wall}", flush=True)
        if args.json:
            print(json.dumps({"peer": "sb3", "algo": algo, "seeds": rows,
                              "median_env_steps": med_steps, "median_wall_s": med_wall}), flush=True)


if __name__ == "__main__":
    main()
