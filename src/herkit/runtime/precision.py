"""Numeric precision of the networks' forward passes: float32, or bfloat16 autocast.

With ``bf16``, the matrix products of forward (and so backward) passes run in bfloat16
under :func:`torch.autocast`; parameters, optimiser state, Q targets, losses and every
network's output layer stay float32 (:class:`herkit.agents.networks.MLP`). It pays where
the hardware multiplies bfloat16 natively (CPUs with AVX512-BF16 or AMX, CUDA GPUs that
support it) and the batch is large enough to keep it busy; elsewhere it costs: on a CPU
without those instructions a bfloat16 matrix product runs about 10x slower than float32.
``auto`` therefore takes bf16 only where the device has those units and the update is large
(:mod:`herkit.training.update_plan`, which also chooses how the update runs).
"""

from __future__ import annotations

from typing import Literal

import gymnasium as gym
import numpy as np
import torch

from herkit.buffer.batch import Batch
from herkit.runtime.cores import cpu_flags

__all__ = ["Precision", "check_precision", "fast_bf16", "synthetic_batch"]

Precision = Literal["auto", "fp32", "bf16"]


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
    observation_space: gym.spaces.Dict,
    action_space: gym.spaces.Space,
    size: int,
    seed: int = 0,
    actor_goals: bool = False,
    subgoals: bool = False,
) -> Batch:
    """A batch of ``size`` random transitions of these (single-env) spaces: standard normal
    observations and goals (and ``actor_goals``: a second goal for the actor; ``subgoals``:
    HIQL's), actions drawn from ``action_space``, -1/0 rewards."""
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
        actor_goal=normal("desired_goal") if actor_goals else None,
        low_actor_goal=normal("desired_goal") if subgoals else None,
        high_actor_target=normal("desired_goal") if subgoals else None,
        high_actor_target_observation=normal("observation") if subgoals else None,
    )
