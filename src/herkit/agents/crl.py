"""OGBench's contrastive RL (CRL; Eysenbach et al., 2022), exact as OGBench's
``impls/agents/crl.py`` (Park et al., 2025) with its DDPG+BC actor, the default and the
loss of every continuous-action CRL run of OGBench's ``hyperparameters.sh``: its critic
(:class:`BilinearCritic`, OGBench's ``GCBilinearValue``) and its agent (:class:`CRLAgent`).
Its settings (:class:`CRLConfig`), its goal mixes (:data:`CRL_VALUE_GOALS`,
:data:`CRL_ACTOR_GOALS`) and its registry entry come first, without torch; its settings
per dataset are OGBench's ``impls/hyperparameters.sh`` (alpha 0.03 on pointmaze; the
entry's ``presets``, each value with the lines it comes from).

**Critic.** An ensemble of 2 heads, each a pair of encoders ``phi(s, a)`` (of
``observation || unit action``) and ``psi(g)`` (of the goal), MLPs of ``hidden`` with a
``latent_dim`` output (OGBench's ``MLP``: GELU, LayerNorm after each hidden activation,
flax's numerics, fan-avg uniform init, zero biases); ``Q_e(s, a, g) = sum(phi_e(s, a) *
psi_e(g) / sqrt(latent_dim))``. Its loss is OGBench's ``contrastive_loss``: the logits
``L[i, j, e] = phi_e(s_i, a_i) . psi_e(g_j) / sqrt(latent_dim)`` of every state-action of
the batch with every value goal of the batch, the batch's other goals as negatives, and
the sigmoid binary cross-entropy of ``L`` with the identity as labels, averaged over the
``B x B x 2`` entries. The value goals are future states of the sample's own trajectory
(geometric offsets with ``gamma``: :data:`CRL_VALUE_GOALS`), so ``exp(Q)`` estimates the
discounted occupancy of ``g`` over its marginal; rewards and ends are not used.

**Actor** (OGBench's ``GCActor`` with ``const_std``: :class:`ConstantStdActor`). DDPG+BC:
with ``mu = clip(mean of pi(s, g_a), -1, 1)`` and ``q = min_e Q_e(s, mu, g_a)`` (the critic
without gradient), it minimises ``-mean(q) / stopgrad(mean |q| + 1e-6) - alpha * mean
log pi(a | s, g_a)``; actor goals are future states, uniformly (:data:`CRL_ACTOR_GOALS`).

No target network: every loss is taken at the parameters before the update, then each
network takes one Adam step. ``|TD error|`` is 0 (there is no TD target; priorities are
not meaningful for CRL). OGBench's other options are not here: the AWR actor and discrete
actions (OGBench uses them together, on powderworld only), a learned standard deviation
(``const_std=False``) and image encoders.
"""

from __future__ import annotations

from dataclasses import dataclass

from herkit.agents.registry import AgentEntry, register
from herkit.agents.settings import OfflineGCConfig
from herkit.buffer.checks import check_float, check_int

__all__ = [
    "CRL_ACTOR_GOALS",
    "CRL_VALUE_GOALS",
    "BilinearCritic",
    "CRLAgent",
    "CRLConfig",
    "contrastive_logits",
    "contrastive_loss",
]

CRL_VALUE_GOALS = (0.0, 1.0, 0.0)
"""CRL's value goals (OGBench's crl config: ``value_p_curgoal`` 0, ``value_p_trajgoal`` 1,
``value_p_randomgoal`` 0, ``value_geom_sample`` True): a future state of the sample's
trajectory, at a geometric offset with ``gamma`` (the buffer's ``value_future``
``"geometric"``)."""
CRL_ACTOR_GOALS = (0.0, 1.0, 0.0)
"""CRL's actor goals (``actor_p_trajgoal`` 1, ``actor_geom_sample`` False): a future state
of the trajectory, uniformly (OGBench's for every agent)."""


@dataclass(frozen=True)
class CRLConfig(OfflineGCConfig):
    """Contrastive RL (OGBench's CRL): a bilinear critic phi(s, a) . psi(g) ensemble of 2
    trained with the batch's other goals as negatives, and a DDPG+BC actor. Value goals:
    future states at geometric offsets (gamma); no target network (polyak and
    target_every unused)."""

    polyak: float = 0.995
    """Unused by CRL: it has no target network."""
    latent_dim: int = 512
    """Size of the representations phi(s, a) and psi(g)."""
    alpha: float = 0.1
    """DDPG+BC's behavioural-cloning weight (OGBench's default 0.1; its pointmaze runs use
    0.03, the entry's preset)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        check_int("latent_dim", self.latent_dim, 1)
        check_float("alpha", self.alpha, 0.0)
        check_int("batch_size", self.batch_size, 2)  # one sample has no negatives


register(
    AgentEntry(
        "crl",
        CRLConfig,
        "herkit.agents.crl:CRLAgent",
        "offline contrastive RL, a DDPG+BC actor",
        offline=True,
        value_goals=CRL_VALUE_GOALS,
        actor_goals=CRL_ACTOR_GOALS,
        presets={  # OGBench's impls/hyperparameters.sh, the lines that give each value
            # hyperparameters.sh:10,23,36,49,62,75,88,101
            "pointmaze-": {"alpha": 0.03},
            # hyperparameters.sh:36,88
            "pointmaze-giant-": {"gamma": 0.995},
            # hyperparameters.sh:62,75,88,101
            "pointmaze-*-stitch-": {"actor_goals": (0.0, 0.5, 0.5)},
            # hyperparameters.sh:140,192
            "antmaze-giant-": {"gamma": 0.995},
            # hyperparameters.sh:166,179,192,205
            "antmaze-*-stitch-": {"actor_goals": (0.0, 0.5, 0.5)},
            # hyperparameters.sh:218,231,244
            "antmaze-*-explore-": {"actor_goals": (0.0, 0.0, 1.0), "alpha": 0.003},
            # hyperparameters.sh:257,270,283,296,309,322
            "humanoidmaze-": {"gamma": 0.995},
            # hyperparameters.sh:296,309,322
            "humanoidmaze-*-stitch-": {"actor_goals": (0.0, 0.5, 0.5)},
        },
    )
)


import math
from typing import ClassVar

import torch
from torch import nn
from torch.nn import functional as F

from herkit.agents.base import TorchBatch
from herkit.agents.loss_parts import call_frozen
from herkit.agents.networks import Activation, fan_avg_init, mlp
from herkit.agents.offline import OfflineAgent, ddpg_bc_loss, ddpg_bc_terms


class BilinearCritic(nn.Module):
    """OGBench's ``GCBilinearValue`` (``ensemble=True``, ``value_exp=False``): ``n_heads``
    pairs of MLPs ``phi(observation || unit_action)`` and ``psi(goal)`` with ``latent_dim``
    outputs (:func:`mlp`'s ``flax`` layers, :func:`fan_avg_init` on every layer)."""

    def __init__(
        self,
        phi_dim: int,
        goal_dim: int,
        hidden: tuple[int, ...],
        latent_dim: int,
        n_heads: int = 2,
        layer_norm: bool = True,
        activation: Activation = "gelu",
    ) -> None:
        super().__init__()

        def encoder(in_dim: int) -> nn.Module:
            net = mlp(in_dim, hidden, latent_dim, layer_norm, activation, flax=True)
            fan_avg_init(net)
            return net

        self.phi = nn.ModuleList([encoder(phi_dim) for _ in range(n_heads)])
        self.psi = nn.ModuleList([encoder(goal_dim) for _ in range(n_heads)])
        self.latent_dim = latent_dim

    def forward(
        self, observation: torch.Tensor, goal: torch.Tensor, unit_action: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(Q (n_heads, B), phi (n_heads, B, latent_dim), psi (n_heads, B, latent_dim))``,
        ``Q = sum(phi * psi / sqrt(latent_dim))`` row by row."""
        inputs = torch.cat([observation, unit_action], dim=-1)
        phi = torch.stack([net(inputs) for net in self.phi])
        psi = torch.stack([net(goal) for net in self.psi])
        q = (phi * psi / math.sqrt(self.latent_dim)).sum(dim=-1)
        return q, phi, psi


def contrastive_logits(phi: torch.Tensor, psi: torch.Tensor) -> torch.Tensor:
    """``L[e, i, j] = phi[e, i] . psi[e, j] / sqrt(latent_dim)``, ``(n_heads, B, B)``: every
    state-action of the batch with every goal (OGBench's ``einsum('eik,ejk->ije')`` with
    the head first)."""
    return torch.bmm(phi, psi.transpose(1, 2)) / math.sqrt(phi.shape[-1])


def contrastive_loss(logits: torch.Tensor) -> torch.Tensor:
    """The mean over every entry of ``(n_heads, B, B)`` ``logits`` of the sigmoid binary
    cross-entropy with the identity as labels (the sample's own goal the positive):
    ``-y log sigmoid(L) - (1 - y) log sigmoid(-L) = softplus(L) - y L``."""
    positives = logits.diagonal(dim1=1, dim2=2)
    return F.softplus(logits).mean() - positives.sum() / logits.numel()


class CRLAgent(OfflineAgent):
    """OGBench's CRL with the DDPG+BC actor (see the module)."""

    config: CRLConfig
    critic: BilinearCritic
    METRICS: ClassVar[tuple[str, ...]] = (
        "critic_loss",
        "v_mean",
        "v_min",
        "v_max",
        "binary_accuracy",
        "categorical_accuracy",
        "logits_pos",
        "logits_neg",
        "logits",
        "actor_loss",
        "q_loss",
        "bc_loss",
        "q_mean",
        "q_abs_mean",
        "bc_log_prob",
        "mse",
        "td_abs_mean",
    )

    TRAINED = ("critic",)

    def _build_trained(self) -> None:
        config = self.config
        self.critic = BilinearCritic(
            self.observation_dim + self.act_dim,
            self.goal_dim,
            config.hidden,
            config.latent_dim,
            2,
            config.critic_layer_norm,
            config.activation,
        )

    def _split(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``observation || goal`` inputs as ``(observation, goal)``."""
        return x[:, : self.observation_dim], x[:, self.observation_dim :]

    def _update(
        self, batch: TorchBatch, actor_step: bool, move_targets: bool
    ) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        unit_action = self._unit_action(batch)
        q, phi, psi = self.critic(*self._split(batch.x), unit_action)
        logits = contrastive_logits(phi, psi)  # (2, B, B)
        critic_loss = contrastive_loss(logits)
        metrics = {"critic_loss": critic_loss} | _critic_metrics(q.detach(), logits.detach())
        loss, optimizers = critic_loss, [self.optimizers["critic"]]
        if actor_step:
            actor_x, _ = self._actor_inputs(batch)
            mean, log_prob, actor_metrics = self._behaviour(actor_x, unit_action)
            q_pi = call_frozen(self.critic, *self._split(actor_x), mean.clamp(-1.0, 1.0))[0]
            q_pi = q_pi.min(dim=0).values
            terms = ddpg_bc_terms(q_pi, *ddpg_bc_loss(q_pi, log_prob, self.config.alpha))
            loss = loss + terms["actor_loss"]
            optimizers.append(self.optimizers["actor"])
            metrics |= actor_metrics | terms
        self._step(optimizers, loss)
        return metrics, torch.zeros(len(batch.reward), device=self.device)


def _critic_metrics(q: torch.Tensor, logits: torch.Tensor) -> dict[str, torch.Tensor]:
    """OGBench's statistics of the contrastive critic: ``exp(Q)``'s mean, min and max, and
    of the logits averaged over heads, ``(B, B)``: how often their sign and each row's
    largest entry pick the positive, their mean on and off the diagonal and overall."""
    v = q.exp()
    mean = logits.float().mean(dim=0)
    size = mean.shape[0]
    positives = mean.diagonal()
    # (L > 0) == I, counted without a mask of the identity (inductor's CPU code fails on
    # comparing two boolean masks): every negative entry, less the diagonal's, plus its
    # positive ones
    at_zero_or_below = (mean <= 0).float().sum() - (positives <= 0).float().sum()
    correct = at_zero_or_below + (positives > 0).float().sum()
    rows = torch.arange(size, device=mean.device)
    return {
        "v_mean": v.mean(),
        "v_min": v.min(),
        "v_max": v.max(),
        "binary_accuracy": correct / (size * size),
        "categorical_accuracy": (mean.argmax(dim=1) == rows).float().mean(),
        "logits_pos": positives.mean(),
        "logits_neg": (mean.sum() - positives.sum()) / (size * size - size),
        "logits": mean.mean(),
    }
