"""Goal-conditioned implicit Q-learning (OGBench's GCIQL): an expectile value ``V(s, g)``,
a Q ensemble of 2 with a polyak target, and a DDPG+BC actor (OGBench's Gaussian,
:class:`~herkit.agents.offline.OfflineAgent`; the loss :func:`~herkit.agents.offline.ddpg_bc_loss`).
Its settings per dataset are OGBench's ``impls/hyperparameters.sh`` (the entry's
``presets``: alpha 0.003 on pointmaze, ...).
"""

from __future__ import annotations

from dataclasses import dataclass

from herkit.agents.registry import AgentEntry, register
from herkit.agents.settings import OfflineGCConfig, check_expectile
from herkit.buffer.checks import check_float

__all__ = ["GCIQLAgent", "GCIQLConfig"]


@dataclass(frozen=True)
class GCIQLConfig(OfflineGCConfig):
    """Goal-conditioned implicit Q-learning (OGBench's GCIQL): an expectile V(s, g), a
    Q(s, a, g) ensemble of 2 and a DDPG+BC actor."""

    expectile: float = 0.9
    """Expectile of the value loss, in (0, 1) (0.5: mean squared error)."""
    alpha: float = 0.3
    """DDPG+BC's behavioural-cloning weight (OGBench's default 0.3; its pointmaze runs use
    0.003, the entry's preset)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        check_expectile(self.expectile)
        check_float("alpha", self.alpha, 0.0)


register(
    AgentEntry(
        "gciql",
        GCIQLConfig,
        "herkit.agents.gciql:GCIQLAgent",
        "offline implicit Q-learning, a DDPG+BC actor",
        offline=True,
        presets={  # OGBench's impls/hyperparameters.sh, the lines that give each value
            # hyperparameters.sh:6,19,32,45,58,71,84,97
            "pointmaze-": {"alpha": 0.003},
            # hyperparameters.sh:32,84
            "pointmaze-giant-": {"gamma": 0.995},
            # hyperparameters.sh:58,71,84,97
            "pointmaze-*-stitch-": {"actor_goals": (0.0, 0.5, 0.5)},
            # hyperparameters.sh:136,188
            "antmaze-giant-": {"gamma": 0.995},
            # hyperparameters.sh:162,175,188,201
            "antmaze-*-stitch-": {"actor_goals": (0.0, 0.5, 0.5)},
            # hyperparameters.sh:214,227,240
            "antmaze-*-explore-": {"actor_goals": (0.0, 0.0, 1.0), "alpha": 0.01},
            # hyperparameters.sh:253,266,279,292,305,318
            "humanoidmaze-": {"alpha": 0.1, "gamma": 0.995},
            # hyperparameters.sh:292,305,318
            "humanoidmaze-*-stitch-": {"actor_goals": (0.0, 0.5, 0.5)},
        },
    )
)


from typing import ClassVar

import torch

from herkit.agents.base import TorchBatch
from herkit.agents.loss_parts import call_frozen, ensemble_td_loss
from herkit.agents.networks import Critic, ValueEnsemble
from herkit.agents.offline import OfflineAgent, ddpg_bc_loss, expectile_loss


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
        self.critic = self._twin_critic()

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
        critic_loss = ensemble_td_loss(q, target, batch.weights)
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
            q_loss, bc_loss = ddpg_bc_loss(q_pi, log_prob, config.alpha)
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
