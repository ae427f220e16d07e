"""What a run writes besides its checkpoints: :class:`RunOutputs`.

``progress.csv`` and TensorBoard (:class:`~herkit.rundir.logs.RunLogger`, rank 0), the
episode and update records (:class:`~herkit.rundir.records.RunRecords`), the progress
bar, ``config.json``, ``summary.json``, videos, ``error.log``, and the figures, drawn in
another process (:class:`~herkit.presentation.presenter.Presenter`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from herkit.presentation.presenter import Presenter
from herkit.presentation.video import write_video
from herkit.rundir.logs import RunLogger
from herkit.rundir.paths import RunPaths
from herkit.rundir.records import RunRecords
from herkit.runtime.console import Progress
from herkit.runtime.files import naming, write_text
from herkit.training.build import write_run_config
from herkit.training.parts import RunParts
from herkit.training.phase import Phase
from herkit.training.state import summary_of

__all__ = ["RunOutputs"]


class RunOutputs:
    """The files, logs and progress bar of the run of ``parts`` in ``phase``."""

    def __init__(self, parts: RunParts, phase: Phase) -> None:
        config, main = parts.config, parts.context.is_main
        self.parts = parts
        self.phase = phase
        self.state = state = phase.state
        self.paths = RunPaths(parts.run_dir)
        resumed = state.resets > 0
        self.logger: RunLogger | None = None
        if main:
            self.logger = RunLogger(
                parts.run_dir,
                config.tensorboard,
                phase.step if resumed else None,
                step_key=phase.step_key,
                tensorboard_from=phase.tensorboard_step if resumed else None,
            )
        self.records = RunRecords(
            parts.run_dir,
            config.n_envs,
            config.log_updates_every,
            parts.context,
            bounds=lambda: parts.agent.return_bounds,
            resumed_at=(state.env_steps, state.updates) if resumed else None,
        )
        self.progress = self._progress()
        self.presenter = Presenter(parts.run_dir, f"{config.env_id} {config.method_name()}")
        self.closed = False

    def _progress(self) -> Progress:
        """The progress of the run's phase: its gradient steps on the dataset alone, or
        its env steps."""
        config, phase = self.parts.config, self.phase
        label = f"[bold]{config.env_id}[/] {config.algo}"
        enabled = config.progress and self.parts.context.is_main
        state = self.state
        per_step = config.updates_per_step if phase.unit == "env steps" else 1.0
        return Progress(
            label,
            phase.length,
            phase.step,
            enabled,
            state.updates,
            phase.unit,
            state.eval_s,
            updates_per_step=per_step,
            budget_flag=phase.budget_flag,
        )

    def go_online(self) -> None:
        """The run's env steps begin: progress counts them, progress.csv's rows follow them,
        and TensorBoard's steps go on from the gradient steps made
        (:attr:`~herkit.training.phase.Phase.tensorboard_step`)."""
        self.progress.close()
        self.progress = self._progress()
        if self.logger is not None:
            self.logger.step_key = self.phase.step_key

    @property
    def error_log(self) -> Path:
        """This rank's ``error.log`` (``error.rank{r}.log`` for rank r > 0): the tracebacks
        of env restarts and of the failure that stopped the run."""
        return self.paths.error_log(self.parts.context.rank)

    def write_config(self) -> None:
        """``config.json`` as the run stands (rank 0)."""
        parts = self.parts
        if parts.context.is_main:
            write_run_config(
                parts.run_dir, parts.config, parts.conventions, parts.buffer, parts.machine
            )

    def log(self, row: dict[str, float]) -> None:
        """A row of ``progress.csv`` (and TensorBoard), and the records kept so far."""
        if self.logger is not None:
            self.logger.log(row, self.phase.tensorboard_step)
        self.records.write()

    def write_video(self, frames: list[np.ndarray], fps: float) -> None:
        """``RUN/videos/step-N.mp4`` at the current step (``gradient-step-N.mp4`` on the
        dataset alone), and the video in TensorBoard."""
        path = self.paths.video(self.phase.step, gradient_steps=self.phase.offline)
        with naming(path):
            write_video(path, frames, fps)
        if self.logger is not None:
            self.logger.video("eval/video", frames, self.phase.tensorboard_step, fps)

    def write_summary(self, **extra: Any) -> dict[str, Any]:
        """``summary.json`` (rank 0) with ``extra`` entries; returns the summary."""
        parts = self.parts
        logged = [] if self.logger is None else self.logger.rows
        evaluations = [row for row in logged if self.phase.logged_in_phase(row)]
        summary = summary_of(parts.config, self.state, parts.context.world_size, evaluations)
        summary["run_dir"] = str(parts.run_dir)
        summary |= extra
        if parts.context.is_main:
            write_text(self.paths.summary, json.dumps(summary, indent=1))
        return summary

    def close(self) -> None:
        """Stop the progress bar and close the logs (once; again does nothing)."""
        if self.closed:
            return
        self.closed = True
        self.progress.close()
        if self.logger is not None:
            self.logger.close()
