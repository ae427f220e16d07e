"""Offline goal-conditioned agents after OGBench's reference implementations (Park et al.,
2025): :class:`GCBCAgent`, :class:`GCIVLAgent` and :class:`GCIQLAgent`.

A batch holds two goals per sample (the buffer's offline goal mixes): the value goal
``goal``, with reward ``success - 1`` (0 where the goal is the current state, else -1;
``success`` without ``gc_negative``) and ``terminated = success`` (so ``1 - terminated`` is
OGBench's mask), and the actor goal ``actor_goal``. A batch without actor goals (one of a
buffer without an actor mix) gives the actor the value goal. Rewards are taken as they
come (scale 1), whatever ``reward_range`` and ``terminal_on_success`` say; ``clip_return``
clips value targets to ``[-1 / (1 - gamma), 0]``, the returns of ``gc_negative``'s -1/0.

The actor (:class:`~herkit.agents.networks.ConstantStdActor`) is a Gaussian of standard
deviation 1 over unit-box actions (``action / max_action`` for symmetric bounds, as the
other agents); :meth:`act` plays its mean clipped to the box when deterministic, a sample
clipped to the box when exploring. Every loss of an update is computed from the
parameters before it, then each network takes one Adam step on its own loss, and the
targets move towards the online networks as they were before the step (OGBench's
order). Updates run in every mode (:mod:`herkit.agents.updates`): a compiled or captured
update takes its :class:`~herkit.buffer.batch.Batch` as device tensors, actor goals
included, or draws it within the update on the buffer's device.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import torch
from torch import nn

from herkit.agents.base import BoxAgent, TorchBatch
from herkit.agents.loss_parts import ValueScale, call_frozen, in_one_pass, weighted_mean
from herkit.agents.networks import ConstantStdActor, Critic, ValueEnsemble
from herkit.agents.settings import GCBCConfig, GCIQLConfig, GCIVLConfig, OfflineGCConfig

__all__ = ["AWR_MAX_WEIGHT", "GCBCAgent", "GCIQLAgent", "GCIVLAgent", "OfflineAgent"]

AWR_MAX_WEIGHT = 100.0
"""Largest advantage weight ``exp(alpha * A)`` of GCIVL's actor (OGBench's cap)."""

REWARD_RANGE = (-1.0, 0.0)
"""The rewards of an offline batch: ``success - 1`` for its value goal."""


def ddpg_bc_loss(
    q: torch.Tensor, log_prob: torch.Tensor, alpha: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """DDPG+BC's two terms: ``-mean(q) / stopgrad(mean |q| + 1e-6)`` (scale-free) and
    ``-mean(alpha * log_prob)`` (OGBench's CRL and QRL actors; GCIQL's writes the second
    as ``-alpha * mean(log_prob)``, as it always has)."""
    q_loss = -q.mean() / (q.detach().abs().mean() + 1e-6)
    bc_loss = -(alpha * log_prob).mean()
    return q_loss, bc_loss


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
    """The shared part of the offline agents: the Gaussian actor, acting, the actor's
    inputs, the fixed reward scale and the simultaneous update (see the module)."""

    config: OfflineGCConfig
    actor: ConstantStdActor

    def _build(self) -> None:
        config = self.config
        self.values = ValueScale.of(REWARD_RANGE, config.gamma, ends_on_success=False)
        with self._seeded_init():
            self.actor = ConstantStdActor(
                self.in_dim,
                self.action_low,
                self.action_high,
                config.hidden,
                config.actor_layer_norm,
                config.activation,
                config.actor_init_scale,
            )
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

    def _act(self, x: torch.Tensor, deterministic: bool) -> np.ndarray:
        """The Gaussian's mean, or (exploring) a sample of it, clipped to the unit box and
        mapped to the action bounds."""
        unit = self.actor(x).float().cpu().numpy().astype(np.float64)
        if not deterministic:
            unit = unit + self.actor.std * self.rng.standard_normal(unit.shape)
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


class GCBCAgent(OfflineAgent):
    """Goal-conditioned behavioural cloning: the actor minimises ``-mean log pi(a | s,
    g_actor)``. Its ``|TD error|`` is 0 (it has no value)."""

    config: GCBCConfig
    METRICS: ClassVar[tuple[str, ...]] = ("actor_loss", "bc_log_prob", "mse", "td_abs_mean")

    def _update(
        self, batch: TorchBatch, actor_step: bool, move_targets: bool
    ) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        actor_x, _ = self._actor_inputs(batch)
        _, log_prob, metrics = self._behaviour(actor_x, self._unit_action(batch))
        actor_loss = -log_prob.mean()
        self._step(self.optimizers["actor"], actor_loss)
        metrics["actor_loss"] = actor_loss
        return metrics, torch.zeros(len(batch.reward), device=self.device)


class GCIVLAgent(OfflineAgent):
    """Goal-conditioned implicit V-learning (OGBench's GCIVL).

    Value ``V_i(s, g)``, an ensemble of 2 with a polyak target ``W_i``: with
    ``q_i = r + gamma * mask * W_i(s', g)`` and the advantage
    ``adv = r + gamma * mask * min_i W_i(s', g) - mean_i W_i(s, g)``, each head minimises
    ``mean(|expectile - 1(adv < 0)| * (q_i - V_i(s, g)) ** 2)`` (the loss is their sum).
    Actor (AWR): with ``A = mean_i V_i(s', g_a) - mean_i V_i(s, g_a)`` (online values, no
    gradient) it minimises ``-mean(min(exp(alpha * A), 100) * log pi(a | s, g_a))``.
    ``|TD error|`` per sample: the larger ``|q_i - V_i(s, g)|`` of the heads.
    """

    config: GCIVLConfig
    value: ValueEnsemble
    value_target: ValueEnsemble
    METRICS: ClassVar[tuple[str, ...]] = (
        "value_loss",
        "v_mean",
        "v_min",
        "v_max",
        "actor_loss",
        "adv",
        "bc_log_prob",
        "mse",
        "td_abs_mean",
    )

    TRAINED: ClassVar[tuple[str, ...]] = ("value",)
    TARGETS: ClassVar[tuple[str, ...]] = ("value",)

    def _build_trained(self) -> None:
        config = self.config
        self.value = ValueEnsemble(
            self.in_dim, config.hidden, 2, config.critic_layer_norm, config.activation
        )

    def _update(
        self, batch: TorchBatch, actor_step: bool, move_targets: bool
    ) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        config = self.config
        with torch.no_grad():
            next_w, w = in_one_pass(self.value_target, batch.next_x, batch.x)  # (2, B) each
            q = self._td_target(batch, next_w)
            adv = self._td_target(batch, next_w.min(dim=0).values) - w.mean(dim=0)
        v = self.value(batch.x)  # (2, B)
        # mean over samples and heads, times the number of heads: the sum of the heads' losses
        value_loss = expectile_loss(adv, q - v, config.expectile, batch.weights) * len(v)
        metrics = {
            "value_loss": value_loss,
            "v_mean": v.detach().mean(),
            "v_min": v.detach().min(),
            "v_max": v.detach().max(),
        }
        loss, optimizers = value_loss, [self.optimizers["value"]]
        if actor_step:
            actor_x, next_actor_x = self._actor_inputs(batch)
            with torch.no_grad():
                next_v, v_actor = in_one_pass(self.value, next_actor_x, actor_x)
                advantage = next_v.mean(dim=0) - v_actor.mean(dim=0)
                weight = (config.alpha * advantage).exp().clamp(max=AWR_MAX_WEIGHT)
            _, log_prob, actor_metrics = self._behaviour(actor_x, self._unit_action(batch))
            actor_loss = -(weight * log_prob).mean()
            loss = loss + actor_loss
            optimizers.append(self.optimizers["actor"])
            metrics |= actor_metrics | {"actor_loss": actor_loss, "adv": advantage.mean()}
        if move_targets:  # towards the networks before the step, as OGBench's
            self._update_targets()
        self._step(optimizers, loss)
        return metrics, (q - v.detach()).abs().max(dim=0).values


class GCIQLAgent(OfflineAgent):
    """Goal-conditioned implicit Q-learning (OGBench's GCIQL, DDPG+BC actor).

    Value ``V(s, g)`` (one network) minimises the expectile loss of
    ``min_i Qt_i(s, a, g) - V(s, g)``, ``Qt`` the polyak target of the Q ensemble
    ``Q_i(s, a, g)`` (2 heads), which minimises
    ``sum_i mean((Q_i(s, a, g) - (r + gamma * mask * V(s', g))) ** 2)``. Actor: with
    ``mu = clip(mean of pi(s, g_a), -1, 1)`` it minimises
    ``-mean(min_i Q_i(s, mu, g_a)) / stopgrad(mean |min_i Q_i|) - alpha * mean log pi(a |
    s, g_a)``. ``|TD error|`` per sample: the larger ``|Q_i - target|`` of the heads.
    """

    config: GCIQLConfig
    value: ValueEnsemble
    critic: Critic
    critic_target: Critic
    METRICS: ClassVar[tuple[str, ...]] = (
        "value_loss",
        "v_mean",
        "v_min",
        "v_max",
        "critic_loss",
        "q_mean",
        "q_min",
        "q_max",
        "actor_loss",
        "q_loss",
        "bc_loss",
        "bc_log_prob",
        "mse",
        "td_abs_mean",
    )

    TRAINED: ClassVar[tuple[str, ...]] = ("value", "critic")
    TARGETS: ClassVar[tuple[str, ...]] = ("critic",)

    def _build_trained(self) -> None:
        config = self.config
        self.value = ValueEnsemble(
            self.in_dim, config.hidden, 1, config.critic_layer_norm, config.activation
        )
        self.critic = Critic(
            self.in_dim,
            self.act_dim,
            config.hidden,
            2,
            config.critic_layer_norm,
            config.activation,
            ogbench=True,
        )

    def _update(
        self, batch: TorchBatch, actor_step: bool, move_targets: bool
    ) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        config = self.config
        unit_action = self._unit_action(batch)
        with torch.no_grad():
            target_q = self.critic_target(batch.x, unit_action).min(dim=0).values
            target = self._td_target(batch, self.value(batch.next_x)[0])
        v = self.value(batch.x)[0]
        value_loss = expectile_loss(target_q - v, target_q - v, config.expectile, batch.weights)
        q = self.critic(batch.x, unit_action)  # (2, B)
        # mean over samples and heads, times the number of heads: the sum of the heads' losses
        critic_loss = weighted_mean((q - target).square(), batch.weights) * q.shape[0]
        metrics = {
            "value_loss": value_loss,
            "v_mean": v.detach().mean(),
            "v_min": v.detach().min(),
            "v_max": v.detach().max(),
            "critic_loss": critic_loss,
            "q_mean": q.detach().mean(),
            "q_min": q.detach().min(),
            "q_max": q.detach().max(),
        }
        loss = value_loss + critic_loss
        optimizers = [self.optimizers["value"], self.optimizers["critic"]]
        if actor_step:
            actor_x, _ = self._actor_inputs(batch)
            mean, log_prob, actor_metrics = self._behaviour(actor_x, unit_action)
            q_pi = call_frozen(self.critic, actor_x, mean.clamp(-1.0, 1.0)).min(dim=0).values
            q_loss = -q_pi.mean() / (q_pi.detach().abs().mean() + 1e-6)
            bc_loss = -config.alpha * log_prob.mean()
            actor_loss = q_loss + bc_loss
            loss = loss + actor_loss
            optimizers.append(self.optimizers["actor"])
            metrics |= actor_metrics | {
                "actor_loss": actor_loss,
                "q_loss": q_loss,
                "bc_loss": bc_loss,
            }
        if move_targets:  # towards the networks before the step, as OGBench's
            self._update_targets()
        self._step(optimizers, loss)
        return metrics, (target - q.detach()).abs().max(dim=0).values
