"""A run's settings made for an env as ``herkit train`` makes them (:func:`config_for`, the
layers of :mod:`herkit.config.resolve`); read back from a run directory by
:func:`herkit.rundir.settings.load_run_config`."""

from __future__ import annotations

from typing import Any

from herkit.config.resolve import FALLBACK_ALGOS, resolve
from herkit.config.train import TrainConfig

__all__ = ["FALLBACK_ALGOS", "config_for"]


def config_for(env_id: str, **changes: Any) -> TrainConfig:
    """The settings of a new run on ``env_id``, as ``herkit train ENV_ID --flags`` makes
    them (:func:`herkit.config.resolve.resolve`): the env's preset (its GPU preset with
    ``device="cuda"``; a ``recipe``'s settings over it, :mod:`herkit.config.recipes`), what
    the env decides (probed once: unless ``algo`` is given, the preset's algorithm if it
    fits the env's action space, else DQN for a discrete one and SAC for a continuous one,
    said on stderr; the reward range, success and ending it leaves open) and ``changes``
    over them, where env kwargs given are merged into the preset's (the preset's others
    stay). The agent's settings are ``agent`` where given, else the change named after the
    run's algorithm (``ddpg=DDPGConfig(...)``: one may be given for each algorithm, the
    run's counts), else the algorithm's for this env
    (:meth:`~herkit.config.resolve.LayerStack.agent`). With a ``dataset``, ``steps`` (env steps)
    is 0 unless given: the run trains on the dataset alone. ``train(config_for(ENV_ID,
    steps=...))`` from Python is that command's run."""
    recipe = changes.pop("recipe", None)
    return resolve(env_id, recipe, changes).config
