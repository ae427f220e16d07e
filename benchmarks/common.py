"""The harness every benchmark script shares: the machine and code it records, where it
writes, and the plumbing of its runs, tables and figures.

A benchmark writes into ``docs/`` only with ``--record`` on its command line; without it, a
trial writes under ``runs/trials/docs`` (:data:`DOCS`) what it writes, and says so: a record
it adds a run to is copied there with the run added (:func:`source`, :func:`add_run`),
nothing else.
"""

from __future__ import annotations

import argparse
import atexit
import dataclasses
import fcntl
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from herkit.bench import environment_info

ROOT = Path(__file__).resolve().parent.parent
RECORDS = ROOT / "docs"
"""The records and the pages made of them, in the repository."""
TRIALS = ROOT / "runs" / "trials" / "docs"
"""Where a run without ``--record`` writes: the files it writes, named as in :data:`RECORDS`."""
RECORDING = "--record" in sys.argv[1:]
"""Whether this process writes into :data:`RECORDS` (``--record``, taken off the command line)."""
if RECORDING:
    sys.argv.remove("--record")


def _trial_folder() -> Path:
    """:data:`TRIALS`, made where missing (empty: a trial copies nothing in advance)."""
    TRIALS.mkdir(parents=True, exist_ok=True)
    return TRIALS


DOCS = RECORDS if RECORDING else _trial_folder()
"""Where this process writes: :data:`RECORDS` with ``--record``, else :data:`TRIALS` (read a
file of it through :func:`source`)."""


def source(path: Path) -> Path:
    """The file to read for ``path``, a file of :data:`DOCS`: in a trial, the trial's own
    copy where it wrote one at least as new as the record, else the record in
    :data:`RECORDS`; ``path`` itself with ``--record`` or outside :data:`TRIALS`."""
    if RECORDING:
        return path
    try:
        record = RECORDS / path.resolve().relative_to(TRIALS.resolve())
    except ValueError:
        return path
    if not record.exists():
        return path
    if path.exists() and path.stat().st_mtime >= record.stat().st_mtime:
        return path
    return record


FIGURES = DOCS / "figures"
_WRITTEN_BEFORE = {} if RECORDING else {p: p.stat().st_mtime for p in TRIALS.rglob("*.*")}


@atexit.register
def _say_where_a_trial_wrote() -> None:
    """At exit, say where a benchmark script run without ``--record`` wrote."""
    if (
        RECORDING
        or not TRIALS.exists()
        or Path(sys.argv[0]).resolve().parent != ROOT / "benchmarks"
    ):
        return
    changed = sorted(
        str(path.relative_to(TRIALS))
        for path in TRIALS.rglob("*.*")
        if _WRITTEN_BEFORE.get(path) != path.stat().st_mtime and path.suffix != ".lock"
    )
    if changed:
        print(
            f"a trial, not a record: wrote {', '.join(changed)} under {shown(TRIALS)} "
            "(docs/ is as it was; --record writes there)",
            file=sys.stderr,
        )


def machine() -> dict[str, Any]:
    """CPU model, core count, Python and the versions of the libraries involved."""
    return environment_info(("mujoco", "gymnasium-robotics", "sb3-contrib", "highway-env"))


def cpu_ticks() -> tuple[int, int]:
    """The machine's CPU time since boot in clock ticks, all cores: (idle, total)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    return fields[3] + fields[4], sum(fields)


def code_version() -> dict[str, Any]:
    """The git commit the runs used and whether ``src/`` differed from it."""
    git = ["git", "-C", str(ROOT)]
    try:
        commit = subprocess.run(
            [*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        status = subprocess.run(
            [*git, "status", "--porcelain", "--", "src"], capture_output=True, text=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return {}
    return {"commit": commit, "src_modified": bool(status.strip())}


@contextmanager
def worktree(rev: str) -> Iterator[Path]:
    """A temporary git worktree of ``rev`` (removed afterwards): the code to compare with."""
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "old"
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(tree), rev],
            check=True,
            cwd=ROOT,
            capture_output=True,
        )
        try:
            yield tree
        finally:
            subprocess.run(
                ["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, check=False
            )


def commit_of(rev: str) -> str:
    """The full hash of a git revision."""
    return subprocess.run(
        ["git", "rev-parse", rev], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()


@contextmanager
def record_lock(path: Path) -> Iterator[None]:
    """Hold the lock of the record file ``path`` (``PATH.lock``)."""
    with open(path.with_name(path.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def add_run(path: Path, key: str, run: dict[str, Any], machine: dict[str, Any]) -> dict[str, Any]:
    """Write ``run`` into the record file ``path`` under ``runs[key]``, keeping the others as
    the file holds them now; return all the runs. The file's ``machine`` is its first run's:
    a run on another machine (or other versions) keeps its own ``machine``."""
    with record_lock(path):  # two jobs ending at once: both runs kept
        record = read_json(path)
        first = record.get("machine", machine)
        if first != machine:
            run = run | {"machine": machine}
        runs = record.get("runs", {}) | {key: run}
        path.write_text(json.dumps(record | {"machine": first, "runs": runs}, indent=1))
    return runs


def add_record(path: Path, record: dict[str, Any]) -> None:
    """Append ``record`` to the record file ``path`` (``{"records": [...]}``)."""
    with record_lock(path):
        records = read_json(path, {"records": []})["records"]
        path.write_text(json.dumps({"records": [*records, record]}, indent=1))


def shown(path: Path) -> str:
    """``path`` relative to the repository when inside it."""
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def read_json(path: Path, default: Any = None) -> Any:
    """The JSON of ``path`` (of its :func:`source` in a trial); ``default`` (an empty dict
    unless given) where there is none."""
    found = source(path)
    return json.loads(found.read_text()) if found.exists() else ({} if default is None else default)


def parser(doc: str | None) -> argparse.ArgumentParser:
    """A script's command line, with the script's docstring (what it measures) as its help."""
    return argparse.ArgumentParser(
        description=doc, formatter_class=argparse.RawDescriptionHelpFormatter
    )


# -- runs of herkit train ---------------------------------------------------------------------

QUIET = ("--no-progress", "--no-tensorboard")


def herkit_train(
    *args: Any, out: Path | None = None, **run: Any
) -> subprocess.CompletedProcess[str]:
    """``herkit train ARGS`` in a fresh process (into ``out`` with :data:`QUIET`, where
    given); ``run`` goes to :func:`subprocess.run`."""
    into = [] if out is None else ["--out", out, *QUIET]
    command = [sys.executable, "-m", "herkit", "train", *map(str, [*args, *into])]
    return subprocess.run(command, **{"check": True, "text": True, **run})


def with_code(source: Path) -> dict[str, Any]:
    """:func:`subprocess.run`'s settings that run herkit from ``source/src``."""
    return {"env": {**os.environ, "PYTHONPATH": str(source / "src")}, "cwd": source}


def run_choices(run_dir: Path) -> dict[str, Any]:
    """What a run chose for its machine (config.json's precision, update mode, core plan)."""
    chosen = (read_json(run_dir / "config.json", {}) or {}).get("machine") or {}
    return {key: chosen[key] for key in ("precision", "update_mode", "core_plan") if key in chosen}


def progress(run_dir: Path, *keys: str) -> list[dict[str, float]]:
    """The rows of a run's progress.csv holding every column of ``keys``, those as numbers."""
    from herkit.rundir.logs import read_progress

    rows = read_progress(run_dir)
    return [
        {key: float(row[key]) for key in keys or row} for row in rows if all(k in row for k in keys)
    ]


def first_at(rows: Iterable[dict[str, Any]], level: float = 0.9) -> dict[str, Any] | None:
    """The first of ``rows`` (evaluations) whose ``success_rate`` reaches ``level``."""
    return next((row for row in rows if row["success_rate"] >= level), None)


def curve(rows: Path | Iterable[dict[str, Any]]) -> list[tuple[int, float]]:
    """``(env steps, success rate)`` of every evaluation among progress rows (or a run's)."""
    from herkit.rundir.logs import read_progress

    found = read_progress(rows) if isinstance(rows, Path) else rows
    return [(int(float(row["env_steps"])), float(row["success_rate"])) for row in found]


def median_band(curves: Sequence[Sequence[dict[str, float]]]) -> tuple[Any, ...]:
    """Env steps evaluated in every curve, the median wall time and success there, and the
    seeds' lowest and highest success."""
    import numpy as np

    steps = sorted(set.intersection(*({p["env_steps"] for p in curve} for curve in curves)))
    at = [{p["env_steps"]: p for p in curve} for curve in curves]
    wall_s = np.median([[points[s]["wall_s"] for s in steps] for points in at], axis=0)
    rates = np.array([[points[s]["success_rate"] for s in steps] for points in at])
    return np.array(steps), wall_s, np.median(rates, axis=0), rates.min(0), rates.max(0)


def first_steps(points: Sequence[tuple[int, float]], level: float = 0.9) -> int | None:
    """The env steps of the first point of a :func:`curve` at or above ``level``."""
    return next((steps for steps, success in points if success >= level), None)


def train_here(
    config: Any, out: Path | None = None, **changes: Any
) -> tuple[dict[str, Any], list[dict[str, str]]]:
    """``herkit train`` in this process: ``config`` (or an env id's preset) with ``changes``,
    into ``out`` (or a temporary folder); its summary and progress rows."""
    from herkit.config.resolve import preset_config
    from herkit.rundir.logs import read_progress
    from herkit.training.loop import train

    if isinstance(config, str):
        config = preset_config(config)
    with tempfile.TemporaryDirectory() as tmp:
        folder = out or Path(tmp) / "run"
        settings = {"progress": False, "tensorboard": False, "out": str(folder), **changes}
        summary = train(dataclasses.replace(config, **settings))
        return summary, read_progress(folder)


def run_state(out: Path, steps: int, counter: str = "env_steps") -> tuple[str, int]:
    """Where a run stands against its budget of ``steps`` of ``counter``: ``("done",
    steps)``, ``("stopped at N", N)`` (a checkpoint) or ``("new", 0)``."""
    from herkit.rundir.checkpoint import CheckpointError, checkpoint_state

    summary = read_json(out / "summary.json")
    if summary.get(counter, -1) >= steps and not (
        summary.get("interrupted") or summary.get("error")
    ):
        return "done", steps
    try:
        made = checkpoint_state(out)[counter]
    except CheckpointError:
        return "new", 0
    return f"stopped at {made:,}", made


def train_or_resume(
    out: Path, state: str, new: Sequence[Any], flags: Sequence[Any], **run: Any
) -> subprocess.CompletedProcess[str]:
    """``herkit train --resume OUT FLAGS`` where the run stopped, else ``herkit train NEW
    --out OUT --overwrite FLAGS``; the exit code is the caller's to read."""
    if state.startswith("stopped"):
        return herkit_train("--resume", out, *QUIET, *flags, check=False, **run)
    return herkit_train(*new, "--overwrite", *flags, out=out, check=False, **run)


# -- tables and figures ------------------------------------------------------------------------


def markdown(columns: Sequence[str], align: str, rows: Iterable[Sequence[Any]]) -> str:
    """A markdown table of ``columns`` (``align``: a letter each, ``l`` or ``r``) and ``rows``."""
    lines = ["| " + " | ".join(columns) + " |"]
    lines.append("|" + "".join("---:|" if a == "r" else "---|" for a in align))
    lines += ["| " + " | ".join(map(str, row)) + " |" for row in rows]
    return "\n".join(lines)


def marked(tag: str) -> re.Pattern[str]:
    """The parts of a page made from records: ``<!-- TAG NAME -->`` ... ``<!-- /TAG -->``."""
    return re.compile(rf"(<!-- {tag} (\S+) -->\n)(.*?)\n?(<!-- /{tag} -->)", re.S)


def fill_marked(text: str, parts: re.Pattern[str], make: Callable[[str], str | None]) -> str:
    """``text`` with each marked part made again by ``make(NAME)`` (kept where it gives None)."""

    def filled(match: re.Match[str]) -> str:
        made = make(match.group(2))
        return match.group(0) if made is None else f"{match.group(1)}{made}\n{match.group(4)}"

    return parts.sub(filled, text)


@contextmanager
def figure(path: Path, *grid: int, layout: dict[str, Any] | None = None, **kwargs: Any) -> Any:
    """matplotlib's ``subplots(*grid, **kwargs)`` off-screen, laid out (``layout``) and
    written to ``path`` at the end."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(*grid, **kwargs)
    yield fig, axes
    fig.tight_layout(**(layout or {}))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
