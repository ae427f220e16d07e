"""What the algorithms' losses share: how rewards are scaled and the range TD targets are
clipped to (:class:`ValueScale`, :func:`return_bounds`), :func:`adam`, :func:`frozen`,
:func:`weighted_mean`, an ensemble's TD loss (:func:`ensemble_td_loss`) and TD3's target
policy smoothing (:func:`smoothed`)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

__all__ = [
    "ValueScale",
    "adam",
    "call_frozen",
    "ensemble_td_loss",
    "frozen",
    "in_one_pass",
    "return_bounds",
    "smoothed",
    "weighted_mean",
]


def return_bounds(reward_range: tuple[float, float], gamma: float) -> tuple[float, float]:
    """Range of discounted returns with rewards in ``reward_range``.

    Returns of any length, terminated or bootstrapped, lie within
    ``[min(r_min, r_min / (1 - gamma)), max(r_max, r_max / (1 - gamma))]``; for Fetch's
    -1/0 rewards that is ``[-1 / (1 - gamma), 0]``, baselines' ``clip_return``.
    """
    low, high = (float(r) for r in reward_range)
    if not (math.isfinite(low) and math.isfinite(high) and low <= high):
        raise ValueError(
            f"reward_range must be finite (low, high) with low <= high, got {reward_range!r}"
        )
    return min(low, low / (1 - gamma)), max(high, high / (1 - gamma))


@dataclass(frozen=True)
class ValueScale:
    """How an agent scales rewards, and the range its Q values are clipped to (scaled).

    Sparse rewards come in conventions whose Q values differ in scale by ``1 / (1 - gamma)``:
    with Fetch's -1/0 every step of delay costs 1, with 0/1 rewards and episodes that end
    on success (PointMaze) it costs only ``(1 - gamma) * 1``, so the action gaps that a
    critic must resolve are 50 times smaller at gamma 0.98 and, with Adam's fixed step size,
    drown in noise (0/1 bit flipping: 0 % where -1/0 solves it). Scaling rewards so that one
    step of delay costs 1 gives every convention -1/0's dynamics; a positive scale never
    changes which policy is optimal. The step cost is ``high - low`` when episodes go on
    past success, and ``(1 - gamma) * high - low`` when success (the reward ``high``, the
    only one above ``low``) ends them. For rewards on both sides of 0 (-1/0, 0/1) the scaled
    returns span ``1 / (1 - gamma)`` either way, so learning which one holds only moves them.
    """

    scale: float
    """Factor applied to every reward before the TD target."""
    low: float
    """Smallest scaled return."""
    high: float
    """Largest scaled return; critics start there (optimistic, as -1/0's Q = 0 start)."""

    @classmethod
    def of(
        cls, reward_range: tuple[float, float] | None, gamma: float, ends_on_success: bool
    ) -> ValueScale:
        """The scale for ``reward_range`` (None: rewards left as they are, no bounds)."""
        if reward_range is None:
            return cls(1.0, -math.inf, math.inf)
        low, high = return_bounds(reward_range, gamma)
        r_low, r_high = (float(r) for r in reward_range)
        cost = r_high - r_low
        if ends_on_success:
            low, high = min(r_high, r_low / (1 - gamma)), max(r_high, r_low / (1 - gamma))
            cost = (1 - gamma) * r_high - r_low
        scale = 1.0 / cost if cost > 0 else 1.0
        return cls(scale, scale * low, scale * high)


def adam(params: Iterable[nn.Parameter], lr: float) -> torch.optim.Adam:
    """Adam with the fused kernel (one kernel for all parameters: about 3x faster steps
    for these small networks); the default implementation where fused is unsupported."""
    params = list(params)
    try:
        return torch.optim.Adam(params, lr=lr, fused=True)
    except (RuntimeError, ValueError):
        return torch.optim.Adam(params, lr=lr)


@contextmanager
def frozen(module: nn.Module) -> Iterator[None]:
    """Turn off gradients of ``module``'s parameters (e.g. the critic in the actor loss)."""
    params = [p for p in module.parameters() if p.requires_grad]
    for p in params:
        p.requires_grad_(False)
    try:
        yield
    finally:
        for p in params:
            p.requires_grad_(True)


def call_frozen(module: nn.Module, *args: torch.Tensor) -> Any:
    """``module(*args)`` with its parameters as constants: the gradient reaches ``args``
    only (the critic of an actor's loss). Eager, within :func:`frozen` (a flag on each
    parameter); being compiled, on detached copies of the parameters instead
    (``torch.func.functional_call``), since a compiled update cannot trace a change of
    ``requires_grad`` (it would break the update into several graphs), while swapping the
    parameters costs an eager update more than the flags. The same numbers and gradients
    either way."""
    if not torch.compiler.is_compiling():
        with frozen(module):
            return module(*args)
    constants = {name: param.detach() for name, param in module.named_parameters()}
    return torch.func.functional_call(module, constants, args)


def weighted_mean(values: torch.Tensor, weights: torch.Tensor | None) -> torch.Tensor:
    """``mean(weights * values)``, or ``mean(values)`` without weights."""
    return values.mean() if weights is None else (weights * values).mean()


def in_one_pass(
    net: Callable[[torch.Tensor], torch.Tensor], *inputs: torch.Tensor, dim: int = -1
) -> tuple[torch.Tensor, ...]:
    """``net(x)`` of each of ``inputs``, run as one pass over them joined along the batch
    and split back along the output's ``dim`` (a value ensemble's ``(n_heads, B)``: the
    last). The same numbers as a pass each (rows do not mix), in half the operations or
    fewer: what an eager update on a CPU pays for is operations more than arithmetic."""
    joined = net(torch.cat(inputs))
    return joined.split([len(x) for x in inputs], dim=dim)


def ensemble_td_loss(
    q: torch.Tensor, target: torch.Tensor, weights: torch.Tensor | None
) -> torch.Tensor:
    """The sum over the heads of ``q (heads, B)`` of their weighted mean squared error to
    ``target (B,)``: the mean over samples and heads, times the number of heads."""
    return weighted_mean((q - target).square(), weights) * q.shape[0]


def smoothed(
    unit_action: torch.Tensor, std: float, clip: float, generator: torch.Generator
) -> torch.Tensor:
    """TD3's target policy smoothing: ``unit_action`` plus Gaussian noise of ``std``
    clipped to ``+-clip``, clipped to the unit box."""
    noise = torch.randn(unit_action.shape, generator=generator, device=unit_action.device) * std
    return (unit_action + noise.clamp(-clip, clip)).clamp(-1.0, 1.0)
