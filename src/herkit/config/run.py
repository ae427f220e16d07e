"""A run's settings made for an env as ``herkit train`` makes them (:func:`config_for`); read
back from a run directory by :func:`herkit.rundir.settings.load_run_config`."""

from __future__ import annotations

import contextlib
import dataclasses
import sys
from typing import Any

from herkit.config.registry import agent_entry, algo_names
from herkit.config.train import TrainConfig, agent_preset, preset_config

__all__ = ["config_for"]

FALLBACK_ALGOS = {True: "dqn", False: "sac"}
"""The agent a run takes where the preset's does not fit the env's action space (and no
``algo`` is given): by whether the space is discrete."""


def config_for(env_id: str, **changes: Any) -> TrainConfig:
    """The settings of a new run on ``env_id``, as ``herkit train ENV_ID --flags`` makes
    them: the env's preset (its GPU preset with ``device="cuda"``; a ``recipe``'s settings
    over it, :mod:`herkit.config.recipes`) with ``changes``, where
    env kwargs given are merged into the preset's (the preset's others stay), and, unless
    ``algo`` is given, the preset's algorithm if it fits the env's action space, else DQN
    for a discrete one and SAC for a continuous one (said on stderr). The agent's settings
    are ``agent`` where given, else the change named after the run's algorithm
    (``ddpg=DDPGConfig(...)``: one may be given for each algorithm, the run's counts), else
    the algorithm's for this env (:func:`~herkit.config.train.agent_preset`). With a
    ``dataset``, ``steps`` (env steps) is 0 unless given: the run trains on the dataset
    alone. ``train(config_for(ENV_ID, steps=...))`` from Python is that command's run."""
    device, recipe = changes.get("device", "cpu"), changes.get("recipe")
    blocks = {name: changes.pop(name) for name in algo_names() if name in changes}
    preset = preset_config(env_id, device, recipe, algo=changes.get("algo"))
    if changes.get("dataset") is not None and "steps" not in changes:
        changes["steps"] = 0
    if changes.get("env_kwargs") is not None and preset.env_kwargs:
        given = dataclasses.replace(preset, env_kwargs=tuple(changes["env_kwargs"]))
        mine = given.env_kwargs_dict()
        kept = tuple(item for item in preset.env_kwargs if item.split("=")[0] not in mine)
        changes["env_kwargs"] = kept + given.env_kwargs
    algo = changes.get("algo", preset.algo)
    if "algo" not in changes:
        import gymnasium

        from herkit.envs import make_goal_env

        kwargs = dataclasses.replace(preset, **changes).env_kwargs_dict()
        with contextlib.closing(make_goal_env(env_id, **kwargs)) as env:
            discrete = isinstance(env.action_space, gymnasium.spaces.Discrete)
        if discrete != agent_entry(algo).discrete:
            algo = FALLBACK_ALGOS[discrete]
            kind = "discrete" if discrete else "continuous"
            print(
                f"herkit: {env_id} has a {kind} action space: training with --algo {algo} "
                "(give --algo to choose another)",
                file=sys.stderr,
            )
    if "agent" not in changes:
        chosen = blocks.get(algo)
        changes["agent"] = agent_preset(env_id, algo, device, recipe) if chosen is None else chosen
    return dataclasses.replace(preset, **(changes | {"algo": algo}))
