"""An interactive HTML report of training runs: one self-contained file that opens offline.

:func:`write_report` (``herkit report RUN... -o report.html``) reads run directories
written by ``herkit train`` and writes one HTML page with Plotly's JavaScript embedded
once, gzip-compressed (the browser unpacks it with ``DecompressionStream``: about 1.4 MB in
place of Plotly's 4.8 MB, so that a report is sized mostly by what it shows). The page
shows:

- the evaluation success rate against env steps and against wall-clock seconds, runs
  grouped by setting and their seeds averaged with a min-max band, as ``herkit plot``
  does (:func:`herkit.presentation.groups.aggregate_runs`);
- per run, from ``episodes.csv``: each training episode's return, success and final
  distance to the goal against env steps, with a moving average;
- per run, from ``updates.csv``: the losses, the Q values (mean with a min-max band, the
  TD target's clip bounds dashed) and the other learner statistics against updates (a run
  without ``updates.csv`` shows the losses of ``progress.csv``, one point per evaluation);
- each run's settings and its env's conventions as a table.

Runs written before ``episodes.csv`` and ``updates.csv`` existed still get a report: those
panels say what is missing. A ``<div id="report-errors">`` shows any JavaScript error.
"""

from __future__ import annotations

import base64
import csv
import functools
import gzip
import html
import json
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from plotly.colors import hex_to_rgb, qualitative
from plotly.io import to_html
from plotly.offline import get_plotlyjs

from herkit.config.her import goal_mix_words
from herkit.agents.registry import agent_entry, algo_names
from herkit.presentation.groups import (
    SUCCESS,
    Group,
    _flatten,
    _number,
    _read_config,
    aggregate_runs,
    moving_average,
    progress_axis,
)
from herkit.presentation.plots import X_TITLES, _check_output, _wants_log
from herkit.rundir.paths import RunPaths
from herkit.runtime.files import naming, write_text

__all__ = ["PAGE", "deferred_scripts", "episode_window", "html_page", "read_table", "write_report"]

MAX_POINTS = 4000
"""Most points drawn per curve; longer series are thinned evenly (the file stays small)."""
COLOURS = qualitative.Plotly
Q_COLUMNS = ("q_mean", "q_min", "q_max", "target_q_mean", "q_low", "q_high")
TITLES = {
    "critic_loss": "Critic loss: how far Q is from its TD target",
    "actor_loss": "Actor loss: the policy's objective (mostly minus Q)",
    "td_abs_mean": "Mean absolute TD error |Q - target|",
    "alpha": "SAC entropy temperature alpha",
    "entropy": "SAC policy entropy",
}
Config = dict[str, Any] | None
UPDATES_AXIS = "updates (gradient steps)"
AXIS = {"gridcolor": "#e6e6e6", "zerolinecolor": "#c8c8c8", "automargin": True}
LEGEND = {"orientation": "h", "yanchor": "top", "y": -0.2, "x": 0, "font": {"size": 11}}
LAYOUT = {"height": 360, "legend": LEGEND, "hovermode": "x", "plot_bgcolor": "white"}


def write_report(run_dirs: Sequence[str | Path], output: str | Path) -> Path:
    """Write the HTML report of ``run_dirs`` to ``output`` and return its path.

    Raises a one-line ValueError naming the argument for no runs, a run directory that is
    missing or has no ``progress.csv``, or an ``output`` that is a directory or lies under
    a file. Missing folders of ``output`` are created. A failed write (a full disk) raises
    the OSError, naming the file, and leaves no part of it.
    """
    if not run_dirs:
        raise ValueError("run_dirs: give at least one run directory")
    for run_dir in run_dirs:
        RunPaths(run_dir).check(progress=True)
    out = _check_output("output", output, example="report.html")
    x = progress_axis(run_dirs)
    by_steps = aggregate_runs(run_dirs, x=x)  # also checks for progress.csv
    by_wall = aggregate_runs(run_dirs, x="wall_s")
    runs = [run for group in by_steps for run in group.runs]
    configs = [_read_config(run) for run in runs]
    names = [run.resolve().name for run in runs]  # with the parent's where two coincide
    names = [
        f"{run.resolve().parent.name}/{name}" if names.count(name) > 1 else name
        for run, name in zip(runs, names, strict=True)
    ]

    body = [_header(runs, names, configs), "<h2>Evaluation success rate</h2>"]
    steps = _success_figure(by_steps, X_TITLES[x], f"Success rate against {X_TITLES[x]}")
    wall = _success_figure(by_wall, X_TITLES["wall_s"], "Success rate against time")
    body.append(_grid(steps, wall))
    for run, name in zip(runs, names, strict=True):
        run_name = html.escape(name)
        body += [f"<h2>Run {run_name}: training episodes</h2>", _grid(*_episode_panels(run))]
        body += [f"<h2>Run {run_name}: learner updates</h2>", _grid(*_update_panels(run))]
    body.append("<h2>Settings</h2>" + _config_table(names, configs))
    title = html.escape("herkit report: " + ", ".join(names))
    page = html_page(title, "\n".join(body))
    with naming(out.parent):
        out.parent.mkdir(parents=True, exist_ok=True)
    write_text(out, page)  # whole or not at all; an OSError names the file
    return out


def read_table(path: str | Path) -> dict[str, np.ndarray]:
    """A CSV file's columns as float arrays, by name; empty or non-numeric cells are NaN."""
    with open(path, newline="") as file:
        names, *rows = list(csv.reader(file)) or [[]]
    table = {}
    for index, name in enumerate(names):
        cells = [row[index] if index < len(row) and row[index] else "nan" for row in rows]
        try:  # numpy parses a column of numbers at once; a stray word falls back per cell
            table[name] = np.array(cells, dtype=np.float64)
        except ValueError:
            table[name] = np.array([_number(cell) for cell in cells])
    return table


def episode_window(episodes: int) -> int:
    """Moving-average window over episodes: 100, or a fifth of a shorter run (at least 1)."""
    return max(1, min(100, episodes // 5))


def _header(runs: Sequence[Path], names: list[str], configs: list[Config]) -> str:
    def values(key: str) -> str:
        found = [str(c[key]) for c in configs if c is not None and c.get(key) is not None]
        return html.escape(", ".join(dict.fromkeys(found)) or "unknown")

    described = [_goals(config) for config in configs if config is not None]
    goals = html.escape("; ".join(dict.fromkeys(described)) or "unknown")
    return (
        f"<h1>herkit training report: {html.escape(', '.join(names))}</h1>"
        f"<p class='facts'>env <b>{values('env_id')}</b> &middot; algorithm "
        f"<b>{values('algo')}</b> &middot; goals <b>{goals}</b> &middot; "
        f"{len(runs)} run{'s' if len(runs) != 1 else ''}</p>"
        "<p class='help'>Hover over a curve for its values; drag to zoom, double-click to "
        "zoom out; click a legend entry to hide or show it.</p>" + _runs_table(runs, names, configs)
    )


def _runs_table(runs: Sequence[Path], names: list[str], configs: list[Config]) -> str:
    head = (
        "run",
        "env",
        "algorithm",
        "goals",
        "seed",
        "env steps",
        "training time",
        "final success rate",
    )
    rows = []
    for run, name, config in zip(runs, names, configs, strict=True):
        config = config or {}
        try:
            summary = json.loads(RunPaths(run).summary.read_text())
        except (OSError, ValueError):
            summary = {}
        summary = summary if isinstance(summary, dict) else {}
        steps, wall, success = (summary.get(k) for k in ("env_steps", "wall_s", "success_rate"))
        cells = [
            name,
            config.get("env_id", ""),
            config.get("algo", ""),
            _goals(config) if config else "",
            config.get("seed", ""),
            f"{steps:,}" if isinstance(steps, int) else "",
            f"{wall:.1f} s" if isinstance(wall, int | float) else "",
            f"{success:.2f}" if isinstance(success, int | float) else "",
        ]
        rows.append("".join(f"<td>{html.escape(str(cell))}</td>" for cell in cells))
    header = "".join(f"<th>{cell}</th>" for cell in head)
    return f"<table><tr>{header}</tr><tr>{'</tr><tr>'.join(rows)}</tr></table>"


def _goals(config: dict[str, Any]) -> str:
    """How a run drew its goals, in words, from its config.json (HER settings at the top):
    HER's strategy and k, its goal mix, or an offline agent's goal mixes (null: the
    agent's own)."""
    algo = config.get("algo")
    if algo in algo_names(offline=True):
        entry = agent_entry(algo)
        value = config.get("value_goals") or entry.value_goals
        return goal_mix_words(value, config.get("actor_goals") or entry.actor_goals)
    if config.get("goal_mix") is not None:
        return "HER goal mix " + ":".join(f"{weight:g}" for weight in config["goal_mix"])
    if config.get("strategy") in ("none", None) or not config.get("k"):
        return "no HER"
    return f"HER {config['strategy']} (k {config['k']})"


class _Figure:
    """A Plotly figure as plain data, in the report's style (Plotly's figure objects check
    every value as it is set, which takes seconds for a report's figures)."""

    def __init__(self, title: str, x_title: str, y_title: str, legend: bool = True) -> None:
        self.title = title
        self.data: list[dict[str, Any]] = []
        margin = {"l": 70, "r": 20, "t": 30, "b": 110 if legend else 60}
        # an axis title is {"text": ...}: Plotly.js 3 and later ignore a bare string
        self.xaxis = AXIS | {"title": {"text": x_title}}
        self.yaxis = AXIS | {"title": {"text": y_title}}
        self.layout = LAYOUT | {
            "margin": margin,
            "showlegend": legend,
            "xaxis": self.xaxis,
            "yaxis": self.yaxis,
        }

    def add_scatter(self, **trace: Any) -> None:
        """Add a scatter trace (lines or markers) with Plotly's attributes."""
        self.data.append({"type": "scatter", **trace})


def _html(fig: _Figure) -> str:
    config = {"responsive": True, "displaylogo": False}
    plot = to_html(
        {"data": fig.data, "layout": fig.layout},
        config,
        validate=False,
        include_plotlyjs=False,
        full_html=False,
    )
    plot = deferred_scripts(plot)
    return f"<div class='panel'><h3>{html.escape(fig.title)}</h3>{plot}</div>"


def _grid(*panels: str) -> str:
    return "<div class='grid'>" + "\n".join(panels) + "</div>"


def _note(text: str) -> str:
    return f"<div class='panel note'>{html.escape(text)}</div>"


def _band(fig: _Figure, x: Any, low: Any, high: Any, colour: str, name: str, group: str) -> None:
    """A shaded band from ``low`` to ``high``, shown and hidden with ``group``'s legend entry."""
    line = {"width": 0, "color": colour}
    fig.add_scatter(
        x=x, y=high, mode="lines", line=line, hoverinfo="skip", showlegend=False, legendgroup=group
    )
    fill = f"rgba{(*hex_to_rgb(colour), 0.2)}"
    fig.add_scatter(
        x=x,
        y=low,
        mode="lines",
        line=line,
        fill="tonexty",
        name=name,
        fillcolor=fill,
        hoverinfo="skip",
        legendgroup=group,
    )


def _success_figure(groups: Sequence[Group], x_title: str, title: str) -> str:
    fig = _Figure(title, x_title, "success rate of evaluation episodes")
    for index, group in enumerate(groups):
        curve = group.curves.get(SUCCESS)
        if curve is None:
            continue
        colour = COLOURS[index % len(COLOURS)]
        if curve.n > 1:
            _band(fig, curve.x, curve.min, curve.max, colour, "min-max over seeds", group.label)
        mode = "lines+markers" if curve.x.size <= 60 else "lines"
        fig.add_scatter(
            x=curve.x,
            y=curve.mean,
            mode=mode,
            name=group.label,
            line={"color": colour},
            legendgroup=group.label,
        )
    fig.yaxis["range"] = [-0.03, 1.03]
    return _html(fig)


def _thin(*columns: np.ndarray) -> list[np.ndarray]:
    """Every column at the same at most :data:`MAX_POINTS` evenly spaced indices."""
    size = columns[0].size
    if size <= MAX_POINTS:
        return list(columns)
    keep = np.unique(np.linspace(0, size - 1, MAX_POINTS).round().astype(int))
    return [column[keep] for column in columns]


EPISODE_PANELS = (
    ("return", "Return of each training episode", "return (sum of rewards)", True),
    ("success", "Success of training episodes", "success rate", False),
    ("final_distance", "Distance to the goal at each episode's end", "final distance", True),
)


def _episode_panels(run: Path) -> list[str]:
    path = RunPaths(run).episodes
    if not path.is_file():
        return [
            _note(
                f"This run has no {path.name}: it was written before herkit "
                "recorded each training episode, so there are no per-episode "
                "returns, successes or distances to show."
            )
        ]
    table = read_table(path)
    steps = table.get("env_steps", np.array([]))
    order = np.argsort(steps, kind="stable")
    panels = []
    for column, title, y_title, raw in EPISODE_PANELS:
        values = table.get(column, np.full(steps.size, math.nan))[order]
        x = steps[order]
        keep = np.isfinite(x) & np.isfinite(values)
        x, values = x[keep], values[keep]
        if x.size == 0:
            panels.append(
                _note(
                    f"{title}: {path.name} has no {column} values (the env does not report them)."
                )
            )
            continue
        window = episode_window(x.size)
        fig = _Figure(f"{title} (line: mean of the last {window})", "env steps", y_title)
        if raw:
            shown = _thin(x, values)
            sample = "" if shown[0].size == x.size else f" ({shown[0].size} of {x.size})"
            fig.add_scatter(
                x=shown[0],
                y=shown[1],
                mode="markers",
                name=f"each episode{sample}",
                marker={"size": 4, "color": "rgba(120,120,120,0.35)"},
            )
        mean_x, mean = _thin(x, moving_average(values, window))
        fig.add_scatter(
            x=mean_x,
            y=mean,
            mode="lines",
            name=f"mean of the last {window} episodes",
            line={"color": COLOURS[0], "width": 2.5},
        )
        if column == "success":
            fig.yaxis["range"] = [-0.03, 1.03]
        panels.append(_html(fig))
    return panels


def _update_panels(run: Path) -> list[str]:
    notes, paths = [], RunPaths(run)
    if paths.updates.is_file():
        table = read_table(paths.updates)
        every = "every 50 updates"
    else:
        progress = read_table(paths.progress)
        table = {
            name: values
            for name, values in progress.items()
            if name == "updates" or name in TITLES or name in Q_COLUMNS or name.endswith("_loss")
        }
        every = "at each evaluation"
        notes.append(
            _note(
                f"This run has no {paths.updates.name}: it was written before herkit recorded the "
                "learner every 50 updates. The panels here show the losses that "
                f"{paths.progress.name} logged at each evaluation."
            )
        )
    updates = table.pop("updates", np.array([]))
    table = {n: v for n, v in table.items() if n != "env_steps" and np.isfinite(v).any()}
    if updates.size == 0 or not table:
        return [*notes, _note("There are no learner statistics: the run made no updates yet.")]
    order = np.argsort(updates, kind="stable")
    updates, table = updates[order], {name: values[order] for name, values in table.items()}
    panels = [_q_panel(updates, table, every)] if "q_mean" in table else []
    for name in sorted(set(table) - set(Q_COLUMNS), key=lambda n: ([*TITLES, n].index(n), n)):
        label = name.replace("_", " ")
        fig = _Figure(f"{TITLES.get(name, label)} ({every})", UPDATES_AXIS, label, False)
        x, y = _thin(updates, table[name])
        fig.add_scatter(x=x, y=y, mode="lines", name=label, line={"color": COLOURS[1]})
        if _wants_log(y):  # a label every decade or few (10^-3, not 1m): at most 8
            decades = math.log10(np.nanmax(y) / np.nanmin(y))
            fig.yaxis |= {"type": "log", "dtick": math.ceil(decades / 8), "exponentformat": "power"}
        panels.append(_html(fig))
    return [*notes, *panels]


def _q_panel(updates: np.ndarray, table: dict[str, np.ndarray], every: str) -> str:
    fig = _Figure(f"Q values of sampled batches ({every})", UPDATES_AXIS, "Q value")
    blue = COLOURS[0]
    if "q_min" in table and "q_max" in table:
        x, low, high = _thin(updates, table["q_min"], table["q_max"])
        _band(fig, x, low, high, blue, "min-max of Q", "q")
    x, mean = _thin(updates, table["q_mean"])
    fig.add_scatter(x=x, y=mean, mode="lines", name="mean Q", line={"color": blue}, legendgroup="q")
    if "target_q_mean" in table:
        x, target = _thin(updates, table["target_q_mean"])
        fig.add_scatter(
            x=x,
            y=target,
            mode="lines",
            name="mean TD target",
            line={"color": COLOURS[2], "dash": "dot"},
        )
    for name, label in (("q_low", "lowest TD target allowed"), ("q_high", "highest allowed")):
        if name in table:
            x, bound = _thin(updates, table[name])
            fig.add_scatter(
                x=x,
                y=bound,
                mode="lines",
                name=label,
                line={"color": "#444", "dash": "dash", "width": 1.5},
            )
    return _html(fig)


def _config_table(names: list[str], configs: list[Config]) -> str:
    """Settings as dotted keys, one column per run; rows where the runs differ are marked."""
    flats = [_flatten(config) if config is not None else {} for config in configs]
    keys = list(dict.fromkeys(key for flat in flats for key in flat))
    if not keys:
        return _note("No run has a readable config.json.")
    head = "".join(f"<th>{html.escape(name)}</th>" for name in ["setting", *names])
    rows = []
    for key in keys:
        values = [flat.get(key, "") for flat in flats]
        cells = [value if isinstance(value, str) else json.dumps(value) for value in values]
        marked = " class='differs'" if len(set(cells)) > 1 else ""
        tds = "".join(f"<td>{html.escape(cell)}</td>" for cell in [key, *cells])
        rows.append(f"<tr{marked}>{tds}</tr>")
    legend = "<p class='help'>Highlighted rows differ between runs.</p>" if len(names) > 1 else ""
    return f"{legend}<table class='config'><tr>{head}</tr>{''.join(rows)}</table>"


# --- the page around the figures ------------------------------------------------------------

DEFERRED = "text/x-herkit-plot"
"""The type of a figure's script: run once Plotly is unpacked, not as the page loads."""


def html_page(title: str, body: str) -> str:
    """The whole page: ``title`` (escaped HTML) and ``body`` (the figures' HTML)."""
    return PAGE.format(title=title, plotly=packed_plotly(), body=body, deferred=DEFERRED)


def deferred_scripts(figure: str) -> str:
    """A figure's HTML with its scripts left for the page to run once Plotly is there."""
    return re.sub(r'<script(\s+type="text/javascript")?>', f'<script type="{DEFERRED}">', figure)


@functools.cache
def packed_plotly() -> str:
    """Plotly's JavaScript, gzip-compressed and base64-encoded (made once per process)."""
    packed = gzip.compress(get_plotlyjs().encode(), compresslevel=9, mtime=0)
    return base64.b64encode(packed).decode("ascii")


PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 20px; color: #222; background: #fafafa; }}
h1 {{ font-size: 22px; margin: 0 0 6px; word-break: break-all; }} .facts {{ font-size: 15px; }}
h2 {{ font-size: 18px; margin: 26px 0 8px; border-bottom: 1px solid #ddd; }}
.help {{ color: #666; font-size: 13px; }} tr.differs td {{ background: #fff4c2; }}
.grid {{ display: grid; grid-template-columns: repeat(auto-fill, minmax(560px, 1fr)); gap: 12px; }}
.panel {{ background: #fff; border: 1px solid #ddd; border-radius: 6px; min-width: 0;
          overflow: hidden; }} .note {{ padding: 16px; color: #555; background: #f3f3f3; }}
.panel h3 {{ font-size: 15px; margin: 10px 12px 0; }} th {{ background: #eee; }}
table {{ border-collapse: collapse; font-size: 13px; background: #fff; }}
td, th {{ border: 1px solid #ddd; padding: 3px 8px; text-align: left; vertical-align: top; }}
td {{ word-break: break-word; max-width: 520px; }}
#report-errors {{ background: #fde8e8; border: 2px solid #c62828; color: #8e0000; padding: 10px;
                 white-space: pre-wrap; margin-bottom: 12px; }}
#report-errors:empty, #report-errors[hidden] {{ display: none; }}
</style></head>
<body>
<div id="report-errors" hidden></div>
<script>
(function () {{
  var box = document.getElementById("report-errors");
  function show(text) {{
    box.hidden = false;
    box.textContent += (box.textContent ? "\\n" : "JavaScript error: ") + text;
  }}
  window.addEventListener("error", function (e) {{
    show((e.message || "error") + (e.filename ? " (" + e.filename + ":" + e.lineno + ")" : ""));
  }});
  window.addEventListener("unhandledrejection", function (e) {{
    show("unhandled rejection: " + ((e.reason && e.reason.message) || e.reason)); }});
  window.herkitShow = show;
}})();
</script>
<script type="application/gzip;base64" id="plotly-gzip">{plotly}</script>
{body}
<script>
(async function () {{
  var packed = document.getElementById("plotly-gzip").textContent;
  var bytes = Uint8Array.from(atob(packed), function (c) {{ return c.charCodeAt(0); }});
  if (typeof DecompressionStream === "undefined") {{
    window.herkitShow("this browser cannot unpack Plotly (no DecompressionStream): open " +
                      "the report in a current Chrome, Firefox, Edge or Safari");
    return;
  }}
  var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  var library = document.createElement("script");
  library.textContent = await new Response(stream).text();
  document.head.appendChild(library);  // runs at once, in the page's global scope
  if (typeof Plotly === "undefined") {{ window.herkitShow("Plotly did not load"); return; }}
  document.querySelectorAll('script[type="{deferred}"]').forEach(function (figure) {{
    var run = document.createElement("script");
    run.textContent = figure.textContent;
    figure.replaceWith(run);
  }});
  var blank = document.querySelectorAll(".plotly-graph-div:not(.js-plotly-plot)").length;
  if (blank) window.herkitShow(blank + " figure(s) were not drawn");
}})().catch(function (e) {{ window.herkitShow("unpacking Plotly failed: " + e); }});
</script>
</body></html>
"""
