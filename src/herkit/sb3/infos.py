"""The info dicts of ``copy_info_dict=True``: numeric fields as columns, the rest per step.

SB3 deep-copies every info dict into the buffer and hands ``compute_reward`` an array of
them. herkit keeps what can be a column as a column: the fields that are numeric scalars
(bools, ints, floats) in the first infos stored become ``info_keys`` of the buffer, stored
as float64 beside the transition. Everything else (``terminal_observation``, Monitor's
``episode``, a field that is a dict or an array, a field that appears later) is deep-copied
into one object slot per transition, where it occurs; a step whose column fields are
missing or of another kind keeps its whole info there. ``compute_reward`` then gets, as
from SB3, a numpy array of info dicts, one per sample, rebuilt from the two.

The columns reach ``compute_reward`` through the core buffer, which gathers its info
columns for every row it scores; one extra column, :data:`SLOT_KEY`, holds each step's
slot, so that the per-step part can be found for the same rows.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

SLOT_KEY = "herkit.sb3.slot"
"""The info column holding each stored step's slot (never shown to ``compute_reward``)."""


def info_value(info: Mapping[str, Any], key: str) -> Any:
    """``info[key]``, with an error that names the key when it is missing (``info_keys``)."""
    if key not in info:
        raise ValueError(f"info_keys: the env's info has no {key!r} (it has {sorted(info)})")
    return info[key]


class WholeInfo(dict):
    """A step's complete info, kept whole because its column fields did not fit."""


class InfoStore:
    """Columns for the numeric fields found in the first infos, object slots for the rest.

    Args:
        capacity: slots of the buffer (one per stored step).
        first_infos: the infos of the first step, one per env.
    """

    def __init__(self, capacity: int, first_infos: Sequence[Mapping[str, Any]]) -> None:
        kinds = [{key: _kind(value) for key, value in info.items()} for info in first_infos]
        common = set(kinds[0]).intersection(*kinds[1:]) if kinds else set()
        self.kinds = {
            key: kinds[0][key]
            for key in kinds[0]
            if key in common and kinds[0][key] and all(k[key] == kinds[0][key] for k in kinds)
        }
        """Column fields and the numpy dtype their values are given back as."""
        self.extras = np.full(capacity, None, dtype=object)

    @property
    def keys(self) -> tuple[str, ...]:
        """The info fields stored as columns (the core buffer's ``info_keys``)."""
        return tuple(self.kinds)

    def describe(self, infos: Sequence[Mapping[str, Any]]) -> str:
        """What was chosen of the first ``infos``, in words, for the notice given once."""
        columns = ", ".join(f"{key} ({kind})" for key, kind in self.kinds.items()) or "none"
        other = {key for info in infos for key in info if key not in self.kinds}
        rest = ", ".join(sorted(other)) or "none"
        return (
            "herkit.sb3.HerReplayBuffer(copy_info_dict=True): info fields stored as columns: "
            f"{columns}. Other fields of the first infos ({rest}), and any field that appears "
            "later (such as terminal_observation at an episode's end), are stored per step "
            "where they occur. compute_reward gets an array of info dicts, one per sample, as "
            "from SB3's buffer; pass info_keys=(...) to store only those fields and give "
            "compute_reward one dict of arrays instead."
        )

    def stage(
        self, infos: Sequence[Mapping[str, Any]], slots: np.ndarray
    ) -> tuple[dict[str, np.ndarray], tuple[np.ndarray, np.ndarray]]:
        """The columns of one step's ``infos`` (:meth:`split`), its per-step parts written
        ahead at ``slots``, and what they replaced (to put back if the step is refused)."""
        columns, extras = self.split(infos, slots)
        before = self.extras[slots]
        self.extras[slots] = extras
        return columns, (slots, before)

    def split(
        self, infos: Sequence[Mapping[str, Any]], slots: np.ndarray
    ) -> tuple[dict[str, np.ndarray], list[dict[str, Any] | None]]:
        """The column values (float64, with the slots) and per-step parts of one step's infos."""
        columns = {key: np.full(len(infos), np.nan) for key in self.kinds}
        extras: list[dict[str, Any] | None] = []
        for env, info in enumerate(infos):
            fits = all(key in info and _kind(info[key]) == kind for key, kind in self.kinds.items())
            if not fits:
                extras.append(WholeInfo(copy.deepcopy(dict(info))))
                continue
            for key in self.kinds:
                columns[key][env] = float(info[key])
            rest = {key: value for key, value in info.items() if key not in self.kinds}
            extras.append(copy.deepcopy(rest) if rest else None)
        columns[SLOT_KEY] = slots.astype(np.float64)
        return columns, extras

    def dicts(self, columns: Mapping[str, np.ndarray]) -> np.ndarray:
        """The info dicts of the rows whose columns (with :data:`SLOT_KEY`) are given, as an
        object array; each dict is new, its values are the stored ones (not copied)."""
        slots = np.asarray(columns[SLOT_KEY]).astype(np.int64)
        kinds = self.kinds.items()
        values = [np.asarray(columns[key]).astype(kind).tolist() for key, kind in kinds]
        keys = tuple(self.kinds)
        rows = zip(*values, strict=True) if values else [()] * len(slots)
        result = np.empty(len(slots), dtype=object)
        for i, (row, extra) in enumerate(zip(rows, self.extras[slots], strict=True)):
            if isinstance(extra, WholeInfo):  # its column fields did not fit: kept whole
                result[i] = dict(extra)
            else:
                result[i] = dict(zip(keys, row, strict=True)) | (extra or {})
        return result


def _kind(value: Any) -> str | None:
    """``bool``, ``int64`` or ``float64`` for a numeric scalar, None for anything else."""
    if isinstance(value, np.ndarray) and value.shape == ():
        value = value[()]
    if isinstance(value, bool | np.bool_):
        return "bool"
    if isinstance(value, int | np.integer) and abs(int(value)) < 2**53:
        return "int64"
    if isinstance(value, float | np.floating):
        return "float64"
    return None
