"""The benchmarks' settings: :class:`BufferBenchConfig` (``herkit bench buffer``) and
:class:`UpdateBenchConfig` (``herkit bench update``), with :class:`NetworkSize`.

What ``herkit bench buffer --help`` lists (stored sizes, capacity, batch size, episode
length, k, seconds, seed, JSON output) and what ``herkit bench update --help`` lists
(algorithms, network sizes with their batch sizes, precisions, update modes, the device,
where the sampled buffer lives, seconds per row, threads and JSON output), checked when a
config is made: an invalid value raises ValueError naming the field. Nothing here imports
torch.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from herkit.agents.registry import algo_names
from herkit.agents.settings import UPDATE_MODES, UpdateMode
from herkit.bench.data import MANY_ENVS
from herkit.buffer.checks import check_float, check_int, is_number

_SIZE = re.compile(r"^(\d+)x(\d+)(ln)?:(\d+)$")


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
        if not (is_number(self.seconds) and self.seconds > 0):
            raise ValueError(f"seconds must be a finite number > 0, got {self.seconds!r}")
        if self.json_out is not None and (not isinstance(self.json_out, str) or not self.json_out):
            raise ValueError(f"json_out must be a non-empty path or None, got {self.json_out!r}")


@dataclass(frozen=True)
class NetworkSize:
    """Hidden layers, LayerNorm and batch size of one row of the benchmark."""

    hidden: tuple[int, ...]
    layer_norm: bool
    batch_size: int

    @classmethod
    def parse(cls, text: str) -> NetworkSize:
        """``LAYERSxWIDTH[ln]:BATCH``, e.g. ``3x256:256`` or ``3x512ln:2048``."""
        match = _SIZE.match(text)
        if match is None or min(int(match[1]), int(match[2]), int(match[4])) < 1:
            raise ValueError(
                f"sizes must look like LAYERSxWIDTH[ln]:BATCH with positive numbers "
                f"(3x256:256, 3x512ln:2048), got {text!r}"
            )
        layers, width, batch = int(match[1]), int(match[2]), int(match[4])
        return cls((width,) * layers, match[3] is not None, batch)


@dataclass(frozen=True)
class UpdateBenchConfig:
    """Settings of the update-speed benchmark (sample + update, FetchPush shapes)."""

    algos: tuple[str, ...] = ("ddpg",)
    """Algorithms to time: names of registered agents (``herkit train --algo``'s choices,
    read from the registry when the flag is read, so that an agent registered after this
    module was imported is one)."""
    sizes: tuple[str, ...] = ("3x256:256", "3x512ln:2048")
    """Networks and batch sizes as LAYERSxWIDTH[ln]:BATCH (ln: LayerNorm in actor and critic)."""
    precisions: tuple[Literal["fp32", "bf16"], ...] = ("fp32", "bf16")
    """Precisions to time."""
    modes: tuple[UpdateMode, ...] = UPDATE_MODES
    """Update modes to time; those the device cannot run (captured without CUDA) are left out."""
    device: str = "auto"
    """Torch device: cpu, cuda, cuda:N, or auto (cuda when available)."""
    buffer: Literal["auto", "host", "device"] = "auto"
    """Where the sampled buffer keeps its data: host (numpy), device (torch tensors on
    --device), or auto (device on a GPU, else host)."""
    prioritized: bool = False
    """Sample by priority and give the sampled transitions their TD errors as priorities
    after each update, as a ``--prioritized`` run does (on the device where the batch is
    drawn there)."""
    seconds: float = 2.0
    """Seconds each row is timed (after its warm-up: compiling and capturing)."""
    threads: int = 1
    """Threads of torch's CPU kernels."""
    fill: int = 200_000
    """Transitions in the buffer sampled from (episodes of 50 steps)."""
    seed: int = 0
    """Seed of the data, the buffer and the agents."""
    json_out: str | None = None
    """Also write the machine and the rows to this JSON file."""

    def __post_init__(self) -> None:
        for name, allowed in (
            ("algos", algo_names()),
            ("precisions", ("fp32", "bf16")),
            ("modes", UPDATE_MODES),
        ):
            values = getattr(self, name)
            if not isinstance(values, tuple) or not values or set(values) - set(allowed):
                raise ValueError(
                    f"{name} must be a non-empty tuple of {', '.join(allowed)}, got {values!r}"
                )
        if not isinstance(self.sizes, tuple) or not self.sizes:
            raise ValueError(f"sizes must be a non-empty tuple, got {self.sizes!r}")
        self.parsed_sizes()
        device = self.device
        if not (device in ("cpu", "cuda", "auto") or re.fullmatch(r"cuda:\d+", str(device))):
            raise ValueError(f"device must be cpu, cuda, cuda:N or auto, got {device!r}")
        check_float("seconds", self.seconds, 0.0, open_low=True)
        for name, minimum in (("threads", 1), ("fill", 50), ("seed", 0)):
            check_int(name, getattr(self, name), minimum)
        if self.json_out is not None and (not isinstance(self.json_out, str) or not self.json_out):
            raise ValueError(f"json_out must be a non-empty path or None, got {self.json_out!r}")

    def parsed_sizes(self) -> list[NetworkSize]:
        """:attr:`sizes` parsed."""
        return [NetworkSize.parse(text) for text in self.sizes]
