"""Stable-Baselines3 learns embodia's tasks through the package (fixed seeds; the thresholds
are the tasks' own: pendulum's solve threshold, and a reach success rate well above the
untrained policy's 0%). Full figures: bench/python_package.sh --figures, docs/results/python.md."""

import os

import numpy as np
import pytest
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.vec_env import VecNormalize

import embodia
from embodia.sb3 import Sb3VecEnv

torch.set_num_threads(1)


def evaluate(model, task, episodes, seed, normalize=None):
    """Mean return and success rate of `model`'s deterministic actions over `episodes`
    episodes of `task` (all run at once, one per environment)."""
    envs = embodia.make_vec(task, num_envs=episodes, seed=seed)
    obs, _ = envs.reset()
    returns, successes = np.zeros(episodes), np.zeros(episodes, dtype=bool)
    done = np.zeros(episodes, dtype=bool)
    while not done.all():
        x = normalize.normalize_obs(obs) if normalize is not None else obs
        actions, _ = model.predict(x, deterministic=True)
        obs, reward, terminated, truncated, info = envs.step(actions)
        returns += np.where(done, 0.0, reward)
        successes |= info["success"] & ~done
        done |= terminated | truncated
    return returns.mean(), successes.mean()


def test_sb3_ppo_solves_pendulum_through_the_package():
    # rl-baselines3-zoo's tuned PPO for Pendulum-v1 and its 100k-step budget; evaluated after
    # every iteration (10 deterministic episodes), as `bench/compare_solve.sh` does.
    envs = Sb3VecEnv(embodia.make_vec("pendulum", num_envs=4, seed=1))
    model = PPO(
        "MlpPolicy", envs, n_steps=1024, gae_lambda=0.95, gamma=0.9, n_epochs=10, ent_coef=0.0,
        learning_rate=1e-3, clip_range=0.2, use_sde=True, sde_sample_freq=4, seed=1, device="cpu",
    )
    budget = int(os.environ.get("EMBODIA_SB3_PENDULUM_STEPS", 100_000))
    best = -np.inf
    while model.num_timesteps < budget and best < -200:
        model.learn(total_timesteps=4 * 1024, reset_num_timesteps=False)
        best = max(best, evaluate(model, "pendulum", episodes=10, seed=10_001 + model.num_timesteps)[0])
    print(f"sb3 ppo pendulum: mean return {best:.1f} (10 episodes) after {model.num_timesteps} steps")
    assert best >= -200


def test_sb3_ppo_learns_reach_through_the_vector_env():
    # Every environment of the batch in one Rust call; observations normalized by SB3.
    envs = VecNormalize(Sb3VecEnv(embodia.make_vec("reach", num_envs=64, seed=1)), norm_reward=False)
    model = PPO(
        "MlpPolicy", envs, n_steps=64, batch_size=1024, n_epochs=5, gamma=0.99, gae_lambda=0.95,
        learning_rate=3e-4, ent_coef=0.0, seed=1, device="cpu", policy_kwargs={"log_std_init": -0.7},
    )
    model.learn(total_timesteps=int(os.environ.get("EMBODIA_SB3_REACH_STEPS", 400_000)))
    envs.training = False
    _, success = evaluate(model, "reach", episodes=64, seed=10_001, normalize=envs)
    print(f"sb3 ppo reach: success rate {success:.0%} over 64 episodes")
    assert success >= float(os.environ.get("EMBODIA_SB3_REACH_FLOOR", 0.8))
