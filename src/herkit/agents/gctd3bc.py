"""Goal-conditioned TD3+BC (Fujimoto & Gu, 2021, "A Minimalist Approach to Offline
Reinforcement Learning") on OGBench's goal mixes and networks: herkit's offline agent
beyond OGBench's six.

**Critic.** Twin Q networks ``Q_1, Q_2`` of ``s || g || a`` (OGBench's value MLPs: GELU,
LayerNorm, flax's numerics) with polyak targets, trained on the value goal ``g`` with
reward ``success - 1`` and mask ``1 - success``: with target policy smoothing,
``a' = clip(pi_t(s', g) + clip(N(0, target_noise), -target_noise_clip,
target_noise_clip), -1, 1)`` and ``y = r + gamma * mask * min_i Q_t,i(s', g, a')``, the loss
is ``sum_i mean((Q_i(s, g, a) - y) ** 2)``.

**Actor.** Deterministic, ``pi(s, g) = tanh(MLP)`` in the unit box, stepped every
``policy_delay``-th update (the targets move with it). On the actor goal ``g_a`` it
minimises ``-lambda * mean Q_1(s, g_a, pi(s, g_a)) + mean((pi(s, g_a) - a) ** 2)`` with
``lambda = alpha / stopgrad(mean |Q_1|)`` (the paper's normalisation, plus 1e-6:
:func:`~herkit.agents.offline.scale_free_q_loss`), ``alpha`` 2.5 as the paper's.

As OGBench's agents, every loss of an update is taken from the parameters before it
(the critic without gradient in the actor's loss), the targets move towards the networks
as they were, and each network takes one Adam step. Exploring (online, after the
dataset), an action adds Gaussian noise of ``exploration_noise`` to ``pi``.
"""

from __future__ import annotations

from dataclasses import dataclass

from herkit.agents.registry import AgentEntry, register
from herkit.agents.settings import OfflineGCConfig
from herkit.buffer.checks import check_float, check_int

__all__ = ["GCTD3BCAgent", "GCTD3BCConfig"]


@dataclass(frozen=True)
class GCTD3BCConfig(OfflineGCConfig):
    """Goal-conditioned TD3+BC: twin critics, target policy smoothing, a delayed
    deterministic actor with a behavioural-cloning term."""

    alpha: float = 2.5
    """TD3+BC's alpha: the actor's Q term is weighted by alpha / mean(abs(Q)) (the paper:
    2.5)."""
    policy_delay: int = 2
    """Critic updates per actor step; the targets move with the actor."""
    target_noise: float = 0.2
    """Std of the target-policy smoothing noise, in unit-box actions."""
    target_noise_clip: float = 0.5
    """The smoothing noise is clipped to +-target_noise_clip."""
    exploration_noise: float = 0.1
    """Std of the Gaussian noise of an exploring action (online), in unit-box actions."""

    def __post_init__(self) -> None:
        super().__post_init__()
        check_float("alpha", self.alpha, 0.0)
        check_int("policy_delay", self.policy_delay, 1)
        check_float("target_noise", self.target_noise, 0.0)
        check_float("target_noise_clip", self.target_noise_clip, 0.0)
        check_float("exploration_noise", self.exploration_noise, 0.0)


register(
    AgentEntry(
        "gctd3bc",
        GCTD3BCConfig,
        f"{__name__}:GCTD3BCAgent",
        "offline TD3+BC: twin critics, a delayed deterministic actor cloning the data",
        offline=True,
    )
)

from typing import ClassVar

import torch

from herkit.agents.base import TorchBatch
from herkit.agents.loss_parts import call_frozen, ensemble_td_loss, smoothed
from herkit.agents.networks import Critic, DeterministicActor
from herkit.agents.offline import OfflineAgent, scale_free_q_loss


class GCTD3BCAgent(OfflineAgent):
    """Goal-conditioned TD3+BC (see the module)."""

    config: GCTD3BCConfig
    critic: Critic
    critic_target: Critic
    actor_target: DeterministicActor
    METRICS: ClassVar[tuple[str, ...]] = (
        "critic_loss",
        "q_mean",
        "q_min",
        "q_max",
        "target_q_mean",
        "actor_loss",
        "q_loss",
        "bc_loss",
        "td_abs_mean",
    )
    ACTOR = "deterministic"
    TRAINED: ClassVar[tuple[str, ...]] = ("critic",)
    TARGETS: ClassVar[tuple[str, ...]] = ("critic", "actor")

    @property
    def policy_delay(self) -> int:
        """``policy_delay`` of the settings."""
        return self.config.policy_delay

    @property
    def exploration_std(self) -> float:
        """``exploration_noise`` of the settings."""
        return self.config.exploration_noise

    def _build_trained(self) -> None:
        self.critic = self._twin_critic()

    def _update(
        self, batch: TorchBatch, actor_step: bool, move_targets: bool
    ) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        config = self.config
        unit_action = self._unit_action(batch)
        with torch.no_grad():
            noise, clip = config.target_noise, config.target_noise_clip
            next_action = smoothed(self.actor_target(batch.next_x), noise, clip, self.generator)
            next_q = self.critic_target(batch.next_x, next_action).min(dim=0).values
            target = self._td_target(batch, next_q)
        q = self.critic(batch.x, unit_action)  # (2, B)
        critic_loss = ensemble_td_loss(q, target, batch.weights)
        metrics = {
            "critic_loss": critic_loss,
            "q_mean": q.detach().mean(),
            "q_min": q.detach().min(),
            "q_max": q.detach().max(),
            "target_q_mean": target.mean(),
        }
        loss, optimizers = critic_loss, [self.optimizers["critic"]]
        if actor_step:
            actor_x, _ = self._actor_inputs(batch)
            pi = self.actor(actor_x)
            q_pi = call_frozen(self.critic, actor_x, pi)[0]  # Q_1, as the paper's
            q_loss = config.alpha * scale_free_q_loss(q_pi)
            bc_loss = (pi - unit_action).square().mean()
            actor_loss = q_loss + bc_loss
            loss = loss + actor_loss
            optimizers.append(self.optimizers["actor"])
            metrics |= {"actor_loss": actor_loss, "q_loss": q_loss, "bc_loss": bc_loss}
        if move_targets:  # towards the networks before the step, as OGBench's
            self._update_targets()
        self._step(optimizers, loss)
        return metrics, (target - q.detach()).abs().max(dim=0).values
