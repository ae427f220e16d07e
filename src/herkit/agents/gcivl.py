"""Goal-conditioned implicit V-learning (OGBench's GCIVL): an expectile value ``V(s, g)``
ensemble of 2 with a polyak target, and an AWR actor (OGBench's Gaussian,
:class:`~herkit.agents.offline.OfflineAgent`). Its settings per dataset are OGBench's
``impls/hyperparameters.sh`` (the entry's ``presets``, each value with the lines it comes
from).
"""

from __future__ import annotations

from dataclasses import dataclass

from herkit.agents.registry import AgentEntry, register
from herkit.agents.settings import OfflineGCConfig, check_expectile
from herkit.buffer.checks import check_float

__all__ = ["GCIVLAgent", "GCIVLConfig"]


@dataclass(frozen=True)
class GCIVLConfig(OfflineGCConfig):
    """Goal-conditioned implicit V-learning (OGBench's GCIVL): an expectile value V(s, g)
    ensemble of 2 and an AWR actor."""

    expectile: float = 0.9
    """Expectile of the value loss, in (0, 1) (0.5: mean squared error)."""
    alpha: float = 10.0
    """AWR inverse temperature: actor weights min(exp(alpha * advantage), 100)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        check_expectile(self.expectile)
        check_float("alpha", self.alpha, 0.0)


register(
    AgentEntry(
        "gcivl",
        GCIVLConfig,
        "herkit.agents.gcivl:GCIVLAgent",
        "offline implicit V-learning, an AWR actor",
        offline=True,
        presets={  # OGBench's impls/hyperparameters.sh, the lines that give each value
            # hyperparameters.sh:30,82
            "pointmaze-giant-": {"gamma": 0.995},
            # hyperparameters.sh:56,69,82,95
            "pointmaze-*-stitch-": {"actor_goals": (0.0, 0.5, 0.5)},
            # hyperparameters.sh:134,186
            "antmaze-giant-": {"gamma": 0.995},
            # hyperparameters.sh:160,173,186,199
            "antmaze-*-stitch-": {"actor_goals": (0.0, 0.5, 0.5)},
            # hyperparameters.sh:212,225,238
            "antmaze-*-explore-": {"actor_goals": (0.0, 0.0, 1.0)},
            # hyperparameters.sh:251,264,277,290,303,316
            "humanoidmaze-": {"gamma": 0.995},
            # hyperparameters.sh:290,303,316
            "humanoidmaze-*-stitch-": {"actor_goals": (0.0, 0.5, 0.5)},
        },
    )
)


from typing import ClassVar

import torch

from herkit.agents.base import TorchBatch
from herkit.agents.loss_parts import in_one_pass
from herkit.agents.networks import ValueEnsemble
from herkit.agents.offline import AWR_MAX_WEIGHT, OfflineAgent, expectile_loss


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
