"""Numeric precision of the networks' forward passes: float32, or bfloat16 autocast.

With ``bf16``, the matrix products of forward (and so backward) passes run in bfloat16
under :func:`torch.autocast`; parameters, optimiser state, Q targets, losses and every
network's output layer stay float32 (:class:`herkit.agents.networks.MLP`). It pays where
the hardware multiplies bfloat16 natively (CPUs with AVX512-BF16 or AMX, CUDA GPUs that
support it) and the batch is large enough to keep it busy; elsewhere it costs: on a CPU
without those instructions a bfloat16 matrix product runs about 10x slower than float32.
``auto`` therefore times the run's own update in both (:func:`measure_precision`).
"""

from __future__ import annotations

import time
from typing import Any, Literal

import gymnasium as gym
import numpy as np
import torch

from herkit.buffer.batch import Batch
from herkit.cores import cpu_flags

__all__ = ["AUTO_BF16_SPEEDUP", "Precision", "check_precision", "fast_bf16", "measure_precision"]

Precision = Literal["auto", "fp32", "bf16"]

AUTO_BF16_SPEEDUP = 1.1
"""``auto`` picks bf16 when the run's update is at least this much faster in it."""


def fast_bf16(device: torch.device) -> bool:
    """Whether ``device`` multiplies bfloat16 natively (AVX512-BF16 or AMX on a CPU)."""
    if device.type == "cuda":
        return torch.cuda.is_available() and torch.cuda.is_bf16_supported()
    if device.type == "cpu":
        return bool({"avx512_bf16", "amx_bf16"} & cpu_flags())
    return False


def check_precision(precision: str, device: torch.device) -> None:
    """ValueError unless ``precision`` is auto, fp32 or bf16 and ``device`` can run it."""
    if precision not in ("auto", "fp32", "bf16"):
        raise ValueError(f"precision must be 'auto', 'fp32' or 'bf16', got {precision!r}")
    if precision == "bf16" and device.type == "cuda" and not fast_bf16(device):
        raise ValueError("--precision bf16: this CUDA device does not support bfloat16")


def synthetic_batch(
    observation_space: gym.spaces.Dict, action_space: gym.spaces.Space, size: int, seed: int = 0
) -> Batch:
    """A batch of ``size`` random transitions of these (single-env) spaces: standard normal
    observations and goals, actions drawn from ``action_space``, -1/0 rewards."""
    rng = np.random.default_rng(seed)

    def normal(key: str) -> np.ndarray:
        shape = observation_space[key].shape or ()
        return rng.standard_normal((size, *shape)).astype(np.float32)

    actions = gym.vector.utils.batch_space(action_space, size)
    actions.seed(seed)
    return Batch(
        observation=normal("observation"),
        action=np.asarray(actions.sample()),
        reward=-rng.integers(2, size=size).astype(np.float32),
        next_observation=normal("observation"),
        goal=normal("desired_goal"),
        achieved_goal=normal("desired_goal"),
        next_achieved_goal=normal("desired_goal"),
        terminated=np.zeros(size, np.float32),
    )


def measure_precision(
    agent: Any,
    observation_space: gym.spaces.Dict,
    action_space: gym.spaces.Space,
    batch_size: int,
    mean: Any = None,
    repeats: int = 3,
) -> tuple[str, dict[str, float]]:
    """Time ``repeats`` updates of ``agent`` at ``batch_size`` in fp32 and in bf16 (after
    one warm-up update each) and return the faster, with the milliseconds per update.

    bf16 wins only if it is at least :data:`AUTO_BF16_SPEEDUP` times faster. The agent's
    state (parameters, optimisers, counters, random generators) and precision are
    restored afterwards. ``mean`` (e.g. ``Context.mean`` of a torchrun) averages each
    timing over ranks, so every rank decides alike; every rank runs the same updates.
    """
    saved = agent.state_dict()
    before = agent.precision
    batch = synthetic_batch(observation_space, action_space, batch_size)
    agent.update_normalizer(batch.observation, batch.goal)
    timings: dict[str, float] = {}
    try:
        for precision in ("fp32", "bf16"):
            agent.set_precision(precision)
            agent.update(batch)
            start = time.perf_counter()
            for _ in range(repeats):
                agent.update(batch)
            seconds = (time.perf_counter() - start) / repeats
            timings[f"{precision}_ms"] = round(1000 * (mean(seconds) if mean else seconds), 3)
    finally:
        agent.load_state_dict(saved)
        agent.set_precision(before)
    faster = timings["fp32_ms"] >= AUTO_BF16_SPEEDUP * timings["bf16_ms"]
    return ("bf16" if faster else "fp32"), timings
