"""A run's settings made for an env as ``herkit train`` makes them (:func:`config_for`); read
back from a run directory by :func:`herkit.rundir.settings.load_run_config`."""

from __future__ import annotations

import contextlib
import dataclasses
import sys
from typing import Any

from herkit.config.agents import Algo
from herkit.config.train import TrainConfig, preset_config

__all__ = ["config_for"]


def config_for(env_id: str, **changes: Any) -> TrainConfig:
    """The settings of a new run on ``env_id``, as ``herkit train ENV_ID --flags`` makes
    them: the env's preset (its GPU preset with ``device="cuda"``; a ``recipe``'s settings
    over it, :mod:`herkit.config.recipes`) with ``changes``, where
    env kwargs given are merged into the preset's (the preset's others stay), and, unless
    ``algo`` is given, the preset's algorithm if it fits the env's action space, else DQN
    for a discrete one and SAC for a continuous one (said on stderr). With a ``dataset``,
    ``steps`` (env steps) is 0 unless given: the run trains on the dataset alone.
    ``train(config_for(ENV_ID, steps=...))`` from Python is that command's run."""
    preset = preset_config(env_id, changes.get("device", "cpu"), changes.get("recipe"))
    if changes.get("dataset") is not None and "steps" not in changes:
        changes["steps"] = 0
    if changes.get("env_kwargs") is not None and preset.env_kwargs:
        given = dataclasses.replace(preset, env_kwargs=tuple(changes["env_kwargs"]))
        mine = given.env_kwargs_dict()
        kept = tuple(item for item in preset.env_kwargs if item.split("=")[0] not in mine)
        changes["env_kwargs"] = kept + given.env_kwargs
    config = dataclasses.replace(preset, **changes)
    if "algo" in changes:
        return config
    import gymnasium

    from herkit.envs import make_goal_env

    with contextlib.closing(make_goal_env(config.env_id, **config.env_kwargs_dict())) as env:
        space = env.action_space
    discrete = isinstance(space, gymnasium.spaces.Discrete)
    if discrete == (config.algo == "dqn"):
        return config
    algo: Algo = "dqn" if discrete else "sac"
    kind = "discrete" if discrete else "continuous"
    print(
        f"herkit: {config.env_id} has a {kind} action space: training with --algo {algo} "
        "(give --algo to choose another)",
        file=sys.stderr,
    )
    return dataclasses.replace(config, algo=algo)
