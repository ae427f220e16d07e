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

from dataclasses import dataclass
from typing import Any, Literal, get_args

from herkit.agents.registry import AgentEntry, register
from herkit.agents.settings import ActorCriticConfig
from herkit.buffer.checks import check_bool, check_float, check_int

__all__ = ["INITS", "STEP_ORDERS", "DDPGAgent", "DDPGConfig", "Init", "StepOrder"]


Init = Literal["torch", "xavier", "orthogonal"]
"""How an actor's and critics' layers start (:attr:`DDPGConfig.init`)."""

INITS: tuple[Init, ...] = get_args(Init)
"""The names of :data:`Init`."""

StepOrder = Literal["critic-first", "together"]
"""Where an update's actor loss takes the critic (:attr:`DDPGConfig.step_order`)."""

STEP_ORDERS: tuple[StepOrder, ...] = get_args(StepOrder)
"""The names of :data:`StepOrder`."""


@dataclass(frozen=True)
class DDPGConfig(ActorCriticConfig):
    """DDPG as in baselines HER; the TD3 switches turn it into TD3 (see :meth:`td3`)."""

    action_l2: float = 1.0
    """Weight of the actor's penalty mean((action / max_action) ** 2)."""
    noise_eps: float = 0.2
    """Std of the Gaussian exploration noise, as a fraction of the action half-range."""
    random_eps: float = 0.3
    """Probability of a uniformly random action when exploring."""
    twin_q: bool = False
    """TD3: two critics, the target uses their minimum."""
    policy_delay: int = 1
    """TD3: critic updates per actor step; the targets move with the actor (target_every
    counts actor steps)."""
    target_noise: float = 0.0
    """TD3: std of the target-policy smoothing noise, as a fraction of the half-range."""
    target_noise_clip: float = 0.5
    """TD3: the smoothing noise is clipped to +-target_noise_clip (half-range fraction)."""
    init: Init = "torch"
    """Initialisation of every layer of the actor and the critics: torch (PyTorch's default:
    weights and biases uniform within +-1/sqrt(fan_in)), xavier (weights uniform within
    +-sqrt(6 / (fan_in + fan_out)), biases zero, output layers included: baselines' HER) or
    orthogonal (orthogonal weights, the output layers' scaled by 0.1, biases zero: mrl)."""
    step_order: StepOrder = "critic-first"
    """critic-first: the critic steps, then the actor's loss is taken with the stepped
    critic; together: the critic's and the actor's gradients are both taken at the weights
    before the update, then both networks step (baselines' HER)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.init not in INITS:
            raise ValueError(f"init must be one of {', '.join(INITS)}, got {self.init!r}")
        if self.step_order not in STEP_ORDERS:
            raise ValueError(
                f"step_order must be one of {', '.join(STEP_ORDERS)}, got {self.step_order!r}"
            )
        check_float("action_l2", self.action_l2, 0.0)
        check_float("noise_eps", self.noise_eps, 0.0)
        check_float("random_eps", self.random_eps, 0.0, 1.0)
        check_bool("twin_q", self.twin_q)
        check_int("policy_delay", self.policy_delay, 1)
        check_float("target_noise", self.target_noise, 0.0)
        check_float("target_noise_clip", self.target_noise_clip, 0.0)

    @classmethod
    def td3(cls, **changes: Any) -> DDPGConfig:
        """TD3's three changes to DDPG (Fujimoto et al., 2018): twin critics, policy delay 2,
        target policy smoothing 0.2. The rest stays this class's DDPG defaults, which
        follow OpenAI baselines' HER (action L2 penalty 1.0, 30 % random actions), not the
        TD3 paper (no action penalty, Gaussian exploration noise only).

        ``changes`` override any field, e.g. ``DDPGConfig.td3(hidden=(64, 64))``.
        """
        settings: dict[str, Any] = {"twin_q": True, "policy_delay": 2, "target_noise": 0.2}
        settings.update(changes)
        return cls(**settings)


def _twin_critics(config: Any) -> None:
    if not config.twin_q:
        raise ValueError("algo='td3' needs a DDPGConfig with twin_q=True, e.g. DDPGConfig.td3()")


register(
    AgentEntry("ddpg", DDPGConfig, "herkit.agents.ddpg_td3:DDPGAgent", "DDPG as baselines' HER")
)
register(
    AgentEntry(
        "td3",
        DDPGConfig,
        "herkit.agents.ddpg_td3:DDPGAgent",
        "TD3: DDPG with twin critics, policy delay 2, target smoothing",
        default=DDPGConfig.td3,
        check=_twin_critics,
    )
)


from typing import ClassVar

import numpy as np
import torch
from torch import nn

from herkit.agents.base import BoxAgent, TorchBatch
from herkit.agents.loss_parts import ensemble_td_loss, frozen, smoothed
from herkit.agents.networks import Critic, DeterministicActor, fan_avg_init, orthogonal_init


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

    @property
    def policy_delay(self) -> int:
        """TD3's delay: ``policy_delay`` of the settings."""
        return self.config.policy_delay

    def _update(
        self, batch: TorchBatch, actor_step: bool, move_targets: bool
    ) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        config = self.config
        action = self.actor.unscale(batch.action.float().reshape(-1, self.act_dim))
        with torch.no_grad():
            next_action = self.actor_target(batch.next_x)
            if config.target_noise > 0:
                noise, clip = config.target_noise, config.target_noise_clip
                next_action = smoothed(next_action, noise, clip, self.generator)
            next_q = self.critic_target(batch.next_x, next_action).min(dim=0).values
            target = self._td_target(batch, next_q)
        q = self.critic(batch.x, action)
        critic_loss = ensemble_td_loss(q, target, batch.weights)
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
