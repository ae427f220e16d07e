"""Goal-conditioned soft actor-critic with twin critics and automatic entropy tuning.

The policy is a tanh-squashed Gaussian in the unit box (log-densities are taken there, so
the entropy target ``-act_dim`` does not depend on the action bounds). Critic target
``y = r + gamma * (1 - terminated) * (min_i Q_target_i(s', a') - alpha * log pi(a'|s'))``
with ``a' ~ pi(s')``, clipped to the return range of the rewards (the entropy bonus is
clipped with it). Then the actor minimises ``alpha * log pi(a|s) - min_i Q_i(s, a)`` and,
with ``autotune``, ``log alpha`` follows ``-log alpha * (log pi + target_entropy)``.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np
import torch
from torch import nn

from herkit.agents.base import BoxAgent, TorchBatch
from herkit.agents.loss_parts import adam, frozen, weighted_mean
from herkit.agents.networks import Critic, GaussianActor
from herkit.agents.settings import SACConfig

__all__ = ["SACAgent"]


class SACAgent(BoxAgent):
    """SAC (Haarnoja et al., 2018, with learned temperature) on ``observation || goal``."""

    config: SACConfig
    METRICS: ClassVar[tuple[str, ...]] = (
        "critic_loss",
        "actor_loss",
        "q_mean",
        "q_min",
        "q_max",
        "target_q_mean",
        "entropy",
        "alpha_loss",
        "alpha",
        "td_abs_mean",
    )

    def _build(self) -> None:
        config, in_dim = self.config, self.in_dim
        with self._seeded_init():
            low, high, activation = self.action_low, self.action_high, config.activation
            self.actor = GaussianActor(
                in_dim, low, high, config.hidden, config.actor_layer_norm, activation
            )
            self.critic = Critic(
                in_dim, self.act_dim, config.hidden, 2, config.critic_layer_norm, activation
            )
        self.actor_optimizer, self.critic_optimizer = self._trained(self.actor, self.critic)
        (self.critic_target,) = self._targets(self.critic)
        self._place_values()
        self.target_entropy = (
            -float(self.act_dim) if config.target_entropy is None else config.target_entropy
        )
        self.log_alpha = nn.Parameter(
            torch.tensor(math.log(config.init_alpha), device=self.device),
            requires_grad=config.autotune,
        )
        self.alpha_optimizer = adam([self.log_alpha], config.lr_alpha)

    def _networks(self) -> dict[str, nn.Module]:
        return {"actor": self.actor, "critic": self.critic, "critic_target": self.critic_target}

    def _optimizers(self) -> dict[str, torch.optim.Optimizer]:
        return {
            "actor": self.actor_optimizer,
            "critic": self.critic_optimizer,
            "alpha": self.alpha_optimizer,
        }

    def state_dict(self) -> dict[str, Any]:
        """The :class:`GoalAgent` state plus ``log_alpha``."""
        state = super().state_dict()
        state["log_alpha"] = self.log_alpha.detach().cpu().clone()
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a :meth:`state_dict`, ``log_alpha`` included."""
        super().load_state_dict(state)
        with torch.no_grad():
            self.log_alpha.copy_(state["log_alpha"])

    def _act(self, x: torch.Tensor, deterministic: bool) -> np.ndarray:
        """``tanh(mean)`` if deterministic, else a sample of the policy."""
        if deterministic:
            unit = self.actor.deterministic(x)
        else:
            unit, _ = self.actor.sample(x, self.generator)
        action = self.actor.scale(unit).cpu().numpy().astype(np.float32)
        return np.clip(action, self.action_low, self.action_high)

    def _update(
        self, batch: TorchBatch, actor_step: bool, move_targets: bool
    ) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        alpha = self.log_alpha.detach().exp()
        action = self.actor.unscale(batch.action.float().reshape(-1, self.act_dim))
        with torch.no_grad():
            next_action, next_log_prob = self.actor.sample(batch.next_x, self.generator)
            next_q = self.critic_target(batch.next_x, next_action).min(dim=0).values
            target = self._td_target(batch, next_q - alpha * next_log_prob)
        q = self.critic(batch.x, action)
        # mean over samples and heads, times the number of heads: the sum of the heads' losses
        critic_loss = weighted_mean((q - target).square(), batch.weights) * q.shape[0]
        self._step(self.critic_optimizer, critic_loss)

        with frozen(self.critic):
            pi, log_prob = self.actor.sample(batch.x, self.generator)
            actor_loss = (alpha * log_prob - self.critic(batch.x, pi).min(dim=0).values).mean()
        self._step(self.actor_optimizer, actor_loss)

        metrics = {
            "critic_loss": critic_loss,
            "actor_loss": actor_loss,
            "q_mean": q[0].mean(),
            "q_min": q[0].min(),
            "q_max": q[0].max(),
            "target_q_mean": target.mean(),
            "entropy": -log_prob.mean(),
        }
        if self.config.autotune:
            alpha_loss = -(self.log_alpha * (log_prob.detach() + self.target_entropy)).mean()
            self._step(self.alpha_optimizer, alpha_loss)
            metrics["alpha_loss"] = alpha_loss
        if move_targets:
            self._update_targets()
        metrics["alpha"] = self.log_alpha.exp()
        return metrics, (target - q).abs().max(dim=0).values
