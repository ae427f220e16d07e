"""Goals made of named parts (``Dict`` and ``Tuple`` goal spaces) as flat vectors, and back.

A replay buffer stores goals as rows of one array and networks read them as vectors, so a
goal such as ``{"position": Box(2), "colour": Discrete(3)}`` is flattened as
:func:`gymnasium.spaces.flatten` does it (sub-spaces in the space's order; a ``Discrete``
becomes a one-hot vector): :func:`flat_goal_space` is the flat ``Box``, and
:func:`unflatten_goals` gives a batch of flat goals back as the env's own structure, each
leaf batched on the leading axis (``{"position": (B, 2), "colour": (B,)}``), in one numpy
operation per leaf rather than one call per goal. On what ``flatten`` gives it equals
:func:`gymnasium.spaces.unflatten` row by row; a one-hot part that is not one-hot (a goal
moved off the space) reads as its largest entry.

Leaves may be ``Box``, ``Discrete``, ``MultiBinary`` and ``MultiDiscrete``; the flat dtype
is float32 where every ``Box`` leaf casts to float32 exactly, else float64.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

__all__ = [
    "LEAVES",
    "check_goal_space",
    "flat_dtype",
    "flat_goal_space",
    "flatten_goal",
    "is_composite",
    "structure_of",
    "unflatten_goals",
]

LEAVES = (spaces.Box, spaces.Discrete, spaces.MultiBinary, spaces.MultiDiscrete)
"""The spaces a flattened goal may be made of (inside ``Dict`` and ``Tuple`` spaces)."""


def is_composite(space: spaces.Space[Any]) -> bool:
    """Whether ``space`` is made of named or numbered parts (a ``Dict`` or a ``Tuple``)."""
    return isinstance(space, (spaces.Dict, spaces.Tuple))


def _leaves(space: spaces.Space[Any], path: str) -> list[tuple[str, spaces.Space[Any]]]:
    """``space``'s leaves in flattening order, each with its path (``goal['colour']``)."""
    if isinstance(space, spaces.Dict):
        parts = [(f"{path}[{key!r}]", sub) for key, sub in space.spaces.items()]
    elif isinstance(space, spaces.Tuple):
        parts = [(f"{path}[{i}]", sub) for i, sub in enumerate(space.spaces)]
    else:
        return [(path, space)]
    return [leaf for where, sub in parts for leaf in _leaves(sub, where)]


def check_goal_space(space: spaces.Space[Any], name: str) -> None:
    """ValueError naming ``name`` unless every leaf of ``space`` is one of :data:`LEAVES`."""
    for path, leaf in _leaves(space, name):
        if not isinstance(leaf, LEAVES):
            kinds = ", ".join(kind.__name__ for kind in LEAVES)
            raise ValueError(
                f"{path} is a {type(leaf).__name__} space, which herkit cannot flatten into a "
                f"goal vector; a goal's parts must be {kinds} (inside Dict or Tuple spaces)"
            )


def structure_of(space: spaces.Space[Any]) -> list[tuple[str, str, tuple[int, ...]]]:
    """Each leaf's path, kind and flat layout: two goal spaces with the same structure
    flatten to the same columns with the same meaning."""
    layout: list[tuple[str, str, tuple[int, ...]]] = []
    for path, leaf in _leaves(space, ""):
        if isinstance(leaf, spaces.Discrete):
            shape: tuple[int, ...] = (int(leaf.n), int(leaf.start))
        elif isinstance(leaf, spaces.MultiDiscrete):
            shape = (*leaf.nvec.flatten().tolist(), *np.ravel(leaf.start).tolist())
        else:
            shape = tuple(leaf.shape or ())
        layout.append((path, type(leaf).__name__, shape))
    return layout


def flat_dtype(space: spaces.Space[Any]) -> np.dtype[Any]:
    """float32 where every ``Box`` leaf casts to float32 exactly (one-hot parts always
    do), else float64."""
    exact = all(
        np.can_cast(leaf.dtype, np.float32, "safe")
        for _, leaf in _leaves(space, "")
        if isinstance(leaf, spaces.Box)
    )
    return np.dtype(np.float32 if exact else np.float64)


def flat_goal_space(space: spaces.Space[Any], dtype: Any = None) -> spaces.Box:
    """The flat ``Box`` of ``space`` (:func:`gymnasium.spaces.flatten_space`) in ``dtype``
    (by default :func:`flat_dtype`)."""
    check_goal_space(space, "goal")
    dtype = np.dtype(dtype or flat_dtype(space))
    flat = spaces.flatten_space(space)
    assert isinstance(flat, spaces.Box), flat  # the leaves checked above flatten to a Box
    return spaces.Box(flat.low.astype(dtype), flat.high.astype(dtype), flat.shape, dtype)


def flatten_goal(space: spaces.Space[Any], goal: Any, dtype: Any = None) -> np.ndarray:
    """One goal of ``space`` as a flat vector (:func:`gymnasium.spaces.flatten`) in
    ``dtype`` (by default :func:`flat_dtype`)."""
    flat = spaces.flatten(space, goal)
    return np.asarray(flat, dtype=dtype or flat_dtype(space))


def unflatten_goals(space: spaces.Space[Any], flat: Any) -> Any:
    """Flat goals ``(B, flatdim)`` as ``space``'s structure, each leaf batched on the
    leading axis (see the module docstring); ValueError for another shape."""
    flat = np.asarray(flat)
    size = spaces.flatdim(space)
    if flat.ndim != 2 or flat.shape[1] != size:
        raise ValueError(f"flat goals must have shape (B, {size}), got shape {flat.shape}")
    return _unflatten(space, flat)


def _unflatten(space: spaces.Space[Any], flat: np.ndarray) -> Any:
    """:func:`unflatten_goals` without the shape check."""
    n = len(flat)
    if isinstance(space, (spaces.Dict, spaces.Tuple)):
        parts = space.spaces.items() if isinstance(space, spaces.Dict) else enumerate(space.spaces)
        out: dict[Any, Any] = {}
        at = 0
        for key, sub in parts:
            size = spaces.flatdim(sub)
            out[key] = _unflatten(sub, flat[:, at : at + size])
            at += size
        return out if isinstance(space, spaces.Dict) else tuple(out.values())
    if isinstance(space, spaces.Discrete):
        return (space.start + flat.argmax(axis=1)).astype(space.dtype)
    if isinstance(space, spaces.MultiDiscrete):
        sizes = space.nvec.flatten()
        starts = np.cumsum(sizes) - sizes
        values = [flat[:, s : s + k].argmax(axis=1) for s, k in zip(starts, sizes, strict=True)]
        indices = np.stack(values, axis=1) if values else np.zeros((n, 0), np.int64)
        return indices.astype(space.dtype).reshape(n, *space.shape) + space.start
    assert isinstance(space, (spaces.Box, spaces.MultiBinary)), type(space)
    return flat.astype(space.dtype).reshape(n, *space.shape)
