"""Checkpoints of a training run, written atomically and loaded without running code.

A checkpoint is the folder ``RUN/checkpoint`` holding ``agent.pt`` (tensors and plain
values only, read with ``torch.load(weights_only=True)``), ``buffer.npz`` (the replay
buffer, no pickle) and ``state.json`` (loop counters and the size and SHA-256 of the two
other files). It is built in a temporary folder and swapped in by renames, so a run
killed at any moment leaves either the previous or the new checkpoint whole; a truncated
or altered file is detected by its digest.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from herkit.buffer.her import HerReplayBuffer, RewardFn

CHECKPOINT = "checkpoint"
_FILES = ("agent.pt", "buffer.npz")


class CheckpointError(ValueError):
    """A checkpoint is missing, truncated or corrupted."""


def save_checkpoint(
    run_dir: str | Path, agent_state: dict[str, Any], buffer: HerReplayBuffer, state: dict[str, Any]
) -> Path:
    """Write ``RUN/checkpoint`` atomically; returns its path."""
    run_dir = Path(run_dir)
    final = run_dir / CHECKPOINT
    tmp = Path(tempfile.mkdtemp(prefix=".checkpoint-", dir=run_dir))
    torch.save(agent_state, tmp / "agent.pt")
    buffer.save(tmp / "buffer.npz")
    files = {name: _describe(tmp / name) for name in _FILES}
    _write_json(tmp / "state.json", {"state": state, "files": files})
    old = run_dir / (CHECKPOINT + ".old")
    if final.exists():
        if old.exists():
            shutil.rmtree(old)
        final.rename(old)
    tmp.rename(final)
    shutil.rmtree(old, ignore_errors=True)
    return final


def find_checkpoint(run_dir: str | Path) -> Path:
    """The checkpoint folder of a run (the previous one if a swap was interrupted)."""
    run_dir = Path(run_dir)
    for name in (CHECKPOINT, CHECKPOINT + ".old"):
        if (run_dir / name / "state.json").exists():
            return run_dir / name
    raise CheckpointError(f"run directory {str(run_dir)!r} has no checkpoint to resume from")


def load_checkpoint(
    run_dir: str | Path, reward_fn: RewardFn, map_location: str | torch.device = "cpu"
) -> tuple[dict[str, Any], HerReplayBuffer, dict[str, Any]]:
    """``(agent_state, buffer, state)`` of a run's checkpoint; CheckpointError if damaged."""
    folder, meta = _verified(run_dir, _FILES)
    agent_state = _load_agent(folder, map_location)
    buffer = _guarded(
        folder, "buffer.npz", lambda: HerReplayBuffer.load(folder / "buffer.npz", reward_fn)
    )
    return agent_state, buffer, meta["state"]


def load_agent_state(
    run_dir: str | Path, map_location: str | torch.device = "cpu"
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(agent_state, state)`` of a run's checkpoint, without reading the buffer."""
    folder, meta = _verified(run_dir, ("agent.pt",))
    return _load_agent(folder, map_location), meta["state"]


def _verified(run_dir: str | Path, names: tuple[str, ...]) -> tuple[Path, dict[str, Any]]:
    folder = find_checkpoint(run_dir)
    try:
        meta = json.loads((folder / "state.json").read_text())
        files = meta["files"]
        meta["state"]
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise CheckpointError(
            f"checkpoint {str(folder)!r}: unreadable state.json ({error})"
        ) from None
    for name in names:
        if _describe(folder / name) != files.get(name):
            raise CheckpointError(
                f"checkpoint {str(folder)!r}: {name} is missing, truncated or corrupted "
                "(its size or SHA-256 differs from state.json)"
            )
    return folder, meta


def _load_agent(folder: Path, map_location: str | torch.device) -> dict[str, Any]:
    path = folder / "agent.pt"
    return _guarded(
        folder, "agent.pt", lambda: torch.load(path, map_location=map_location, weights_only=True)
    )


def _guarded(folder: Path, name: str, load: Callable[[], Any]) -> Any:
    try:
        return load()
    except Exception as error:  # any failure to decode is a damaged checkpoint
        raise CheckpointError(f"checkpoint {str(folder)!r}: cannot load {name}: {error}") from None


def _describe(path: Path) -> dict[str, Any] | None:
    if not path.exists():
        return None
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for chunk in iter(lambda: file.read(1 << 20), b""):
            digest.update(chunk)
    return {"bytes": path.stat().st_size, "sha256": digest.hexdigest()}


def _write_json(path: Path, value: Any) -> None:
    with open(path, "w") as file:
        json.dump(value, file, indent=1)
        file.flush()
        os.fsync(file.fileno())
