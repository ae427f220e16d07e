"""Recorded datasets held once: :class:`RecordedEpisodes`, read from OGBench's layout or
Minari's episodes, and the buffer that holds one (:meth:`herkit.HerReplayBuffer.from_dataset`).

A dataset is its states, one row each, episodes one after another, and its actions; it is
held as it was read (no copy where its dtypes are the buffer's). A transition is an index:
transition ``t`` of an episode whose first state is row ``f`` is ``(s[f+t], a[f+t],
s[f+t+1])``, its achieved goals those states' goals and its desired goal its episode's last
state's goal (OGBench's layout holds no goals: a state's goal is the state, or its first
``goal_size`` coordinates, a view of it) or its recorded desired goal (Minari's). The
buffer gathers each column of a sample from these states by index
(:meth:`RecordedEpisodes.take`), as OGBench's ``GCDataset`` draws its goals as indices.
Besides the states, a transition holds a few numbers: its state row, its goal's row, its
reward, its goal-free reward part, whether it reached its goal and whether it ended its
episode (about 26 bytes).

Two layouts are read:

- **OGBench's** (a ``.npz`` file or a mapping of arrays), in the three forms OGBench has:

  - its files (what OGBench downloads and its generation scripts write):
    ``observations (N, ...)``, ``actions (N, ...)`` and ``terminals (N,)``, one row per
    state, ``terminals`` true on each episode's last row (``qpos``, ``qvel`` and other keys
    are ignored). An episode of ``L`` rows gives ``L - 1`` transitions; the action of its
    last row has no successor;
  - ``ogbench.load_dataset(path, compact_dataset=True)``'s: the file's rows with
    ``valids (N,)``, 0 on each episode's last row (the row without a transition); its
    ``terminals`` (true on an episode's last two rows) are not read;
  - ``ogbench.load_dataset(path)``'s (regular): one row per transition,
    ``next_observations (N, ...)`` beside ``observations``, ``terminals`` true on each
    episode's last transition. Its states are taken back as the file holds them (an
    episode's next observations are its next rows' observations, else a DatasetError).

  Either way an episode ends by a timeout: the layout does not tell a real termination from
  the end of a recording.
- **Minari's** (a ``minari`` dataset object, local): its episodes' ``observations`` (a
  GoalEnv dict of arrays one longer than the actions), ``actions``, ``rewards``,
  ``terminations``; the env's rewards are kept.

Every problem of a file is a :class:`DatasetError` (a ValueError) of one line that names
the file and what is wrong, raised before anything is built: not an ``.npz``, arrays
stored as Python objects (never unpickled), a missing array, arrays of different lengths,
NaN or infinity, no episode of two states. A file's size and SHA-256 are kept
(:class:`DatasetSource`), so that a checkpoint names its dataset instead of holding it, and
a resume against another file is refused.
"""

from __future__ import annotations

import copy
import hashlib
import os
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from herkit.buffer.backend import NUMPY, ArrayOps
from herkit.buffer.goal_env import GOAL_KEYS

__all__ = [
    "OGBENCH_KEYS",
    "DatasetError",
    "DatasetSource",
    "MissingDataset",
    "RecordedEpisodes",
    "check_dataset_file",
    "from_dataset",
    "goal_size_for",
    "read_ahead",
    "read_dataset",
    "read_for_env",
    "read_minari",
    "read_ogbench",
    "unprefixed",
]

OGBENCH_KEYS = ("observations", "actions", "terminals")
"""The arrays an OGBench-layout dataset must hold."""

OGBENCH_FORMS = ("next_observations", "valids")
"""The arrays that make a dataset ``ogbench.load_dataset``'s regular form
(``next_observations``) or its compact form (``valids``), where one is held."""

TRANSITION_COLUMNS = ("reward", "reward_extra", "success", "terminated")
"""The columns a recorded transition holds besides its states (the env's terms of
:mod:`herkit.buffer.env_terms`); a store-time buffer adds its stored goals."""


class DatasetError(ValueError):
    """A dataset that cannot be read, in one line naming the file and the problem."""


class MissingDataset(DatasetError, FileNotFoundError):
    """A dataset path that names no file."""

    def __init__(self, message: str, path: str) -> None:
        super().__init__(message)
        self.filename = path

    def __str__(self) -> str:
        return str(self.args[0])


@dataclass(frozen=True)
class DatasetSource:
    """Where a dataset was read from: the file's absolute path, size and SHA-256 (what a
    checkpoint keeps instead of the data)."""

    path: str
    bytes: int
    sha256: str

    @classmethod
    def of_file(cls, path: str | os.PathLike[str]) -> DatasetSource:
        """The source of the file at ``path`` (read once for its digest)."""
        digest = hashlib.sha256()
        with open(path, "rb") as file:
            for chunk in iter(lambda: file.read(1 << 22), b""):
                digest.update(chunk)
        return cls(str(Path(path).resolve()), os.path.getsize(path), digest.hexdigest())

    def to_dict(self) -> dict[str, Any]:
        """JSON values."""
        return {"path": self.path, "bytes": self.bytes, "sha256": self.sha256}

    def check_same(self, other: DatasetSource) -> None:
        """DatasetError unless ``other`` (the file found now) is this source's file."""
        if (other.bytes, other.sha256) != (self.bytes, self.sha256):
            raise DatasetError(
                f"dataset {other.path!r} is not the file this buffer was built from (its size "
                f"or SHA-256 differs from the recorded {self.bytes:,} bytes, "
                f"{self.sha256[:12]}...): restore that file, or train anew on this one"
            )


class RecordedEpisodes:
    """Whole recorded episodes, their states held once (see the module's docstring).

    ``states`` maps ``observation`` (and, where recorded, ``achieved_goal`` and
    ``desired_goal``) to arrays of one row per state; without achieved goals a state's goal
    is its first ``goal_size`` coordinates (None: the whole state), a view of it. ``action``
    has one row per state too (an episode's last row unused). ``first_row`` is each
    episode's first state row and ``lengths`` its transitions. ``terminated`` and
    ``reward`` are per transition, where recorded (None: never terminated; the rewards of
    ``reward_fn``).
    """

    def __init__(
        self,
        states: Mapping[str, np.ndarray],
        action: np.ndarray,
        first_row: np.ndarray,
        lengths: np.ndarray,
        terminated: np.ndarray | None = None,
        reward: np.ndarray | None = None,
        source: DatasetSource | None = None,
        goal_size: int | None = None,
    ) -> None:
        self.states = dict(states)
        self.action = action
        self.lengths = np.asarray(lengths, np.int64)
        """Transitions of each episode (each at least one)."""
        self.first_row = np.asarray(first_row, np.int64)
        self.starts = np.cumsum(self.lengths) - self.lengths
        """Each episode's first transition."""
        self.transitions = int(self.lengths.sum())
        self.episodes = len(self.lengths)
        self.recorded_terminated = terminated
        self.recorded_reward = reward
        """The env's rewards of the transitions, where recorded (None: ``reward_fn``'s)."""
        self.source = source
        self.goal_size = goal_size
        index = np.int32 if len(action) < 2**31 - 1 else np.int64  # 4 bytes a row where it fits
        steps = np.arange(self.transitions, dtype=index) - np.repeat(self.starts, self.lengths)
        self.state_row = (np.repeat(self.first_row, self.lengths) + steps).astype(index)
        """The state row of each transition's first state (host)."""
        last = np.repeat(self.first_row + self.lengths, self.lengths).astype(index)
        self.goal_row = self.state_row if "desired_goal" in self.states else last
        """The state row whose goal is each transition's desired goal (host)."""
        self.ops: ArrayOps = NUMPY
        self.columns: dict[str, Any] = {}
        """The transitions' own columns (:data:`TRANSITION_COLUMNS`, in the buffer's
        backend once placed)."""
        self._rows: dict[str, Any] = {"state": self.state_row, "goal": self.goal_row}

    @property
    def goal_shape(self) -> tuple[int, ...]:
        """The shape of a goal."""
        if "achieved_goal" in self.states:
            return tuple(self.states["achieved_goal"].shape[1:])
        shape = tuple(self.states["observation"].shape[1:])
        return shape if self.goal_size is None else (self.goal_size,)

    @property
    def nbytes(self) -> int:
        """Bytes held: the states, actions, index rows and transition columns."""
        arrays = [*self.states.values(), self.action, self.state_row, *self.columns.values()]
        if self.goal_row is not self.state_row:
            arrays.append(self.goal_row)
        if self.ops.device is not None:
            arrays += list(self._rows.values())
        return sum(int(array.nbytes) for array in arrays)

    def place(self, ops: ArrayOps, fields: Mapping[str, Any]) -> None:
        """Hold the states in ``ops``' arrays with the dtypes of ``fields`` (the buffer's
        column specs; a DatasetError where a shape differs) and make the transitions'
        columns (zeros but the recorded ``terminated``; the buffer scores the others)."""
        given = {"observation": self.states["observation"], "action": self.action}
        given |= {name: value for name, value in self.states.items() if name != "observation"}
        label = "dataset" if self.source is None else f"dataset {self.source.path!r}"
        for name, value in given.items():
            spec = fields[name]
            if tuple(value.shape[1:]) != tuple(spec.shape):
                raise DatasetError(
                    f"{label}: its {name} rows have shape {tuple(value.shape[1:])}, "
                    f"the buffer stores {tuple(spec.shape)}"
                )
        self.ops = ops
        self.states = {
            name: _placed(ops, value, fields[name].dtype) for name, value in self.states.items()
        }
        self.action = _placed(ops, self.action, fields["action"].dtype)
        if "achieved_goal" not in self.states:  # a view of each state's first coordinates
            observation = self.states["observation"]
            n, shape = len(observation), tuple(fields["achieved_goal"].shape)
            width = int(np.prod(shape))
            self._goal_view = observation.reshape(n, -1)[:, :width].reshape(n, *shape)
        n = self.transitions
        self.columns = {
            name: ops.zeros((n, *fields[name].shape), fields[name].dtype)
            for name in fields
            if name in TRANSITION_COLUMNS or name.startswith("info.") or name == "relabel_goal"
        }
        if self.recorded_terminated is not None:
            ops.assign(self.columns["terminated"], slice(0, n), self.recorded_terminated)
        if ops.device is not None:  # the index rows beside the states, for draws there
            self._rows = {
                "state": ops.from_host(self.state_row),
                "goal": ops.from_host(self.goal_row),
            }

    @property
    def achieved_goals(self) -> Any:
        """The goal of each state, one row per state (a view of the states where they hold
        no goals of their own)."""
        return self._state("achieved_goal")

    def _state(self, name: str) -> Any:
        """The per-state array ``name`` (``achieved_goal``: the goal view where derived)."""
        if name == "achieved_goal" and "achieved_goal" not in self.states:
            return self._goal_view
        return self.states[name]

    def _rows_of(self, kind: str, t: Any) -> Any:
        """The state rows of transitions ``t``: ``state`` (their first state) or ``goal``."""
        if isinstance(t, np.ndarray):
            return (self.state_row if kind == "state" else self.goal_row)[t]
        return self._rows[kind].index_select(0, t)

    def take(self, name: str, t: Any) -> Any:
        """Column ``name`` of transitions ``t`` (host int64 arrays, or tensors where the
        states live), gathered from the states by index."""
        ops = self.ops
        if name in self.columns:
            return ops.take(self.columns[name], t)
        if name == "desired_goal":
            state = "desired_goal" if "desired_goal" in self.states else "achieved_goal"
            return ops.take(self._state(state), self._rows_of("goal", t))
        rows = self._rows_of("state", t)
        if name.startswith("next_"):
            rows, name = rows + 1, name[len("next_") :]
        if name == "action":
            return ops.take(self.action, rows)
        if name not in ("observation", "achieved_goal"):
            raise KeyError(f"a recorded dataset has no column {name!r}")
        return ops.take(self._state(name), rows)

    def assign(self, name: str, t: np.ndarray, values: Any) -> None:
        """Set the column ``name`` (one of the transitions' own) of transitions ``t``."""
        self.ops.assign(self.columns[name], t, values)

    def state(self) -> dict[str, np.ndarray]:
        """What a saved buffer keeps of it: the transitions' columns (the states are read
        again from the source file; a dataset given as arrays is kept whole, once)."""
        ops = self.ops
        arrays = {f"column.{name}": ops.to_host(value) for name, value in self.columns.items()}
        if self.source is None:
            arrays |= {f"state.{name}": ops.to_host(value) for name, value in self.states.items()}
            arrays |= {
                "action": ops.to_host(self.action),
                "first_row": self.first_row,
                "lengths": self.lengths,
            }
        return arrays

    def restore(self, arrays: Mapping[str, np.ndarray]) -> None:
        """Load the transitions' columns that :meth:`state` wrote."""
        for name, value in self.columns.items():
            saved = arrays.get(f"column.{name}")
            if saved is not None:
                self.ops.assign(value, slice(0, self.transitions), saved)

    @classmethod
    def from_state(
        cls, arrays: Mapping[str, np.ndarray], goal_size: int | None
    ) -> RecordedEpisodes:
        """The episodes of a saved buffer that held its dataset's states (no source file):
        ``arrays`` are those :meth:`state` wrote."""
        states = unprefixed(arrays, "state.")
        return cls(
            states, arrays["action"], arrays["first_row"], arrays["lengths"], goal_size=goal_size
        )


def unprefixed(arrays: Mapping[str, np.ndarray], prefix: str) -> dict[str, np.ndarray]:
    """The arrays whose names start with ``prefix``, by the rest of their names (a part of
    a saved buffer's arrays)."""
    return {name[len(prefix) :]: value for name, value in arrays.items() if name.startswith(prefix)}


def _placed(ops: ArrayOps, value: np.ndarray, dtype: Any) -> Any:
    """``value`` in ``ops``' arrays with ``dtype`` (no copy where it already fits)."""
    value = np.asarray(value).astype(dtype, copy=False)
    return value if ops.device is None else ops.from_host(np.ascontiguousarray(value))


_READ_AHEAD: dict[tuple[str, int, int], RecordedEpisodes] = {}
"""Datasets read by :func:`read_ahead`, by file and its size and time, until read again."""


def read_ahead(path: str | os.PathLike[str]) -> RecordedEpisodes:
    """The episodes of the ``.npz`` file ``path``, read now (every problem said now, before
    anything slow starts) and handed over to the next :func:`read_dataset` of the same
    unchanged file in this process, instead of reading it twice."""
    recorded = read_dataset(path)
    _READ_AHEAD[_file_key(path)] = recorded
    return recorded


def _file_key(path: str | os.PathLike[str]) -> tuple[str, int, int]:
    stat = os.stat(path)
    return str(Path(path).resolve()), stat.st_size, stat.st_mtime_ns


def read_dataset(source: Any, goal_size: int | None = None) -> RecordedEpisodes:
    """The episodes of ``source``: a path to an OGBench ``.npz``, a mapping of its arrays,
    or a Minari dataset; a :class:`DatasetError` names what is missing or malformed."""
    if hasattr(source, "iterate_episodes"):
        return read_minari(source)
    if isinstance(source, str | os.PathLike) and _READ_AHEAD and os.path.exists(source):
        ahead = _READ_AHEAD.pop(_file_key(source), None)
        if ahead is not None:
            ahead.goal_size = goal_size
            return ahead
    if isinstance(source, str | os.PathLike):
        return read_ogbench(_read_npz(os.fspath(source)), goal_size, DatasetSource.of_file(source))
    if isinstance(source, Mapping):
        return read_ogbench(source, goal_size)
    raise DatasetError(
        "dataset must be a path to an OGBench-layout .npz, a mapping of its arrays or a "
        f"Minari dataset, got {type(source).__name__}"
    )


def check_dataset_file(path: str | os.PathLike[str]) -> dict[str, tuple[int, ...]]:
    """The shapes of the OGBench arrays of the ``.npz`` file ``path``; a DatasetError (one
    line naming the file) unless it holds them as numbers, one row per state. Read from the
    arrays' headers alone, in milliseconds whatever the file's size (what a command checks
    before it starts)."""
    path = os.fspath(path)
    label = f"dataset {path!r}"
    if not os.path.exists(path):
        raise MissingDataset(f"{label}: no such file", path)
    if os.path.isdir(path):
        raise DatasetError(f"{label} is a folder, not an .npz file")
    if not zipfile.is_zipfile(path):
        with open(path, "rb") as file:
            head = file.read(6)
        what = "a .npy array" if head == b"\x93NUMPY" else "not a zip archive"
        raise DatasetError(
            f"{label} is not an .npz file ({what}): expected numpy's .npz of the arrays "
            f"{', '.join(OGBENCH_KEYS)}"
        )
    try:
        with zipfile.ZipFile(path) as archive:
            names = {name.removesuffix(".npy"): name for name in archive.namelist()}
            missing = [key for key in OGBENCH_KEYS if key not in names]
            if missing:
                raise DatasetError(
                    f"{label} lacks the array(s) {', '.join(missing)} (OGBench's layout: "
                    f"{', '.join(OGBENCH_KEYS)}; it holds {', '.join(names) or 'none'})"
                )
            shapes: dict[str, tuple[int, ...]] = {}
            for key in (*OGBENCH_KEYS, *(key for key in OGBENCH_FORMS if key in names)):
                with archive.open(names[key]) as member:
                    version = np.lib.format.read_magic(member)
                    header = (
                        np.lib.format.read_array_header_1_0
                        if version == (1, 0)
                        else np.lib.format.read_array_header_2_0
                    )
                    shape, _, dtype = header(member)
                if dtype.hasobject:
                    raise DatasetError(
                        f"{label}: its array {key!r} holds Python objects (pickled data), "
                        "which herkit never loads: store numeric arrays"
                    )
                if not (dtype.kind == "b" or np.issubdtype(dtype, np.number)):
                    raise DatasetError(f"{label}: {key} must be numeric, got dtype {dtype}")
                shapes[key] = tuple(shape)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as error:
        if isinstance(error, DatasetError):
            raise
        raise DatasetError(f"{label} cannot be read as an .npz file: {error}") from None
    _check_shapes(label, shapes)
    return shapes


def _check_shapes(label: str, shapes: Mapping[str, tuple[int, ...]]) -> None:
    """A DatasetError unless ``shapes`` (by array name) are those of one of OGBench's forms
    (see the module's docstring): one row per state (per transition in the regular form),
    ``terminals`` and ``valids`` flat, ``next_observations`` shaped as ``observations``."""
    if set(OGBENCH_FORMS) <= shapes.keys():
        raise DatasetError(
            f"{label} holds both next_observations and valids, which no form of OGBench's "
            "has: save the file's arrays as ogbench.load_dataset returns them (one form) or "
            "as the file holds them (observations, actions, terminals)"
        )
    rows = [shape[0] if shape else None for shape in shapes.values()]
    transitions = "next_observations" in shapes
    if len(set(rows)) != 1 or None in rows or len(shapes["observations"]) < 2:
        per = "transition" if transitions else "state"
        names = [*OGBENCH_KEYS, *(key for key in OGBENCH_FORMS if key in shapes)]
        raise DatasetError(
            f"{label}: observations (N, ...), actions (N, ...) and terminals (N,) must have one "
            f"row per {per}, got shapes "
            + ", ".join(
                str(shapes[name]) if name in OGBENCH_KEYS else f"{name} {shapes[name]}"
                for name in names
            )
        )
    if transitions and shapes["next_observations"] != shapes["observations"]:
        raise DatasetError(
            f"{label}: next_observations must be shaped as observations "
            f"{shapes['observations']}, got {shapes['next_observations']}"
        )


def read_for_env(
    path: str | os.PathLike[str], env_id: str, spaces: Any, action_space: Any
) -> RecordedEpisodes:
    """The dataset at ``path`` (:func:`read_dataset`) read for the env ``env_id`` of
    observation ``spaces`` and ``action_space``: states and actions of the env's shapes (a
    DatasetError naming both where not), and the goal of a state its first coordinates where
    the env's goals are narrower than its states (OGBench's ``-oraclerep`` envs: ``xy``)."""
    recorded = read_dataset(path)
    recorded.goal_size = goal_size_for(recorded, path, env_id, spaces, action_space)
    return recorded


def goal_size_for(
    recorded: RecordedEpisodes,
    path: str | os.PathLike[str],
    env_id: str,
    spaces: Any,
    action_space: Any,
) -> int | None:
    """The goal size the dataset ``recorded`` (read from ``path``) is read with for the env
    (see :func:`read_for_env`): None where a goal is the whole state, else its first
    coordinates; a DatasetError naming the file and the env where they do not fit."""
    label = f"dataset {str(path)!r}"
    action = tuple(action_space.shape or ())
    states = tuple(recorded.states["observation"].shape[1:])
    actions = tuple(recorded.action.shape[1:])
    observation, goal = spaces["observation"].shape, spaces["desired_goal"].shape
    if states != observation:
        raise DatasetError(
            f"{label}: its observations have shape {states}, {env_id}'s have {observation}: "
            "a dataset of another env?"
        )
    if actions != action:
        raise DatasetError(f"{label}: its actions have shape {actions}, {env_id}'s have {action}")
    size, width = int(np.prod(goal)), int(np.prod(observation))
    if size > width:
        raise DatasetError(
            f"{label}: {env_id}'s goals ({size} numbers) are wider than its states ({width}): "
            "herkit takes a recorded state's goal from its coordinates"
        )
    return None if size == width else size


def _read_npz(path: str) -> dict[str, np.ndarray]:
    """The OGBench arrays of the ``.npz`` file ``path`` (checked by
    :func:`check_dataset_file` first), never unpickling anything."""
    check_dataset_file(path)
    try:
        with np.load(path, allow_pickle=False) as archive:
            held = [key for key in (*OGBENCH_KEYS, *OGBENCH_FORMS) if key in archive.files]
            return {key: archive[key] for key in held}
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as error:
        raise DatasetError(f"dataset {path!r} cannot be read as an .npz file: {error}") from None


def read_ogbench(
    arrays: Mapping[str, Any], goal_size: int | None = None, source: DatasetSource | None = None
) -> RecordedEpisodes:
    """Episodes of OGBench's layout, in any of its forms (see the module)."""
    label = "dataset" if source is None else f"dataset {source.path!r}"
    missing = [key for key in OGBENCH_KEYS if key not in arrays]
    if missing:
        raise DatasetError(
            f"{label} lacks {', '.join(missing)} (OGBench's layout: {', '.join(OGBENCH_KEYS)})"
        )
    names = [*OGBENCH_KEYS, *(key for key in OGBENCH_FORMS if key in arrays)]
    given = {name: np.asarray(arrays[name]) for name in names}
    for name, value in given.items():
        if value.dtype == object or not (
            value.dtype == bool or np.issubdtype(value.dtype, np.number)
        ):
            raise DatasetError(f"{label}: {name} must be numeric, got dtype {value.dtype}")
    _check_shapes(label, {name: value.shape for name, value in given.items()})
    obs, actions = given["observations"], given["actions"]
    n = len(obs)
    if n == 0:
        raise DatasetError(f"{label}: no episode of two states or more (no transition to store)")
    if given["terminals"].reshape(-1).shape != (n,) or any(
        given[name].reshape(-1).shape != (n,) for name in ("valids",) if name in given
    ):
        raise DatasetError(
            f"{label}: terminals{' and valids' * ('valids' in given)} must hold one number "
            f"per row, got shapes " + ", ".join(f"{k} {v.shape}" for k, v in given.items())
        )
    for name in ("observations", "actions", "next_observations"):
        if name in given:
            _check_finite(label, name, given[name])
    if "next_observations" in given:  # load_dataset's regular form: a row per transition
        obs, actions, last = _states_of_transitions(
            label, obs, actions, given["next_observations"], given["terminals"].reshape(-1)
        )
    elif "valids" in given:  # its compact form: the file's rows, 0 where no transition is
        last = given["valids"].reshape(-1) == 0
    else:
        last = given["terminals"].reshape(-1) != 0
    n = len(obs)
    ends = np.flatnonzero(last)
    if n and (len(ends) == 0 or ends[-1] != n - 1):
        ends = np.append(ends, n - 1)  # the last episode, recorded without its terminal
    starts = np.concatenate([[0], ends[:-1] + 1]) if len(ends) else ends
    rows = ends - starts + 1
    keep = rows >= 2  # a one-row episode has no transition
    if not keep.any():
        raise DatasetError(f"{label}: no episode of two states or more (no transition to store)")
    width = int(np.prod(obs.shape[1:]))
    if goal_size is not None and not 0 < goal_size <= width:
        raise DatasetError(
            f"{label}: goal_size must be in 1..{width} (a state's coordinates), got {goal_size}"
        )
    return RecordedEpisodes(
        {"observation": obs},
        actions,
        starts[keep],
        rows[keep] - 1,
        source=source,
        goal_size=goal_size,
    )


def _check_finite(label: str, name: str, value: np.ndarray) -> None:
    """A DatasetError where the float array ``value`` (the dataset's ``name``) holds NaN or
    infinity, naming how many rows and the first."""
    if value.dtype.kind != "f":
        return
    finite = np.isfinite(value.reshape(len(value), -1)).all(axis=1)
    if not finite.all():
        bad = int((~finite).sum())
        raise DatasetError(
            f"{label}: {name} hold non-finite values (NaN or inf) in {bad:,} rows, the "
            f"first at row {int(np.argmin(finite)):,}"
        )


def _states_of_transitions(
    label: str,
    obs: np.ndarray,
    actions: np.ndarray,
    next_obs: np.ndarray,
    terminals: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The states, actions (one row per state, an episode's last unused) and each row's
    "last of its episode" of ``ogbench.load_dataset``'s regular form: transitions whose
    ``terminals`` mark each episode's last one. Within an episode each next observation
    must be the next row's observation (as OGBench's loader makes them), else a
    DatasetError: these transitions are not episodes of consecutive states."""
    n = len(obs)
    last = terminals != 0
    last[-1] = True  # the last transition ends its episode, marked or not
    inner = np.flatnonzero(~last[:-1])  # rows whose successor is in their episode
    equal = (next_obs[inner] == obs[inner + 1]).reshape(len(inner), -1).all(axis=1)
    if not equal.all():
        row = int(inner[np.argmin(equal)])
        raise DatasetError(
            f"{label}: its next_observations are not its next rows' observations (row "
            f"{row:,}'s, inside an episode by its terminals): herkit reads episodes of "
            "consecutive states, as ogbench.load_dataset returns them; save the file's own "
            "arrays (observations, actions, terminals) or load_dataset's compact form "
            "(compact_dataset=True)"
        )
    ends = np.flatnonzero(last)
    before = np.concatenate([[0], np.cumsum(last)[:-1]])  # episodes ended before each row
    at = np.arange(n) + before  # each transition's first state, in the states' rows
    final = ends + before[ends] + 1  # each episode's last state
    states = np.empty((n + len(ends), *obs.shape[1:]), obs.dtype)
    states[at], states[final] = obs, next_obs[ends]
    moves = np.empty((n + len(ends), *actions.shape[1:]), actions.dtype)
    moves[at], moves[final] = actions, actions[ends]  # the last state's action is unused
    ending = np.zeros(n + len(ends), bool)
    ending[final] = True
    return states, moves, ending


def read_minari(dataset: Any) -> RecordedEpisodes:
    """Episodes of a Minari dataset whose observations are GoalEnv dicts."""
    parts: dict[str, list[np.ndarray]] = {
        key: [] for key in (*GOAL_KEYS, "action", "terminated", "reward")
    }
    lengths = []
    for episode in dataset.iterate_episodes():
        obs = episode.observations
        if not isinstance(obs, Mapping) or not set(GOAL_KEYS) <= set(obs):
            raise DatasetError(
                "a Minari dataset's observations must be GoalEnv dicts (observation, "
                f"achieved_goal, desired_goal), got {type(obs).__name__}"
            )
        steps = len(episode.actions)
        if steps == 0:
            continue
        lengths.append(steps)
        for key in GOAL_KEYS:
            parts[key].append(np.asarray(obs[key])[: steps + 1])
        actions = np.asarray(episode.actions)
        parts["action"].append(np.concatenate([actions, actions[-1:]]))  # one row per state
        parts["terminated"].append(np.asarray(episode.terminations, bool))
        parts["reward"].append(np.asarray(episode.rewards, np.float32))
    if not lengths:
        raise DatasetError("the Minari dataset has no episode with a step")
    joined = {key: np.concatenate(value) for key, value in parts.items()}
    counts = np.asarray(lengths, np.int64)
    first_row = np.cumsum(counts + 1) - (counts + 1)
    states = {key: joined[key] for key in GOAL_KEYS}
    return RecordedEpisodes(
        states, joined["action"], first_row, counts, joined["terminated"], joined["reward"]
    )


def from_dataset(
    cls: Any,
    source: Any,
    reward_fn: Any,
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
    coordinates where given). The dataset is held once, after a ring of ``room`` slots for
    steps added later (``capacity``, where given, is the dataset's transitions plus that
    room); the ring drops its own oldest episodes when full, never the dataset's.
    ``reward_fn`` is the env's ``compute_reward``; other keyword arguments (``settings``,
    ``value_goals``, ``strategy``, ``seed``...) go to the constructor. Episodes are whole
    and closed, so every strategy applies.
    """
    if isinstance(source, RecordedEpisodes):  # its arrays shared, its columns the buffer's own
        recorded = copy.copy(source)
    else:
        recorded = read_dataset(source, goal_size)
    if isinstance(room, bool) or not isinstance(room, int) or room < 0:
        raise ValueError(f"room must be an int >= 0, got {room!r}")
    if capacity is not None:
        if capacity < recorded.transitions:
            raise ValueError(
                f"{recorded.transitions:,} recorded transitions do not fit in capacity "
                f"{capacity:,} (raise capacity, or leave it out: the dataset plus room)"
            )
        room = capacity - recorded.transitions
    n_envs = kwargs.pop("n_envs", 1)
    action, observation = recorded.action, recorded.states["observation"]
    goal = recorded.states.get("achieved_goal", observation)
    return cls(
        room,
        observation_shape=observation.shape[1:],
        goal_shape=recorded.goal_shape,
        action_shape=action.shape[1:],
        observation_dtype=_float_or_own(observation.dtype),
        goal_dtype=_float_or_own(goal.dtype),
        action_dtype=np.float32 if np.issubdtype(action.dtype, np.floating) else np.int64,
        reward_fn=reward_fn,
        n_envs=n_envs,
        recorded=recorded,
        **kwargs,
    )


def _float_or_own(dtype: np.dtype) -> Any:
    """The stored dtype of a dataset's states: float32 for floats, else their own (pixels)."""
    return np.float32 if np.issubdtype(dtype, np.floating) else dtype
