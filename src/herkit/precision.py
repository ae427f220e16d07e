"""Numeric precision of the networks' forward passes: float32, or bfloat16 autocast.

With ``bf16``, the matrix products of forward (and so backward) passes run in bfloat16
under :func:`torch.autocast`; parameters, optimiser state, Q targets, losses and every
network's output layer stay float32 (:class:`herkit.agents.networks.MLP`). It pays where
the hardware multiplies bfloat16 natively: CPUs with AVX512-BF16 or AMX, and CUDA GPUs
that support it.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Literal

import torch

__all__ = ["Precision", "fast_bf16", "resolve_precision"]

Precision = Literal["auto", "fp32", "bf16"]

AUTO_BF16_MIN_WIDTH = 512
"""``auto`` picks bf16 for networks at least this wide (where it was measured to help)."""


@functools.cache
def _cpu_flags() -> frozenset[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return frozenset()
    for line in text.splitlines():
        if line.startswith("flags"):
            return frozenset(line.split(":", 1)[1].split())
    return frozenset()


def fast_bf16(device: torch.device) -> bool:
    """Whether ``device`` multiplies bfloat16 natively (AVX512-BF16 or AMX on a CPU)."""
    if device.type == "cuda":
        return torch.cuda.is_available() and torch.cuda.is_bf16_supported()
    if device.type == "cpu":
        return bool({"avx512_bf16", "amx_bf16"} & _cpu_flags())
    return False


def resolve_precision(precision: str, device: torch.device, hidden: tuple[int, ...]) -> str:
    """``fp32`` or ``bf16`` for a run: ``precision`` itself, or for ``auto`` bf16 where the
    device multiplies bfloat16 natively and the networks are at least
    :data:`AUTO_BF16_MIN_WIDTH` wide.

    Raises:
        ValueError: ``precision`` is not one of auto, fp32, bf16, or bf16 is asked for on
            a CUDA device without bfloat16 support.
    """
    if precision not in ("auto", "fp32", "bf16"):
        raise ValueError(f"precision must be 'auto', 'fp32' or 'bf16', got {precision!r}")
    if precision == "bf16" and device.type == "cuda" and not fast_bf16(device):
        raise ValueError("--precision bf16: this CUDA device does not support bfloat16")
    if precision != "auto":
        return precision
    return "bf16" if fast_bf16(device) and max(hidden) >= AUTO_BF16_MIN_WIDTH else "fp32"
