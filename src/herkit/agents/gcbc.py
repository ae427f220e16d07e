"""Goal-conditioned behavioural cloning (OGBench's GCBC): the actor, OGBench's Gaussian of
standard deviation 1 (:class:`~herkit.agents.offline.OfflineAgent`), maximises
``log pi(a | s, g_actor)`` on the dataset's actions. It learns no value, so the buffer
draws no value goals for it.
"""

from __future__ import annotations

from dataclasses import dataclass

from herkit.agents.registry import AgentEntry, register
from herkit.agents.settings import OfflineGCConfig

__all__ = ["GCBCAgent", "GCBCConfig"]


@dataclass(frozen=True)
class GCBCConfig(OfflineGCConfig):
    """Goal-conditioned behavioural cloning: maximise log pi(a | s, actor goal)."""

    gamma: float = 0.99
    """Unused by GCBC: it has no value function to discount."""
    polyak: float = 0.995
    """Unused by GCBC: it has no target network."""


register(
    AgentEntry(
        "gcbc",
        GCBCConfig,
        "herkit.agents.gcbc:GCBCAgent",
        "offline goal-conditioned behaviour cloning",
        offline=True,
        value_goals=None,  # no value function: no value goals drawn
    )
)


from typing import ClassVar

import torch

from herkit.agents.base import TorchBatch
from herkit.agents.offline import OfflineAgent


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
