"""Runs read from their log files, grouped by setting, and their seeds aggregated.

Runs are grouped by their ``config.json``: runs whose settings differ only in ``seed`` and
in :data:`IGNORED_SETTINGS` (bookkeeping that never changes what is learned) are seeds of
one group. A run without a readable ``config.json`` is a group of its own, labelled by its
directory name. Each group gets a legend label naming the settings that tell it apart.

Aggregation (:func:`aggregate_runs`) is pure and needs no matplotlib: each seed's series
(``success_rate`` and every ``*_loss`` column of ``progress.csv``, sorted by x; of repeated
x values the last is kept) is first smoothed by a trailing moving average over ``smooth``
evaluation points, then linearly interpolated onto the union of the seeds' x values,
restricted to the range that every seed covers (no extrapolation; a seed that never logged
a metric does not count for it). :mod:`herkit.presentation.plots` draws the groups; every
public name here is also importable from there.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

import numpy as np

from herkit.config.learning import BOOKKEEPING, flat_settings
from herkit.agents.registry import algo_names
from herkit.rundir.logs import read_progress
from herkit.rundir.paths import RunPaths

__all__ = [
    "IGNORED_SETTINGS",
    "SUCCESS",
    "X_AXES",
    "Curve",
    "Group",
    "XAxis",
    "aggregate_runs",
    "check_options",
    "groups_to_json",
    "moving_average",
    "progress_axis",
]

XAxis = Literal["env_steps", "wall_s", "updates"]
"""The ``x`` choices as a type."""
X_AXES: tuple[XAxis, ...] = get_args(XAxis)
"""Columns of ``progress.csv`` that can be the x axis."""
SUCCESS = "success_rate"
"""The evaluation success rate, the first panel."""
IGNORED_SETTINGS = ("seed", *BOOKKEEPING, "conventions", "machine", "env_import")
"""``config.json`` entries that do not split runs into groups: the seed, where and how a
run is written and shown, its budget and stopping rule (a longer run continues the same
learning), the evaluation and checkpoint cadence (evaluation uses its own envs), device
and threads, the ``conventions`` block (probed from the env, so fixed by the other
settings), the ``machine`` block (how the cores were used) and ``env_import`` (the
folder the env was imported from). The settings of the agents other than the run's
``algo`` are also ignored."""


@dataclass(frozen=True)
class Curve:
    """One metric of a group on a common grid: statistics over the ``n`` seeds at each x."""

    x: np.ndarray
    """Grid: the union of the seeds' x values within the range every seed covers."""
    mean: np.ndarray
    """Mean over the seeds at each grid point."""
    min: np.ndarray
    """Smallest seed value at each grid point."""
    max: np.ndarray
    """Largest seed value at each grid point."""
    sem: np.ndarray
    """Standard error of the mean (sample std / sqrt(n)); 0 where n is 1."""
    n: int
    """Seeds that logged this metric (and so are in the statistics)."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready numbers: ``x``, ``mean``, ``min``, ``max``, ``sem`` lists and ``n``."""
        arrays = {name: getattr(self, name).tolist() for name in ("x", "mean", "min", "max", "sem")}
        return arrays | {"n": self.n}


@dataclass(frozen=True)
class Group:
    """Runs that differ only in their seed, drawn as one line."""

    label: str
    """Legend text: what tells this group from the others (or env and algo when it is
    alone, or the directory name for a run without config.json), and its seed count."""
    runs: tuple[Path, ...]
    """Run directories, in the order given."""
    seeds: tuple[int | None, ...]
    """Seed of each run (None without config.json)."""
    x: XAxis
    """The x axis: ``env_steps``, ``wall_s`` or ``updates`` (gradient steps: offline runs)."""
    curves: dict[str, Curve]
    """``success_rate`` then the losses (columns ending in ``_loss``), by name."""
    settings: dict[str, Any] = field(default_factory=dict)
    """The grouping settings that tell this group from the others (dotted names, e.g.
    ``strategy`` or ``ddpg.lr``); empty when only one group has a config."""
    env_id: str | None = None
    """Env id from config.json, if any."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict: label, runs, seeds, settings, env_id, x and each metric's numbers."""
        return {
            "label": self.label,
            "runs": [str(run) for run in self.runs],
            "seeds": list(self.seeds),
            "settings": self.settings,
            "env_id": self.env_id,
            "x": self.x,
            "metrics": {name: curve.to_dict() for name, curve in self.curves.items()},
        }


def moving_average(values: np.ndarray, window: int) -> np.ndarray:
    """Trailing moving average: each point averages itself and the ``window - 1`` before
    it (the first points average what there is), so the length is kept."""
    values = np.asarray(values, dtype=np.float64)
    if window <= 1 or values.size == 0:
        return values
    sums = np.concatenate(([0.0], np.cumsum(values)))
    end = np.arange(1, values.size + 1)
    start = np.maximum(end - window, 0)
    return (sums[end] - sums[start]) / (end - start)


def progress_axis(run_dirs: Sequence[str | Path]) -> XAxis:
    """``updates`` for runs trained offline only (every row at 0 env steps), else
    ``env_steps``: the axis their progress is counted on."""
    for run_dir in run_dirs:
        rows = read_progress(RunPaths(run_dir).progress)
        if any(_number(row.get("env_steps")) != 0 for row in rows):
            return "env_steps"
    return "updates"


def aggregate_runs(
    run_dirs: Sequence[str | Path], x: XAxis = "env_steps", smooth: int = 1
) -> list[Group]:
    """Group runs by their settings and aggregate each group's metrics over its seeds.

    ``x`` is ``env_steps`` or ``wall_s``; ``smooth`` is the moving-average window in
    evaluation points (1: none). A run directory listed twice counts once. Raises
    ValueError for no runs, a directory without ``progress.csv``, or a bad ``x``/``smooth``.
    """
    check_options(x, smooth)
    if not run_dirs:
        raise ValueError("run_dirs: give at least one run directory")
    unique: dict[Path, Path] = {}  # by where the run lies: the first path given to it
    for run_dir in run_dirs:
        RunPaths(run_dir).check(progress=True)
        unique.setdefault(Path(run_dir).resolve(), Path(run_dir))
    runs = list(unique.values())

    # Group key: the settings that matter, as canonical JSON; no config: the run alone.
    members: dict[str, list[tuple[Path, dict[str, Any] | None]]] = {}
    for path in runs:
        config = _read_config(path)
        key = (
            json.dumps(_grouping_settings(config), sort_keys=True)
            if config is not None
            else f"dir:{path.resolve()}"
        )
        members.setdefault(key, []).append((path, config))
    labels = _labels(members)

    groups = []
    for key, group_runs in members.items():
        metrics = [_read_metrics(path, x) for path, _ in group_runs]
        names = sorted({name for found in metrics for name in found if name != SUCCESS})
        curves = {}
        for name in (SUCCESS, *names):
            series = [found[name] for found in metrics if name in found]
            if series:
                curves[name] = _aggregate([(xs, moving_average(ys, smooth)) for xs, ys in series])
        config = group_runs[0][1]
        groups.append(
            Group(
                label=labels[key][0],
                runs=tuple(path for path, _ in group_runs),
                seeds=tuple(_seed(config) for _, config in group_runs),
                x=x,
                curves=curves,
                settings=labels[key][1],
                env_id=None if config is None else config.get("env_id"),
            )
        )
    return groups


def groups_to_json(groups: Sequence[Group], smooth: int = 1) -> dict[str, Any]:
    """The aggregated numbers of ``groups`` as one JSON-ready dict."""
    return {
        "x": groups[0].x if groups else "env_steps",
        "smooth": smooth,
        "groups": [group.to_dict() for group in groups],
    }


def check_options(x: str, smooth: int) -> None:
    """Raise ValueError unless ``x`` is one of :data:`X_AXES` and ``smooth`` an int >= 1."""
    if x not in X_AXES:
        raise ValueError(f"x must be one of {', '.join(X_AXES)}, got {x!r}")
    if isinstance(smooth, bool) or not isinstance(smooth, int) or smooth < 1:
        raise ValueError(f"smooth must be an int >= 1 (1: no smoothing), got {smooth!r}")


def _read_config(run_dir: Path) -> dict[str, Any] | None:
    """The run's config.json as a dict, its HER settings at the top
    (:func:`~herkit.config.learning.flat_settings`); None when missing or not a JSON object."""
    try:
        config = json.loads(RunPaths(run_dir).config.read_text())
    except (OSError, ValueError):
        return None
    return flat_settings(config) if isinstance(config, dict) else None


def _grouping_settings(config: dict[str, Any]) -> dict[str, Any]:
    algo = config.get("algo")
    return {
        key: value
        for key, value in config.items()
        if key not in IGNORED_SETTINGS and (key not in algo_names() or key == algo)
    }


def _seed(config: dict[str, Any] | None) -> int | None:
    seed = None if config is None else config.get("seed")
    return seed if isinstance(seed, int) and not isinstance(seed, bool) else None


def _flatten(values: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in values.items():
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def _format(value: Any) -> str:
    if isinstance(value, list | tuple):
        return "(" + ", ".join(_format(item) for item in value) + ")"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _labels(
    members: dict[str, list[tuple[Path, dict[str, Any] | None]]],
) -> dict[str, tuple[str, dict[str, Any]]]:
    """Label and distinguishing settings of each group (by key)."""
    flat = {
        key: _flatten(_grouping_settings(runs[0][1]))
        for key, runs in members.items()
        if runs[0][1] is not None
    }
    names: list[str] = []  # in config order: env_id, algo, strategy, k, ...
    for settings in flat.values():
        names += [name for name in settings if name not in names]
    # A setting distinguishes when groups that have it disagree on it, or when a top-level
    # one is missing from some (an older config); agent blocks of another algo do not count.
    distinguishing = [
        name
        for name in names
        if len({json.dumps(s[name]) for s in flat.values() if name in s}) > 1
        or ("." not in name and any(name not in s for s in flat.values()))
    ]
    labels: dict[str, tuple[str, dict[str, Any]]] = {}
    for key, runs in members.items():
        path, config = runs[0]
        if config is None:
            labels[key] = (path.name or str(path), {})
            continue
        settings = {name: flat[key][name] for name in distinguishing if name in flat[key]}
        if settings:
            text = ", ".join(f"{name}={_format(value)}" for name, value in settings.items())
        else:
            text = " ".join(str(config[name]) for name in ("env_id", "algo") if name in config)
        seeds = [_seed(config) for _, config in runs]
        if len(runs) == 1:
            suffix = f"seed {seeds[0]}" if seeds[0] is not None else "1 run"
        elif None not in seeds and len(set(seeds)) == len(seeds):
            suffix = f"{len(runs)} seeds"
        else:
            suffix = f"{len(runs)} runs"
        labels[key] = (f"{text} ({suffix})" if text else f"({suffix})", settings)
    # Directory names (or anything else) that coincide: tell them apart by position.
    counts = Counter(label for label, _ in labels.values())
    for index, (key, (label, settings)) in enumerate(labels.items()):
        if counts[label] > 1:
            path = members[key][0][0]
            labels[key] = (f"{label} [{path if members[key][0][1] is None else index}]", settings)
    return labels


def _read_metrics(run_dir: Path, x: str) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """``success_rate`` and each ``*_loss`` column of a run as (x, y) arrays, sorted by x,
    finite values only, the last of repeated x values kept."""
    rows = read_progress(RunPaths(run_dir).progress)
    columns = [SUCCESS, *sorted({k for row in rows for k in row if k.endswith("_loss")})]
    table = np.array(
        [[_number(row.get(name)) for name in (x, *columns)] for row in rows], dtype=np.float64
    ).reshape(len(rows), len(columns) + 1)
    metrics = {}
    for index, name in enumerate(columns, start=1):
        xs, ys = table[:, 0], table[:, index]
        keep = np.isfinite(xs) & np.isfinite(ys)
        xs, ys = xs[keep], ys[keep]
        if xs.size == 0:
            continue
        order = np.argsort(xs, kind="stable")
        xs, ys = xs[order], ys[order]
        last = np.append(xs[1:] != xs[:-1], True)
        metrics[name] = (xs[last], ys[last])
    return metrics


def _number(text: str | None) -> float:
    try:
        return float(text) if text is not None else math.nan
    except ValueError:
        return math.nan


def _aggregate(series: Sequence[tuple[np.ndarray, np.ndarray]]) -> Curve:
    """Statistics of the seeds' series on the union of their x values where all have data."""
    low = max(xs[0] for xs, _ in series)
    high = min(xs[-1] for xs, _ in series)
    grid = np.unique(np.concatenate([xs for xs, _ in series]))
    grid = grid[(grid >= low) & (grid <= high)]
    values = np.stack([np.interp(grid, xs, ys) for xs, ys in series])
    n = len(series)
    sem = values.std(axis=0, ddof=1) / math.sqrt(n) if n > 1 else np.zeros_like(grid)
    return Curve(
        x=grid,
        mean=values.mean(axis=0),
        min=values.min(axis=0),
        max=values.max(axis=0),
        sem=sem,
        n=n,
    )
