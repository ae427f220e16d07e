"""What every benchmark script records beside its numbers: the machine and the code; and
where it writes them.

Records are results: a benchmark writes into ``docs/`` (its records, the pages and figures
made of them) only when asked, with ``--record`` on its command line. Without it, a run (a
trial at another budget, setting or commit) works on a copy of ``docs/`` under
``runs/trials/docs`` (:data:`DOCS`): it reads the records there, adds its own, and redraws
pages and figures there, and says so when it ends; ``docs/`` stays as it was.
"""

from __future__ import annotations

import atexit
import fcntl
import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from herkit.bench import environment_info

ROOT = Path(__file__).resolve().parent.parent
RECORDS = ROOT / "docs"
"""The records and the pages made of them, in the repository."""
TRIALS = ROOT / "runs" / "trials" / "docs"
"""Where a run without ``--record`` writes: a copy of :data:`RECORDS`."""
RECORDING = "--record" in sys.argv[1:]
"""Whether this process writes into :data:`RECORDS` (``--record`` given: taken out of the
command line before the script reads it)."""
if RECORDING:
    sys.argv.remove("--record")


def _trial_copy() -> Path:
    """:data:`TRIALS`, its files brought up to date with the records' (a record newer than
    its copy, or without one, is copied; files a trial added stay)."""
    for source in RECORDS.rglob("*"):
        if source.is_dir() or "_build" in source.parts or source.suffix == ".lock":
            continue
        target = TRIALS / source.relative_to(RECORDS)
        if not target.exists() or target.stat().st_mtime < source.stat().st_mtime:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    return TRIALS


DOCS = RECORDS if RECORDING else _trial_copy()
"""Where this process reads and writes records, pages and figures: :data:`RECORDS` with
``--record``, else :data:`TRIALS`."""
FIGURES = DOCS / "figures"
_WRITTEN_BEFORE = {} if RECORDING else {p: p.stat().st_mtime for p in TRIALS.rglob("*.*")}


@atexit.register
def _say_where_a_trial_wrote() -> None:
    """At exit, where a run of a benchmark script without ``--record`` wrote what it would
    have recorded (not said by a process that only imported the scripts, such as a test)."""
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
    return environment_info(("mujoco", "gymnasium-robotics"))


def cpu_ticks() -> tuple[int, int]:
    """The machine's CPU time since boot in clock ticks, all cores: (idle, total)
    (``/proc/stat``; idle includes iowait)."""
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
    """Hold the lock of the record file ``path`` (``PATH.lock``), so that jobs ending at
    once write it, and what is made from it, one after the other."""
    with open(path.with_name(path.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def add_run(path: Path, key: str, run: dict[str, Any], machine: dict[str, Any]) -> dict[str, Any]:
    """Write ``run`` into the record file ``path`` under ``runs[key]``, keeping every other
    run as the file holds it now (another job may have added or re-run some meanwhile);
    return all the runs."""
    with record_lock(path):  # two jobs ending at once: both runs kept
        record = json.loads(path.read_text()) if path.exists() else {}
        runs = record.get("runs", {}) | {key: run}
        path.write_text(json.dumps(record | {"machine": machine, "runs": runs}, indent=1))
    return runs


def shown(path: Path) -> str:
    """``path`` relative to the repository when inside it."""
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def sb3_success_rate(
    model: Any, env: Any, episodes: int, seed: int, key: str = "is_success"
) -> float:
    """Success rate of an SB3 model's deterministic policy over ``episodes`` episodes of
    the (unvectorised) ``env``, success read from ``info[key]`` at each episode's end."""
    successes = []
    obs, _ = env.reset(seed=seed)
    while len(successes) < episodes:
        action, _ = model.predict(obs, deterministic=True)
        obs, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            successes.append(float(info.get(key, 0.0)))
            obs, _ = env.reset()
    return float(np.mean(successes))
