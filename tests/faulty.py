"""Goal envs that fail on purpose, for the tests of what a run does when an env fails.

``faulty:FaultyBitFlip-v0`` (this module on ``sys.path``, as pytest and the CLI tests put
it) is herkit's bit flipping with these keyword arguments:

- ``fault``: ``"raise"`` (a RuntimeError), ``"nan"`` / ``"inf"`` (that value in the
  observation), ``"hang"`` (sleeps for an hour) or ``"none"``;
- ``during``: ``"step"`` or ``"reset"``; ``at``: the call of that method (1 for the first,
  counted over the env object's whole life) that fails, and every later one;
- ``token``: a file; the env fails only if it can delete it (so one env object of all the
  processes fails, once);
- ``armed_from_seed``: only an env reset with a seed at least this large fails (training
  envs are seeded from the run's seed and a small offset, evaluation episodes by 32-bit
  hashes: past 10,000 all but one in some 400,000).
"""

from __future__ import annotations

import os
import time
from typing import Any

import gymnasium as gym
import numpy as np

from herkit.envs.bitflip import BitFlipEnv


class FaultyBitFlipEnv(BitFlipEnv):
    """Bit flipping that fails as its keyword arguments say (see the module docstring)."""

    def __init__(
        self,
        fault: str = "raise",
        during: str = "step",
        at: int = 1,
        token: str | None = None,
        armed_from_seed: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.fault, self.during, self.at, self.token = fault, during, int(at), token
        self.armed = armed_from_seed is None
        self.armed_from_seed = armed_from_seed
        self.calls = {"step": 0, "reset": 0}

    def reset(self, *, seed: int | None = None, options: Any = None) -> Any:
        if seed is not None and self.armed_from_seed is not None:
            self.armed = seed >= self.armed_from_seed
        obs, info = super().reset(seed=seed, options=options)
        return self._maybe_fail("reset", obs), info

    def step(self, action: Any) -> Any:
        obs, reward, terminated, truncated, info = super().step(action)
        return self._maybe_fail("step", obs), reward, terminated, truncated, info

    def _maybe_fail(self, method: str, obs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        self.calls[method] += 1
        if method != self.during or not self.armed or self.calls[method] < self.at:
            return obs
        if self.fault == "none" or not self._claim():
            return obs
        if self.fault == "raise":
            raise RuntimeError(f"the simulator blew up at {method} {self.calls[method]}")
        if self.fault == "hang":
            time.sleep(3600)
        value = {"nan": np.nan, "inf": np.inf}[self.fault]
        broken = {key: np.array(array, dtype=np.float32) for key, array in obs.items()}
        broken["observation"][:2] = value
        return broken

    def _claim(self) -> bool:
        if self.token is None:
            return True
        try:
            os.remove(self.token)
        except FileNotFoundError:
            return False
        return True


gym.register("FaultyBitFlip-v0", entry_point=FaultyBitFlipEnv, max_episode_steps=None)
