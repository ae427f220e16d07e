"""Learning curves drawn with matplotlib from run logs alone, never from live objects.

:func:`plot_runs` is ``herkit plot``: it groups and aggregates runs with
:func:`~herkit.presentation.groups.aggregate_runs` (seeds of one setting become one group), then
:func:`draw_groups` draws each group as one line, the mean over its seeds with a shaded
band (min to max over the seeds, or the mean +- its standard error), in the success-rate
panel and one panel per loss, and it can write the numbers as JSON. The grouping
(:class:`~herkit.presentation.groups.Curve`, :class:`~herkit.presentation.groups.Group`)
is :mod:`herkit.presentation.groups`'.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, get_args

import numpy as np

from herkit.presentation.groups import (
    SUCCESS,
    Group,
    XAxis,
    aggregate_runs,
    check_options,
    groups_to_json,
)
from herkit.runtime.files import naming, write_with

__all__ = ["BANDS", "X_TITLES", "Band", "draw_groups", "figure", "plot_runs"]

Band = Literal["minmax", "sem"]
"""The ``band`` choices as a type."""
BANDS: tuple[Band, ...] = get_args(Band)
"""Shaded bands: min to max over the seeds, or mean +- standard error of the mean."""


def draw_groups(
    groups: Sequence[Group],
    out: str | Path,
    title: str | None = None,
    band: Band = "minmax",
) -> Path:
    """Draw ``groups`` as one PNG: the success rate and one panel per loss, one colour per
    group in every panel; returns the path. ``band`` is ``minmax`` or ``sem``."""
    if band not in BANDS:
        raise ValueError(f"band must be one of {', '.join(BANDS)}, got {band!r}")
    out = _check_output("output", out)
    fig = figure(groups, title, band)
    try:
        with naming(out.parent):
            out.parent.mkdir(parents=True, exist_ok=True)
        write_with(out, lambda tmp: fig.savefig(tmp, dpi=110, format=out.suffix[1:] or "png"))
    finally:
        import matplotlib.pyplot as plt

        plt.close(fig)
    return out


X_TITLES = {
    "env_steps": "env steps",
    "wall_s": "wall-clock seconds of training",
    "updates": "gradient steps",
}
"""The title of each x axis that a plot can have."""


def figure(groups: Sequence[Group], title: str | None = None, band: Band = "minmax") -> Any:
    """The matplotlib figure that :func:`draw_groups` saves (close it when done)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    losses = sorted({name for group in groups for name in group.curves if name != SUCCESS})
    panels = [SUCCESS, *losses]
    columns = min(len(panels), 3)
    rows = math.ceil(len(panels) / columns)
    fig, axes = plt.subplots(rows, columns, figsize=(4.6 * columns, 3.6 * rows), squeeze=False)
    flat = axes.ravel()
    palette = plt.get_cmap("tab10" if len(groups) <= 10 else "tab20")
    xlabel = X_TITLES["env_steps" if not groups else groups[0].x]
    for ax, name in zip(flat, panels, strict=False):
        drawn: list[np.ndarray] = []
        for index, group in enumerate(groups):
            curve = group.curves.get(name)
            if curve is None or curve.x.size == 0:
                continue
            colour = palette(index % palette.N)
            marker = "." if curve.x.size <= 60 else None
            ax.plot(curve.x, curve.mean, color=colour, marker=marker, label=group.label)
            drawn.append(curve.mean)
            if curve.n > 1:
                low, high = (
                    (curve.min, curve.max)
                    if band == "minmax"
                    else (curve.mean - curve.sem, curve.mean + curve.sem)
                )
                ax.fill_between(curve.x, low, high, color=colour, alpha=0.2, linewidth=0)
                drawn += [low, high]
        ax.set(xlabel=xlabel, ylabel=name.replace("_", " "))
        ax.grid(alpha=0.3)
        if name == SUCCESS:
            ax.set_ylim(-0.02, 1.02)
        elif drawn and _wants_log(np.concatenate(drawn)):
            ax.set_yscale("log")
    for ax in flat[len(panels) :]:
        ax.set_visible(False)
    if title is None:
        envs = [group.env_id for group in groups if group.env_id]
        title = ", ".join(dict.fromkeys(envs)) or None
    if title:
        fig.suptitle(title)
    bottom = 0.0
    if len(groups) > 1 or any(len(group.runs) > 1 for group in groups):
        bottom = _legend_below(fig, flat[0])
    fig.tight_layout(rect=(0, bottom, 1, 1))
    return fig


def _legend_below(fig: Any, ax: Any) -> float:
    """A legend under the panels, its labels wrapped to fit the figure's width; returns
    the share of the figure's height it takes."""
    import textwrap

    handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return 0.0
    width = int(fig.get_figwidth() * 13)  # characters of fontsize 8 across the figure
    ncol = 2 if len(labels) > 1 and max(len(label) for label in labels) * 2 < width else 1
    wrapped = [textwrap.fill(label, width // ncol - 6) for label in labels]
    # matplotlib fills a legend's columns top to bottom; a row is as tall as its tallest label
    rows = math.ceil(len(wrapped) / ncol)
    tall = [label.count("\n") + 1 for label in wrapped]
    lines = sum(max(tall[row::rows]) for row in range(rows))
    height = (lines * 0.17 + 0.15) / fig.get_figheight()
    fig.legend(handles, wrapped, loc="lower center", ncol=ncol, fontsize=8, frameon=False)
    return min(height, 0.6)


def plot_runs(
    run_dirs: Sequence[str | Path],
    out: str | Path,
    title: str | None = None,
    *,
    x: XAxis = "env_steps",
    smooth: int = 1,
    band: Band = "minmax",
    json_out: str | Path | None = None,
) -> Path:
    """Success rate and training losses of runs, seeds of a setting as one line, as one PNG.

    Groups and aggregates with :func:`aggregate_runs` (``x``, ``smooth``), draws with
    :func:`draw_groups` (``title``: derived from the env ids when None; ``band``), and
    writes the numbers to ``json_out`` when given. Returns the PNG's path.
    """
    check_options(x, smooth)
    if band not in BANDS:
        raise ValueError(f"band must be one of {', '.join(BANDS)}, got {band!r}")
    out = _check_output("output", out)
    json_path = None if json_out is None else _check_output("json", json_out)
    groups = aggregate_runs(run_dirs, x=x, smooth=smooth)
    draw_groups(groups, out, title=title, band=band)
    if json_path is not None:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(groups_to_json(groups, smooth), indent=1, allow_nan=False)
        json_path.write_text(text + "\n")
    return out


def _check_output(name: str, path: str | Path, example: str | None = None) -> Path:
    """``path`` as a Path, or a one-line ValueError naming ``name`` when it is a directory
    (``example``: a file name to suggest) or one of its parents is a file."""
    path = Path(path)
    if path.is_dir():
        example = example or ("curves.json" if name == "json" else "curves.png")
        raise ValueError(f"{name} {str(path)!r} is a directory; give a file name such as {example}")
    for parent in path.parents:
        if parent.exists() and not parent.is_dir():
            raise ValueError(f"{name} {str(path)!r}: {str(parent)!r} is a file, not a directory")
    return path


def _wants_log(values: np.ndarray) -> bool:
    """Log scale for positive values spanning more than two decades."""
    values = values[np.isfinite(values)]
    return bool(values.size) and bool(np.all(values > 0)) and values.max() > 100 * values.min()
