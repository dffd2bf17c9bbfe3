"""Type stubs of the compiled module (python/src/); users call it through `embodia`."""

from os import PathLike
from typing import Optional, Union

import numpy as np
import numpy.typing as npt

__version__: str

def task_names() -> list[str]:
    """Every task name, registry order, then the tensor-only tasks."""

class VecEnvCore:
    """A batch of embodia environments with same-step autoreset, stepped with the GIL released."""

    task: str
    num_envs: int
    obs_dim: int
    action_dim: int
    description: str
    max_episode_steps: int
    has_success: bool
    def __init__(
        self, task: str, num_envs: int, seed: int, overrides: list[str] = ..., camera_size: Optional[int] = None
    ) -> None: ...
    def obs_bounds(self) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]: ...
    def action_bounds(self) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]: ...
    def cameras(self) -> list[tuple[str, int, int, int]]:
        """`[(name, height, width, channels)]` in image order."""
    def reset(self, seed: int) -> npt.NDArray[np.float32]:
        """`[num_envs, obs_dim]`."""
    def obs(self) -> npt.NDArray[np.float32]: ...
    def step(
        self, actions: npt.NDArray[np.float32]
    ) -> tuple[
        npt.NDArray[np.float32],
        npt.NDArray[np.float32],
        npt.NDArray[np.bool_],
        npt.NDArray[np.bool_],
        npt.NDArray[np.bool_],
        npt.NDArray[np.float32],
        npt.NDArray[np.float32],
        npt.NDArray[np.uint32],
    ]:
        """`(obs, reward, terminated, truncated, success, final_obs, episode_return, episode_length)`."""
    def images(self) -> list[npt.NDArray[np.uint8]]:
        """One `[num_envs, height, width, channels]` array per camera."""
    def instructions(self) -> list[Optional[str]]: ...
    def expert_actions(self) -> npt.NDArray[np.float32]:
        """`[num_envs, action_dim]`."""

class PolicyCore:
    """A run's exported forward pass."""

    obs_dim: int
    action_dim: int
    chunk: int
    def __init__(self, run: Union[str, PathLike[str]]) -> None: ...
    def action_bounds(self) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]: ...
    def act(self, obs: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """`[batch, obs_dim]` → `[batch, chunk * action_dim]`."""

def read_dataset(path: Union[str, PathLike[str]]) -> dict: ...
def write_dataset(
    path: Union[str, PathLike[str]], task: str, fps: float, episodes: list[dict], overwrite: bool = False
) -> int: ...
