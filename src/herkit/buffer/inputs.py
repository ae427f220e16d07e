"""What :class:`~herkit.buffer.her.HerReplayBuffer` takes in: settings and transitions.

:func:`transition_fields` is the layout of a stored transition (its columns), and
:data:`OBS_FIELDS` where ``add`` reads each observation column from. The rest are checks:
:func:`check_functions` of the reward functions, and the coercions of what ``add``
takes (:func:`as_column`, :func:`as_flags`, :func:`as_rewards`). Every check raises a
ValueError that names the argument, so that a wrong input fails at the call that gave it,
never deep inside numpy. The coercions take the fast path for input that already has the
stored shape and dtype (an env's own arrays), and otherwise accept what the public API
promises: an unbatched transition when ``n_envs == 1``, bool or 0/1 flags, any dtype that
casts to the stored one.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from herkit.buffer.storage import FieldSpec

__all__ = [
    "OBS_FIELDS",
    "TransitionReader",
    "all_finite",
    "as_column",
    "as_flags",
    "as_rewards",
    "check_finite",
    "check_functions",
    "get_key",
    "nonfinite_rows",
    "transition_fields",
]


def transition_fields(
    observation: FieldSpec,
    goal: FieldSpec,
    action: FieldSpec,
    info_keys: Sequence[str],
    extra_keys: Mapping[str, FieldSpec] | None = None,
) -> dict[str, FieldSpec]:
    """The stored columns of one transition: what ``add`` is given, the env's terms of the
    step (:mod:`herkit.buffer.env_terms`), one float64 column ``info.<key>`` per info key,
    and ``obs.<key>`` and ``next_obs.<key>`` per extra observation key."""
    extras = {
        f"{side}.{key}": spec
        for key, spec in (extra_keys or {}).items()
        for side in ("obs", "next_obs")
    }
    fields = {
        "observation": observation,
        "achieved_goal": goal,
        "desired_goal": goal,
        "action": action,
        "next_observation": observation,
        "next_achieved_goal": goal,
        "terminated": FieldSpec((), np.dtype(bool)),
        "reward": FieldSpec((), np.dtype(np.float32)),
        "reward_extra": FieldSpec((), np.dtype(np.float32)),
        "success": FieldSpec((), np.dtype(bool)),
    }
    info = {f"info.{key}": FieldSpec((), np.dtype(np.float64)) for key in info_keys}
    return fields | info | extras


class TransitionReader:
    """Reads the arguments of ``add`` into the stored columns of ``n_envs`` transitions
    laid out as ``specs`` (:func:`transition_fields`), checked before anything is written."""

    def __init__(
        self,
        specs: Mapping[str, FieldSpec],
        extra_keys: Mapping[str, FieldSpec],
        info_keys: Sequence[str],
        n_envs: int,
    ) -> None:
        self.specs, self.extra_keys = specs, extra_keys
        self.info_keys, self.n_envs = tuple(info_keys), n_envs
        self.labels = {field: label for field, (_, _, label) in OBS_FIELDS.items()}
        """What errors call each field read from the arguments."""
        for key in extra_keys:
            self.labels |= {f"{side}.{key}": f"{side}[{key!r}]" for side in ("obs", "next_obs")}
        self.labels["action"] = "action"
        self.float_fields = [f for f in self.labels if specs[f].dtype.kind == "f"]
        """The fields of :attr:`labels` that can hold NaN or infinity."""

    def read(
        self,
        obs: Mapping[str, Any],
        action: Any,
        next_obs: Mapping[str, Any],
        terminated: Any,
        truncated: Any,
        info: Mapping[str, Any] | None,
    ) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """The columns of one step of every env, and which envs ended an episode."""
        n_envs, specs = self.n_envs, self.specs
        sources = {"obs": obs, "next_obs": next_obs}
        values = {
            field: as_column(label, get_key(sources[source], source, key), specs[field], n_envs)
            for field, (source, key, label) in OBS_FIELDS.items()
        }
        for key in self.extra_keys:
            for side, given in sources.items():
                field = f"{side}.{key}"
                values[field] = as_column(
                    self.labels[field], get_key(given, side, key), specs[field], n_envs
                )
        values["action"] = as_column("action", action, specs["action"], n_envs)
        if not all_finite([values[field] for field in self.float_fields]):
            for field in self.float_fields:  # name the field, env and count
                check_finite(self.labels[field], values[field])
        values["terminated"] = as_flags("terminated", terminated, n_envs)
        done = values["terminated"] | as_flags("truncated", truncated, n_envs)
        for key in self.info_keys:
            if info is None or key not in info:
                raise ValueError(f"info must hold the stored key {key!r} (info_keys)")
            name = f"info.{key}"
            values[name] = as_column(f"info[{key!r}]", info[key], specs[name], n_envs)
        return values, done

    def config(self) -> dict[str, Any]:
        """The shapes and dtypes as a buffer's constructor takes them (JSON values)."""
        specs = self.specs
        return {
            "observation_shape": list(specs["observation"].shape),
            "goal_shape": list(specs["desired_goal"].shape),
            "action_shape": list(specs["action"].shape),
            "observation_dtype": specs["observation"].dtype.str,
            "goal_dtype": specs["desired_goal"].dtype.str,
            "action_dtype": specs["action"].dtype.str,
            "n_envs": self.n_envs,
            "extra_keys": {
                key: [list(spec.shape), spec.dtype.str] for key, spec in self.extra_keys.items()
            },
        }


def extra_key_specs(extra_keys: Any) -> dict[str, FieldSpec]:
    """``extra_keys`` (``{key: (shape, dtype)}``) as field specs; ValueError naming the
    argument for anything else, or for a key of the GoalEnv's three."""
    if not isinstance(extra_keys, Mapping):
        raise ValueError(f"extra_keys must be a dict {{key: (shape, dtype)}}, got {extra_keys!r}")
    specs = {}
    for key, spec in extra_keys.items():
        if not isinstance(key, str) or key in ("observation", "achieved_goal", "desired_goal"):
            raise ValueError(
                "extra_keys names the observation keys beyond observation, achieved_goal and "
                f"desired_goal, got {key!r}"
            )
        try:
            shape, dtype = spec
            specs[key] = FieldSpec.of(shape, dtype)
        except (TypeError, ValueError):
            raise ValueError(f"extra_keys[{key!r}] must be (shape, dtype), got {spec!r}") from None
    return specs


def check_functions(reward_fn: Any, torch_reward_fn: Any) -> None:
    """Refuse reward functions that cannot be called (ValueError naming the argument)."""
    if not callable(reward_fn):
        raise ValueError(f"reward_fn must be callable, got {type(reward_fn).__name__}")
    if torch_reward_fn is not None and not callable(torch_reward_fn):
        raise ValueError(
            f"torch_reward_fn must be callable or None, got {type(torch_reward_fn).__name__}"
        )


def get_key(mapping: Mapping[str, Any], name: str, key: str) -> Any:
    """``mapping[key]``, or a ValueError saying that ``name`` must be a GoalEnv dict."""
    try:
        return mapping[key]
    except (KeyError, TypeError, IndexError):
        raise ValueError(
            f"{name} must be a GoalEnv observation dict with key {key!r}, got {type(mapping)}"
        ) from None


OBS_FIELDS = {
    "observation": ("obs", "observation", "obs['observation']"),
    "achieved_goal": ("obs", "achieved_goal", "obs['achieved_goal']"),
    "desired_goal": ("obs", "desired_goal", "obs['desired_goal']"),
    "next_observation": ("next_obs", "observation", "next_obs['observation']"),
    "next_achieved_goal": ("next_obs", "achieved_goal", "next_obs['achieved_goal']"),
}
"""Stored observation fields: the ``add`` argument and dict key each is read from, and the
name that errors use."""


def as_rewards(value: Any, n_envs: int) -> np.ndarray:
    """The env's step rewards as a finite float64 ``(n_envs,)`` array."""
    if type(value) is np.ndarray and value.dtype == np.float64 and value.shape == (n_envs,):
        if not all_finite((value,)):
            check_finite("reward", value)
        return value
    array = np.asarray(value)
    if array.shape != (n_envs,) and not (n_envs == 1 and array.shape in ((), (1, 1))):
        raise ValueError(f"reward must have shape ({n_envs},), got {array.shape}")
    if not (array.dtype == bool or np.issubdtype(array.dtype, np.number)):
        raise ValueError(f"reward must be numeric, got {array.dtype}")
    array = array.astype(np.float64).reshape(n_envs)
    check_finite("reward", array)
    return array


def all_finite(arrays: Sequence[np.ndarray]) -> bool:
    """Whether ``arrays`` hold no NaN and no infinity, in one cheap pass each (their sums
    of squares; False also where such a sum overflows, so a False is to be checked value
    by value with :func:`check_finite`)."""
    return math.isfinite(math.fsum(map(np.vdot, arrays, arrays)))


def nonfinite_rows(values: np.ndarray) -> np.ndarray | None:
    """How many NaN or infinite values each row (along the leading axis) of ``values``
    holds, or None when all are finite (always for integer and bool arrays)."""
    if values.dtype.kind != "f":
        return None
    finite = np.isfinite(values)
    if finite.all():
        return None
    return np.asarray((~finite).reshape(len(values), -1).sum(axis=1))


def check_finite(name: str, values: np.ndarray, row: str = "env", call: str = "step") -> None:
    """Refuse ``values`` (one ``row`` per entry of the leading axis: an env) if any is NaN
    or infinite: a ValueError naming ``name``, the first such row and how many values it
    has, and that nothing of this ``call`` was stored."""
    counts = nonfinite_rows(values)
    if counts is None:
        return
    first = int(np.flatnonzero(counts)[0])
    count = int(counts[first])
    others = int(np.count_nonzero(counts)) - 1
    also = f" (and in {others} other {row}{'s' * (others > 1)})" if others else ""
    raise ValueError(
        f"{name} holds {count} non-finite value{'s' * (count > 1)} (NaN or inf) in {row} "
        f"{first}{also}: nothing of this {call} was stored"
    )


def as_flags(name: str, value: Any, n_envs: int) -> np.ndarray:
    """Episode-end flags (bool or 0/1 numbers) as a bool ``(n_envs,)`` array."""
    if type(value) is np.ndarray and value.dtype == bool and value.shape == (n_envs,):
        return value
    array = np.asarray(value)
    if array.shape != (n_envs,) and not (n_envs == 1 and array.shape == ()):
        raise ValueError(f"{name} must have shape ({n_envs},), got {array.shape}")
    if not (array.dtype == bool or np.issubdtype(array.dtype, np.number)):
        raise ValueError(f"{name} must be bool or numeric, got {array.dtype}")
    return array.reshape(n_envs) != 0


def as_column(name: str, value: Any, spec: FieldSpec, n_envs: int) -> np.ndarray:
    """``value`` as an ``(n_envs, *spec.shape)`` array; ValueError naming ``name`` if not."""
    if type(value) is np.ndarray and value.dtype == spec.dtype:
        shape = value.shape
        if len(shape) == len(spec.shape) + 1 and shape[0] == n_envs and shape[1:] == spec.shape:
            return value
    array = np.asarray(value)
    expected = (n_envs, *spec.shape)
    if array.shape != expected:
        if n_envs == 1 and array.shape == spec.shape:
            array = array[None]
        else:
            also = f" or {spec.shape}" if n_envs == 1 else ""
            raise ValueError(f"{name} must have shape {expected}{also}, got {array.shape}")
    if array.dtype != spec.dtype and not np.can_cast(array.dtype, spec.dtype, "same_kind"):
        raise ValueError(f"{name} must have a dtype that casts to {spec.dtype}, got {array.dtype}")
    return array
