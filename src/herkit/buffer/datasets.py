"""Recorded trajectories read into whole episodes for a buffer
(:meth:`herkit.HerReplayBuffer.from_dataset`), without an env.

Two layouts are read:

- **OGBench's** (a ``.npz`` file or a mapping of arrays): ``observations (N, ...)``,
  ``actions (N, ...)`` and ``terminals (N,)``, one row per state, episodes one after another,
  ``terminals`` true on each episode's last row (``qpos``, ``qvel`` and other keys are
  ignored). An episode of ``L`` rows gives ``L - 1`` transitions ``(s_t, a_t, s_{t+1})``; the
  action of its last row has no successor and is dropped. Its goals are states, as in
  OGBench: the achieved goal is the observation itself (or its first ``goal_size``
  coordinates), and each transition's desired goal is its episode's last state (the data
  hold no goals; an offline goal mix does not read them). An episode ends by a timeout
  (``truncated``): the layout does not tell a real termination from the end of a recording.
- **Minari's** (a ``minari`` dataset object, local): its episodes' ``observations`` (a
  GoalEnv dict of arrays one longer than the actions), ``actions``, ``rewards``,
  ``terminations`` and ``truncations``; the env's rewards are kept.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from herkit.buffer.goal_env import RewardFn
from herkit.buffer.relabel import StoredGoals

__all__ = [
    "Episodes", "add_episodes", "dataset_arguments", "from_dataset", "read_dataset",
    "read_minari", "read_ogbench", "write_episodes",
]  # fmt: skip

OGBENCH_KEYS = ("observations", "actions", "terminals")
"""The arrays an OGBench-layout dataset must hold."""


@dataclass(frozen=True)
class Episodes:
    """Whole episodes, their steps one after another (``lengths.sum()`` rows each)."""

    observation: np.ndarray
    action: np.ndarray
    next_observation: np.ndarray
    achieved_goal: np.ndarray
    next_achieved_goal: np.ndarray
    desired_goal: np.ndarray
    terminated: np.ndarray
    """True where the step ended its episode for real (not a timeout)."""
    lengths: np.ndarray
    """Steps of each episode (every episode at least one)."""
    reward: np.ndarray | None = None
    """The env's step rewards, where recorded (None: ``reward_fn`` of the own goal)."""

    @property
    def steps(self) -> int:
        """Transitions in all episodes."""
        return int(self.lengths.sum())


def read_dataset(source: Any, goal_size: int | None = None) -> Episodes:
    """The episodes of ``source``: a path to an OGBench ``.npz``, a mapping of its arrays,
    or a Minari dataset; a ValueError names what is missing or malformed."""
    if hasattr(source, "iterate_episodes"):
        return read_minari(source)
    if isinstance(source, str | os.PathLike):
        path = os.fspath(source)
        if not os.path.exists(path):
            raise FileNotFoundError(f"dataset: no file {path!r}")
        with np.load(path, allow_pickle=False) as arrays:
            return read_ogbench(
                {key: arrays[key] for key in OGBENCH_KEYS if key in arrays}, goal_size
            )
    if isinstance(source, Mapping):
        return read_ogbench(source, goal_size)
    raise ValueError(
        "dataset must be a path to an OGBench-layout .npz, a mapping of its arrays or a "
        f"Minari dataset, got {type(source).__name__}"
    )


def read_ogbench(arrays: Mapping[str, Any], goal_size: int | None = None) -> Episodes:
    """Episodes of OGBench's layout (see the module)."""
    missing = [key for key in OGBENCH_KEYS if key not in arrays]
    if missing:
        raise ValueError(f"dataset lacks {missing} (OGBench's layout: {list(OGBENCH_KEYS)})")
    obs = np.asarray(arrays["observations"])
    actions = np.asarray(arrays["actions"])
    terminals = np.asarray(arrays["terminals"]).astype(bool).reshape(-1)
    n = len(obs)
    if obs.ndim < 2 or len(actions) != n or len(terminals) != n:
        raise ValueError(
            "dataset: observations (N, ...), actions (N, ...) and terminals (N,) must have one "
            f"row per state, got {obs.shape}, {actions.shape}, {terminals.shape}"
        )
    if not np.issubdtype(obs.dtype, np.integer) and not np.isfinite(obs).all():
        raise ValueError(
            f"dataset: observations hold {int((~np.isfinite(obs)).sum())} non-finite values"
        )
    if np.issubdtype(actions.dtype, np.floating) and not np.isfinite(actions).all():
        raise ValueError(
            f"dataset: actions hold {int((~np.isfinite(actions)).sum())} non-finite values"
        )
    ends = np.flatnonzero(terminals)
    if n and (len(ends) == 0 or ends[-1] != n - 1):
        ends = np.append(ends, n - 1)  # the last episode, recorded without its terminal
    starts = np.concatenate([[0], ends[:-1] + 1]) if len(ends) else ends
    rows = ends - starts + 1
    keep = rows >= 2  # a one-row episode has no transition
    starts, ends, rows = starts[keep], ends[keep], rows[keep]
    if len(rows) == 0:
        raise ValueError("dataset: no episode of two rows or more (no transition to store)")
    lengths = rows - 1
    first = np.repeat(starts, lengths) + _steps(lengths)  # the row of each transition
    goals = obs.reshape(n, -1) if goal_size is None else obs.reshape(n, -1)[:, :goal_size]
    return Episodes(
        observation=obs[first],
        action=actions[first],
        next_observation=obs[first + 1],
        achieved_goal=goals[first],
        next_achieved_goal=goals[first + 1],
        desired_goal=np.repeat(goals[ends], lengths, axis=0),
        terminated=np.zeros(len(first), bool),
        lengths=lengths.astype(np.int64),
    )


def read_minari(dataset: Any) -> Episodes:
    """Episodes of a Minari dataset whose observations are GoalEnv dicts."""
    parts: dict[str, list[np.ndarray]] = {
        name: []
        for name in (
            "observation",
            "action",
            "next_observation",
            "achieved_goal",
            "next_achieved_goal",
            "desired_goal",
            "terminated",
            "reward",
        )
    }
    lengths = []
    for episode in dataset.iterate_episodes():
        obs = episode.observations
        if not isinstance(obs, Mapping) or not {
            "observation",
            "achieved_goal",
            "desired_goal",
        } <= set(obs):
            raise ValueError(
                "a Minari dataset's observations must be GoalEnv dicts (observation, "
                f"achieved_goal, desired_goal), got {type(obs).__name__}"
            )
        steps = len(episode.actions)
        if steps == 0:
            continue
        lengths.append(steps)
        for key in ("observation", "achieved_goal"):
            parts[key].append(np.asarray(obs[key])[:steps])
            parts[f"next_{key}"].append(np.asarray(obs[key])[1 : steps + 1])
        parts["desired_goal"].append(np.asarray(obs["desired_goal"])[:steps])
        parts["action"].append(np.asarray(episode.actions))
        parts["terminated"].append(np.asarray(episode.terminations, bool))
        parts["reward"].append(np.asarray(episode.rewards, np.float32))
    if not lengths:
        raise ValueError("the Minari dataset has no episode with a step")
    joined = {key: np.concatenate(value) for key, value in parts.items()}
    return Episodes(**joined, lengths=np.asarray(lengths, np.int64))


def from_dataset(
    cls: Any,
    source: Any,
    reward_fn: RewardFn,
    *,
    capacity: int | None = None,
    room: int = 0,
    goal_size: int | None = None,
    **kwargs: Any,
) -> Any:
    """``HerReplayBuffer.from_dataset``: a buffer holding the episodes of a recorded
    dataset, without an env.

    ``source`` is a path to an OGBench-layout ``.npz`` (``observations``, ``actions``,
    ``terminals``), a mapping of those arrays, or a local Minari dataset (read as
    :func:`read_dataset` says: OGBench's goals are its states, the first ``goal_size``
    coordinates where given). ``capacity`` defaults to the dataset's transitions plus
    ``room``: online steps added after them (one env: ``n_envs`` is 1) fill that room
    before the ring drops the oldest episodes. ``reward_fn`` is the env's
    ``compute_reward``; other keyword arguments (``settings``, ``value_goals``,
    ``strategy``, ``seed``...) go to the constructor. Episodes are kept whole and closed,
    so every strategy applies.
    """
    episodes = read_dataset(source, goal_size)
    buffer = cls(**dataset_arguments(episodes, reward_fn, capacity, room, kwargs))
    buffer.add_episodes(episodes)
    return buffer


def add_episodes(buffer: Any, episodes: Episodes) -> None:
    """``HerReplayBuffer.add_episodes``: store whole recorded episodes at once; the
    buffer's open episode must be empty, and the ring must hold them all (one env)."""
    base, ids, done = write_episodes(buffer.storage, buffer.scorer, episodes)
    sampler = buffer.sampler
    if sampler.tree is not None and not sampler.closed_only:
        sampler.tree.set(np.arange(base, base + len(done)), sampler.max_priority)
    if isinstance(buffer.relabeller, StoredGoals) and len(ids):
        envs = np.zeros(len(ids), np.int64)
        sampler.may_sample(buffer.relabeller.episodes_ended(ids, envs, buffer.rng.random))


def dataset_arguments(
    episodes: Episodes, reward_fn: Any, capacity: int | None, room: int, kwargs: dict[str, Any]
) -> dict[str, Any]:
    """The constructor arguments of a buffer for ``episodes`` (shapes and dtypes from the
    data, ``capacity`` or the data's steps plus ``room``, one env), with ``kwargs``."""
    n_envs = kwargs.pop("n_envs", 1)
    if n_envs != 1:
        raise ValueError(f"from_dataset fills one env's column: n_envs must be 1, got {n_envs}")
    if isinstance(room, bool) or not isinstance(room, int) or room < 0:
        raise ValueError(f"room must be an int >= 0, got {room!r}")
    action = episodes.action
    return {
        "capacity": episodes.steps + room if capacity is None else capacity,
        "observation_shape": episodes.observation.shape[1:],
        "goal_shape": episodes.achieved_goal.shape[1:],
        "action_shape": action.shape[1:],
        "observation_dtype": episodes.observation.dtype,
        "goal_dtype": episodes.achieved_goal.dtype,
        "action_dtype": np.float32 if np.issubdtype(action.dtype, np.floating) else np.int64,
        "reward_fn": reward_fn,
        **kwargs,
    }


def write_episodes(storage: Any, scorer: Any, episodes: Episodes) -> tuple[int, Any, Any]:
    """Write ``episodes`` into ``storage`` (an :class:`~herkit.buffer.storage.EpisodeStorage`
    of one env) and score their steps with ``scorer`` (a
    :class:`~herkit.buffer.env_terms.StepScorer`); returns the first slot written, the ids of
    the episodes and where each step ended its episode."""
    steps = episodes.steps
    names = ("observation", "action", "next_observation", "achieved_goal",
             "next_achieved_goal", "desired_goal", "terminated")  # fmt: skip
    values: dict[str, Any] = {
        name: getattr(episodes, name).astype(storage.fields[name].dtype, copy=False)
        for name in names
    }
    for name, value in values.items():
        if value.shape[1:] != storage.fields[name].shape:
            raise ValueError(
                f"dataset {name} has shape {value.shape[1:]} per step, the buffer stores "
                f"{storage.fields[name].shape}"
            )
    for name, spec in storage.fields.items():  # info keys, extras: none recorded
        if name not in values and name not in ("reward", "reward_extra", "success"):
            values[name] = np.zeros((steps, *spec.shape), spec.dtype)
    scorer.check_first({key: value[:1] for key, value in values.items()})
    base = storage.rows_written
    ids = storage.append_episodes(values, episodes.lengths)
    slots = np.arange(base, base + steps)
    done = np.zeros(steps, bool)
    done[np.cumsum(episodes.lengths) - 1] = True
    ops = storage.ops
    scorer.score_slots(
        slots, lambda name: ops.to_host(ops.take(storage.data[name], slots)), episodes.reward,
        None, done,
    )  # fmt: skip
    return base, ids, done


def _steps(lengths: np.ndarray) -> np.ndarray:
    """``0 .. length-1`` of every episode, one after another."""
    return np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)
