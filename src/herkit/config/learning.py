"""Which settings change what a run learns, and which a resume may change.

:func:`learning_differences` says which settings differ between two config dicts,
leaving out :data:`BOOKKEEPING` and the other algorithms' blocks. The same rule serves
default run names (:func:`herkit.config.resolve.run_directory`), the hint for a used run
directory (:mod:`herkit.rundir.directory`) and the grouping of runs in plots
(:mod:`herkit.presentation.groups`); :data:`RESUME_MAY_CHANGE` is what ``herkit train --resume``
accepts.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from herkit.buffer.settings import HerSettings
from herkit.config.her import OFFLINE_LEFT_OUT
from herkit.agents.registry import algo_names

__all__ = ["BOOKKEEPING", "RESUME_MAY_CHANGE", "flat_settings", "learning_differences"]

RESUME_MAY_CHANGE = (
    "steps",
    "eval_every",
    "eval_episodes",
    "checkpoint_every",
    "video_every",
    "target_success",
    "target_evaluations",
    "log_updates_every",
    "device",
    "update_mode",
    "torch_threads",
    "env_workers",
    "dist_timeout_s",
    "env_restarts",
    "env_timeout_s",
    "tensorboard",
    "progress",
    "offline_steps",
)
"""Settings that ``herkit train --resume RUN`` accepts as flags (e.g. a larger ``--steps``
to extend a finished run); the rest would not fit the checkpointed agent or buffer."""

BOOKKEEPING = ("out", "resume", "overwrite", "n_eval_envs", *RESUME_MAY_CHANGE)
"""TrainConfig fields that do not change what a run learns: where and how it is written and
shown, its budget and stopping rule (a longer run continues the same learning), the
evaluation, checkpoint, video and update-log cadence (evaluation uses its own envs), device
and threads."""


def flat_settings(values: Mapping[str, Any]) -> dict[str, Any]:
    """A config dict (:meth:`TrainConfig.to_dict`, or an older run's config.json with the HER
    settings at the top) as JSON values with its HER settings at the top, by their names,
    those it lacks at their defaults; an offline agent's without those its records leave
    out (:data:`~herkit.config.her.OFFLINE_LEFT_OUT`)."""
    flat = json.loads(json.dumps(dict(values)))  # tuples: lists
    her = HerSettings().to_dict() | flat.pop("her", {})
    if flat.get("algo") in algo_names(offline=True):  # HER's relabelling is none of its own
        her = {name: value for name, value in her.items() if name not in OFFLINE_LEFT_OUT}
    return {name: flat.get(name, value) for name, value in her.items()} | flat


def learning_differences(mine: Mapping[str, Any], theirs: Mapping[str, Any]) -> list[str]:
    """The learning settings of the config dict ``mine`` (:meth:`TrainConfig.to_dict`) that
    differ from those of ``theirs`` (another such dict, or a run's config.json), as names
    (``k``, ``dqn.lr`` for the settings of ``mine``'s algorithm). Left out: the settings in
    :data:`BOOKKEEPING`, the other algorithms' blocks (a config.json written before one
    agent slot has one per algorithm), the agent's settings where ``theirs`` is of another
    agent (``algo`` differs), and settings ``mine`` leaves to the env or the machine (None,
    ``auto``)."""
    mine, theirs = flat_settings(mine), flat_settings(theirs)
    algo = mine["algo"]
    blocks = {algo, *algo_names()}
    differ = [
        name
        for name, value in mine.items()
        if name not in (*BOOKKEEPING, *blocks)
        and value not in (None, "auto")
        and theirs.get(name) != value
    ]
    if algo not in theirs and theirs.get("algo") != algo:
        return differ  # another agent, whose settings are not comparable: ``algo`` says it
    block = theirs.get(algo) or {}
    differ += [f"{algo}.{key}" for key, value in mine[algo].items() if block.get(key) != value]
    return differ
