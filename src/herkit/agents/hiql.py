"""OGBench's HIQL (hierarchical implicit Q-learning, Park et al., 2023) in PyTorch:
``impls/agents/hiql.py`` at OGBench's commit 1d41409, loss for loss.

**Networks** (OGBench's ``create``, state-based: no visual encoder), each an MLP of flax's
numerics (:func:`~herkit.agents.networks.mlp`'s ``flax`` layers: GELU's tanh form,
LayerNorm after the activation, epsilon 1e-6) initialised by
:func:`~herkit.agents.networks.fan_avg_init`:

- the goal representation ``phi([s; g])`` (:class:`GoalRepresentation`): an MLP of the
  value's layers (LayerNorm with ``critic_layer_norm``) to ``rep_dim`` outputs,
  length-normalised to ``sqrt(rep_dim)`` (OGBench's ``LengthNormalize``). One module, shared
  by the value, its target and the actors (flax adopts the one ``goal_rep_def`` instance
  passed to every ``GCEncoder`` once per network: one set of parameters);
- the value ``V(s, g) = V_i(s || phi([s; g]))``, an ensemble of 2
  (:class:`~herkit.agents.networks.ValueEnsemble`; OGBench's ``GCValue`` with
  ``GCEncoder(state_encoder=Identity, concat_encoder=goal_rep)``), and its polyak target
  (the heads only: the target's ``phi`` is the online one, as in OGBench);
- the low actor ``pi_l(a | s || phi([s; w]))`` and the high actor
  ``pi_h(z | s || g)`` over representations ``z`` of ``rep_dim``, both OGBench's ``GCActor``
  (:class:`~herkit.agents.networks.ConstantStdActor`: a Gaussian of standard deviation 1,
  its output layer at scale ``actor_init_scale``; the high actor's "box" is ``[-1, 1]``,
  never used to scale its outputs).

**Losses**, all from the parameters before the update, summed and stepped by one Adam over
every parameter (OGBench's one ``TrainState``), the target moved towards the value as it
was before the step. With ``phi`` the online representation and ``W_i`` the target heads:

- value (IVL): ``q_i = r + gamma * mask * W_i(s', g)``,
  ``adv = r + gamma * mask * min_i W_i(s', g) - mean_i W_i(s, g)``, each head minimises
  ``mean(|expectile - 1(adv < 0)| * (q_i - V_i(s, g)) ** 2)``; its gradient reaches ``phi``;
- low actor (AWR): with the subgoal ``w`` (``Batch.low_actor_goal``) and
  ``A = mean_i V_i(s', w) - mean_i V_i(s, w)`` it minimises
  ``-mean(min(exp(low_alpha * A), 100) * log pi_l(a | s || phi([s; w])))``, ``phi`` without
  gradient unless ``low_actor_rep_grad``;
- high actor (AWR): with the goal ``g`` (``Batch.actor_goal``), the target state ``s_w``
  and its goal ``w`` (``Batch.high_actor_target[_observation]``) and
  ``A = mean_i V_i(s_w, g) - mean_i V_i(s, g)`` it minimises
  ``-mean(min(exp(high_alpha * A), 100) * log pi_h(phi([s; w]) | s || g))``.

**Acting** (OGBench's ``sample_actions``): the high actor proposes ``z`` (its mean, or
exploring a sample), length-normalised to ``sqrt(rep_dim)``; the low actor acts towards
it (its mean, or a sample), clipped to the box. Updates run in every mode the other agents
do; a batch must carry HIQL's subgoals (the buffer's ``subgoal_steps``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from herkit.agents.registry import AgentEntry, register
from herkit.agents.settings import OfflineGCConfig, check_expectile
from herkit.buffer.checks import check_bool, check_float, check_int

__all__ = [
    "HIQL_ACTOR_GOALS",
    "HIQL_VALUE_GOALS",
    "GoalRepresentation",
    "HIQLAgent",
    "HIQLConfig",
    "length_normalize",
]

HIQL_VALUE_GOALS = (0.2, 0.5, 0.3)
"""HIQL's value goals (OGBench's ``value_p_curgoal``, ``value_p_trajgoal``,
``value_p_randomgoal``): current, future (geometric with the discount), random states."""
HIQL_ACTOR_GOALS = (0.0, 1.0, 0.0)
"""HIQL's high actor's goals (``actor_p_*``; ``HGCDataset`` reads only the random share:
a current share here gives the state itself as the target)."""


@dataclass(frozen=True)
class HIQLConfig(OfflineGCConfig):
    """Hierarchical implicit Q-learning (OGBench's HIQL): an IVL value V(s, phi([s; g]))
    ensemble of 2 over a learned, length-normalised goal representation phi, a low actor
    pi(a | s, phi([s; w])) towards subgoals w and a high actor pi(phi([s; w]) | s, g) that
    proposes them, both AWR."""

    expectile: float = 0.7
    """Expectile of the value loss, in (0, 1) (OGBench's HIQL: 0.7)."""
    low_alpha: float = 3.0
    """The low actor's AWR inverse temperature: weights min(exp(low_alpha * A), 100)."""
    high_alpha: float = 3.0
    """The high actor's AWR inverse temperature: weights min(exp(high_alpha * A), 100)."""
    subgoal_steps: int = 25
    """Steps from a state to its subgoal: the low actor's goal (at most the episode's last
    state) and the high actor's target (at most its goal's step)."""
    rep_dim: int = 10
    """Size of the goal representation phi([s; g]) (length-normalised to sqrt(rep_dim))."""
    low_actor_rep_grad: bool = False
    """Let the low actor's loss train the goal representation too (OGBench: for pixels);
    False: only the value's loss trains it."""
    actor_geom_sample: bool = False
    """The high actor's future goals at a geometric offset with the discount; False:
    uniformly ahead (OGBench's default)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        check_expectile(self.expectile)
        check_float("low_alpha", self.low_alpha, 0.0)
        check_float("high_alpha", self.high_alpha, 0.0)
        check_int("subgoal_steps", self.subgoal_steps, 1)
        check_int("rep_dim", self.rep_dim, 1)
        check_bool("low_actor_rep_grad", self.low_actor_rep_grad)
        check_bool("actor_geom_sample", self.actor_geom_sample)


def _subgoals(config: HIQLConfig) -> dict[str, Any]:
    """The buffer settings HIQL's settings decide: its subgoals ``subgoal_steps`` on and its
    high actor's future goals' law (``actor_geom_sample``)."""
    future = "geometric" if config.actor_geom_sample else "uniform"
    return {"subgoal_steps": config.subgoal_steps, "actor_future": future}


register(
    AgentEntry(
        "hiql",
        HIQLConfig,
        "herkit.agents.hiql:HIQLAgent",
        "offline hierarchical implicit Q-learning: a high actor proposes subgoals",
        offline=True,
        value_goals=HIQL_VALUE_GOALS,
        actor_goals=HIQL_ACTOR_GOALS,
        buffer=_subgoals,
        presets={  # OGBench's impls/hyperparameters.sh, the lines that give each value
            # hyperparameters.sh:38,90
            "pointmaze-giant-": {"gamma": 0.995},
            # hyperparameters.sh:64,77,90,103
            "pointmaze-*-stitch-": {"actor_goals": (0.0, 0.5, 0.5)},
            # hyperparameters.sh:142,194
            "antmaze-giant-": {"gamma": 0.995},
            # hyperparameters.sh:168,181,194,207
            "antmaze-*-stitch-": {"actor_goals": (0.0, 0.5, 0.5)},
            # hyperparameters.sh:220,233,246
            "antmaze-*-explore-": {
                "actor_goals": (0.0, 0.0, 1.0),
                "high_alpha": 10.0,
                "low_alpha": 10.0,
            },
            # hyperparameters.sh:259,272,285,298,311,324
            "humanoidmaze-": {"gamma": 0.995, "subgoal_steps": 100},
            # hyperparameters.sh:298,311,324
            "humanoidmaze-*-stitch-": {"actor_goals": (0.0, 0.5, 0.5)},
        },
    )
)


import math
from typing import ClassVar

import numpy as np
import torch
from torch import nn

from herkit.agents.base import TorchBatch, adam
from herkit.agents.loss_parts import ValueScale, in_one_pass
from herkit.agents.networks import ConstantStdActor, ValueEnsemble, fan_avg_init, mlp
from herkit.agents.offline import (
    AWR_MAX_WEIGHT,
    REWARD_RANGE,
    OfflineAgent,
    expectile_loss,
)


def length_normalize(x: torch.Tensor) -> torch.Tensor:
    """``x / |x| * sqrt(dim)`` along the last axis (OGBench's ``LengthNormalize``)."""
    return x / torch.linalg.vector_norm(x, dim=-1, keepdim=True) * math.sqrt(x.shape[-1])


class GoalRepresentation(nn.Module):
    """``phi([s; g])``: an MLP of ``s || g`` to ``rep_dim`` outputs, length-normalised
    (OGBench's ``goal_rep``: ``MLP((*value_hidden_dims, rep_dim), layer_norm)`` then
    ``LengthNormalize``; flax's numerics, fan-avg init)."""

    def __init__(
        self,
        in_dim: int,
        hidden: tuple[int, ...],
        rep_dim: int,
        layer_norm: bool = True,
        activation: str = "gelu",
    ) -> None:
        super().__init__()
        self.net = mlp(in_dim, hidden, rep_dim, layer_norm, activation, flax=True)  # type: ignore[arg-type]
        fan_avg_init(self.net)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The representations ``(B, rep_dim)``, each of length ``sqrt(rep_dim)``."""
        return length_normalize(self.net(x))


class HIQLAgent(OfflineAgent):
    """OGBench's HIQL (see the module): a goal representation, an IVL value over it, a low
    and a high AWR actor. ``|TD error|`` per sample: the larger ``|q_i - V_i(s, g)|``."""

    config: HIQLConfig
    goal_rep: GoalRepresentation
    value: ValueEnsemble
    value_target: ValueEnsemble
    low_actor: ConstantStdActor
    high_actor: ConstantStdActor
    METRICS: ClassVar[tuple[str, ...]] = (
        "value_loss",
        "v_mean",
        "v_min",
        "v_max",
        "actor_loss",
        "low_actor_loss",
        "low_adv",
        "low_bc_log_prob",
        "low_mse",
        "high_actor_loss",
        "high_adv",
        "high_bc_log_prob",
        "high_mse",
        "td_abs_mean",
    )
    TRAINED = ("goal_rep", "value", "low_actor", "high_actor")
    TARGETS = ("value",)

    def _build(self) -> None:
        config = self.config
        self.value_scale = ValueScale.of(REWARD_RANGE, config.gamma, ends_on_success=False)
        hidden, rep_dim = config.hidden, config.rep_dim
        low_in = self.observation_dim + rep_dim  # s || phi([s; w])
        unit = np.ones(rep_dim, np.float32)
        with self._seeded_init():
            self.goal_rep = GoalRepresentation(
                self.in_dim, hidden, rep_dim, config.critic_layer_norm, config.activation
            )
            self.value = ValueEnsemble(
                low_in, hidden, 2, config.critic_layer_norm, config.activation
            )
            self.low_actor = self._actor(low_in, self.action_low, self.action_high)
            self.high_actor = self._actor(self.in_dim, -unit, unit)
        nets = [getattr(self, name).to(self.device) for name in self.TRAINED]
        self.optimizer = adam([p for net in nets for p in net.parameters()], config.lr)
        """One Adam over every trained parameter (OGBench's)."""
        (self.value_target,) = self._targets(self.value)  # type: ignore[assignment]
        self.actor = self.low_actor  # the actor that acts (OfflineAgent's acting)

    def _actor(self, in_dim: int, low: np.ndarray, high: np.ndarray) -> ConstantStdActor:
        config = self.config
        return ConstantStdActor(
            in_dim,
            low,
            high,
            config.hidden,
            config.actor_layer_norm,
            config.activation,
            config.actor_init_scale,
        )

    def _networks(self) -> dict[str, nn.Module]:
        names = (*self.TRAINED, "value_target")
        return {name: getattr(self, name) for name in names}

    def _optimizers(self) -> dict[str, torch.optim.Optimizer]:
        return {"network": self.optimizer}

    def _value_networks(self) -> list[nn.Module]:
        return [self.value, self.value_target]

    # --- acting ---------------------------------------------------------------------------
    def _act(self, x: torch.Tensor, deterministic: bool) -> np.ndarray:
        """The high actor's representation (its mean, or a sample), length-normalised, then
        the low actor's action towards it (:meth:`OfflineAgent._act`)."""
        rep = self.high_actor(x)
        if not deterministic:
            noise = self.rng.standard_normal(tuple(rep.shape))
            rep = rep + self.high_actor.std * torch.as_tensor(noise, device=rep.device).to(rep)
        low_x = torch.cat([x[:, : self.observation_dim], length_normalize(rep.float())], dim=-1)
        return super()._act(low_x, deterministic)

    # --- the update -------------------------------------------------------------------------
    def _value_input(self, state_x: torch.Tensor, rep: torch.Tensor) -> torch.Tensor:
        """``s || rep``, the states those of ``state_x``: a value head's input."""
        return torch.cat([state_x[:, : self.observation_dim], rep], dim=-1)

    def _update(
        self, batch: TorchBatch, actor_step: bool, move_targets: bool
    ) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        if batch.low_x is None or batch.next_low_x is None:
            raise ValueError(
                "HIQL's batches carry subgoals: sample them from a buffer with subgoal_steps "
                "(and actor_goals)"
            )
        assert batch.target_x is not None and batch.target_goal_x is not None
        config = self.config
        actor_x, _ = self._actor_inputs(batch)
        # the representations without gradient, in one pass: s' || g, s' || w, s || g_h,
        # s_w || g_h, s || w_h (and s || w without low_actor_rep_grad)
        rep_grad = config.low_actor_rep_grad
        fixed = [batch.next_x, batch.next_low_x, actor_x, batch.target_x, batch.target_goal_x]
        trained = [batch.x, batch.low_x] if rep_grad else [batch.x]
        if not rep_grad:
            fixed.append(batch.low_x)
        with torch.no_grad():
            fixed_reps = self.goal_rep(torch.cat(fixed)).chunk(len(fixed))
        trained_reps = self.goal_rep(torch.cat(trained)).chunk(len(trained))
        rep_x = trained_reps[0]
        low_rep = trained_reps[1] if rep_grad else fixed_reps[5]
        next_rep, next_low_rep, high_rep, target_rep, subgoal_rep = fixed_reps[:5]

        # value (IVL): the target heads over the online representation
        with torch.no_grad():
            next_w, w = in_one_pass(
                self.value_target,
                self._value_input(batch.next_x, next_rep),
                self._value_input(batch.x, rep_x.detach()),
            )  # (2, B) each
            q = self._td_target(batch, next_w)
            adv = self._td_target(batch, next_w.min(dim=0).values) - w.mean(dim=0)
        v = self.value(self._value_input(batch.x, rep_x))  # (2, B)
        # mean over samples and heads, times the number of heads: the sum of the heads' losses
        value_loss = expectile_loss(adv, q - v, config.expectile, batch.weights) * len(v)
        metrics = {
            "value_loss": value_loss,
            "v_mean": v.detach().mean(),
            "v_min": v.detach().min(),
            "v_max": v.detach().max(),
        }
        loss = value_loss
        if actor_step:
            low_loss, high_loss = self._actor_losses(
                batch, actor_x, (low_rep, next_low_rep, high_rep, target_rep, subgoal_rep), metrics
            )
            loss = loss + low_loss + high_loss
            metrics["actor_loss"] = low_loss + high_loss
        if move_targets:  # towards the value before the step, as OGBench's
            self._update_targets()
        self._step(self.optimizer, loss)
        return metrics, (q - v.detach()).abs().max(dim=0).values

    def _actor_losses(
        self,
        batch: TorchBatch,
        actor_x: torch.Tensor,
        reps: tuple[torch.Tensor, ...],
        metrics: dict[str, torch.Tensor],
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The low and the high actor's AWR losses (see the module); their metrics are
        added to ``metrics``."""
        config = self.config
        low_rep, next_low_rep, high_rep, target_rep, subgoal_rep = reps
        assert batch.next_low_x is not None and batch.target_x is not None
        with torch.no_grad():  # the online value, no gradient
            next_low_v, low_v, target_v, high_v = (
                values.mean(dim=0)
                for values in in_one_pass(
                    self.value,
                    self._value_input(batch.next_low_x, next_low_rep),
                    self._value_input(batch.x, low_rep.detach()),
                    self._value_input(batch.target_x, target_rep),
                    self._value_input(batch.x, high_rep),
                )
            )
            low_adv, high_adv = next_low_v - low_v, target_v - high_v
            low_weight = (config.low_alpha * low_adv).exp().clamp(max=AWR_MAX_WEIGHT)
            high_weight = (config.high_alpha * high_adv).exp().clamp(max=AWR_MAX_WEIGHT)
        unit_action = self._unit_action(batch)
        obs = batch.x[:, : self.observation_dim]
        low_mean = self.low_actor(torch.cat([obs, low_rep], dim=-1))
        low_log_prob = self.low_actor.log_prob(low_mean, unit_action)
        low_loss = -(low_weight * low_log_prob).mean()
        high_mean = self.high_actor(actor_x)
        high_log_prob = self.high_actor.log_prob(high_mean, subgoal_rep)
        high_loss = -(high_weight * high_log_prob).mean()
        metrics |= {
            "low_actor_loss": low_loss,
            "low_adv": low_adv.mean(),
            "low_bc_log_prob": low_log_prob.detach().mean(),
            "low_mse": (low_mean.detach() - unit_action).square().mean(),
            "high_actor_loss": high_loss,
            "high_adv": high_adv.mean(),
            "high_bc_log_prob": high_log_prob.detach().mean(),
            "high_mse": (high_mean.detach() - subgoal_rep).square().mean(),
        }
        return low_loss, high_loss
