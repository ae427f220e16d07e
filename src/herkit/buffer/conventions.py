"""What a goal env's rewards and successes look like, found out from the env itself.

GoalEnvs differ: Fetch gives -1/0 rewards and ``info["is_success"]`` and never ends an
episode early; gymnasium-robotics' PointMaze gives 0/1, says ``info["success"]`` and (with
``continuing_task=False``) ends the episode on success; dense variants give ``-distance``.
A trainer that assumes one family's convention silently learns nothing on another, so
:func:`probe_conventions` asks the env:

- **reward range**: ``compute_reward`` is called on the goals of a few random steps, paired
  with themselves (reached), with each other, and with goals moved far away. A reward that
  takes a handful of values (sparse) has the range ``(min, max)`` of what was seen; one
  that keeps changing with the distance (dense, possibly unbounded) has no range, and Q
  targets are then not clipped rather than clipped wrongly.
- **success signal**: ``info["is_success"]``, else ``info["success"]``, else (sparse rewards
  only) ``compute_reward`` returning the reward of a reached goal; :class:`SuccessSignal`
  reads it the same way for evaluation and for training episodes.
- **ends on success**: what the env declares (``terminates_on_success`` on herkit's envs,
  ``continuing_task`` on gymnasium-robotics' mazes), else what the random steps showed
  (``terminated`` at a success step or not); still unknown, the trainer decides at the
  first success it sees (:mod:`herkit.buffer.ending`, the one owner of this rule).
- **terms beyond compute_reward**: where the env's step rewards differ from
  ``compute_reward`` of the same goals (a penalty, a reward wrapper), the difference is
  reported and the reward range widened by it; the buffer keeps the env's rewards and adds
  the difference to relabelled rewards (:mod:`herkit.buffer.env_terms`), and counts such
  steps all through training.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

import gymnasium as gym
import numpy as np

from herkit.buffer.ending import UNKNOWN, Ending
from herkit.buffer.env_terms import RewardAudit
from herkit.buffer.goal_env import RewardFn, env_ending, fresh_copy
from herkit.buffer.per_sample import RewardRefused, batch_refusal, error_line

__all__ = [
    "SUCCESS_KEYS",
    "SUCCESS_SOURCES",
    "GoalConventions",
    "InfoSuccessKey",
    "SuccessKey",
    "SuccessSignal",
    "conventions_of",
    "declared_conventions",
    "info_columns",
    "probe_conventions",
]

InfoSuccessKey = Literal["is_success", "success"]
"""An info key that reports success."""

SuccessKey = Literal[InfoSuccessKey, "compute_reward"]
"""Where success is read: an info key, or ``compute_reward`` giving a reached goal's reward."""

SUCCESS_KEYS: tuple[str, ...] = get_args(InfoSuccessKey)
"""Info keys that report success, in the order they are looked for."""

SUCCESS_SOURCES: tuple[str, ...] = get_args(SuccessKey)
"""Every value of :data:`SuccessKey`."""

MAX_SPARSE_VALUES = 8
"""A reward with at most this many distinct values in the probe counts as sparse (bounded)."""

_FAR = (1.0, 10.0, 100.0, 1000.0)
"""Distances, in goal standard deviations, at which goals are moved away in the probe."""


@dataclass(frozen=True)
class GoalConventions:
    """An env's reward and success conventions, and where each was learned."""

    reward_range: tuple[float, float] | None
    """Smallest and largest per-step reward; None where it could not be bounded (dense)."""
    success_reward: float | None
    """The reward of a reached goal (``compute_reward(g, g)``), when it is one value."""
    success_key: str | None
    """``is_success``, ``success``, ``compute_reward``, or None: no success signal found."""
    terminal_on_success: bool | None
    """Whether the env ends an episode on success; None while unknown."""
    step_reward_extra: tuple[float, float] | None = None
    """Smallest and largest ``step reward - compute_reward`` in the probe's steps, where the
    env's step rewards hold terms that compute_reward lacks (None: they never differed)."""
    sources: dict[str, str] = dataclasses.field(default_factory=dict)
    """How each of the above was established, in words (for the log and config.json)."""
    warnings: tuple[str, ...] = ()
    """Problems found, one line each (e.g. step rewards that compute_reward does not give)."""
    task: str | None = None
    """What the env says it is, in a few words (its ``task_words``, e.g. ``15 bits``)."""

    @property
    def ending(self) -> Ending:
        """Whether the env's episodes end on success, with its source."""
        return Ending(self.terminal_on_success, self.sources.get("terminal_on_success", UNKNOWN))

    def with_ending(self, ending: Ending) -> GoalConventions:
        """These conventions with ``ending`` (e.g. once a buffer saw the env's first
        success end, or not end, its episode)."""
        sources = self.sources | {"terminal_on_success": ending.source}
        return dataclasses.replace(self, terminal_on_success=ending.ends, sources=sources)

    def describe(self) -> str:
        """One line: the reward range, success signal and terminal rule, with sources."""
        low_high = (
            "not bounded (Q targets not clipped)"
            if self.reward_range is None
            else f"[{self.reward_range[0]:g}, {self.reward_range[1]:g}]"
        )
        terminal = {None: "unknown yet", True: "yes", False: "no"}[self.terminal_on_success]
        src = self.sources
        return (
            f"rewards {low_high} ({src.get('reward_range', '?')}); "
            f"success from {self.success_key or 'nowhere'} ({src.get('success_key', '?')}); "
            f"episodes end on success: {terminal} ({src.get('terminal_on_success', '?')})"
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (config.json's ``conventions``)."""
        values = dataclasses.asdict(self)
        values["warnings"] = list(self.warnings)
        return values


def info_columns(info: Mapping[str, Any], keys: Sequence[str], n: int) -> dict[str, np.ndarray]:
    """The numeric info fields ``keys`` of ``n`` envs as float64 ``(n,)`` columns."""
    columns = {}
    for key in keys:
        if key not in info:
            raise ValueError(f"info_keys names {key!r}, but the env's info has no such key")
        columns[key] = np.asarray(info[key], dtype=np.float64).reshape(n)
    return columns


class SuccessSignal:
    """Whether each env's latest step reached its goal, by the env's own convention.

    Called with a vector env's ``info`` and next observation; returns a float ``(n,)``
    array of 0/1, or None when the env has no success signal.
    """

    def __init__(
        self,
        key: str | None,
        reward_fn: RewardFn | None = None,
        success_reward: float | None = None,
        info_keys: Sequence[str] = (),
    ) -> None:
        if key == "compute_reward" and (reward_fn is None or success_reward is None):
            raise ValueError("success_key 'compute_reward' needs a sparse reward (success_reward)")
        if key is not None and key not in SUCCESS_SOURCES:
            known = ", ".join(repr(k) for k in SUCCESS_SOURCES)
            raise ValueError(f"success_key must be one of {known} or None, got {key!r}")
        self.key = key
        self.reward_fn = reward_fn
        self.success_reward = success_reward
        self.info_keys = tuple(info_keys)

    def __call__(self, info: Mapping[str, Any], next_obs: Mapping[str, Any]) -> np.ndarray | None:
        """0/1 success per env of the step that returned ``info`` and ``next_obs``."""
        if self.key is None:
            return None
        n = len(next_obs["desired_goal"])
        if self.key != "compute_reward":
            if self.key not in info:
                return np.zeros(n)
            return np.asarray(info[self.key], dtype=np.float64).reshape(n)
        assert self.reward_fn is not None
        reward = self.reward_fn(
            np.asarray(next_obs["achieved_goal"]),
            np.asarray(next_obs["desired_goal"]),
            info_columns(info, self.info_keys, n),
        )
        return (np.asarray(reward, dtype=np.float64).reshape(n) == self.success_reward) * 1.0


def declared_conventions(env: Any, not_probed: str = "not probed") -> GoalConventions:
    """What ``env`` declares without being stepped: whether its episodes end on success
    (:func:`~herkit.buffer.goal_env.env_ending`); the reward range and success key are left
    unknown, their source ``not_probed`` (which may say why)."""
    ending = env_ending(env)
    return GoalConventions(
        reward_range=None,
        success_reward=None,
        success_key=None,
        terminal_on_success=ending.ends,
        sources={
            "reward_range": not_probed,
            "success_key": not_probed,
            "terminal_on_success": ending.source,
        },
    )


def conventions_of(
    env: Any, reward_fn: RewardFn, *, probe: bool = True, info_keys: Sequence[str] = ()
) -> GoalConventions:
    """``env``'s conventions without ever acting in ``env`` itself: what it declares, and
    with ``probe`` what random steps of a fresh copy show (:func:`probe_conventions`; a
    vector env's ``env_fns``, or ``gym.make`` of its spec). Where no copy can be made, or
    the copy fails to step, the declarations alone, with the reason in their sources."""
    if not probe:
        return declared_conventions(env)
    copy, how = fresh_copy(env)
    if copy is None:
        return declared_conventions(env, f"not probed: {how}")
    try:
        return probe_conventions(copy, reward_fn, info_keys=info_keys)
    except ValueError:  # herkit's own finding (compute_reward, info_keys)
        raise
    except Exception as error:  # the copy's own failure: the declarations alone
        why = f"not probed: {how} raised {type(error).__name__}: {error}"
        return declared_conventions(env, why)
    finally:
        copy.close()


def probe_conventions(
    env: gym.Env,
    reward_fn: RewardFn,
    *,
    info_keys: Sequence[str] = (),
    seed: int = 0,
    steps: int = 200,
) -> GoalConventions:
    """Find out ``env``'s conventions from ``steps`` random steps (see the module docstring).

    ``reward_fn`` is the vectorised ``compute_reward`` that relabelling will use, called
    with the ``info_keys`` columns as its info. Raises ValueError when ``reward_fn`` fails
    on a batch of the env's goals: that it takes one goal at a time (where one goal pair
    works; :func:`~herkit.buffer.per_sample.per_sample` gives it batches), else the single
    call's own error, naming ``info_keys``.
    """
    record = _random_steps(env, info_keys, seed, steps)
    achieved, desired, info = record.achieved, record.desired, record.columns

    def rewards(a: np.ndarray, d: np.ndarray, columns: Mapping[str, np.ndarray]) -> np.ndarray:
        try:
            value = np.asarray(reward_fn(a, d, columns), dtype=np.float64)
        except RewardRefused:  # a per-sample reward failing on one goal: it names the cause
            raise
        except Exception as error:  # one goal at a time, or a failure of its own (info)
            raise batch_refusal(reward_fn, a, d, columns, error_line(error)) from error
        if value.shape != (len(a),):
            why = f"it gave shape {value.shape}, not ({len(a)},)"
            raise batch_refusal(reward_fn, a, d, columns, why)
        return value

    sources: dict[str, str] = {}
    warnings: list[str] = []
    recomputed = rewards(achieved, desired, info)
    extra = RewardAudit().observe(record.reward, recomputed, None)  # 0 within float noise
    if extra.any():
        warnings.append(
            f"the env's step reward differs from compute_reward(achieved_goal, desired_goal, "
            f"info) at {int(np.count_nonzero(extra))} of {len(extra)} random steps (by "
            f"{extra.min():+.4g} to {extra.max():+.4g}): herkit keeps the env's reward for each "
            "step's own goal and adds the difference to the rewards of relabelled goals (if "
            "the difference depends on the goal, compute_reward needs info: --info-keys)"
        )

    goals = np.concatenate([achieved, desired])
    columns = {key: np.concatenate([value, value]) for key, value in info.items()}
    reached = rewards(goals, goals, columns)
    seen = [recomputed, reached, rewards(goals, np.roll(goals, 1, axis=0), columns)]
    if np.issubdtype(goals.dtype, np.floating):
        spread = goals.std(axis=0)
        spread = np.where(spread > 0, spread, 1.0)
        for distance in _FAR:
            far = (goals + distance * spread).astype(goals.dtype)
            seen.append(rewards(goals, far, columns))
    values = np.unique(np.concatenate(seen)) + 0.0  # no -0
    success_reward = float(reached[0]) if np.all(reached == reached[0]) else None
    if len(values) <= MAX_SPARSE_VALUES and np.all(np.isfinite(values)):
        low, high = float(values[0]), float(values[-1])
        shown = ", ".join(f"{v:g}" for v in values)
        sources["reward_range"] = f"probe: compute_reward takes the values {shown}"
        if extra.any():  # relabelled rewards carry the env's other terms too
            low, high = low + min(float(extra.min()), 0.0), high + max(float(extra.max()), 0.0)
            sources["reward_range"] += (
                f", and the env's step rewards add {extra.min():+g} to {extra.max():+g}"
            )
        reward_range: tuple[float, float] | None = (low, high)
        sparse = len(values) >= 2 and success_reward == float(values[-1])
    else:
        reward_range = None
        sources["reward_range"] = (
            f"probe: compute_reward takes {len(values)} values and grows with the goal distance"
        )
        sparse = False

    present = [key for key in SUCCESS_KEYS if any(key in i for i in record.infos)]
    if present:
        success_key: str | None = present[0]
        sources["success_key"] = f"the env's info has {present[0]!r}"
    elif sparse:
        success_key = "compute_reward"
        sources["success_key"] = (
            f"no is_success/success in info; compute_reward == {success_reward:g} (reached)"
        )
    else:
        success_key = None
        sources["success_key"] = "no is_success/success in info and no sparse reward"
        warnings.append(
            "no success signal: the env's info has neither 'is_success' nor 'success' and its "
            "reward is not sparse, so success rates cannot be measured (NaN)"
        )

    if success_key in SUCCESS_KEYS:
        success = np.array([bool(i.get(success_key, False)) for i in record.infos])
    else:  # compute_reward, or no signal (then never)
        success = recomputed == (success_reward if sparse else np.nan)
    ending = env_ending(env).after(success, record.terminated, "probe: in the random steps")
    if ending.ends is None:
        ending = Ending(
            None, "not declared and no success in the random steps: decided at the first one"
        )
    sources["terminal_on_success"] = ending.source
    return GoalConventions(
        reward_range=reward_range,
        success_reward=success_reward if sparse else None,
        success_key=success_key,
        terminal_on_success=ending.ends,
        step_reward_extra=(float(extra.min()), float(extra.max())) if extra.any() else None,
        sources=sources,
        warnings=tuple(warnings),
    )


@dataclass
class _Steps:
    """What :func:`_random_steps` saw."""

    achieved: np.ndarray
    """``next_obs["achieved_goal"]`` of each step."""
    desired: np.ndarray
    """``next_obs["desired_goal"]`` of each step."""
    reward: np.ndarray
    """The env's step rewards."""
    terminated: np.ndarray
    """The env's ``terminated`` flags."""
    infos: list[Mapping[str, Any]]
    """The step infos."""
    columns: dict[str, np.ndarray]
    """The ``info_keys`` fields as float64 columns."""


def _random_steps(env: gym.Env, info_keys: Sequence[str], seed: int, steps: int) -> _Steps:
    """``steps`` uniformly random steps of ``env``, resetting at episode ends."""
    env.action_space.seed(seed)
    env.reset(seed=seed)
    achieved, desired, reward, terminated = [], [], [], []
    infos: list[Mapping[str, Any]] = []
    for _ in range(steps):
        next_obs, r, term, trunc, info = env.step(env.action_space.sample())
        achieved.append(np.asarray(next_obs["achieved_goal"]))
        desired.append(np.asarray(next_obs["desired_goal"]))
        reward.append(float(r))
        terminated.append(bool(term))
        infos.append(info)
        if term or trunc:
            env.reset()
    columns = {
        key: np.array([float(i.get(key, np.nan)) for i in infos], dtype=np.float64)
        for key in info_keys
    }
    for key, column in columns.items():
        if np.isnan(column).all():
            raise ValueError(f"info_keys names {key!r}, but the env's info has no such key")
    return _Steps(
        np.stack(achieved),
        np.stack(desired),
        np.asarray(reward),
        np.asarray(terminated),
        infos,
        columns,
    )
