"""GC-TD3+BC (:mod:`herkit.agents.gctd3bc`) against a computation by hand of its losses, from
the same networks and the same noise: twin critics' TD error with target policy smoothing,
the actor's ``-alpha / mean|Q_1| * mean Q_1 + mean (pi - a) ** 2``; a bug planted in the
agent is caught, and the actor and its targets step every ``policy_delay``-th update."""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch
from test_offline_agents import agent_for, host, offline_batch

from herkit.agents import gctd3bc


def by_hand(agent: Any, batch: Any) -> dict[str, float]:
    """The losses of the agent's next update, computed here from its networks."""
    config, x = agent.config, agent.inputs.prepare(batch, 1.0)
    noise_generator = torch.Generator().manual_seed(0)
    noise_generator.set_state(agent.generator.get_state())
    with torch.no_grad():
        action = agent.actor.unscale(torch.as_tensor(batch.action))
        next_action = agent.actor_target(x.next_x)
        noise = torch.randn(next_action.shape, generator=noise_generator) * config.target_noise
        noise = noise.clamp(-config.target_noise_clip, config.target_noise_clip)
        next_action = (next_action + noise).clamp(-1.0, 1.0)
        next_q = agent.critic_target(x.next_x, next_action)
        target = x.reward + config.gamma * x.not_done * torch.minimum(next_q[0], next_q[1])
        q = agent.critic(x.x, action)
        critic_loss = ((q[0] - target) ** 2).mean() + ((q[1] - target) ** 2).mean()
        pi = agent.actor(x.actor_x)
        q1 = agent.critic(x.actor_x, pi)[0]
        q_loss = -config.alpha / (q1.abs().mean() + 1e-6) * q1.mean()
        bc_loss = ((pi - action) ** 2).mean()
    return {
        "critic_loss": float(critic_loss),
        "q_loss": float(q_loss),
        "bc_loss": float(bc_loss),
        "actor_loss": float(q_loss + bc_loss),
    }


def gaps(agent: Any) -> dict[str, float]:
    """How far the agent's first update's losses are from the hand computation's."""
    batch = offline_batch()
    expected = by_hand(agent, batch)
    found = host(agent.update(batch))
    return {name: abs(found[name] - value) for name, value in expected.items()}


def test_its_losses_are_the_hand_computed_ones() -> None:
    agent = agent_for("gctd3bc", policy_delay=1)
    assert max(gaps(agent).values()) < 1e-5


def test_a_bug_planted_in_it_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Its Q term not normalised by mean |Q|, or taken of Q_2: the hand computation differs."""
    monkeypatch.setattr(gctd3bc, "scale_free_q_loss", lambda q: -q.mean())
    assert gaps(agent_for("gctd3bc"))["q_loss"] > 1e-4  # 10x the tolerance of a match
    monkeypatch.undo()
    real = gctd3bc.call_frozen
    monkeypatch.setattr(gctd3bc, "call_frozen", lambda *args: real(*args).flip(0))
    assert gaps(agent_for("gctd3bc"))["q_loss"] > 1e-4


def test_its_actor_steps_every_policy_delay_th_update_and_its_targets_with_it() -> None:
    agent = agent_for("gctd3bc")
    assert agent.policy_delay == 2 and agent.ACTOR == "deterministic"
    steps = []
    for update in range(4):
        actor = [p.detach().clone() for p in agent.actor.parameters()]
        metrics = agent.update(offline_batch(update))
        after = agent.actor.parameters()
        moved = any(not torch.equal(a, p) for a, p in zip(actor, after, strict=True))
        steps.append(("actor_loss" in metrics, moved))
    assert steps == [(True, True), (False, False), (True, True), (False, False)]
    assert math.isclose(agent.exploration_std, agent.config.exploration_noise)
