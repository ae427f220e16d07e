"""Who owns a run directory, and what may be trained into one.

One process per run directory: a lock file holding the owner's pid and host.
``herkit train`` takes the lock of its run directory before it looks inside and keeps it
until it exits, so two runs started into the same ``--out`` never write into each other:
the second is refused and told who holds the directory. The lock is a file created
exclusively (``os.O_EXCL``, atomic on local and NFS v3+ file systems) and removed on exit.
A lock left by a process that died without removing it (``kill -9``, a power cut) is
recognised on the same host, where the pid no longer runs, and taken over; a lock from
another host cannot be checked and is reported, with the file to delete if that run is gone.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from herkit.config.learning import learning_differences
from herkit.config.train import TrainConfig
from herkit.rundir.checkpoint import CheckpointError, checkpoint_state, find_checkpoint
from herkit.rundir.paths import RunPaths

LOCK_NAME = RunPaths(".").lock.name
"""The lock file's name inside a run directory."""


class RunDirInUse(ValueError):
    """The run directory is held by another live process."""


class RunDirLock:
    """The lock of ``run_dir`` (created, with its parents, when absent), as a context manager.

    Attributes:
        created: the folders that taking the lock created, ``run_dir`` first, then those of
            its parents that were missing.
    """

    def __init__(self, run_dir: str | os.PathLike[str]) -> None:
        self.run_dir = Path(run_dir)
        self.path = RunPaths(self.run_dir).lock
        self.created: list[Path] = []
        self._held = False

    def acquire(self) -> None:
        """Take the lock, or raise :class:`RunDirInUse` naming its holder."""
        if self.run_dir.exists() and not self.run_dir.is_dir():
            raise ValueError(f"--out {str(self.run_dir)!r} is an existing file, not a directory")
        self.created = [
            folder for folder in (self.run_dir, *self.run_dir.parents) if not folder.exists()
        ]
        self.run_dir.mkdir(parents=True, exist_ok=True)
        mine = {"pid": os.getpid(), "host": socket.gethostname(), "started": time.time()}
        for _ in range(3):  # a stale lock is removed and the creation tried again
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                holder = read_lock(self.path)
                if holder is not None and not _is_stale(holder):
                    raise RunDirInUse(_in_use(self.run_dir, self.path, holder)) from None
                self.path.unlink(missing_ok=True)
                continue
            with os.fdopen(fd, "w") as file:
                json.dump(mine, file)
            self._held = True
            return
        raise RunDirInUse(f"run directory {str(self.run_dir)!r}: could not take {self.path}")

    def release(self) -> None:
        """Remove the lock file if this process holds it."""
        if self._held:
            holder = read_lock(self.path)
            if holder is not None and holder.get("pid") == os.getpid():
                self.path.unlink(missing_ok=True)
            self._held = False

    def __enter__(self) -> RunDirLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def read_lock(path: Path) -> dict[str, Any] | None:
    """The holder recorded in a lock file; None when it is unreadable (being written, or
    cut short by a crash: then it is stale once old enough, see :func:`_is_stale`)."""
    try:
        holder = json.loads(path.read_text())
    except (OSError, ValueError):
        try:
            return {"unreadable_since": path.stat().st_mtime}
        except OSError:
            return None
    return holder if isinstance(holder, dict) else None


def _is_stale(holder: dict[str, Any]) -> bool:
    """Whether the process that wrote ``holder`` is gone (only knowable on this host)."""
    if "unreadable_since" in holder:  # a writer needs microseconds; a minute means a crash
        return bool(time.time() - float(holder["unreadable_since"]) > 60)
    if holder.get("host") != socket.gethostname():
        return False
    try:
        os.kill(int(holder["pid"]), 0)
    except ProcessLookupError:
        return True
    except (PermissionError, KeyError, TypeError, ValueError):
        return False  # a live process of another user, or a lock we cannot read: keep it
    return False


def _in_use(run_dir: Path, path: Path, holder: dict[str, Any]) -> str:
    if "unreadable_since" in holder:
        who = "another process (its lock file is being written)"
    else:
        started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(holder.get("started", 0)))
        who = f"pid {holder.get('pid')} on host {holder.get('host')}, since {started}"
    return (
        f"run directory {str(run_dir)!r} is in use by another herkit run ({who}): wait for "
        f"it to end or train into another --out DIR (if that run is gone, delete {path})"
    )


def has_checkpoint(run_dir: Path) -> bool:
    """Whether ``run_dir`` holds a checkpoint (also one whose swap was interrupted)."""
    try:
        find_checkpoint(run_dir)
    except CheckpointError:
        return False
    return True


def is_failed_run(run_dir: Path) -> bool:
    """A directory that a run wrote into (its ``config.json``) but that holds no checkpoint:
    the run failed before its first one, so there is nothing to resume or keep."""
    return RunPaths(run_dir).config.exists() and not has_checkpoint(run_dir)


def clear_run_dir(run_dir: Path) -> None:
    """Remove everything in ``run_dir`` but its lock file."""
    for entry in run_dir.iterdir():
        if entry.name == LOCK_NAME:
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


def check_new_run_dir(run_dir: Path, config: TrainConfig) -> bool:
    """Whether ``run_dir`` (held, see :class:`RunDirLock`) may take the new run ``config``;
    True when its contents are to be replaced (``config.overwrite``, or a run that failed
    before its first checkpoint). When it may not, a ValueError with a hint that works."""
    contents = [entry for entry in run_dir.iterdir() if entry.name != LOCK_NAME]
    if not contents:
        return False
    if config.overwrite or is_failed_run(run_dir):
        return True
    state = "already exists"
    if not has_checkpoint(run_dir):
        hint = "it is not a herkit run: train into another --out DIR"
    elif other := differing_settings(run_dir, config):
        hint = (
            f"it holds a run with other settings ({', '.join(other)}), so --resume would not "
            "take yours: train into another --out DIR"
        )
    else:
        state, hint = _how_to_continue(run_dir, config)
    raise ValueError(f"run directory {str(run_dir)!r} {state}: {hint} (--overwrite replaces it)")


def _how_to_continue(run_dir: Path, config: TrainConfig) -> tuple[str, str]:
    """The state of the run with ``config``'s settings in ``run_dir``, and how to train
    it on: ``--resume`` while it has env steps left, with a larger ``--steps`` once it
    has finished (a plain ``--resume`` of a finished run is refused); a run on a dataset
    alone counts gradient steps, and goes on with a larger ``--offline-steps`` or online
    with ``--steps``."""
    try:
        counters = checkpoint_state(run_dir)
        saved = json.loads(RunPaths(run_dir).config.read_text())
        done, planned = int(counters["env_steps"]), int(saved["steps"])
        updates, offline = int(counters.get("updates", 0)), int(saved.get("offline_steps") or 0)
    except (CheckpointError, OSError, ValueError, KeyError, TypeError):
        return (
            "already exists",
            f"continue it with --resume {run_dir}, or train into another --out DIR",
        )
    other = "or train into another --out DIR"
    if offline and not planned:  # a run on a dataset alone: its clock is gradient steps
        if updates < offline:
            return (
                f"already holds this run, stopped at {updates:,} of {offline:,} gradient steps "
                "on the dataset",
                f"continue it with --resume {run_dir}, {other}",
            )
        return (
            f"already holds this run, finished at {updates:,} gradient steps on the dataset",
            f"train it further with --resume {run_dir} --offline-steps N (N above {updates}), "
            f"go on online with --resume {run_dir} --steps N, {other}",
        )
    if done < planned:
        return (
            f"already holds this run, stopped at {done:,} of {planned:,} env steps",
            f"continue it with --resume {run_dir}, {other}",
        )
    state = f"already holds this run, finished at {done:,} env steps"
    resume = f"--resume {run_dir} --steps"
    if config.steps > done:
        return state, f"train it on to {config.steps:,} with {resume} {config.steps}, {other}"
    return state, f"train it further with {resume} N (N above {done}), {other}"


def differing_settings(run_dir: Path, config: TrainConfig) -> list[str]:
    """The learning settings in which ``config`` differs from the run saved in ``run_dir``
    (see :func:`~herkit.config.learning.learning_differences`)."""
    try:
        saved = json.loads(RunPaths(run_dir).config.read_text())
    except (OSError, ValueError):
        return ["config.json unreadable"]
    return learning_differences(config.to_dict(), saved)


@contextlib.contextmanager
def owned_run_dir(run_dir: Path, main: bool = True) -> Iterator[RunDirLock | None]:
    """Hold ``run_dir``'s lock for the ``with`` body (on the main rank; other ranks yield
    None). If the body fails before a checkpoint exists, the folders the lock created are
    removed again: a run that never reached a checkpoint leaves nothing behind."""
    if not main:
        yield None
        return
    lock = RunDirLock(run_dir)
    lock.acquire()
    try:
        yield lock
    except BaseException:
        lock.release()
        if lock.created and not has_checkpoint(run_dir):
            shutil.rmtree(run_dir, ignore_errors=True)
            for folder in lock.created[1:]:  # parents made for it, unless used since
                try:
                    folder.rmdir()
                except OSError:
                    break
        raise
    lock.release()
