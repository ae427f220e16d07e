"""The Python state of objects, as a CUDA graph's replay would leave it: for the rule that a
step that may be compiled or captured changes no Python state.

A replay reruns a step's device work, not its Python: an attribute, counter or flag the
step sets is set once, at capture, and then never again, while the step's tensors go on
changing. :class:`PythonState` snapshots what Python holds from some roots (attributes,
list, dict and set contents, numpy arrays, recursively; a tensor as the object it is, its
contents being device state), says what changed (:meth:`PythonState.changes`) and puts it
back (:meth:`PythonState.restore`). :class:`ReplayDouble` is a step run the way a replay
runs it on a CPU: the first call as it is (the capture), the later ones with every Python
change undone.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import torch

_ATOMS = (type(None), bool, int, float, complex, str, bytes, torch.dtype, torch.device)
_CODE = (
    types.FunctionType,
    types.MethodType,
    types.BuiltinFunctionType,
    functools.partial,
    types.ModuleType,
)


def _is_state(value: Any) -> bool:
    """Whether ``value`` is walked into (a Python object that holds Python state)."""
    if isinstance(value, (*_ATOMS, torch.Tensor, torch.Generator, type, *_CODE)):
        return False
    return isinstance(value, (list, tuple, dict, set, np.ndarray)) or hasattr(value, "__dict__")


class PythonState:
    """A snapshot of the Python state reachable from ``roots`` (see the module docstring)."""

    def __init__(self, roots: Iterable[Any]) -> None:
        self.saved: dict[int, tuple[Any, Any, str]] = {}
        for index, root in enumerate(roots):
            self._walk(root, f"root{index}")

    def _walk(self, value: Any, path: str) -> None:
        if id(value) in self.saved or not _is_state(value):
            return
        if isinstance(value, np.ndarray):
            self.saved[id(value)] = (value, value.copy(), path)
            return
        if isinstance(value, torch.nn.Module):  # its tensors' contents are device state
            items: dict[Any, Any] = {"training": value.training}
            self.saved[id(value)] = (value, items, path)
            for name, child in value.named_children():
                self._walk(child, f"{path}.{name}")
            return
        if isinstance(value, dict):
            items = dict(value)
            self.saved[id(value)] = (value, items, path)
            for key, item in items.items():
                self._walk(item, f"{path}[{key!r}]")
            return
        if isinstance(value, (list, tuple, set)):
            items = list(value)
            self.saved[id(value)] = (value, items, path)
            for i, item in enumerate(items):
                self._walk(item, f"{path}[{i}]")
            return
        items = dict(vars(value))
        self.saved[id(value)] = (value, items, path)
        for name, item in items.items():
            self._walk(item, f"{path}.{name}")

    def changes(self) -> list[str]:
        """What differs now from the snapshot, one line each (``path: before -> now``)."""
        found = []
        for value, items, path in self.saved.values():
            now = self._items(value)
            if isinstance(value, np.ndarray):
                if not np.array_equal(items, now, equal_nan=True):
                    found.append(f"{path}: an array's values changed")
            elif isinstance(items, dict):
                for key in items.keys() | now.keys():
                    before, after = items.get(key, _MISSING), now.get(key, _MISSING)
                    if before is not after and not _same(before, after):
                        found.append(f"{path}.{key}: {before!r:.60} -> {after!r:.60}")
            elif len(items) != len(now) or any(
                a is not b and not _same(a, b) for a, b in zip(items, now, strict=True)
            ):
                found.append(f"{path}: its items changed")
        return sorted(found)

    def restore(self) -> None:
        """Put the snapshot back (tensors' contents stay as they are)."""
        for value, items, _ in self.saved.values():
            if isinstance(value, np.ndarray):
                if value.flags.writeable:  # a read-only one cannot have changed
                    np.copyto(value, items)
            elif isinstance(value, torch.nn.Module):
                value.training = items["training"]
            elif isinstance(value, dict):
                value.clear()
                value.update(items)
            elif isinstance(value, list):
                value[:] = items
            elif isinstance(value, set):
                value.clear()
                value.update(items)
            elif not isinstance(value, tuple):
                vars(value).clear()
                vars(value).update(items)

    @staticmethod
    def _items(value: Any) -> Any:
        if isinstance(value, np.ndarray):
            return value
        if isinstance(value, torch.nn.Module):
            return {"training": value.training}
        if isinstance(value, dict):
            return dict(value)
        if isinstance(value, (list, tuple, set)):
            return list(value)
        return dict(vars(value))


_MISSING = object()
"""A key that is not there."""


def _same(a: Any, b: Any) -> bool:
    """Equal plain values (an atom rebound to an equal one is no change)."""
    return isinstance(a, _ATOMS) and type(a) is type(b) and a == b


class ReplayDouble:
    """``step`` run as a captured graph replays it, on a CPU: its first call as it is, the
    later ones with the Python state reachable from ``roots`` put back afterwards (the
    tensors' contents kept): what a step changes in Python then shows, as on a GPU, as a
    change that happened once."""

    def __init__(self, step: Callable[..., Any], roots: Callable[[], Iterable[Any]]) -> None:
        self.step, self.roots, self.calls = step, roots, 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        if self.calls == 1:
            return self.step(*args, **kwargs)
        state = PythonState(self.roots())
        try:
            return self.step(*args, **kwargs)
        finally:
            state.restore()
