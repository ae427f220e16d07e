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
from herkit.config.agents import (
    DDPGConfig,
    DQNConfig,
    OffPolicyConfig,
    config_class,
    default_agent_config,
)

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

_BOX_AGENTS: dict[str, type[GoalAgent]] = {
    "ddpg": DDPGAgent,
    "td3": DDPGAgent,
    "sac": SACAgent,
    "gcbc": GCBCAgent,
    "gcivl": GCIVLAgent,
    "gciql": GCIQLAgent,
}
"""The agent class of each algorithm for a Box action space."""


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
    """Build the ``algo`` agent ("dqn", "ddpg", "td3", "sac", or the offline "gcbc", "gcivl"
    or "gciql") for these sizes.

    ``config`` must be the algorithm's config class (``DDPGConfig`` for ddpg and td3, with
    ``twin_q=True`` for td3, e.g. ``DDPGConfig.td3()``); None takes its defaults
    (:func:`~herkit.config.agents.default_agent_config`).
    ``reward_range`` bounds the per-step reward, for clipping Q targets to the return range
    (None: not clipped, for rewards without known bounds); with ``terminal_on_success``
    (whether the env ends episodes on success) it sets the reward scale
    (:class:`herkit.agents.updates.ValueScale`). ``precision`` is ``"fp32"`` or ``"bf16"``
    (forward passes under a bfloat16 autocast; :mod:`herkit.runtime.precision`).
    "dqn" needs a ``Discrete`` action space, the others a 1-D ``Box`` with finite bounds;
    anything else raises ``ValueError``. The offline agents take their rewards as
    ``success - 1`` whatever ``reward_range`` and ``terminal_on_success`` say
    (:mod:`herkit.agents.offline`), and update in every mode the online ones do (eager,
    compiled, captured: :mod:`herkit.agents.updates`).
    """
    expected = config_class(algo)
    if config is None:
        config = default_agent_config(algo)
    if not isinstance(config, expected):
        raise ValueError(f"algo={algo!r} needs a {expected.__name__}, got {type(config).__name__}")
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
    if algo == "dqn":
        if not isinstance(action_space, gymnasium.spaces.Discrete):
            raise ValueError(
                f"algo='dqn' needs a Discrete action space, got {action_space!r}; "
                "use 'ddpg', 'td3', 'sac', 'gcbc', 'gcivl' or 'gciql' for a Box"
            )
        assert isinstance(config, DQNConfig)
        return DQNAgent(
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
        hint = (
            "; use 'dqn' for a Discrete"
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
    if isinstance(config, DDPGConfig) and algo == "td3" and not config.twin_q:
        raise ValueError("algo='td3' needs a DDPGConfig with twin_q=True, e.g. DDPGConfig.td3()")
    agent: Any = _BOX_AGENTS[algo]  # config is of algo's class (make_agent checked it)
    return agent(
        config, observation_dim, goal_dim, low, high, reward_range, device=device, seed=seed
    )
