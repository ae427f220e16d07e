"""Networks of the goal-conditioned agents; inputs are normalised ``observation || goal``.

Continuous actors work in the unit box ``[-1, 1]^act_dim`` (a tanh output) and map to the
action bounds with :meth:`BoundedActor.scale`; critics take unit actions, i.e.
``action / max_action`` for symmetric bounds, as in baselines.

The offline agents (:mod:`herkit.agents.offline`) build theirs as OGBench does: GELU
between layers, LayerNorm after the activation, both with flax's numerics (``flax``: GELU's
tanh approximation, LayerNorm's epsilon 1e-6), weights
initialised by :func:`fan_avg_init` and a Gaussian actor of constant standard deviation
without tanh (:class:`ConstantStdActor`), with value ensembles (:class:`ValueEnsemble`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, ClassVar, Literal, Optional, get_args

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

__all__ = [
    "ACTIVATIONS",
    "MLP",
    "Activation",
    "ConstantStdActor",
    "Critic",
    "DeterministicActor",
    "GaussianActor",
    "QNetwork",
    "ValueEnsemble",
    "fan_avg_init",
    "mlp",
    "orthogonal_init",
    "tanh_gelu",
]

Activation = Literal["relu", "gelu"]
"""The activations of :func:`mlp`: ReLU, or GELU (exact, with erf; in OGBench's layers,
``flax``, its tanh approximation, as flax's ``nn.gelu``)."""

ACTIVATIONS: tuple[Activation, ...] = get_args(Activation)
"""The names of :data:`Activation`."""

LOG_STD_MIN = -5.0
"""Smallest log standard deviation of the Gaussian actor."""
LOG_STD_MAX = 2.0
"""Largest log standard deviation of the Gaussian actor."""


# Optional, not `| None`: the docs build mocks torch, and a mocked class has no `|`
_Hidden = tuple[nn.Linear, Optional[nn.LayerNorm], Callable[[torch.Tensor], torch.Tensor], bool]  # noqa: UP045
"""A hidden layer of :class:`MLP`: its Linear, LayerNorm (or None), activation function
and whether the LayerNorm comes after the activation."""


class MLP(nn.Sequential):
    """Linear layers with an activation (ReLU or GELU) between them, optionally a LayerNorm
    before each activation (or after it, as OGBench), laid out (and saved) as an
    ``nn.Sequential``.

    Its forward calls the layers' functions directly instead of each module: the same
    result without the per-module call overhead, which is a large part of a small
    network's forward pass on a CPU. The output layer always runs in float32, also under
    a bfloat16 autocast: its outputs are values and actions, and bfloat16's 8-bit
    mantissa would round a Q value near -20 to steps of 0.125.
    """

    _last: nn.Linear

    def __init__(self, *layers: nn.Module) -> None:
        super().__init__(*layers)
        hidden: list[_Hidden] = []
        for i, module in enumerate(layers[:-1]):
            if isinstance(module, nn.Linear):
                hidden.append(_hidden_layer(module, layers[i + 1 :]))
        last = layers[-1]
        assert isinstance(last, nn.Linear)
        self._hidden = tuple(hidden)
        # kept beside the Sequential's own entry, not registered twice (one key in state_dict)
        object.__setattr__(self, "_last", last)

    def _load_from_state_dict(self, state_dict: dict[str, Any], prefix: str, *args: Any) -> None:
        """Load, leaving out the second copy of the output layer that checkpoints written
        before it was registered once hold (``_last.weight``, ``_last.bias``)."""
        for key in [key for key in state_dict if key.startswith(f"{prefix}_last.")]:
            del state_dict[key]
        super()._load_from_state_dict(state_dict, prefix, *args)

    @property
    def output_layer(self) -> nn.Linear:
        """The last linear layer (its bias sets where the outputs start)."""
        return self._last

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``Linear -> [LayerNorm ->] activation [-> LayerNorm] -> ... -> Linear``."""
        for linear, norm, activation, norm_after in self._hidden:
            x = F.linear(x, linear.weight, linear.bias)
            if norm is not None and not norm_after:
                x = F.layer_norm(x, norm.normalized_shape, norm.weight, norm.bias, norm.eps)
            x = activation(x)
            if norm is not None and norm_after:
                x = F.layer_norm(x, norm.normalized_shape, norm.weight, norm.bias, norm.eps)
        if torch.is_autocast_enabled(x.device.type):
            with torch.autocast(x.device.type, enabled=False):
                return F.linear(x.float(), self._last.weight, self._last.bias)
        return F.linear(x, self._last.weight, self._last.bias)


_GELU_SCALE = 2 * math.sqrt(2 / math.pi)
"""``2 sqrt(2 / pi)``: the tanh approximation's ``2z = _GELU_SCALE (x + 0.044715 x^3)``."""
_GELU_CUBIC = 0.044715
"""The cubic term's coefficient in the tanh approximation of GELU."""
_EXP_CAP = 80.0
"""Largest ``-2z`` whose exponential :class:`_TanhGelu` takes (``e^80`` is finite in float32
and bfloat16; ``sigmoid(-80)`` is below their smallest normal numbers' relative step)."""


class _TanhGelu(torch.autograd.Function):
    """GELU's tanh approximation ``0.5 x (1 + tanh(z))``, computed as ``x sigmoid(2z) =
    x / (1 + exp(-2z))`` (the same function), with ``z = sqrt(2 / pi) (x + 0.044715 x^3)``.

    On a CPU, torch's ``gelu(approximate="tanh")`` and its backward each evaluate a tanh
    to full precision, about 4 ns an element on one AVX2 core: more than the matrix
    product before it at a width of 256. An exponential costs a third of that, and the
    backward reuses the forward's instead of evaluating it again. Its error against the
    float64 function is that of torch's float32 one (5e-7 against 4e-7 for |x| <= 4),
    its gradient's smaller (2e-7 against 4e-7): ``1 - sigmoid(2z)`` is taken as
    ``exp(-2z) sigmoid(2z)``, not as a difference that cancels.
    """

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        # exp(-2z), capped where sigmoid(2z) is 0 to float precision anyway (no inf * 0)
        exp = x.square().mul_(-_GELU_SCALE * _GELU_CUBIC).sub_(_GELU_SCALE).mul_(x)
        exp = exp.clamp_(max=_EXP_CAP).exp_()
        sigmoid = exp.add(1.0).reciprocal_()
        ctx.save_for_backward(x, sigmoid, exp)
        return x * sigmoid

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        # d/dx [x s] = s + x s (1 - s) d(2z)/dx, 1 - s = exp(-2z) s, d(2z)/dx = scale (1 + 3 c x^2)
        x, sigmoid, exp = ctx.saved_tensors
        slope = x.square().mul_(3 * _GELU_SCALE * _GELU_CUBIC).add_(_GELU_SCALE).mul_(x)
        slope.mul_(sigmoid).mul_(sigmoid).mul_(exp).add_(sigmoid)
        return grad * slope


def tanh_gelu(x: torch.Tensor) -> torch.Tensor:
    """GELU's tanh approximation (flax's ``nn.gelu``, torch's ``gelu(approximate="tanh")``):
    torch's op in an eager update, :class:`_TanhGelu` in a compiled one. Eager, each op
    pays torch's dispatch and the two cost the same; compiled, the exponential fuses into
    the kernels around it where torch's full-precision tanh costs 4 ns an element (a
    compiled GCIVL update at 3 x 256, batch 256, ran 10-20 % faster with it)."""
    if torch.compiler.is_compiling():
        return _TanhGelu.apply(x)
    return F.gelu(x, approximate="tanh")


def _hidden_layer(linear: nn.Linear, following: tuple[nn.Module, ...]) -> _Hidden:
    """The hidden layer that starts at ``linear``, read from the modules that follow it up
    to the next Linear."""
    norm: nn.LayerNorm | None = None
    activation: Callable[[torch.Tensor], torch.Tensor] = F.relu
    norm_after = False
    for module in following:
        if isinstance(module, nn.Linear):
            break
        if isinstance(module, nn.LayerNorm):
            norm = module
        elif isinstance(module, nn.GELU):
            activation = tanh_gelu if module.approximate == "tanh" else F.gelu
            norm_after = norm is None
        elif isinstance(module, nn.ReLU):
            norm_after = norm is None
    return linear, norm, activation, norm_after and norm is not None


def mlp(
    in_dim: int,
    hidden: tuple[int, ...],
    out_dim: int,
    layer_norm: bool = False,
    activation: Activation = "relu",
    flax: bool = False,
) -> MLP:
    """Linear layers ``in_dim -> *hidden -> out_dim`` with ``activation`` between them and,
    with ``layer_norm``, a LayerNorm after each hidden Linear, before its activation.
    ``flax``: OGBench's layers, which compute as flax's: the LayerNorm after the activation,
    epsilon 1e-6 (torch's default 1e-5), and GELU's tanh approximation (torch's default
    the exact, erf form; the two differ by under 0.001)."""
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {', '.join(ACTIVATIONS)}, got {activation!r}")
    layers: list[nn.Module] = []
    for size in hidden:
        layers.append(nn.Linear(in_dim, size))
        act: nn.Module = nn.ReLU() if activation == "relu" else nn.GELU("tanh" if flax else "none")
        norm = [nn.LayerNorm(size, eps=1e-6 if flax else 1e-5)] if layer_norm else []
        layers.extend([act, *norm] if flax else [*norm, act])
        in_dim = size
    layers.append(nn.Linear(in_dim, out_dim))
    return MLP(*layers)


def fan_avg_init(net: MLP, output_scale: float = 1.0) -> None:
    """Initialise ``net`` as OGBench's networks (flax's ``variance_scaling(scale, "fan_avg",
    "uniform")``, i.e. Glorot uniform with gain ``sqrt(scale)``): every Linear at scale 1
    and zero biases, the output layer at ``output_scale`` (1e-2 for the actor's mean). At
    ``output_scale`` 1 it is baselines' HER's (``xavier_initializer`` on every layer, zero
    biases): DDPG's ``init="xavier"``."""
    with torch.no_grad():
        for module in net.modules():
            if isinstance(module, nn.Linear):
                scale = output_scale if module is net.output_layer else 1.0
                nn.init.xavier_uniform_(module.weight, gain=math.sqrt(scale))
                nn.init.zeros_(module.bias)


def orthogonal_init(net: MLP, output_scale: float = 0.1) -> None:
    """Initialise ``net`` as mrl's networks (``mrl/utils/networks.py`` ``layer_init``):
    every Linear's weights orthogonal, the output layer's scaled by ``output_scale``, biases
    zero; LayerNorm keeps its ones and zeros. DDPG's ``init="orthogonal"``."""
    with torch.no_grad():
        for module in net.modules():
            if isinstance(module, nn.Linear):
                nn.init.orthogonal_(module.weight)
                if module is net.output_layer:
                    module.weight.mul_(output_scale)
                nn.init.zeros_(module.bias)


class QNetwork(nn.Module):
    """Q values of every discrete action, ``(B, in_dim) -> (B, n_actions)``."""

    def __init__(
        self,
        in_dim: int,
        n_actions: int,
        hidden: tuple[int, ...],
        layer_norm: bool = False,
        activation: Activation = "relu",
    ) -> None:
        super().__init__()
        self.net = mlp(in_dim, hidden, n_actions, layer_norm, activation)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Q values ``(B, n_actions)``."""
        return self.net(x)


class Critic(nn.Module):
    """``n_heads`` independent Q networks of ``x || unit_action``; twin critics use 2
    (ReLU between layers, LayerNorm before it, unless told otherwise; ``ogbench``: as
    OGBench's: :func:`mlp`'s ``flax`` layers and :func:`fan_avg_init` once all are built)."""

    def __init__(
        self,
        in_dim: int,
        act_dim: int,
        hidden: tuple[int, ...],
        n_heads: int,
        layer_norm: bool = False,
        activation: Activation = "relu",
        ogbench: bool = False,
    ) -> None:
        super().__init__()
        size = in_dim + act_dim
        heads = [mlp(size, hidden, 1, layer_norm, activation, ogbench) for _ in range(n_heads)]
        for head in heads if ogbench else ():
            fan_avg_init(head)
        self.heads = nn.ModuleList(heads)

    def forward(self, x: torch.Tensor, unit_action: torch.Tensor | None = None) -> torch.Tensor:
        """Q values ``(n_heads, B)`` (values of ``x`` alone without ``unit_action``)."""
        xa = x if unit_action is None else torch.cat([x, unit_action], dim=-1)
        return torch.stack([head(xa).squeeze(-1) for head in self.heads])


class ValueEnsemble(Critic):
    """``n_heads`` independent value networks ``V(x)`` of ``x = observation || goal``
    (OGBench's ``GCValue``: :func:`mlp`'s ``flax`` layers, :func:`fan_avg_init`): a critic
    without an action."""

    def __init__(
        self,
        in_dim: int,
        hidden: tuple[int, ...],
        n_heads: int,
        layer_norm: bool = True,
        activation: Activation = "gelu",
    ) -> None:
        super().__init__(in_dim, 0, hidden, n_heads, layer_norm, activation, ogbench=True)


class BoundedActor(nn.Module):
    """Base of the actors: holds the Box bounds, maps unit actions to and from them, and
    builds the actor's MLP of ``in_dim`` inputs, :data:`OUTPUTS` outputs per action."""

    OUTPUTS: ClassVar[int] = 1
    """Outputs of the MLP per action dimension."""

    center: torch.Tensor
    half_range: torch.Tensor

    def __init__(
        self,
        in_dim: int,
        low: np.ndarray,
        high: np.ndarray,
        hidden: tuple[int, ...],
        layer_norm: bool = False,
        activation: Activation = "relu",
        flax: bool = False,
    ) -> None:
        super().__init__()
        low64, high64 = np.asarray(low, np.float64), np.asarray(high, np.float64)
        self.register_buffer("center", torch.as_tensor((high64 + low64) / 2, dtype=torch.float32))
        self.register_buffer(
            "half_range", torch.as_tensor((high64 - low64) / 2, dtype=torch.float32)
        )
        self.act_dim = len(low)
        outputs = self.OUTPUTS * self.act_dim
        self.net = mlp(in_dim, hidden, outputs, layer_norm, activation, flax)

    def scale(self, unit_action: torch.Tensor) -> torch.Tensor:
        """Unit-box action to the action bounds."""
        return self.center + self.half_range * unit_action

    def unscale(self, action: torch.Tensor) -> torch.Tensor:
        """Action in the bounds to the unit box (clamped to ``[-1, 1]``)."""
        return ((action - self.center) / self.half_range).clamp(-1.0, 1.0)


class DeterministicActor(BoundedActor):
    """DDPG/TD3 policy: ``tanh`` of an MLP, i.e. a unit-box action."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Unit-box action ``(B, act_dim)``; :meth:`scale` maps it to the bounds."""
        return torch.tanh(self.net(x))


class GaussianActor(BoundedActor):
    """SAC policy: a diagonal Gaussian squashed by ``tanh`` into the unit box."""

    OUTPUTS = 2  # the mean and the log standard deviation

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


class ConstantStdActor(BoundedActor):
    """OGBench's goal-conditioned actor: a diagonal Gaussian over unit-box actions whose
    mean is an MLP of ``x`` (no tanh, so the mean may leave the box) and whose standard
    deviation is ``exp(log_std)`` in every dimension, a constant (OGBench: ``const_std``,
    log_std 0). The MLP's output layer starts small (``output_scale``)."""

    def __init__(
        self,
        in_dim: int,
        low: np.ndarray,
        high: np.ndarray,
        hidden: tuple[int, ...],
        layer_norm: bool = False,
        activation: Activation = "gelu",
        output_scale: float = 1e-2,
        log_std: float = 0.0,
    ) -> None:
        super().__init__(in_dim, low, high, hidden, layer_norm, activation, True)
        self.log_std = float(log_std)
        fan_avg_init(self.net, output_scale)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The mean ``(B, act_dim)`` of the Gaussian, in unit-box units (not clipped)."""
        return self.net(x)

    def deterministic(self, x: torch.Tensor) -> torch.Tensor:
        """The mode (the mean) clipped to the unit box."""
        return self(x).clamp(-1.0, 1.0)

    def log_prob(self, mean: torch.Tensor, unit_action: torch.Tensor) -> torch.Tensor:
        """``log N(unit_action; mean, exp(log_std)^2 I)``, summed over dimensions ``(B,)``."""
        z = (unit_action - mean) * math.exp(-self.log_std)
        return (-0.5 * z.square() - self.log_std - 0.5 * math.log(2 * math.pi)).sum(-1)

    @property
    def std(self) -> float:
        """The standard deviation of every dimension."""
        return math.exp(self.log_std)
