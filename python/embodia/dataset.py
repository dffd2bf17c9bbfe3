"""LeRobot v3 datasets as embodia records them (`embodia record`), read and written as numpy.

    data = embodia.dataset.read("data/reach")
    data.num_episodes, data.num_frames
    data.episodes[0].observations          # float32 [T, obs_dim]
    frames = data.frames()                  # every frame: {"observation.state": [N, obs_dim], ...}

LeRobot's own tools read these datasets too (the layout is LeRobot's codebase version v3.0).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Iterable, Optional, Union

import numpy as np

from ._embodia import read_dataset, write_dataset

PathLike = Union[str, "os.PathLike[str]"]


@dataclass
class Episode:
    """One episode: `T` steps of what was observed and done."""

    observations: np.ndarray
    """float32 `[T, obs_dim]`: the observation each action was taken on."""
    actions: np.ndarray
    """float32 `[T, action_dim]`, in the task's action units."""
    rewards: np.ndarray
    """float32 `[T]`: the reward after each action."""
    success: bool = False
    """Whether the episode ended in the task's success state."""
    terminated: bool = False
    """Whether it ended in a terminal state (False: cut by the time limit)."""
    instruction: Optional[str] = None
    """Its language instruction, for language tasks."""
    images: dict = field(default_factory=dict)
    """Camera name → uint8 `[T, height, width, channels]`."""
    states: Optional[np.ndarray] = None
    """float32 `[T, state_dim]` privileged environment state, where recorded."""

    def __len__(self) -> int:
        return len(self.actions)


@dataclass
class Dataset:
    """A dataset read by `read`."""

    path: str
    task: str
    fps: float
    obs_dim: int
    action_dim: int
    has_success: bool
    episodes: list
    info: dict
    """`meta/info.json`."""

    @property
    def num_episodes(self) -> int:
        return len(self.episodes)

    @property
    def num_frames(self) -> int:
        return sum(len(e) for e in self.episodes)

    def frames(self) -> dict:
        """Every frame of every episode as LeRobot's columns: `observation.state`, `action`,
        `next.reward`, `next.done`, `next.success`, `episode_index`, `frame_index`, `index`."""
        lengths = [len(e) for e in self.episodes]
        last = np.zeros(self.num_frames, dtype=bool)
        last[np.cumsum(lengths) - 1] = True
        per_episode = lambda flag: np.repeat([getattr(e, flag) for e in self.episodes], lengths) & last
        return {
            "observation.state": np.concatenate([e.observations for e in self.episodes]),
            "action": np.concatenate([e.actions for e in self.episodes]),
            "next.reward": np.concatenate([e.rewards for e in self.episodes]),
            "next.done": per_episode("terminated"),
            "next.success": per_episode("success"),
            "episode_index": np.repeat(np.arange(self.num_episodes), lengths),
            "frame_index": np.concatenate([np.arange(n) for n in lengths]),
            "index": np.arange(self.num_frames),
        }


def read(path: PathLike) -> Dataset:
    """Reads the dataset at `path`. `OSError` for a missing file, `ValueError` for a
    malformed dataset, naming the file, column and episode at fault."""
    raw = read_dataset(os.fspath(path))
    with open(os.path.join(os.fspath(path), "meta", "info.json")) as f:
        info = json.load(f)
    cameras = [c[0] for c in raw["cameras"]]
    episodes = [
        Episode(
            observations=e["observations"],
            actions=e["actions"],
            rewards=e["rewards"],
            success=e["success"],
            terminated=e["terminated"],
            instruction=e["instruction"],
            images=dict(zip(cameras, e["images"])),
            states=e["states"] if e["states"].shape[1] > 0 else None,
        )
        for e in raw["episodes"]
    ]
    return Dataset(
        path=os.fspath(path),
        task=raw["task"],
        fps=raw["fps"],
        obs_dim=raw["obs_dim"],
        action_dim=raw["action_dim"],
        has_success=raw["has_success"],
        episodes=episodes,
        info=info,
    )


def write(path: PathLike, task: str, fps: float, episodes: Iterable[Episode], overwrite: bool = False) -> int:
    """Writes `episodes` as a LeRobot v3 dataset of `task` recorded at `fps` steps per second
    into `path` (atomically: a dataset there is replaced only with `overwrite`, and anything
    that is not a dataset never); returns the number of frames written. Images and
    environment states are not written (record them with `embodia record`)."""
    rows = []
    for i, e in enumerate(episodes):
        if e.images or e.states is not None:
            raise ValueError(f"episodes[{i}] has images or states; write() stores observations, actions and rewards only")
        rows.append(
            {
                "observations": _matrix(e.observations, f"episodes[{i}].observations"),
                "actions": _matrix(e.actions, f"episodes[{i}].actions"),
                "rewards": np.ascontiguousarray(e.rewards, dtype=np.float32),
                "success": bool(e.success),
                "terminated": bool(e.terminated),
                "instruction": e.instruction,
            }
        )
    return write_dataset(os.fspath(path), task, float(fps), rows, overwrite)


def _matrix(value, name: str) -> np.ndarray:
    array = np.ascontiguousarray(value, dtype=np.float32)
    if array.ndim != 2:
        raise ValueError(f"{name} has shape {array.shape}; expected [steps, width]")
    return array
