"""Stable-Baselines3's `VecEnv` over an embodia vector environment, so that SB3 algorithms
collect from every environment of the batch in one Rust call:

    from stable_baselines3 import PPO
    from embodia.sb3 import Sb3VecEnv
    model = PPO("MlpPolicy", Sb3VecEnv(embodia.make_vec("reach", num_envs=64)))

SB3's conventions: `step` returns `(obs, rewards, dones, infos)` with a list of per-environment
info dicts; where an episode ended, `infos[i]["terminal_observation"]` is its last observation
and `infos[i]["TimeLimit.truncated"]` says whether the time limit (not a terminal state) ended
it; `infos[i]["is_success"]` is the task's success flag.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np
from stable_baselines3.common.vec_env.base_vec_env import VecEnv

from .env import EmbodiaVectorEnv


class Sb3VecEnv(VecEnv):
    """An embodia vector environment (state observations) as an SB3 `VecEnv`."""

    def __init__(self, env: EmbodiaVectorEnv):
        if env.core.cameras():
            raise ValueError("Sb3VecEnv takes state observations; make the environment without camera_size")
        self.env = env
        self._actions: Optional[np.ndarray] = None
        self._seed: Optional[int] = None
        super().__init__(env.num_envs, env.single_observation_space, env.single_action_space)

    def reset(self) -> np.ndarray:
        obs, _ = self.env.reset(seed=self._seed)
        self._seed = None
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        low, high = self.action_space.low, self.action_space.high
        self._actions = np.clip(actions, low, high)

    def step_wait(self):
        obs, reward, terminated, truncated, info = self.env.step(self._actions)
        dones = terminated | truncated
        infos: list[dict] = [{} for _ in range(self.num_envs)]
        for i in np.flatnonzero(dones):
            infos[i] = {
                "terminal_observation": info["final_obs"][i],
                "TimeLimit.truncated": bool(truncated[i] and not terminated[i]),
                "is_success": bool(info["success"][i]),
                "episode": {"r": float(info["episode"]["r"][i]), "l": int(info["episode"]["l"][i])},
            }
        return obs, reward.astype(np.float32), dones, infos

    def seed(self, seed: Optional[int] = None) -> Sequence[None]:
        self._seed = seed
        return [None] * self.num_envs

    def close(self) -> None:
        self.env.close()

    def get_attr(self, attr_name: str, indices: Any = None) -> list:
        return [getattr(self.env, attr_name)] * len(self._get_indices(indices))

    def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:
        setattr(self.env, attr_name, value)

    def env_method(self, method_name: str, *method_args: Any, indices: Any = None, **method_kwargs: Any) -> list:
        result = getattr(self.env, method_name)(*method_args, **method_kwargs)
        return [result] * len(self._get_indices(indices))

    def env_is_wrapped(self, wrapper_class: type, indices: Any = None) -> list:
        return [False] * len(self._get_indices(indices))
