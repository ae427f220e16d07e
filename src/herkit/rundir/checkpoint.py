"""Checkpoints of a training run, written atomically and loaded without running code.

A checkpoint is the folder ``RUN/checkpoint``. Each rank of a run (one, unless it was
launched with torchrun) writes its state there: ``agent.pt`` (networks, optimisers,
normalisers, RNG states and loop counters; tensors and plain values only, read with
``torch.load(weights_only=True)``) and ``buffer.npz`` (its replay buffer, no pickle);
rank r > 0 writes ``agent.rank{r}.pt`` and ``buffer.rank{r}.npz``. ``state.json`` holds
rank 0's loop counters, the world size and the size and SHA-256 of every file.

The folder is built under a temporary name and swapped in by renames once every rank
has written, so a run killed at any moment leaves either the previous or the new
checkpoint whole; a truncated or altered file is detected by its digest. With several
ranks, the run directory must be on a filesystem every rank sees.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from herkit.buffer.goal_env import RewardFn
from herkit.buffer.her import HerReplayBuffer
from herkit.rundir.paths import RunPaths
from herkit.runtime.distributed import Context
from herkit.runtime.failures import Diverged, nonfinite_tensors
from herkit.runtime.files import naming


class CheckpointError(ValueError):
    """A checkpoint is missing, truncated or corrupted."""


def rank_files(rank: int) -> tuple[str, str]:
    """Names of the agent and buffer files of ``rank``."""
    suffix = "" if rank == 0 else f".rank{rank}"
    return f"agent{suffix}.pt", f"buffer{suffix}.npz"


def save_checkpoint(
    run_dir: str | Path,
    agent_state: dict[str, Any],
    buffer: HerReplayBuffer,
    loop_state: dict[str, Any],
    context: Context | None = None,
) -> None:
    """Write this rank's part of ``RUN/checkpoint``; rank 0 swaps the folder in.

    Raises:
        Diverged: ``agent_state`` holds a NaN or an infinity (nothing is written).
        OSError: a file could not be written (named as its ``filename``); the folder being
            built is removed and the previous checkpoint stays as it was.
    """
    context = context or Context()
    bad = nonfinite_tensors(agent_state)
    if bad:
        raise Diverged(
            f"training diverged: {', '.join(bad[:3])}{' ...' * (len(bad) > 3)} not finite "
            f"at update {loop_state.get('updates', 0):,} (no checkpoint written with them)"
        )
    run_dir = Path(run_dir)
    tmp = RunPaths(run_dir).partial_checkpoint(loop_state["env_steps"])
    try:
        _build(tmp, agent_state, buffer, loop_state, context)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if context.is_main:  # the complete folder becomes the checkpoint: renames only, no space
        paths = RunPaths(run_dir)
        final, old = paths.checkpoint, paths.previous_checkpoint
        if final.exists():
            shutil.rmtree(old, ignore_errors=True)
            final.rename(old)
        tmp.rename(final)
        shutil.rmtree(old, ignore_errors=True)
    context.barrier()


def _build(
    tmp: Path,
    agent_state: dict[str, Any],
    buffer: HerReplayBuffer,
    loop_state: dict[str, Any],
    context: Context,
) -> None:
    """Write every rank's files and rank 0's state.json into the folder ``tmp``."""
    if context.is_main:
        shutil.rmtree(tmp, ignore_errors=True)
        with naming(tmp):
            tmp.mkdir()
    context.barrier()
    agent_file, buffer_file = rank_files(context.rank)
    # serialised in memory, then written: torch.save's own writer reports a full disk as a
    # RuntimeError ("iostream error"), a plain write as the OSError it is
    data = io.BytesIO()
    torch.save({**agent_state, "loop": loop_state}, data)
    with naming(tmp / agent_file), open(tmp / agent_file, "wb") as file:
        file.write(data.getbuffer())
    with naming(tmp / buffer_file):
        buffer.save(tmp / buffer_file)
    context.barrier()
    if context.is_main:
        names = [name for rank in range(context.world_size) for name in rank_files(rank)]
        files = {name: _describe(tmp / name) for name in names}
        meta = {"state": loop_state, "world_size": context.world_size, "files": files}
        with naming(tmp / "state.json"), open(tmp / "state.json", "w") as file:
            json.dump(meta, file, indent=1)
            file.flush()
            os.fsync(file.fileno())


def find_checkpoint(run_dir: str | Path) -> Path:
    """The checkpoint folder of a run (the previous one if a swap was interrupted)."""
    paths = RunPaths(run_dir)
    for folder in (paths.checkpoint, paths.previous_checkpoint):
        if (folder / "state.json").exists():
            return folder
    raise CheckpointError(f"run directory {str(run_dir)!r} has no checkpoint to resume from")


def load_checkpoint(
    run_dir: str | Path,
    reward_fn: RewardFn,
    map_location: str | torch.device = "cpu",
    context: Context | None = None,
    buffer_device: Any = None,
    torch_reward_fn: Any = None,
    room: int | None = None,
) -> tuple[dict[str, Any], HerReplayBuffer]:
    """This rank's ``(agent_state, buffer)``; ``agent_state["loop"]`` holds its counters.

    The agent's tensors go to ``map_location`` and the buffer's data to ``buffer_device``
    (None: numpy), whatever devices they were saved from; a buffer whose ring holds no step
    yet gets ``room`` slots where given (a run going online after its dataset).
    """
    context = context or Context()
    agent_file, buffer_file = rank_files(context.rank)
    folder, meta = _verified(run_dir, (agent_file, buffer_file))
    if meta.get("world_size", 1) != context.world_size:
        raise CheckpointError(
            f"checkpoint {str(folder)!r} was written by {meta.get('world_size', 1)} rank(s); "
            f"resume it with as many (this run has {context.world_size})"
        )
    agent_state = _load_agent(folder / agent_file, map_location)
    buffer = _guarded(
        folder / buffer_file,
        lambda: HerReplayBuffer.load(
            folder / buffer_file,
            reward_fn,
            device=buffer_device,
            torch_reward_fn=torch_reward_fn,
            room=room,
        ),
    )
    return agent_state, buffer


def checkpoint_state(run_dir: str | Path) -> dict[str, Any]:
    """The loop counters (``env_steps``, ...) of a run's checkpoint, from its state.json."""
    folder = find_checkpoint(run_dir)
    try:
        state: dict[str, Any] = json.loads((folder / "state.json").read_text())["state"]
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise CheckpointError(
            f"checkpoint {str(folder)!r}: unreadable state.json ({error})"
        ) from None
    return state


def load_agent_state(
    run_dir: str | Path, map_location: str | torch.device = "cpu"
) -> dict[str, Any]:
    """Rank 0's agent state (with its ``loop`` counters), without reading any buffer."""
    folder, _ = _verified(run_dir, (rank_files(0)[0],))
    return _load_agent(folder / rank_files(0)[0], map_location)


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


def _load_agent(path: Path, map_location: str | torch.device) -> dict[str, Any]:
    state: dict[str, Any] = _guarded(
        path, lambda: torch.load(path, map_location=map_location, weights_only=True)
    )
    return state


def _guarded(path: Path, load: Callable[[], Any]) -> Any:
    try:
        return load()
    except Exception as error:  # any failure to decode is a damaged checkpoint
        raise CheckpointError(f"checkpoint file {str(path)!r} cannot be loaded: {error}") from None


def _describe(path: Path) -> dict[str, Any] | None:
    if not path.exists():
        return None
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for chunk in iter(lambda: file.read(1 << 20), b""):
            digest.update(chunk)
    return {"bytes": path.stat().st_size, "sha256": digest.hexdigest()}
