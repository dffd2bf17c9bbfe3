"""embodia from Python: its simulators as gymnasium environments, trained policies and datasets.

    import embodia
    envs = embodia.make_vec("reach", num_envs=64, seed=0)       # gymnasium.vector.VectorEnv
    env = embodia.make("pendulum", seed=0)                        # gymnasium.Env
    policy = embodia.load_policy("runs/pendulum-sac")             # policy.act(obs) -> actions
    data = embodia.dataset.read("data/reach")                     # LeRobot v3 datasets

The environments run in embodia's Rust core: a vector environment steps every world of the
batch in parallel with the GIL released, and its arrays cross as whole numpy buffers.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

import numpy as np

from . import dataset
from ._embodia import PolicyCore, VecEnvCore, __version__, task_names
from .env import EmbodiaEnv, EmbodiaVectorEnv, float32_array

__all__ = [
    "EmbodiaEnv",
    "EmbodiaVectorEnv",
    "Policy",
    "dataset",
    "expert",
    "load_policy",
    "make",
    "make_vec",
    "tasks",
    "__version__",
]


def tasks() -> list[str]:
    """Names of every task `make` and `make_vec` accept (those of `embodia list`, then the
    tasks that exist only as tensor environments, here run on the CPU)."""
    return task_names()


def make_vec(
    task: str,
    num_envs: int = 64,
    seed: int = 0,
    config: Optional[Mapping[str, Any]] = None,
    camera_size: Optional[int] = None,
) -> EmbodiaVectorEnv:
    """A `gymnasium.vector.VectorEnv` of `num_envs` environments of `task`.

    Autoreset is gymnasium's same-step mode (`metadata["autoreset_mode"]` is
    `AutoresetMode.SAME_STEP`): when environment `i` ends, the observation `step` returns in
    row `i` is already the first of its next episode, and the last observation of the ended
    episode is in `info["final_obs"][i]` (with `info["_final_obs"][i]` true).

    `config` takes the keys of `embodia train --set` under `env.` (e.g.
    `{"env.episode_steps": 100}`) and fails with the same messages, as `ValueError`.
    `camera_size` adds the task's cameras (rapier tasks): observations become a dict with the
    state vector under `"state"` and one `uint8 [num_envs, size, size, 3]` image per camera.
    """
    return EmbodiaVectorEnv(task, num_envs=num_envs, seed=seed, config=config, camera_size=camera_size)


def make(
    task: str,
    seed: int = 0,
    config: Optional[Mapping[str, Any]] = None,
    camera_size: Optional[int] = None,
) -> EmbodiaEnv:
    """A single `gymnasium.Env` of `task` (arguments as for `make_vec`). After an episode
    ends, call `reset` before the next `step`, as gymnasium requires."""
    return EmbodiaEnv(task, seed=seed, config=config, camera_size=camera_size)


class Policy:
    """The deterministic policy of a trained run: the forward pass `embodia export` writes
    (and `embodia act` is checked against). PPO, SAC and distilled runs; multi-step flow,
    diffusion and VLA runs are refused with the reason."""

    def __init__(self, run_dir: str):
        self._core = PolicyCore(str(run_dir))
        self.obs_dim: int = self._core.obs_dim
        self.action_dim: int = self._core.action_dim
        self.chunk: int = self._core.chunk

    def act(self, obs: np.ndarray) -> np.ndarray:
        """Actions for `obs`: `[obs_dim]` gives `[chunk * action_dim]`, `[batch, obs_dim]`
        gives `[batch, chunk * action_dim]` (float32, in the task's action units)."""
        array = float32_array(obs, "obs")
        if array.ndim == 1:
            return self._core.act(array.reshape(1, -1))[0]
        if array.ndim != 2:
            raise ValueError(f"obs has shape {array.shape}; expected [obs_dim] or [batch, obs_dim] with obs_dim {self.obs_dim}")
        return self._core.act(array)

    def __repr__(self) -> str:
        return f"Policy(obs_dim={self.obs_dim}, action_dim={self.action_dim}, chunk={self.chunk})"


def load_policy(run_dir: str) -> Policy:
    """The policy of the run directory `run_dir` (see `Policy`)."""
    return Policy(run_dir)


def expert(env: "EmbodiaVectorEnv | EmbodiaEnv") -> np.ndarray:
    """The task's scripted expert's actions for `env`'s present states (privileged: the expert
    reads the true state): `[num_envs, action_dim]` for a vector environment, `[action_dim]`
    for a single one. Call once per step, before stepping. `ValueError` for a task without one."""
    if isinstance(env, EmbodiaVectorEnv):
        return env.core.expert_actions()
    if isinstance(env, EmbodiaEnv):
        return env.core.expert_actions()[0]
    raise TypeError(f"expert() takes an environment made by embodia.make or embodia.make_vec, not {type(env).__name__}")
