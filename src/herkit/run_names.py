"""Default run directory names, and which settings change what a run learns.

:func:`default_run_name` spells out a run's env, algorithm, strategy and seed, and the
learning settings that differ from its env's preset; :func:`learning_differences` says
which settings differ between two config dicts, leaving out :data:`BOOKKEEPING` and the
other algorithms' blocks (:data:`AGENT_BLOCKS`). The same rule serves run names, the hint
for a used run directory (:mod:`herkit.run_dir`) and the grouping of runs in plots.
Every public name here is also importable from :mod:`herkit.config`, which imports this
module, so this one imports neither it nor :mod:`herkit.presets` at module level.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from herkit.config import TrainConfig

__all__ = ["AGENT_BLOCKS", "BOOKKEEPING", "default_run_name", "learning_differences"]

BOOKKEEPING = (
    "out", "resume", "overwrite", "steps", "target_success", "eval_every", "eval_episodes",
    "n_eval_envs", "checkpoint_every", "video_every", "log_updates_every", "device",
    "torch_threads", "env_workers", "dist_timeout_s", "env_restarts", "env_timeout_s",
    "tensorboard", "progress",
)  # fmt: skip
"""TrainConfig fields that do not change what a run learns: where and how it is written and
shown, its budget and stopping rule (a longer run continues the same learning), the
evaluation, checkpoint, video and update-log cadence (evaluation uses its own envs), device
and threads."""

AGENT_BLOCKS = ("dqn", "ddpg", "td3", "sac")
"""TrainConfig fields holding one algorithm's settings; only the run's own ``algo`` counts."""


def learning_differences(mine: Mapping[str, Any], theirs: Mapping[str, Any]) -> list[str]:
    """The learning settings of the config dict ``mine`` (:meth:`TrainConfig.to_dict`) that
    differ from those of ``theirs`` (another such dict, or a run's config.json), as names
    (``k``, ``dqn.lr`` for the settings of ``mine``'s algorithm). Left out: the settings in
    :data:`BOOKKEEPING`, the other algorithms' blocks, and settings ``mine`` leaves to the
    env or the machine (None, ``auto``)."""
    mine, theirs = json.loads(json.dumps(mine)), json.loads(json.dumps(theirs))  # tuples: lists
    algo = mine["algo"]
    differ = [
        name
        for name, value in mine.items()
        if name not in (*BOOKKEEPING, *AGENT_BLOCKS)
        and value not in (None, "auto")
        and theirs.get(name) != value
    ]
    block = theirs.get(algo) or {}
    differ += [f"{algo}.{key}" for key, value in mine[algo].items() if block.get(key) != value]
    return differ


_NAMED = ("env_id", "env_kwargs", "algo", "strategy", "goal_mix", "seed")
"""The fields a default run name spells out in its fixed parts."""


def default_run_name(config: TrainConfig, preset: TrainConfig) -> str:
    """``ENV[-KWARGS]-ALGO-STRATEGY-sSEED[-CHANGES]``: the env kwargs and the learning
    settings that differ from the env's preset are part of the name (spelled out when short,
    else a hash of them), so that two runs that learn differently never share a default
    directory; settings in :data:`BOOKKEEPING` are left out. ``preset`` is the config of
    ``config``'s env with nothing changed (:func:`herkit.config.preset_config`)."""
    preset_kwargs = preset.env_kwargs_dict()
    kwargs = {
        key: value
        for key, value in config.env_kwargs_dict().items()
        if key not in preset_kwargs or preset_kwargs[key] != value
    }
    mine = config.to_dict()

    def value(name: str) -> Any:
        block, _, key = name.rpartition(".")
        return mine[block][key] if block else mine[name]

    changes = [
        f"{name}={value(name)}"
        for name in learning_differences(mine, preset.to_dict())
        if name not in _NAMED
    ]
    parts = [config.env_id.split(":")[-1].replace("/", "-")]
    if kwargs:
        parts.append(_short(",".join(f"{key}={value}" for key, value in sorted(kwargs.items()))))
    parts += [config.algo, config.her_name().replace(":", "-"), f"s{config.seed}"]
    if changes:
        parts.append(_short(",".join(sorted(changes))))
    return "-".join(parts)


def _short(text: str, limit: int = 40) -> str:
    """``text`` made safe for a file name, or a hash of it when longer than ``limit``."""
    safe = "".join(c if c.isalnum() or c in "._=,+" else "_" for c in text.replace(" ", ""))
    if len(safe) <= limit:
        return safe
    return "h" + hashlib.sha1(text.encode()).hexdigest()[:8]
