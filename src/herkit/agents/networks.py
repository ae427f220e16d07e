"""Networks of the goal-conditioned agents; inputs are normalised ``observation || goal``.

Continuous actors work in the unit box ``[-1, 1]^act_dim`` (a tanh output) and map to the
action bounds with :meth:`BoundedActor.scale`; critics take unit actions, i.e.
``action / max_action`` for symmetric bounds, as in baselines.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

__all__ = ["MLP", "Critic", "DeterministicActor", "GaussianActor", "QNetwork", "mlp"]

LOG_STD_MIN = -5.0
"""Smallest log standard deviation of the Gaussian actor."""
LOG_STD_MAX = 2.0
"""Largest log standard deviation of the Gaussian actor."""


class MLP(nn.Sequential):
    """Linear layers with ReLU between them (optionally LayerNorm before each ReLU), laid
    out (and saved) as an ``nn.Sequential``.

    Its forward calls the layers' functions directly instead of each module: the same
    result without the per-module call overhead, which is a large part of a small
    network's forward pass on a CPU. The output layer always runs in float32, also under
    a bfloat16 autocast: its outputs are values and actions, and bfloat16's 8-bit
    mantissa would round a Q value near -20 to steps of 0.125.
    """

    def __init__(self, *layers: nn.Module) -> None:
        super().__init__(*layers)
        hidden: list[tuple[nn.Linear, nn.LayerNorm | None]] = []
        for i, module in enumerate(layers[:-1]):
            if isinstance(module, nn.Linear):
                after = layers[i + 1]
                hidden.append((module, after if isinstance(after, nn.LayerNorm) else None))
        last = layers[-1]
        assert isinstance(last, nn.Linear)
        self._hidden, self._last = tuple(hidden), last

    @property
    def output_layer(self) -> nn.Linear:
        """The last linear layer (its bias sets where the outputs start)."""
        return self._last

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``Linear -> [LayerNorm ->] ReLU -> ... -> Linear``."""
        for linear, norm in self._hidden:
            x = F.linear(x, linear.weight, linear.bias)
            if norm is not None:
                x = F.layer_norm(x, norm.normalized_shape, norm.weight, norm.bias, norm.eps)
            x = F.relu(x)
        if torch.is_autocast_enabled(x.device.type):
            with torch.autocast(x.device.type, enabled=False):
                return F.linear(x.float(), self._last.weight, self._last.bias)
        return F.linear(x, self._last.weight, self._last.bias)


def mlp(in_dim: int, hidden: tuple[int, ...], out_dim: int, layer_norm: bool = False) -> MLP:
    """Linear layers ``in_dim -> *hidden -> out_dim`` with ReLU between them and, with
    ``layer_norm``, a LayerNorm after each hidden Linear (before its ReLU)."""
    layers: list[nn.Module] = []
    for size in hidden:
        layers.append(nn.Linear(in_dim, size))
        if layer_norm:
            layers.append(nn.LayerNorm(size))
        layers.append(nn.ReLU())
        in_dim = size
    layers.append(nn.Linear(in_dim, out_dim))
    return MLP(*layers)


class QNetwork(nn.Module):
    """Q values of every discrete action, ``(B, in_dim) -> (B, n_actions)``."""

    def __init__(
        self, in_dim: int, n_actions: int, hidden: tuple[int, ...], layer_norm: bool = False
    ) -> None:
        super().__init__()
        self.net = mlp(in_dim, hidden, n_actions, layer_norm)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Q values ``(B, n_actions)``."""
        return self.net(x)


class Critic(nn.Module):
    """``n_heads`` independent Q networks of ``x || unit_action``; twin critics use 2."""

    def __init__(
        self,
        in_dim: int,
        act_dim: int,
        hidden: tuple[int, ...],
        n_heads: int,
        layer_norm: bool = False,
    ) -> None:
        super().__init__()
        self.heads = nn.ModuleList(
            mlp(in_dim + act_dim, hidden, 1, layer_norm) for _ in range(n_heads)
        )

    def forward(self, x: torch.Tensor, unit_action: torch.Tensor) -> torch.Tensor:
        """Q values ``(n_heads, B)``."""
        xa = torch.cat([x, unit_action], dim=-1)
        return torch.stack([head(xa).squeeze(-1) for head in self.heads])


class BoundedActor(nn.Module):
    """Base of the actors: holds the Box bounds and maps unit actions to and from them."""

    center: torch.Tensor
    half_range: torch.Tensor

    def __init__(self, low: np.ndarray, high: np.ndarray) -> None:
        super().__init__()
        low64, high64 = np.asarray(low, np.float64), np.asarray(high, np.float64)
        self.register_buffer("center", torch.as_tensor((high64 + low64) / 2, dtype=torch.float32))
        self.register_buffer(
            "half_range", torch.as_tensor((high64 - low64) / 2, dtype=torch.float32)
        )

    def scale(self, unit_action: torch.Tensor) -> torch.Tensor:
        """Unit-box action to the action bounds."""
        return self.center + self.half_range * unit_action

    def unscale(self, action: torch.Tensor) -> torch.Tensor:
        """Action in the bounds to the unit box (clamped to ``[-1, 1]``)."""
        return ((action - self.center) / self.half_range).clamp(-1.0, 1.0)


class DeterministicActor(BoundedActor):
    """DDPG/TD3 policy: ``tanh`` of an MLP, i.e. a unit-box action."""

    def __init__(
        self,
        in_dim: int,
        low: np.ndarray,
        high: np.ndarray,
        hidden: tuple[int, ...],
        layer_norm: bool = False,
    ) -> None:
        super().__init__(low, high)
        self.net = mlp(in_dim, hidden, len(low), layer_norm)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Unit-box action ``(B, act_dim)``; :meth:`scale` maps it to the bounds."""
        return torch.tanh(self.net(x))


class GaussianActor(BoundedActor):
    """SAC policy: a diagonal Gaussian squashed by ``tanh`` into the unit box."""

    def __init__(
        self,
        in_dim: int,
        low: np.ndarray,
        high: np.ndarray,
        hidden: tuple[int, ...],
        layer_norm: bool = False,
    ) -> None:
        super().__init__(low, high)
        self.act_dim = len(low)
        self.net = mlp(in_dim, hidden, 2 * self.act_dim, layer_norm)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean and log standard deviation (clamped) of the pre-tanh Gaussian."""
        mean, log_std = self.net(x).chunk(2, dim=-1)
        return mean, log_std.clamp(LOG_STD_MIN, LOG_STD_MAX)

    def deterministic(self, x: torch.Tensor) -> torch.Tensor:
        """Unit-box action ``tanh(mean)``."""
        return torch.tanh(self(x)[0])

    def sample(
        self, x: torch.Tensor, generator: torch.Generator | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """A reparameterised unit-box action and its log-density ``(B,)`` in the unit box.

        ``log pi(a) = log N(u; mean, std) - sum log(1 - tanh(u)^2)``, the correction written
        as ``2 * (log 2 - u - softplus(-2u))`` for numerical stability.
        """
        mean, log_std = self(x)
        noise = torch.randn(mean.shape, generator=generator, device=mean.device, dtype=mean.dtype)
        u = mean + log_std.exp() * noise
        gaussian = -0.5 * noise.square() - log_std - 0.5 * math.log(2 * math.pi)
        correction = 2.0 * (math.log(2.0) - u - F.softplus(-2.0 * u))
        return torch.tanh(u), (gaussian - correction).sum(-1)
