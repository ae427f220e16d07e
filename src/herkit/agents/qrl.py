"""OGBench's QRL (quasimetric RL, Wang et al., 2023) as ``impls/agents/qrl.py`` computes it
with its defaults (``quasimetric_type='iqe'``, ``actor_loss='ddpgbc'``, ``const_std``):
:class:`QRLAgent`, its quasimetric value (:class:`QuasimetricValue`: OGBench's
``GCIQEValue`` or ``GCMRNValue``), its latent dynamics model and its multiplier
(:class:`LogParam`). Its settings (:class:`QRLConfig`) and registry entry come first,
without torch: defaults, goal mixes and settings per dataset are OGBench's
(``impls/agents/qrl.py``'s ``get_config`` and ``impls/hyperparameters.sh``, commit 1d41409).

The value is a distance ``d(s, g) = q(phi(s), phi(g))``, ``q`` a quasimetric over latents of
``latent_dim`` (IQE: :func:`iqe`, MRN: :func:`mrn`). With ``d_neg = d(s, g)`` for the batch's
value goals (random states) and ``d_pos = d(s, s')``:

- value: ``mean(100 * softplus(5 - d_neg / 100)) + stopgrad(lam) * mean(relu(d_pos - 1) ** 2)``
  and the multiplier's ``lam * (eps - stopgrad(mean(relu(d_pos - 1) ** 2)))``, ``lam =
  exp(log_lam)`` (:func:`value_losses`): the distances to random goals grow while
  one-step distances stay near 1, and gradient descent on ``log_lam`` raises lam while
  the constraint is broken by more than ``eps``;
- dynamics: ``z' = phi(s) + f(phi(s) || a)`` predicts ``phi(s')`` in the quasimetric,
  ``mean(q(phi(s'), z') + q(z', phi(s'))) / 2``;
- actor (DDPG+BC through the dynamics): with ``mu = clip(mean of pi(s, g_a), -1, 1)`` and
  ``Q = -q(phi(s) + f(phi(s) || mu), phi(g_a))``, value and dynamics frozen (OGBench
  takes their parameters without gradient), ``-mean(Q) / stopgrad(mean |Q|) -
  alpha * mean log pi(a | s, g_a)``.

Every loss is taken at the parameters before the update and their sum is minimised by
one Adam step (OGBench's one ``optax.adam`` over all parameters: one Adam per network here,
the same element-wise steps). There is no target network. The networks are OGBench's:
:func:`~herkit.agents.networks.mlp`'s ``flax`` layers (GELU's tanh approximation, LayerNorm
after it with epsilon 1e-6) in ``phi`` and the dynamics model (``hidden`` then
``latent_dim`` outputs), :func:`~herkit.agents.networks.fan_avg_init`, lam starting at 1
and IQE's mixing weight ``sigmoid(0)``.

OGBench's goals are states. Where a goal is narrower than a state (``goal_dim <
observation_dim``, e.g. herkit/PointReach-v0's position of a state ``(x, y, vx, vy)``),
goals have their own ``phi`` of the same shape, and ``d(s, s')`` takes the goal of ``s'``
as its first ``goal_dim`` coordinates (herkit's reading of OGBench's layout,
``goal_size``), so it needs inputs fed as they are (``normalize_inputs=False``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from herkit.agents.registry import AgentEntry, register
from herkit.agents.settings import OfflineGCConfig
from herkit.buffer.checks import check_float, check_int

__all__ = [
    "QRL_VALUE_GOALS",
    "LogParam",
    "QRLAgent",
    "QRLConfig",
    "QuasimetricValue",
    "iqe",
    "mrn",
    "value_losses",
]

QRL_VALUE_GOALS = (0.0, 0.0, 1.0)
"""QRL's value goals (``value_p_randomgoal=1.0``): random states only, the negatives of its
quasimetric's ``max d(s, g)`` (the buffer's ``(current, future, random)`` weights)."""


@dataclass(frozen=True)
class QRLConfig(OfflineGCConfig):
    """Quasimetric RL (OGBench's QRL, Wang et al., 2023): a quasimetric ``d(s, g)`` (IQE or
    MRN over a latent of ``phi``) pushed apart on random goals under the constraint that
    one-step distances stay near 1 (a learned Lagrange multiplier), a latent dynamics model
    and a DDPG+BC actor through it (:mod:`herkit.agents.qrl`). It has no target network
    (``polyak``, ``target_every`` and ``clip_return`` are unused); its value goals are
    random states (:data:`QRL_VALUE_GOALS`)."""

    polyak: float = 0.995
    """Unused by QRL: it has no target network."""
    quasimetric: Literal["iqe", "mrn"] = "iqe"
    """The quasimetric over the latents: iqe (interval quasimetric embedding) or mrn
    (metric residual network)."""
    latent_dim: int = 512
    """Size of the latent phi(s) of the quasimetric (and of the dynamics model)."""
    dim_per_component: int = 8
    """IQE: latent coordinates per component (latent_dim / dim_per_component components)."""
    eps: float = 0.05
    """Margin of the constraint on one-step distances: the multiplier lam grows while
    mean(relu(d(s, s') - 1) ** 2) exceeds eps."""
    alpha: float = 0.003
    """DDPG+BC's behavioural-cloning weight (OGBench's default 0.003; its pointmaze runs
    use 0.0003, the entry's preset)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.quasimetric not in ("iqe", "mrn"):
            raise ValueError(f"quasimetric must be 'iqe' or 'mrn', got {self.quasimetric!r}")
        check_int("latent_dim", self.latent_dim, 2)
        check_int("dim_per_component", self.dim_per_component, 1)
        if self.quasimetric == "iqe" and self.latent_dim % self.dim_per_component:
            raise ValueError(
                f"latent_dim ({self.latent_dim}) must be a multiple of dim_per_component "
                f"({self.dim_per_component}) for IQE"
            )
        check_float("eps", self.eps, 0.0)
        check_float("alpha", self.alpha, 0.0)


QRL = register(
    AgentEntry(
        "qrl",
        QRLConfig,
        "herkit.agents.qrl:QRLAgent",
        "offline quasimetric RL, a DDPG+BC actor through a latent dynamics model",
        offline=True,
        value_goals=QRL_VALUE_GOALS,
        presets={  # OGBench's impls/hyperparameters.sh, the lines that give each value
            # hyperparameters.sh:8,21,34,47,60,73,86,99
            "pointmaze-": {"alpha": 0.0003},
            # hyperparameters.sh:34,86
            "pointmaze-giant-": {"gamma": 0.995},
            # hyperparameters.sh:60,73,86,99
            "pointmaze-*-stitch-": {"actor_goals": (0.0, 0.5, 0.5)},
            # hyperparameters.sh:138,190
            "antmaze-giant-": {"gamma": 0.995},
            # hyperparameters.sh:164,177,190,203
            "antmaze-*-stitch-": {"actor_goals": (0.0, 0.5, 0.5)},
            # hyperparameters.sh:216,229,242
            "antmaze-*-explore-": {"actor_goals": (0.0, 0.0, 1.0), "alpha": 0.001},
            # hyperparameters.sh:255,268,281,294,307,320
            "humanoidmaze-": {"alpha": 0.001, "gamma": 0.995},
            # hyperparameters.sh:294,307,320
            "humanoidmaze-*-stitch-": {"actor_goals": (0.0, 0.5, 0.5)},
        },
    )
)
"""QRL's entry: random value goals, OGBench's future actor goals (the default), alpha
0.0003 on pointmaze and OGBench's other settings per dataset."""


import math
from typing import ClassVar

import torch
from torch import nn
from torch.nn import functional as F

from herkit.agents.base import TorchBatch
from herkit.agents.loss_parts import call_frozen
from herkit.agents.networks import MLP, fan_avg_init, mlp
from herkit.agents.offline import OfflineAgent, ddpg_bc_loss, ddpg_bc_terms


def iqe(
    x: torch.Tensor, y: torch.Tensor, dim_per_component: int, alpha: torch.Tensor
) -> torch.Tensor:
    """The interval quasimetric embedding's distance from latents ``x`` to ``y`` (``(...,
    latent)``, broadcast), as OGBench's ``GCIQEValue``: each component (``dim_per_component``
    coordinates) is the total length of the union of the intervals ``[x_i, y_i]`` with
    ``x_i < y_i``; the distance is ``alpha * mean + (1 - alpha) * max`` over components,
    ``alpha = sigmoid`` of the value's parameter."""
    k = dim_per_component
    x, y = torch.broadcast_tensors(x.unflatten(-1, (-1, k)), y.unflatten(-1, (-1, k)))
    valid = (x < y).to(x.dtype)
    sxy, ixy = torch.cat([x, y], dim=-1).sort(dim=-1, stable=True)  # as jnp.argsort
    # in sorted order: -1 where a nonempty interval opens, +1 where it closes, else 0
    # (OGBench's valid[ixy % k] * where(ixy < k, -1, 1), in one gather)
    inc = torch.gather(torch.cat([-valid, valid], dim=-1), -1, ixy)
    neg_f = -(inc.cumsum(dim=-1) < 0).to(x.dtype)  # -1 inside the union
    neg_incf = torch.cat([neg_f[..., :1], neg_f[..., 1:] - neg_f[..., :-1]], dim=-1)
    components = (sxy * neg_incf).sum(dim=-1)
    return alpha * components.mean(dim=-1) + (1 - alpha) * components.amax(dim=-1)


def mrn(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """The metric residual network's distance from latents ``x`` to ``y``, as OGBench's
    ``GCMRNValue``: the Euclidean distance of their first halves plus ``relu(max(x - y))``
    of their second halves."""
    half = x.shape[-1] // 2
    squared = (x[..., :half] - y[..., :half]).square().sum(dim=-1)
    quasi = F.relu((x[..., half:] - y[..., half:]).amax(dim=-1))
    return squared.clamp_min(1e-12).sqrt() + quasi


def value_losses(
    d_neg: torch.Tensor, d_pos: torch.Tensor, lam: torch.Tensor, eps: float
) -> dict[str, torch.Tensor]:
    """QRL's value loss (its loss shaping: ``100 * softplus(5 - d / 100)`` of the
    distances to random goals) and the multiplier's loss (OGBench's ``value_loss``)."""
    d_neg_loss = (100 * F.softplus(5 - d_neg / 100)).mean()
    d_pos_loss = F.relu(d_pos - 1).square().mean()
    return {
        "value_loss": d_neg_loss + d_pos_loss * lam.detach(),
        "lam_loss": lam * (eps - d_pos_loss.detach()),
        "d_neg_loss": d_neg_loss,
        "d_pos_loss": d_pos_loss,
    }


class LogParam(nn.Module):
    """A positive scalar ``exp(log_value)`` (OGBench's ``LogParam``), starting at
    ``init_value``."""

    def __init__(self, init_value: float = 1.0) -> None:
        super().__init__()
        self.log_value = nn.Parameter(torch.tensor(math.log(init_value)))

    def forward(self) -> torch.Tensor:
        return self.log_value.exp()


class QuasimetricValue(nn.Module):
    """``d(s, g) = q(phi(s), phi(g))`` (OGBench's ``GCIQEValue``/``GCMRNValue``): ``phi`` an
    MLP of a state to ``latent_dim``, ``q`` :func:`iqe` (with its mixing parameter, starting
    at 0: ``sigmoid(0) = 0.5``) or :func:`mrn`. Goals narrower than states have their own
    ``phi_goal`` (the module's docstring)."""

    def __init__(self, observation_dim: int, goal_dim: int, config: QRLConfig) -> None:
        super().__init__()
        self.quasimetric = config.quasimetric
        self.dim_per_component = config.dim_per_component

        def net(in_dim: int) -> MLP:
            phi = mlp(
                in_dim, config.hidden, config.latent_dim, config.critic_layer_norm, "gelu", True
            )
            fan_avg_init(phi)
            return phi

        self.phi = net(observation_dim)
        self.phi_goal = None if goal_dim == observation_dim else net(goal_dim)
        """Goals' own ``phi`` where they are narrower than states, else None (``phi``)."""
        if self.quasimetric == "iqe":
            self.alpha = nn.Parameter(torch.zeros(()))

    def distance(self, x: torch.Tensor, y: torch.Tensor, frozen: bool = False) -> torch.Tensor:
        """``q(x, y)`` of latents (OGBench's ``is_phi=True``) ``(...)``; ``frozen``: the
        gradient reaches ``x`` and ``y`` only (not IQE's mixing parameter)."""
        if self.quasimetric == "iqe":
            alpha = self.alpha.detach() if frozen else self.alpha
            return iqe(x, y, self.dim_per_component, torch.sigmoid(alpha))
        return mrn(x, y)

    def goal_latent(self, goal: torch.Tensor) -> torch.Tensor:
        """``phi(g)`` of goals ``(B, goal_dim)``."""
        return self.phi(goal) if self.phi_goal is None else self.phi_goal(goal)

    def forward(self, observation: torch.Tensor, goal: torch.Tensor) -> torch.Tensor:
        """``d(s, g)`` ``(B,)``."""
        return self.distance(self.phi(observation), self.goal_latent(goal))


class QRLAgent(OfflineAgent):
    """OGBench's QRL (see the module): a quasimetric value, a latent dynamics model and a
    DDPG+BC actor, trained together by one loss. ``|TD error|`` per sample: its one-step
    distance ``d(s, s')``, which the constraint holds near 1."""

    config: QRLConfig
    value: QuasimetricValue
    dynamics: MLP
    lam: LogParam
    METRICS: ClassVar[tuple[str, ...]] = (
        "value_loss",
        "lam_loss",
        "lam",
        "d_neg_loss",
        "d_neg_mean",
        "d_neg_min",
        "d_neg_max",
        "d_pos_loss",
        "d_pos_mean",
        "d_pos_min",
        "d_pos_max",
        "dynamics_loss",
        "actor_loss",
        "q_loss",
        "bc_loss",
        "q_mean",
        "q_abs_mean",
        "bc_log_prob",
        "mse",
        "td_abs_mean",
    )

    TRAINED = ("value", "dynamics", "lam")

    def _build_trained(self) -> None:
        config = self.config
        obs_dim, goal_dim = self.observation_dim, self.goal_dim
        if goal_dim != obs_dim and config.normalize_inputs:
            raise ValueError(
                f"normalize_inputs must be False for QRL with goals narrower than states "
                f"({goal_dim} < {obs_dim}): the goal of s' is its first coordinates as fed"
            )
        if goal_dim > obs_dim:
            raise ValueError(f"QRL needs goals no wider than states, got {goal_dim} > {obs_dim}")
        self.value = QuasimetricValue(obs_dim, goal_dim, config)
        self.dynamics = mlp(
            config.latent_dim + self.act_dim,
            config.hidden,
            config.latent_dim,
            config.critic_layer_norm,
            "gelu",
            True,
        )
        fan_avg_init(self.dynamics)
        self.lam = LogParam()

    def _update(
        self, batch: TorchBatch, actor_step: bool, move_targets: bool
    ) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        config, value, n = self.config, self.value, len(batch.x)
        obs_dim, goal_dim = self.observation_dim, self.goal_dim
        obs, goal = batch.x[:, :obs_dim], batch.x[:, obs_dim:]
        next_obs = batch.next_x[:, :obs_dim]
        unit_action = self._unit_action(batch)
        if value.phi_goal is None:  # s, s' and g in one pass
            z_obs, z_next, z_goal = value.phi(torch.cat([obs, next_obs, goal])).split(n)
            z_next_goal = z_next
        else:
            z_obs, z_next = value.phi(torch.cat([obs, next_obs])).split(n)
            goals = torch.cat([goal, next_obs[:, :goal_dim]])
            z_goal, z_next_goal = value.phi_goal(goals).split(n)
        d_neg = value.distance(z_obs, z_goal)
        d_pos = value.distance(z_obs, z_next_goal)
        lam = self.lam()
        losses = value_losses(d_neg, d_pos, lam, config.eps)
        # the dynamics model predicts the change of the latent
        z_pred = z_obs + self.dynamics(torch.cat([z_obs, unit_action], dim=-1))
        dynamics_loss = (value.distance(z_next, z_pred) + value.distance(z_pred, z_next)).mean() / 2
        d_neg, d_pos = d_neg.detach(), d_pos.detach()
        metrics = losses | {
            "lam": lam.detach(),
            "d_neg_mean": d_neg.mean(),
            "d_neg_min": d_neg.min(),
            "d_neg_max": d_neg.max(),
            "d_pos_mean": d_pos.mean(),
            "d_pos_min": d_pos.min(),
            "d_pos_max": d_pos.max(),
            "dynamics_loss": dynamics_loss,
        }
        loss = losses["value_loss"] + losses["lam_loss"] + dynamics_loss
        optimizers = [self.optimizers[name] for name in self.TRAINED]
        if actor_step:
            actor_x, _ = self._actor_inputs(batch)
            mean, log_prob, actor_metrics = self._behaviour(actor_x, unit_action)
            with torch.no_grad():
                z_actor_goal = value.goal_latent(actor_x[:, obs_dim:])
            z_obs_fixed = z_obs.detach()  # value and dynamics frozen: the actor's gradient
            step = call_frozen(self.dynamics, torch.cat([z_obs_fixed, mean.clamp(-1.0, 1.0)], -1))
            q = -value.distance(z_obs_fixed + step, z_actor_goal, frozen=True)
            terms = ddpg_bc_terms(q, *ddpg_bc_loss(q, log_prob, config.alpha))
            loss = loss + terms["actor_loss"]
            optimizers.append(self.optimizers["actor"])
            metrics |= actor_metrics | terms
        self._step(optimizers, loss)
        return metrics, d_pos
