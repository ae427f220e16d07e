"""Goal-conditioned off-policy agents: DQN, DDPG, TD3 and SAC on ``observation || goal``,
and the offline agents GCBC, GCIVL and GCIQL (:mod:`herkit.agents.offline`).

Agents consume a :class:`herkit.Batch` (HER relabelling is the sampler's job) and never see
the buffer. :func:`make_agent` builds one from an algorithm name, its config and the
environment's sizes::

    agent = make_agent("td3", DDPGConfig.td3(), obs_dim, goal_dim, env.action_space, (-1, 0))
    action = agent.act(obs, goal, deterministic=False)
    agent.update_normalizer(obs, goal)
    metrics = agent.update(buffer.sample(256))
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
import torch

from herkit.agents.base import Agent, GoalAgent
from herkit.agents.ddpg_td3 import DDPGAgent
from herkit.agents.dqn import DQNAgent
from herkit.agents.normalizer import Normalizer
from herkit.agents.offline import GCBCAgent, GCIQLAgent, GCIVLAgent, OfflineAgent
from herkit.agents.sac import SACAgent
from herkit.agents.settings import OffPolicyConfig
from herkit.agents.registry import agent_entry, algo_names

# Agents whose registry entry is written in their own module (beside the class, importing
# torch) are registered by importing it here: one line per such agent.

__all__ = [
    "Agent",
    "DDPGAgent",
    "DQNAgent",
    "GCBCAgent",
    "GCIQLAgent",
    "GCIVLAgent",
    "GoalAgent",
    "Normalizer",
    "OfflineAgent",
    "SACAgent",
    "make_agent",
]


def make_agent(
    algo: str,
    config: OffPolicyConfig | None,
    observation_dim: int,
    goal_dim: int,
    action_space: gymnasium.spaces.Space,
    reward_range: tuple[float, float] | None,
    device: str | torch.device = "cpu",
    seed: int | None = None,
    terminal_on_success: bool | None = None,
    precision: str = "fp32",
) -> GoalAgent:
    """Build the ``algo`` agent (a name of the registry, :mod:`herkit.agents.registry`:
    "dqn", "ddpg", "td3", "sac", or the offline "gcbc", "gcivl" or "gciql", ...) for these
    sizes.

    ``config`` must be the algorithm's config class (``DDPGConfig`` for ddpg and td3, with
    ``twin_q=True`` for td3, e.g. ``DDPGConfig.td3()``); None takes its defaults
    (:meth:`~herkit.agents.registry.AgentEntry.default_config`).
    ``reward_range`` bounds the per-step reward, for clipping Q targets to the return range
    (None: not clipped, for rewards without known bounds); with ``terminal_on_success``
    (whether the env ends episodes on success) it sets the reward scale
    (:class:`herkit.agents.loss_parts.ValueScale`). ``precision`` is ``"fp32"`` or ``"bf16"``
    (forward passes under a bfloat16 autocast; :mod:`herkit.runtime.precision`).
    "dqn" (an entry with ``discrete``) needs a ``Discrete`` action space, the others a 1-D
    ``Box`` with finite bounds;
    anything else raises ``ValueError``. The offline agents take their rewards as
    ``success - 1`` whatever ``reward_range`` and ``terminal_on_success`` say
    (:mod:`herkit.agents.offline`), and update in every mode the online ones do (eager,
    compiled, captured: :mod:`herkit.agents.updates`).
    """
    entry = agent_entry(algo)
    config = entry.checked(entry.default_config() if config is None else config)
    for name, dim in (("observation_dim", observation_dim), ("goal_dim", goal_dim)):
        if isinstance(dim, bool) or not isinstance(dim, int | np.integer) or dim < 1:
            raise ValueError(f"{name} must be a positive int, got {dim!r}")
    agent = _build(
        algo, config, int(observation_dim), int(goal_dim), action_space, reward_range, device, seed
    )
    agent.set_terminal_on_success(terminal_on_success)
    agent.set_precision(precision)
    return agent


def _build(
    algo: str,
    config: OffPolicyConfig,
    observation_dim: int,
    goal_dim: int,
    action_space: gymnasium.spaces.Space,
    reward_range: tuple[float, float] | None,
    device: str | torch.device,
    seed: int | None,
) -> GoalAgent:
    entry = agent_entry(algo)
    agent: Any = entry.agent_class()  # config is of algo's class (make_agent checked it)
    if entry.discrete:
        if not isinstance(action_space, gymnasium.spaces.Discrete):
            box = ", ".join(repr(name) for name in algo_names() if not agent_entry(name).discrete)
            raise ValueError(
                f"algo={algo!r} needs a Discrete action space, got {action_space!r}; "
                f"use {box} for a Box"
            )
        return agent(
            config,
            observation_dim,
            goal_dim,
            n_actions=int(action_space.n),
            reward_range=reward_range,
            action_start=int(action_space.start),
            device=device,
            seed=seed,
        )

    if not isinstance(action_space, gymnasium.spaces.Box):
        discrete = ", ".join(repr(name) for name in algo_names() if agent_entry(name).discrete)
        hint = (
            f"; use {discrete} for a Discrete"
            if isinstance(action_space, gymnasium.spaces.Discrete)
            else ""
        )
        raise ValueError(f"algo={algo!r} needs a Box action space, got {action_space!r}{hint}")
    low, high = action_space.low, action_space.high
    if len(action_space.shape) != 1 or not (np.all(np.isfinite(low)) and np.all(np.isfinite(high))):
        raise ValueError(
            f"algo={algo!r} needs a 1-D Box action space with finite bounds, got {action_space!r}"
        )
    if not np.all(high > low):
        raise ValueError(f"algo={algo!r} needs high > low in every dimension, got {action_space!r}")
    return agent(
        config, observation_dim, goal_dim, low, high, reward_range, device=device, seed=seed
    )
