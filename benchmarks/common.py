"""What every benchmark script records beside its numbers: the machine and the code."""

from __future__ import annotations

import fcntl
import json
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from herkit.bench import environment_info

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
FIGURES = DOCS / "figures"


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
        subprocess.run(["git", "worktree", "add", "--detach", str(tree), rev],
                       check=True, cwd=ROOT, capture_output=True)  # fmt: skip
        try:
            yield tree
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT,
                           check=False)  # fmt: skip


def commit_of(rev: str) -> str:
    """The full hash of a git revision."""
    return subprocess.run(["git", "rev-parse", rev], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout.strip()  # fmt: skip


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
