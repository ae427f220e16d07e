"""Every file and folder of a run directory, named in one place: :class:`RunPaths`.

A run directory (``herkit train --out RUN``) holds::

    config.json      the run's settings, conventions and machine (read back by resume,
                     evaluation and load_policy)
    summary.json     the outcome: success rate, env steps, wall time, an error if it failed
    progress.csv     one row per evaluation          tb/        TensorBoard events
    episodes.csv     one row per training episode    updates.csv  update metrics per interval
    checkpoint/      agent, buffer and counters      checkpoint.old/  the one before it
    .checkpoint-N/   a checkpoint being written (never read; removed if the write fails)
    error.log        tracebacks of env restarts and of the failure that stopped the run
                     (``error.rankR.log`` for torchrun's rank R > 0)
    videos/          step-N.mp4 of evaluation episodes (gradient-step-N.mp4 on a dataset alone)
    curve.png, report.html   figures drawn from the files above (:mod:`herkit.presentation.figures`)
    .herkit-lock     the owning process (:mod:`herkit.rundir.directory`)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["RunPaths"]


@dataclass(frozen=True)
class RunPaths:
    """The paths of the run directory ``root`` (see the module's docstring)."""

    root: Path

    def check(self, progress: bool = False) -> None:
        """A ValueError, in the one form every command says it, unless the root is a run
        directory: one with a ``config.json`` (to evaluate, resume or report it) or, where
        ``progress``, one with a ``progress.csv`` (to plot it, config or not)."""
        label = f"run directory {str(self.root)!r}"
        if not self.root.exists():
            raise ValueError(f"{label} does not exist")
        if not self.root.is_dir():
            raise ValueError(f"{label} is a file, not a directory")
        if progress and not self.progress.is_file():
            raise ValueError(f"{label} has no evaluation yet (no progress.csv)")
        if not progress and not self.config.is_file():
            raise ValueError(f"{label} is not a herkit run (it has no config.json)")

    def __init__(self, root: str | Path) -> None:
        object.__setattr__(self, "root", Path(root))

    @property
    def config(self) -> Path:
        """``config.json``: the run's settings, conventions and machine."""
        return self.root / "config.json"

    @property
    def summary(self) -> Path:
        """``summary.json``: how the run ended."""
        return self.root / "summary.json"

    @property
    def progress(self) -> Path:
        """``progress.csv``: one row per evaluation."""
        return self.root / "progress.csv"

    @property
    def episodes(self) -> Path:
        """``episodes.csv``: one row per training episode."""
        return self.root / "episodes.csv"

    @property
    def updates(self) -> Path:
        """``updates.csv``: the learner's metrics, one row per interval of updates."""
        return self.root / "updates.csv"

    @property
    def tensorboard(self) -> Path:
        """``tb/``: TensorBoard's event files."""
        return self.root / "tb"

    @property
    def checkpoint(self) -> Path:
        """``checkpoint/``: the latest checkpoint."""
        return self.root / "checkpoint"

    @property
    def previous_checkpoint(self) -> Path:
        """``checkpoint.old/``: the checkpoint before the latest, kept while one is replaced."""
        return self.root / "checkpoint.old"

    def partial_checkpoint(self, env_steps: int) -> Path:
        """``.checkpoint-N/``: the checkpoint at ``env_steps`` while it is written."""
        return self.root / f".checkpoint-{env_steps}"

    def error_log(self, rank: int = 0) -> Path:
        """``error.log`` (``error.rankR.log`` for rank R > 0): tracebacks of env restarts
        and of the failure that stopped the run."""
        return self.root / ("error.log" if rank == 0 else f"error.rank{rank}.log")

    def video(self, step: int, gradient_steps: bool = False) -> Path:
        """``videos/step-N.mp4``: the evaluation episode recorded at env step ``step``
        (``videos/gradient-step-N.mp4`` at gradient step ``step`` of a run on its dataset
        alone)."""
        name = f"step-{step:09d}.mp4"
        return self.root / "videos" / (f"gradient-{name}" if gradient_steps else name)

    @property
    def curve(self) -> Path:
        """``curve.png``: success rate and losses."""
        return self.root / "curve.png"

    @property
    def report(self) -> Path:
        """``report.html``: the interactive report."""
        return self.root / "report.html"

    @property
    def lock(self) -> Path:
        """``.herkit-lock``: the pid and host of the process that owns the run."""
        return self.root / ".herkit-lock"
