"""The shared part of the offline goal-conditioned agents (:class:`OfflineAgent`) and the
loss terms they share (:func:`ddpg_bc_loss`, :func:`scale_free_q_loss`,
:func:`expectile_loss`), after OGBench's reference implementations (Park et al., 2025).

A batch holds two goals per sample (the buffer's offline goal mixes): the value goal
``goal``, with reward ``success - 1`` (0 where the goal is the current state, else -1;
``success`` without ``gc_negative``) and ``terminated = success`` (so ``1 - terminated`` is
OGBench's mask), and the actor goal ``actor_goal``. A batch without actor goals (one of a
buffer without an actor mix) gives the actor the value goal. Rewards are taken as they
come (scale 1), whatever ``reward_range`` and ``terminal_on_success`` say; ``clip_return``
clips value targets to ``[-1 / (1 - gamma), 0]``, the returns of ``gc_negative``'s -1/0.

An agent declares its actor (:attr:`OfflineAgent.ACTOR`): OGBench's Gaussian of standard
deviation 1 over unit-box actions (:class:`~herkit.agents.networks.ConstantStdActor`), or a
deterministic ``tanh`` actor (:class:`~herkit.agents.networks.DeterministicActor`, TD3+BC's).
:meth:`~herkit.agents.base.GoalAgent.act` plays its mean clipped to the box when
deterministic, plus Gaussian noise of :attr:`OfflineAgent.exploration_std` when exploring.
It declares the networks an update trains besides the actor (:attr:`OfflineAgent.TRAINED`),
those with a polyak target (:attr:`OfflineAgent.TARGETS`), and TD3's delay of the actor and
the targets (:attr:`~herkit.agents.base.GoalAgent.policy_delay`). OGBench's agents take
every loss of an update from the parameters before it, then each network takes one Adam
step on its own loss, and the targets move towards the online networks as they were
before the step. Updates run in every mode (:mod:`herkit.agents.updates`).
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import numpy as np
import torch
from torch import nn

from herkit.agents.base import BoxAgent, TorchBatch
from herkit.agents.loss_parts import ValueScale, weighted_mean
from herkit.agents.networks import ConstantStdActor, Critic, DeterministicActor, fan_avg_init
from herkit.agents.settings import OfflineGCConfig

__all__ = [
    "AWR_MAX_WEIGHT",
    "REWARD_RANGE",
    "OfflineAgent",
    "ddpg_bc_loss",
    "ddpg_bc_terms",
    "expectile_loss",
    "scale_free_q_loss",
]

AWR_MAX_WEIGHT = 100.0
"""Largest advantage weight ``exp(alpha * A)`` of an AWR actor (OGBench's cap: GCIVL's
and HIQL's actors)."""

REWARD_RANGE = (-1.0, 0.0)
"""The rewards of an offline batch: ``success - 1`` for its value goal."""


def scale_free_q_loss(q: torch.Tensor) -> torch.Tensor:
    """``-mean(q) / stopgrad(mean |q| + 1e-6)``: an actor's Q term whatever the scale of Q
    (DDPG+BC's, and TD3+BC's before its weight)."""
    return -q.mean() / (q.detach().abs().mean() + 1e-6)


def ddpg_bc_loss(
    q: torch.Tensor, log_prob: torch.Tensor, alpha: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """DDPG+BC's two terms (OGBench's GCIQL, CRL and QRL actors):
    :func:`scale_free_q_loss` and ``-mean(alpha * log_prob)``."""
    return scale_free_q_loss(q), -(alpha * log_prob).mean()


def ddpg_bc_terms(
    q: torch.Tensor, q_loss: torch.Tensor, bc_loss: torch.Tensor
) -> dict[str, torch.Tensor]:
    """A DDPG+BC actor's loss and metrics from :func:`ddpg_bc_loss`'s terms and the ``q``
    they were taken of: ``actor_loss`` (their sum, to add to the update's loss), the two
    terms, and ``q``'s mean and mean absolute value."""
    return {
        "actor_loss": q_loss + bc_loss,
        "q_loss": q_loss,
        "bc_loss": bc_loss,
        "q_mean": q.detach().mean(),
        "q_abs_mean": q.detach().abs().mean(),
    }


def expectile_loss(
    adv: torch.Tensor, diff: torch.Tensor, expectile: float, weights: torch.Tensor | None
) -> torch.Tensor:
    """``mean(|expectile - 1(adv < 0)| * diff ** 2)`` (times the sample weights, if any)."""
    weight = torch.where(adv >= 0, expectile, 1.0 - expectile)
    return weighted_mean(weight * diff.square(), weights)


class OfflineAgent(BoxAgent):
    """The shared part of the offline agents: the actor it declares, acting, the actor's
    inputs, the fixed reward scale, the networks, optimisers and targets it declares
    (see the module)."""

    config: OfflineGCConfig
    actor: Any  # ConstantStdActor, or DeterministicActor (ACTOR)

    ACTOR: ClassVar[Literal["gaussian", "deterministic"]] = "gaussian"
    """The actor: ``gaussian``, OGBench's (:class:`~herkit.agents.networks.ConstantStdActor`,
    its mean unbounded, :meth:`_behaviour` its log-likelihood), or ``deterministic``, a
    ``tanh`` of an MLP (:class:`~herkit.agents.networks.DeterministicActor`). Both are
    flax-numerics MLPs whose output layer starts at ``actor_init_scale``."""

    def _build(self) -> None:
        config = self.config
        self.value_scale = ValueScale.of(REWARD_RANGE, config.gamma, ends_on_success=False)
        with self._seeded_init():
            box = (self.in_dim, self.action_low, self.action_high, config.hidden)
            if self.ACTOR == "gaussian":
                self.actor = ConstantStdActor(
                    *box, config.actor_layer_norm, config.activation, config.actor_init_scale
                )
            else:
                self.actor = DeterministicActor(
                    *box, config.actor_layer_norm, config.activation, flax=True
                )
                fan_avg_init(self.actor.net, config.actor_init_scale)
            self._build_trained()
        trained = ("actor", *self.TRAINED)
        optimizers = self._trained(*(getattr(self, name) for name in trained))
        self.optimizers = dict(zip(trained, optimizers, strict=True))
        """One Adam per trained network, by name."""
        targets = self._targets(*(getattr(self, name) for name in self.TARGETS))
        for name, target in zip(self.TARGETS, targets, strict=True):
            setattr(self, f"{name}_target", target)
        self._place_values()

    TRAINED: ClassVar[tuple[str, ...]] = ()
    """The networks besides the actor that an update trains (attributes of that name). A
    subclass declares its own as ``TRAINED: ClassVar[tuple[str, ...]] = (...)``: any
    number of names, whatever its base's count."""
    TARGETS: ClassVar[tuple[str, ...]] = ()
    """The trained networks with a polyak target (``NAME_target``, made here), declared as
    :data:`TRAINED` is."""

    def _build_trained(self) -> None:
        """Build the :data:`TRAINED` networks (under the agent's seeded init, on the CPU)."""

    def _twin_critic(self) -> Critic:
        """Twin Q networks of ``s || g || a``, OGBench's value MLPs (GCIQL's, TD3+BC's)."""
        config = self.config
        return Critic(
            self.in_dim,
            self.act_dim,
            config.hidden,
            2,
            config.critic_layer_norm,
            config.activation,
            ogbench=True,
        )

    def _networks(self) -> dict[str, nn.Module]:
        names = ("actor", *self.TRAINED, *(f"{name}_target" for name in self.TARGETS))
        return {name: getattr(self, name) for name in names}

    def _optimizers(self) -> dict[str, torch.optim.Optimizer]:
        return self.optimizers

    # --- what GoalAgent asks -------------------------------------------------------------
    def set_terminal_on_success(self, ends: bool | None) -> None:
        """Nothing to change: offline rewards are ``success - 1`` and ``terminated`` says
        where a value goal is reached, so the reward scale (1) does not depend on whether
        the env ends episodes on success."""

    @property
    def exploration_std(self) -> float:
        """The standard deviation of the Gaussian noise an exploring action adds to the
        actor's mean, in unit-box units: the Gaussian actor's own (1)."""
        return float(self.actor.std)

    def _act(self, x: torch.Tensor, deterministic: bool) -> np.ndarray:
        """The actor's mean, plus (exploring) Gaussian noise of :attr:`exploration_std`,
        clipped to the unit box and mapped to the action bounds."""
        unit = self.actor(x).float().cpu().numpy().astype(np.float64)
        if not deterministic:
            unit = unit + self.exploration_std * self.rng.standard_normal(unit.shape)
        unit = np.clip(unit, -1.0, 1.0)
        low, high = self.action_low.astype(np.float64), self.action_high.astype(np.float64)
        action = ((high + low) / 2 + (high - low) / 2 * unit).astype(np.float32)
        return np.clip(action, self.action_low, self.action_high)

    # --- helpers of the updates ----------------------------------------------------------
    def _actor_inputs(self, batch: TorchBatch) -> tuple[torch.Tensor, torch.Tensor]:
        """``(s || g_actor, s' || g_actor)``; the value goal's where the batch has no actor
        goals."""
        if batch.actor_x is None or batch.next_actor_x is None:
            return batch.x, batch.next_x
        return batch.actor_x, batch.next_actor_x

    def _unit_action(self, batch: TorchBatch) -> torch.Tensor:
        """The batch's actions in the unit box ``(B, act_dim)``."""
        return self.actor.unscale(batch.action.float().reshape(-1, self.act_dim))

    def _behaviour(
        self, actor_x: torch.Tensor, unit_action: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]:
        """The actor's mean, ``log pi(a | s, g_actor)`` per sample and the BC metrics."""
        mean = self.actor(actor_x)
        log_prob = self.actor.log_prob(mean, unit_action)
        metrics = {
            "bc_log_prob": log_prob.detach().mean(),
            "mse": (mean.detach() - unit_action).square().mean(),
        }
        return mean, log_prob, metrics
