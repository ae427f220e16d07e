"""What a run is: its config on disk, its envs, its env's conventions, its agent and buffer.

Training (:mod:`herkit.training.loop`), evaluation (:mod:`herkit.training.evaluation`) and
loading a trained policy (:mod:`herkit.training.policy`) all rebuild a run from the same
pieces, so they live here, below all three: this module imports none of them.

- :func:`write_run_config` writes ``RUN/config.json`` (read by
  :func:`herkit.rundir.settings.load_run_config`).
- :func:`resolve_conventions`: a config completed by its env's probe and the env's
  conventions (:mod:`herkit.config.resolve`, :mod:`herkit.buffer.conventions`).
- :func:`make_vector_env` makes a run's envs (in worker processes or in this one, as
  :func:`plan_run_cores` decides).
- :func:`make_run_agent` and :func:`build` make its agent and replay buffer.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from herkit.agents import Agent, GoalAgent, make_agent
from herkit.buffer.conventions import GoalConventions
from herkit.buffer.datasets import RecordedEpisodes
from herkit.buffer.goal_env import compute_reward_of
from herkit.buffer.her import HerReplayBuffer
from herkit.buffer.settings import HerSettings
from herkit.config.probe import make_run_env
from herkit.config.resolve import resolve
from herkit.config.train import TrainConfig
from herkit.envs.imports import env_import_record
from herkit.envs.torch_rewards import torch_reward_of
from herkit.envs.workers import WorkerVectorEnv
from herkit.rundir.paths import RunPaths
from herkit.rundir.settings import saved_env_import
from herkit.runtime.cores import LARGE_UPDATE_WORK, CorePlan, plan_cores, update_work
from herkit.runtime.devices import resolved_device
from herkit.runtime.distributed import Context
from herkit.runtime.files import write_text
from herkit.runtime.precision import check_precision
from herkit.training.parts import RunSeeds

__all__ = [
    "buffer_placement",
    "build",
    "make_run_agent",
    "make_run_env",
    "make_vector_env",
    "plan_run_cores",
    "resolve_conventions",
    "saved_machine",
    "write_run_config",
]


def write_run_config(
    run_dir: Path,
    config: TrainConfig,
    conventions: GoalConventions,
    buffer: HerReplayBuffer,
    machine: dict[str, Any],
    provenance: dict[str, str] | None = None,
) -> None:
    """config.json: the config, the layer that set each of its settings that is not a
    default (``provenance``, :mod:`herkit.config.resolve`; None: as the file holds it), the
    env's conventions, what this rank's buffer found of the env's rewards (``env_terms``: how
    often and how much they differ from compute_reward, and how a relabelled goal counts as
    reached), ``machine``: how the run uses the cores, and why its precision was chosen,
    and ``env_import``: how to import the env from elsewhere (:mod:`herkit.envs.imports`; a
    resumed run that finds none keeps the first start's). Whether episodes end on success
    is the buffer's (it holds it: decided at the first success where it was unknown).
    Replaced atomically."""
    buffer.flush()
    if provenance is None:
        provenance = _saved(run_dir, "provenance")
    env_terms = {"success_rule": buffer.success_rule(), **buffer.audit.to_dict()}
    ending = buffer.ending
    env_import = env_import_record(config.env_id) or saved_env_import(run_dir)
    values = {
        **config.with_her(terminal_on_success=ending.ends).to_dict(),
        "provenance": provenance,
        "conventions": conventions.with_ending(ending).to_dict() | {"env_terms": env_terms},
        "machine": machine,
        **({"env_import": env_import} if env_import is not None else {}),
    }
    write_text(RunPaths(run_dir).config, json.dumps(values, indent=1))


def saved_machine(run_dir: Path) -> dict[str, Any]:
    """The ``machine`` record of a run's config.json (empty if it has none)."""
    return _saved(run_dir, "machine")


def _saved(run_dir: Path, name: str) -> dict[str, Any]:
    """The record ``name`` of a run's config.json (empty if it has none)."""
    try:
        saved = json.loads(RunPaths(run_dir).config.read_text()).get(name)
    except (OSError, ValueError):
        return {}
    return saved if isinstance(saved, dict) else {}


def resolve_conventions(config: TrainConfig) -> tuple[TrainConfig, GoalConventions]:
    """``config`` completed by its env's probe (:func:`herkit.config.resolve.resolve`): the
    settings it leaves to the env (None) filled, and the env's conventions.

    ``reward_range``, ``success_key`` and the HER setting ``terminal_on_success`` that are set
    (flags, or a resumed run's config.json) win over the probe (for the last, by the order
    of :mod:`herkit.buffer.ending`). See :mod:`herkit.buffer.conventions`. The info fields
    that the env says its ``compute_reward`` reads (``reward_info_keys``, e.g.
    ``--shaped-reward``'s) join ``info_keys``, so that relabelling has them.
    """
    resolution = resolve(config)
    assert resolution.conventions is not None
    return resolution.config, resolution.conventions


def make_vector_env(
    config: TrainConfig,
    n_envs: int,
    seed_offset: int,
    render_mode: str | None = None,
    workers: int | None = None,
    label: str = "env",
    checked: bool = False,
) -> WorkerVectorEnv:
    """``n_envs`` copies of the config's env, autoreset disabled (``render_mode``: for
    frames, e.g. ``"rgb_array"``); ``label`` names them in errors (``"evaluation env"``).

    ``workers`` processes step them, several envs each (:class:`WorkerVectorEnv`); with 0
    they step in this process, where they cost no pipes and no process switches (always
    with a ``render_mode``: frames are read from the env object). None:
    as :func:`plan_run_cores` chooses for ``n_envs`` envs. Unless ``checked`` (the env was
    made already: the run's probe), the env is first made here, so that a bad id or a
    non-goal env is reported as a ValueError, not from a worker. A failing env raises
    :class:`~herkit.envs.failures.EnvFailure`.
    """
    kwargs = {} if render_mode is None else {"render_mode": render_mode}
    if not checked:
        make_run_env(config, **kwargs).close()
    if render_mode is not None:
        workers = 0  # frames are read from the env object, so it lives here
    elif workers is None:
        given = None if config.env_workers is None else min(config.env_workers, n_envs)
        workers = plan_run_cores(config, n_envs, given).env_workers

    def make() -> gym.Env:
        return make_run_env(config, **kwargs)

    envs = WorkerVectorEnv(
        [make] * n_envs, min(workers, n_envs), label=label, timeout_s=config.env_timeout_s
    )
    envs.action_space.seed(config.seed + seed_offset)
    return envs


def plan_run_cores(config: TrainConfig, n_envs: int, env_workers: int | None) -> CorePlan:
    """The core plan of a process of this run with ``n_envs`` envs (torchrun's local
    ranks share the machine's cores)."""
    gpu = False
    with contextlib.suppress(ValueError):  # False where the run's device is not available
        gpu = resolved_device(config.device) != "cpu"
    agent = config.agent_config()
    return plan_cores(
        n_envs,
        config.torch_threads,
        env_workers,
        gpu=gpu,
        local_ranks=int(os.environ.get("LOCAL_WORLD_SIZE", "1")),
        alone=config.dataset is not None,
        large_update=update_work(agent.hidden, agent.batch_size) >= LARGE_UPDATE_WORK,
    )


def make_run_agent(
    config: TrainConfig,
    observation_space: gym.spaces.Space,
    action_space: gym.spaces.Space,
    device: str | torch.device,
) -> GoalAgent:
    """A fresh agent of a run's (resolved) ``config`` for these single-env spaces (in fp32
    while ``config.precision`` is still ``auto``: the run's start then decides it by fixed
    rules from the machine and the command, never by a timing,
    :func:`herkit.training.update_plan.choose_update`)."""
    spaces: Any = observation_space
    check_precision(config.precision, torch.device(device))
    return make_agent(
        config.algo,
        config.agent_config(),
        observation_dim=int(np.prod(spaces["observation"].shape)),
        goal_dim=int(np.prod(spaces["desired_goal"].shape)),
        action_space=action_space,
        reward_range=config.reward_range,
        device=device,
        seed=config.seed,
        terminal_on_success=config.her.terminal_on_success,
        precision="fp32" if config.precision == "auto" else config.precision,
    )


def build(
    config: TrainConfig,
    envs: gym.vector.VectorEnv,
    context: Context | None = None,
    conventions: GoalConventions | None = None,
    recorded: RecordedEpisodes | None = None,
) -> tuple[Agent, HerReplayBuffer]:
    """The agent and the buffer that fit ``envs``, the buffer holding ``recorded`` (the
    run's dataset, :func:`~herkit.buffer.datasets.read_for_env`) where given, with room for
    ``buffer_size`` env steps after it where the run has env steps.

    ``config`` is resolved (:func:`resolve_conventions`, which found ``conventions``): its
    ``reward_range`` bounds the agent's Q targets (None: not clipped) and its HER settings
    go to the buffer (``terminal_on_success`` None: not known yet, decided by the buffer at
    the run's first success). In a distributed run the agent joins ``context`` (rank 0's
    parameters, averaged gradients) and each rank's buffer and exploration get a seed of
    their own.
    """
    context = context or Context()
    device = context.device(resolved_device(config.device))
    agent = make_run_agent(config, envs.single_observation_space, envs.single_action_space, device)
    if context.active:
        agent.join(context, exploration_seed=RunSeeds(config.seed, context.rank).learner)
    # the conventions, resolved with the config, say whether episodes end on success (None:
    # the first success added decides), and where that came from
    settings = HerSettings.of(config.her_settings(), {"terminal_on_success": None})
    seed = RunSeeds(config.seed, context.rank).learner
    placement = buffer_placement(config.buffer_device, device, envs)
    if recorded is not None:
        room = config.buffer_size if config.steps else 0
        buffer = HerReplayBuffer.from_dataset(
            recorded,
            compute_reward_of(envs),
            room=room,
            n_envs=config.n_envs,
            settings=settings,
            seed=seed,
            **placement,
        )
        buffer.conventions = conventions
        if conventions is not None and conventions.terminal_on_success is not None:
            buffer.set_ending(conventions.ending)
        return agent, buffer
    buffer = HerReplayBuffer.from_env(
        envs,
        capacity=config.buffer_size,
        conventions=conventions,
        probe=False,
        extra_keys={},  # herkit's agents read observation and goals only
        settings=settings,
        seed=seed,
        **placement,
    )
    return agent, buffer


def buffer_placement(choice: str, device: Any, envs: Any) -> dict[str, Any]:
    """``device`` and ``torch_reward_fn`` of the buffer for ``--buffer-device choice``
    (see :attr:`TrainConfig.buffer_device`) when training on ``device``."""
    gpu = torch.device(device).type == "cuda"
    torch_reward = torch_reward_of(envs) if choice == "device" or gpu else None
    if choice == "device" or (choice == "auto" and gpu and torch_reward is not None):
        return {"device": device, "torch_reward_fn": torch_reward}
    return {"device": None, "torch_reward_fn": None}
