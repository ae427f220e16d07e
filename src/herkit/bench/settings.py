"""The buffer benchmark's settings: :class:`BufferBenchConfig`.

What ``herkit bench buffer --help`` lists (stored sizes, capacity, batch size, episode
length, k, seconds, seed, JSON output), checked when the config is made: an invalid value
raises ValueError.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from herkit.bench.data import MANY_ENVS
from herkit.buffer.checks import check_int


@dataclass(frozen=True)
class BufferBenchConfig:
    """Settings of the replay-buffer speed benchmark (FetchPush shapes)."""

    stored: tuple[int, ...] = (10_000, 500_000)
    """Real transitions held when sampling is timed (multiples of episode_length, <= capacity)."""
    capacity: int = 1_000_000
    """Buffer capacity in transitions."""
    batch_size: int = 256
    """Transitions per sample call."""
    episode_length: int = 50
    """Steps per episode; each episode ends with truncated=True."""
    k: int = 4
    """Relabelled goals per real transition (the future strategy's k)."""
    seconds: float = 1.0
    """Time budget of each sample measurement in seconds (adds are timed over the fill)."""
    seed: int = 0
    """Seed of the generated data and of the buffers' random generators."""
    json_out: str | None = None
    """Also write the results, configuration and machine details to this JSON file."""

    def __post_init__(self) -> None:
        for name in ("capacity", "batch_size", "episode_length", "k", "seed"):
            check_int(name, getattr(self, name), 0 if name in ("k", "seed") else 1)
        stored = self.stored
        if not isinstance(stored, tuple) or not stored:
            raise ValueError(f"stored must be a non-empty tuple of ints, got {stored!r}")
        for value in stored:
            check_int("stored", value, 1)
        if len(set(stored)) != len(stored):
            raise ValueError(f"stored must not repeat a size, got {stored!r}")
        if any(value % self.episode_length for value in stored):
            raise ValueError(
                f"stored sizes must be multiples of episode_length ({self.episode_length}), "
                f"got {stored!r}"
            )
        if max(stored) > self.capacity:
            raise ValueError(f"stored sizes must be <= capacity ({self.capacity}), got {stored!r}")
        if self.capacity // MANY_ENVS < self.episode_length:
            raise ValueError(
                f"capacity must hold an episode per env with {MANY_ENVS} envs, i.e. be >= "
                f"{MANY_ENVS * self.episode_length}, got {self.capacity}"
            )
        seconds = self.seconds
        if (
            isinstance(seconds, bool)
            or not isinstance(seconds, int | float)
            or not math.isfinite(seconds)
            or seconds <= 0
        ):
            raise ValueError(f"seconds must be a finite number > 0, got {seconds!r}")
        if self.json_out is not None and (not isinstance(self.json_out, str) or not self.json_out):
            raise ValueError(f"json_out must be a non-empty path or None, got {self.json_out!r}")
