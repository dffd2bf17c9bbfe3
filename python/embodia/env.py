"""gymnasium's `Env` and `VectorEnv` around embodia's batched environments (`VecEnvCore`)."""

from __future__ import annotations

import json
import math
from typing import Any, Mapping, Optional

import gymnasium as gym
import numpy as np
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from ._embodia import VecEnvCore

# Seeds are u64 in the core; gymnasium draws them from a numpy generator.
_SEED_BOUND = 2**63


def config_overrides(config: Optional[Mapping[str, Any]]) -> list[str]:
    """`config` (`{"env.episode_steps": 100}`) as `--set` strings (`env.episode_steps=100`)."""
    if config is None:
        return []
    if not isinstance(config, Mapping):
        raise TypeError(f"config must be a dict of `--set` keys to values, not {type(config).__name__}")
    out = []
    for key, value in config.items():
        if not isinstance(key, str):
            raise TypeError(f"config key {key!r} is not a string; keys are `--set` keys such as 'env.episode_steps'")
        out.append(f"{key}={_toml_value(value, key)}")
    return out


def _toml_value(value: Any, key: str) -> str:
    """`value` as a TOML literal, for a `--set` string."""
    if isinstance(value, bool) or isinstance(value, np.bool_):
        return "true" if value else "false"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        value = float(value)
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (list, tuple, np.ndarray)):
        return "[" + ", ".join(_toml_value(v, key) for v in list(value)) + "]"
    if isinstance(value, Mapping):
        items = ", ".join(f"{json.dumps(str(k))} = {_toml_value(v, key)}" for k, v in value.items())
        return "{" + items + "}"
    raise TypeError(f"config[{key!r}] is a {type(value).__name__}; values are numbers, booleans, strings, lists or dicts")


def float32_array(value: Any, name: str) -> np.ndarray:
    """`value` as a C-contiguous float32 array; `TypeError` naming `name` for non-numbers."""
    array = np.asarray(value)
    if array.dtype.kind not in "fiu":
        raise TypeError(f"{name} must be an array of numbers (float32); got dtype {array.dtype}")
    return np.ascontiguousarray(array, dtype=np.float32)


def _spaces(core: VecEnvCore) -> tuple[gym.spaces.Space, gym.spaces.Box]:
    """The observation and action space of one environment of `core`."""
    low, high = core.obs_bounds()
    state = gym.spaces.Box(low=low, high=high, dtype=np.float32)
    cameras = core.cameras()
    if cameras:
        spaces = {"state": state}
        for name, height, width, channels in cameras:
            spaces[name] = gym.spaces.Box(0, 255, shape=(height, width, channels), dtype=np.uint8)
        observation: gym.spaces.Space = gym.spaces.Dict(spaces)
    else:
        observation = state
    low, high = core.action_bounds()
    return observation, gym.spaces.Box(low=low, high=high, dtype=np.float32)


def _observation(core: VecEnvCore, state: np.ndarray, cameras: list[str]) -> Any:
    """The batched observation: the state vectors, or a dict with the camera images."""
    if not cameras:
        return state
    out = {"state": state}
    out.update(zip(cameras, core.images()))
    return out


def _seed(seed: Any) -> int:
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool) and 0 <= int(seed) < 2**64:
        return int(seed)
    raise ValueError(
        f"seed {seed!r} is not allowed: embodia seeds a batch with one integer in [0, 2**64) "
        "(environment i draws from (seed, i))"
    )


def _reset_seed(env: Any, seed: Any, options: Optional[dict]) -> int:
    """The seed a reset of `env` uses (gymnasium's rule): `seed`, which also seeds the
    environment's generator; without one, the seed given at construction on the first reset and
    a draw from the generator after."""
    if options:
        raise ValueError(f"reset options {sorted(options)} are not supported (embodia resets the whole batch)")
    if seed is None and not env._seeded:
        seed = env._first_seed
    if seed is None:
        seed = int(env.np_random.integers(_SEED_BOUND))
    else:
        seed = _seed(seed)
        env._np_random, env._np_random_seed = seeding.np_random(seed)
    env._seeded = True
    return seed


class EmbodiaVectorEnv(VectorEnv):
    """`num_envs` environments of one embodia task, stepped together in Rust (see
    `embodia.make_vec`). `info` of `step` holds `success` (bool `[num_envs]`), `final_obs`
    and `_final_obs` (same-step autoreset), `final_info` (`success` of the ended episodes) and
    `episode` (`r`: return, `l`: length of the episodes that ended, masked by `_episode`)."""

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": []}

    def __init__(
        self,
        task: str,
        num_envs: int = 64,
        seed: int = 0,
        config: Optional[Mapping[str, Any]] = None,
        camera_size: Optional[int] = None,
    ):
        if not isinstance(num_envs, (int, np.integer)) or isinstance(num_envs, bool) or num_envs < 1:
            raise ValueError(f"num_envs {num_envs!r} is not allowed: a positive integer")
        self._first_seed = _seed(seed)
        self.core = VecEnvCore(task, int(num_envs), self._first_seed, config_overrides(config), camera_size)
        self.num_envs = int(num_envs)
        self.task = task
        self._cameras = [c[0] for c in self.core.cameras()]
        self._has_instructions = self.core.instructions()[0] is not None
        self.single_observation_space, self.single_action_space = _spaces(self.core)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._seeded = False

    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None):
        """Resets every environment: with `seed`, from it; without, the first reset uses the
        seed given to `make_vec` and later ones draw a seed from the vector env's generator."""
        seed = _reset_seed(self, seed, options)
        state = self.core.reset(seed)
        return _observation(self.core, state, self._cameras), self._reset_info()

    def step(self, actions: Any):
        """Steps every environment with `actions` (`[num_envs, action_dim]`); returns
        `(obs, reward, terminated, truncated, info)`."""
        array = float32_array(actions, "actions")
        if array.shape != (self.num_envs, self.core.action_dim):
            raise ValueError(f"actions have shape {array.shape}; expected {(self.num_envs, self.core.action_dim)}")
        obs, reward, terminated, truncated, success, final_obs, ret, length = self.core.step(array)
        done = terminated | truncated
        info = {
            "success": success,
            "_success": np.ones(self.num_envs, dtype=bool),
            # With cameras, only the state: the cameras render after the autoreset.
            "final_obs": {"state": final_obs} if self._cameras else final_obs,
            "_final_obs": done,
            "final_info": {"success": success, "_success": done},
            "_final_info": done,
            "episode": {"r": ret, "l": length.astype(np.int64), "_r": done, "_l": done},
            "_episode": done,
        }
        if self._has_instructions:
            info["instruction"] = np.array(self.core.instructions(), dtype=object)
        return _observation(self.core, obs, self._cameras), reward, terminated, truncated, info

    def expert_actions(self) -> np.ndarray:
        """The scripted expert's actions for the present states (see `embodia.expert`)."""
        return self.core.expert_actions()

    def _reset_info(self) -> dict:
        info: dict = {}
        if self._has_instructions:
            info["instruction"] = np.array(self.core.instructions(), dtype=object)
        return info

    def close_extras(self, **kwargs: Any) -> None:
        self.core = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"EmbodiaVectorEnv({self.task}, num_envs={self.num_envs})"


class EmbodiaEnv(gym.Env):
    """One environment of an embodia task (see `embodia.make`). `info` holds `success`; after
    a step that ends the episode, call `reset` before stepping again."""

    metadata = {"render_modes": []}

    def __init__(
        self,
        task: str,
        seed: int = 0,
        config: Optional[Mapping[str, Any]] = None,
        camera_size: Optional[int] = None,
    ):
        self._first_seed = _seed(seed)
        self.core = VecEnvCore(task, 1, self._first_seed, config_overrides(config), camera_size)
        self.task = task
        self._cameras = [c[0] for c in self.core.cameras()]
        self._has_instructions = self.core.instructions()[0] is not None
        self.observation_space, self.action_space = _spaces(self.core)
        self._seeded = False
        self._ended = False
        self._last: dict = {}

    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None):
        """Starts an episode: from `seed`; without one, the first reset uses the seed given to
        `make` and later ones draw a seed from the environment's generator."""
        seed = _reset_seed(self, seed, options)
        self._ended = False
        return self._observe(self.core.reset(seed)), self._info(None)

    def step(self, action: Any):
        """One step with `action` (`[action_dim]`); returns `(obs, reward, terminated,
        truncated, info)`. On the step that ends the episode `obs` is its last observation."""
        if self._ended:
            raise RuntimeError("the episode has ended: call reset() before step()")
        array = float32_array(action, "action")
        if array.shape != (self.core.action_dim,):
            raise ValueError(f"action has shape {array.shape}; expected {(self.core.action_dim,)}")
        obs, reward, terminated, truncated, success, final_obs, _, _ = self.core.step(array.reshape(1, -1))
        self._ended = bool(terminated[0] or truncated[0])
        if not self._ended:
            observation = self._observe(obs)
        elif self._cameras:
            # The cameras render after the core's autoreset, so they already show the next
            # episode: the last observation of the ended one keeps the frames of the step before.
            observation = {"state": final_obs[0], **{k: v for k, v in self._last.items() if k != "state"}}
        else:
            observation = final_obs[0]
        return observation, float(reward[0]), bool(terminated[0]), bool(truncated[0]), self._info(success[0])

    def _observe(self, state: np.ndarray) -> Any:
        """The observation of the environment: its state row and (with cameras) its images."""
        if not self._cameras:
            return state[0]
        self._last = {k: v[0] for k, v in _observation(self.core, state, self._cameras).items()}
        return self._last

    def _info(self, success: Optional[bool]) -> dict:
        info: dict = {}
        if success is not None:
            info["success"] = bool(success)
        if self._has_instructions:
            info["instruction"] = self.core.instructions()[0]
        return info

    def __repr__(self) -> str:
        return f"EmbodiaEnv({self.task})"
