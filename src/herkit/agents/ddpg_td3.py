"""Goal-conditioned DDPG (baselines HER) and TD3, one agent with TD3's three switches.

Actions live in the unit box inside the networks (``action / max_action``). Critic target
``y = r + gamma * (1 - terminated) * Q_target(s', pi_target(s') [+ clipped noise])``, the
minimum of two heads with ``twin_q``, clipped to the return range; the critic loss is the
weighted squared error (summed over heads). Every ``policy_delay`` critic steps the actor
minimises ``-Q_1(s, pi(s)).mean() + action_l2 * mean(pi(s) ** 2)`` (baselines' actor loss:
``pi(s)`` is the tanh output, before the scaling to the action bounds), with the critic
after its step (``step_order="critic-first"``) or, as baselines, before it (``"together"``:
both gradients at the same weights, then both steps); every ``target_every``-th actor step
both targets are polyak-averaged. Layers start as PyTorch's, as baselines'
(``init="xavier"``) or as mrl's (``init="orthogonal"``). Exploration as baselines: Gaussian
noise of std ``noise_eps * max_action`` and, with probability ``random_eps``, a uniformly
random action.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import torch
from torch import nn

from herkit.agents.base import BoxAgent, TorchBatch
from herkit.agents.loss_parts import frozen, weighted_mean
from herkit.agents.networks import Critic, DeterministicActor, fan_avg_init, orthogonal_init
from herkit.agents.settings import DDPGConfig

__all__ = ["DDPGAgent"]


class DDPGAgent(BoxAgent):
    """DDPG, or TD3 with ``twin_q``, ``policy_delay`` and ``target_noise`` set."""

    config: DDPGConfig
    METRICS: ClassVar[tuple[str, ...]] = (
        "critic_loss",
        "q_mean",
        "q_min",
        "q_max",
        "target_q_mean",
        "actor_loss",
        "td_abs_mean",
    )

    def _build(self) -> None:
        config, in_dim = self.config, self.in_dim
        with self._seeded_init():
            low, high, activation = self.action_low, self.action_high, config.activation
            self.actor = DeterministicActor(
                in_dim, low, high, config.hidden, config.actor_layer_norm, activation
            )
            n_heads = 2 if config.twin_q else 1
            self.critic = Critic(
                in_dim, self.act_dim, config.hidden, n_heads, config.critic_layer_norm, activation
            )
            start = {"xavier": fan_avg_init, "orthogonal": orthogonal_init}.get(config.init)
            if start is not None:
                for net in (self.actor.net, *self.critic.heads):
                    start(net)
        self.actor_optimizer, self.critic_optimizer = self._trained(self.actor, self.critic)
        self.critic_target, self.actor_target = self._targets(self.critic, self.actor)
        self._place_values()

    def _networks(self) -> dict[str, nn.Module]:
        return {
            "actor": self.actor,
            "actor_target": self.actor_target,
            "critic": self.critic,
            "critic_target": self.critic_target,
        }

    def _optimizers(self) -> dict[str, torch.optim.Optimizer]:
        return {"actor": self.actor_optimizer, "critic": self.critic_optimizer}

    def _act(self, x: torch.Tensor, deterministic: bool) -> np.ndarray:
        """``pi(s)``; exploring: plus Gaussian noise, or uniform with prob ``random_eps``."""
        unit = self.actor(x).cpu().numpy().astype(np.float64)
        if not deterministic:
            noise = self.config.noise_eps * self.rng.standard_normal(unit.shape)
            unit = np.clip(unit + noise, -1.0, 1.0)
            uniform = self.rng.uniform(-1.0, 1.0, size=unit.shape)
            pick_uniform = self.rng.random(len(unit)) < self.config.random_eps
            unit = np.where(pick_uniform[:, None], uniform, unit)
        low, high = self.action_low.astype(np.float64), self.action_high.astype(np.float64)
        action = ((high + low) / 2 + (high - low) / 2 * unit).astype(np.float32)
        return np.clip(action, self.action_low, self.action_high)

    def _actor_step(self) -> bool:
        return self.updates % self.config.policy_delay == 0

    def _targets_step(self) -> bool:
        # the targets move with the actor (TD3 delays both): every target_every-th actor step
        delay = self.config.policy_delay
        return self._actor_step() and (self.updates // delay + 1) % self.config.target_every == 0

    def _update(
        self, batch: TorchBatch, actor_step: bool, move_targets: bool
    ) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        config = self.config
        action = self.actor.unscale(batch.action.float().reshape(-1, self.act_dim))
        with torch.no_grad():
            next_action = self.actor_target(batch.next_x)
            if config.target_noise > 0:
                noise = (
                    torch.randn(next_action.shape, generator=self.generator, device=self.device)
                    * config.target_noise
                )
                noise = noise.clamp(-config.target_noise_clip, config.target_noise_clip)
                next_action = (next_action + noise).clamp(-1.0, 1.0)
            next_q = self.critic_target(batch.next_x, next_action).min(dim=0).values
            target = self._td_target(batch, next_q)
        q = self.critic(batch.x, action)
        # mean over samples and heads, times the number of heads: the sum of the heads' losses
        critic_loss = weighted_mean((q - target).square(), batch.weights) * q.shape[0]
        together = actor_step and config.step_order == "together"
        if not together:
            self._step(self.critic_optimizer, critic_loss)
        metrics = {
            "critic_loss": critic_loss,
            "q_mean": q[0].mean(),
            "q_min": q[0].min(),
            "q_max": q[0].max(),
            "target_q_mean": target.mean(),
        }
        if actor_step:
            with frozen(self.critic):
                pi = self.actor(batch.x)
                actor_loss = -self.critic(batch.x, pi)[0].mean()
                actor_loss = actor_loss + config.action_l2 * pi.square().mean()
            if together:  # one backward: the critic is frozen in the actor's loss
                self._step((self.critic_optimizer, self.actor_optimizer), critic_loss + actor_loss)
            else:
                self._step(self.actor_optimizer, actor_loss)
            metrics["actor_loss"] = actor_loss
        if move_targets:
            self._update_targets()
        return metrics, (target - q).abs().max(dim=0).values
