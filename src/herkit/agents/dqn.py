"""Goal-conditioned DQN for discrete actions (the HER paper's bit-flipping agent).

``Q(normalise(o) || normalise(g))`` gives one value per action. Targets are double-Q by
default, ``y = r + gamma * (1 - terminated) * Q_target(s', argmax_a Q(s', a))``, clipped
to the return range; the loss is Huber (or squared error), weighted per sample by the
prioritized-replay weights. Exploration is epsilon-greedy.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from herkit.agents.base import GoalAgent, TorchBatch
from herkit.agents.loss_parts import weighted_mean
from herkit.agents.networks import QNetwork
from herkit.agents.settings import DQNConfig

__all__ = ["DQNAgent"]


class DQNAgent(GoalAgent):
    """Double DQN on ``observation || goal`` for a ``Discrete(n, start)`` action space."""

    config: DQNConfig
    METRICS: ClassVar[tuple[str, ...]] = (
        "critic_loss",
        "q_mean",
        "q_min",
        "q_max",
        "target_q_mean",
        "td_abs_mean",
    )
    ACTION_DTYPE = torch.int64

    def __init__(
        self,
        config: DQNConfig,
        observation_dim: int,
        goal_dim: int,
        n_actions: int,
        reward_range: tuple[float, float] | None,
        action_start: int = 0,
        device: str | torch.device = "cpu",
        seed: int | None = None,
    ) -> None:
        super().__init__(config, observation_dim, goal_dim, reward_range, device, seed)
        self.n_actions = n_actions
        self.action_start = action_start
        with self._seeded_init():
            self.q = QNetwork(
                observation_dim + goal_dim,
                n_actions,
                config.hidden,
                config.critic_layer_norm,
                config.activation,
            )
        (self.optimizer,) = self._trained(self.q)
        (self.q_target,) = self._targets(self.q)
        self._place_values()

    def _networks(self) -> dict[str, nn.Module]:
        return {"q": self.q, "q_target": self.q_target}

    def _optimizers(self) -> dict[str, torch.optim.Optimizer]:
        return {"q": self.optimizer}

    def _act(self, x: torch.Tensor, deterministic: bool) -> np.ndarray:
        """Greedy actions; with probability ``epsilon`` a uniform one unless deterministic."""
        actions = self.q(x).argmax(dim=-1).cpu().numpy()
        if not deterministic:
            coin, uniform = self.rng.random((2, len(actions)))  # one draw: it is per env step
            random_actions = (uniform * self.n_actions).astype(np.int64)
            actions = np.where(coin < self.config.epsilon, random_actions, actions)
        return actions + self.action_start

    def _update(
        self, batch: TorchBatch, actor_step: bool, move_targets: bool
    ) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        action = batch.action.reshape(-1).long() - self.action_start
        with torch.no_grad():
            next_q = self.q_target(batch.next_x)
            if self.config.double_q:
                next_action = self.q(batch.next_x).argmax(dim=-1, keepdim=True)
            else:
                next_action = next_q.argmax(dim=-1, keepdim=True)
            target = self._td_target(batch, next_q.gather(-1, next_action).squeeze(-1))
        q = self.q(batch.x).gather(-1, action.unsqueeze(-1)).squeeze(-1)
        loss_fn = F.smooth_l1_loss if self.config.huber else F.mse_loss
        loss = weighted_mean(loss_fn(q, target, reduction="none"), batch.weights)
        self._step(self.optimizer, loss)
        if move_targets:
            self._update_targets()
        metrics = {
            "critic_loss": loss,
            "q_mean": q.mean(),
            "q_min": q.min(),
            "q_max": q.max(),
            "target_q_mean": target.mean(),
        }
        return metrics, (target - q).abs()
