"""Saving a buffer to one ``.npz`` file and loading it back (no pickle).

The file holds the storage's arrays (``data.<column>`` for the rows written, and the
episodes that hold them, :meth:`EpisodeStorage.state
<herkit.buffer.storage.EpisodeStorage.state>`: a file is sized to what the buffer holds,
not to its capacity),
the priorities of a prioritized buffer, and one JSON string ``meta``: the file's format,
the constructor arguments that rebuild the buffer (``config``), the storage's counters, the
largest priority, the random generator's state and the reward audit. Loading rebuilds the
buffer from ``config`` and restores everything else, so that episode bookkeeping, priorities
and the next random draws round-trip exactly. The reward functions and the device are not
stored: they are given to ``load``.

A buffer that holds a recorded dataset (:meth:`HerReplayBuffer.from_dataset
<herkit.buffer.her.HerReplayBuffer.from_dataset>`) keeps only what its transitions were
given (rewards, successes, stored goals) and its source file's path, size and SHA-256:
loading reads the file again and refuses another one. A dataset given as arrays, not as a
file, is written whole (its states once).

Format 1 (written before the env's rewards were kept, :mod:`herkit.buffer.env_terms`) is
still read: its steps get the rewards of ``reward_fn``, as that format's sampling computed
them (:func:`env_terms_of_format_1`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, TypeVar

import numpy as np

from herkit.buffer.backend import NUMPY
from herkit.buffer.datasets import DatasetSource, RecordedEpisodes, read_dataset, unprefixed
from herkit.buffer.env_terms import GoalRewards, RewardAudit, host_rewards
from herkit.buffer.goal_env import RewardFn
from herkit.buffer.sampler import TransitionSampler
from herkit.buffer.settings import HerSettings
from herkit.buffer.storage import EpisodeStorage

__all__ = ["FORMAT_VERSION", "Persisted", "env_terms_of_format_1", "load_buffer", "save_buffer"]

FORMAT_VERSION = 3
"""The format that :func:`save_buffer` writes; :func:`load_buffer` reads it and formats 1
and 2 (which held the whole episode table)."""


class Persisted(Protocol):
    """What saving and loading read and write of a buffer
    (:class:`herkit.buffer.her.HerReplayBuffer` is one)."""

    storage: EpisodeStorage
    sampler: TransitionSampler
    settings: HerSettings
    rng: np.random.Generator
    audit: RewardAudit

    @property
    def reward_fn(self) -> RewardFn:
        """The buffer's vectorised reward function."""
        ...

    def flush(self) -> None:
        """Score the steps added since the last sample (before they are written)."""
        ...

    def reached_threshold(self) -> float | None:
        """The ``reward_fn`` value from which a goal counts as reached, if any."""
        ...

    def _config(self) -> dict[str, Any]:
        """The constructor's keyword arguments (but the reward functions and the device)."""
        ...


_BufferT = TypeVar("_BufferT", bound=Persisted)


def save_buffer(buffer: Persisted, path: str | os.PathLike[str]) -> None:
    """Write ``buffer`` to the ``.npz`` file ``path``, atomically (a temporary file beside
    it, then a rename; removed if the write fails)."""
    buffer.flush()
    storage = buffer.storage
    arrays, counters = storage.state()
    tree = buffer.sampler.tree
    if tree is not None:  # the leaves of the rows written (the rest are 0)
        copies = tree.capacity // storage.slots
        arrays["priorities"] = np.asarray(tree.leaves)[: len(arrays["episode_of"]) * copies]
        if storage.recorded is not None:
            arrays["priorities.recorded"] = np.asarray(tree.leaves)[storage.capacity * copies :]
    recorded = storage.recorded
    meta = {
        "format": FORMAT_VERSION,
        "recorded": None
        if recorded is None
        else {
            "source": None if recorded.source is None else recorded.source.to_dict(),
            "goal_size": recorded.goal_size,
        },
        "config": buffer._config(),
        "counters": counters,
        "max_priority": buffer.sampler.max_priority,
        "rng": buffer.rng.bit_generator.state,
        "audit": buffer.audit.to_dict(),
    }
    arrays["meta"] = np.array(json.dumps(meta))
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    try:
        with open(tmp, "wb") as file:
            np.savez(file, **arrays)  # type: ignore[arg-type]
        os.replace(tmp, path)
    except BaseException:  # a full disk: no half-written file stays
        tmp.unlink(missing_ok=True)
        raise


def load_buffer(
    path: str | os.PathLike[str], build: Callable[..., _BufferT], room: int | None = None
) -> _BufferT:
    """The buffer saved in ``path``: ``build(**config)`` with the saved constructor
    arguments (the capacity ``room`` instead where given and its ring holds no step), its
    storage, priorities, audit and random state restored; ValueError if ``path`` is not a
    buffer file of a known format."""
    try:
        with np.load(path, allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in archive.files}
        meta = json.loads(str(arrays.pop("meta")))
    except (OSError, ValueError, KeyError) as error:
        raise ValueError(f"path {str(path)!r} is not a herkit buffer file: {error}") from error
    if meta.get("format") not in (1, 2, FORMAT_VERSION):
        raise ValueError(f"path {str(path)!r} has unknown buffer format {meta.get('format')}")
    saved, recorded = meta.get("recorded"), None  # the recorded dataset the buffer held
    if saved is not None and saved["source"] is None:  # given as arrays: kept whole in the file
        recorded = RecordedEpisodes.from_state(unprefixed(arrays, "recorded."), saved["goal_size"])
    elif saved is not None:  # read again from its file, which must be the same
        source = DatasetSource(**saved["source"])
        recorded = read_dataset(source.path, saved["goal_size"])
        assert recorded.source is not None
        source.check_same(recorded.source)
    config = dict(meta["config"])
    if room is not None and not int(meta["counters"]["rows_written"]):
        config["capacity"] = room
    buffer = build(**config, **({} if recorded is None else {"recorded": recorded}))
    if meta["format"] == 1:  # written before the env's rewards were kept
        arrays |= env_terms_of_format_1(buffer, arrays)
    buffer.audit = RewardAudit.from_dict(meta.get("audit", {}))
    buffer.storage.restore(arrays, meta["counters"])
    tree = buffer.sampler.tree
    if tree is not None:
        leaves = np.zeros(tree.capacity)
        saved = arrays["priorities"]
        leaves[: len(saved)] = saved
        if "priorities.recorded" in arrays:
            held = arrays["priorities.recorded"]
            leaves[len(leaves) - len(held) :] = held
        tree.load_leaves(leaves)
    buffer.sampler.max_priority = float(meta["max_priority"])
    buffer.rng.bit_generator.state = meta["rng"]
    return buffer


def env_terms_of_format_1(
    buffer: Persisted, arrays: dict[str, np.ndarray]
) -> dict[str, np.ndarray]:
    """The ``reward``, ``reward_extra`` and ``success`` columns for the data of a file of
    format 1, which held none: the rewards of ``buffer.reward_fn``, as that format's
    sampling computed them."""
    info = {key: arrays[f"data.info.{key}"] for key in buffer.settings.info_keys}
    achieved, desired = arrays["data.next_achieved_goal"], arrays["data.desired_goal"]
    reward = host_rewards(buffer.reward_fn, achieved, desired, info).astype(np.float32)
    threshold = buffer.reached_threshold()
    success = GoalRewards(NUMPY, buffer.reward_fn).reached(threshold, reward, desired, info)
    return {
        "data.reward": reward,
        "data.reward_extra": np.zeros_like(reward),
        "data.success": success,
    }
