"""A run in progress, :class:`TrainingRun`: its parts, counters, collector, learner,
schedule and outputs, and the bookkeeping steps of the loop: evaluate and log, record a
video, checkpoint, finish.

What it is made of: :class:`~herkit.training.parts.RunParts` (envs, agent, buffer,
settings), :class:`~herkit.training.state.LoopState` (the counters every checkpoint
saves), :class:`~herkit.training.collector.Collector` (acting and storing),
:class:`~herkit.training.learner.Learner` (the gradient updates),
:class:`~herkit.training.phase.Phase` (the run's phase: its clock, what is due when) and
:class:`~herkit.training.outputs.RunOutputs` (logs, records, summary, figures).
"""

from __future__ import annotations

import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import torch

from herkit.rundir.checkpoint import save_checkpoint
from herkit.runtime.console import say
from herkit.runtime.failures import DistributedError
from herkit.training.collector import Collector
from herkit.training.evaluation import episode_seeds, evaluate, evaluate_tasks
from herkit.training.learner import Learner
from herkit.training.outputs import RunOutputs
from herkit.training.parts import RunParts
from herkit.training.phase import Phase
from herkit.training.restarts import EnvRestarts
from herkit.training.state import LoopState, Metrics, progress_row, target_reached

__all__ = ["TrainingRun"]


class TrainingRun:
    """The run of ``parts`` from the counters ``state`` (see the module's docstring);
    :func:`herkit.training.startup.start_run` makes it."""

    def __init__(
        self, parts: RunParts, state: LoopState, saved: dict[str, Any] | None = None
    ) -> None:
        self.parts = parts
        self.state = state
        self.metrics = Metrics()
        self.phase = Phase(parts.config, state, parts.context)
        self.outputs = RunOutputs(parts, self.phase)
        self.restarts = EnvRestarts(parts.config.env_restarts, state, self.outputs.error_log)
        self.collector = Collector(parts, state, self.metrics, self.outputs, self.restarts)
        self.learner = Learner.of_run(parts, self.phase, self.metrics, self.outputs.records)
        if saved is not None:
            self._go_on_from(saved)
        self.started = time.perf_counter() - state.wall_s
        self.last_checkpoint: str | None = self.phase.position if state.resets > 0 else None
        """Where the checkpoint on disk was written (:attr:`~herkit.training.phase.Phase.position`;
        None: none yet)."""
        self.closed = False

    @property
    def run_dir(self) -> Path:
        """The run's directory."""
        return self.parts.run_dir

    def evaluate_and_log(self) -> bool:
        """Evaluate the deterministic policy, log a row (and the episode and update
        records); True once the target is reached."""
        parts, state, context = self.parts, self.state, self.parts.context
        config = parts.config
        key = self.phase.episode_key(parts.seeds.evaluation_offset)
        eval_started = time.perf_counter()
        results = self.restarts.replay(
            parts.eval_envs,
            lambda: evaluate_tasks(
                parts.agent,
                parts.eval_envs,
                config.eval_episodes,
                key,
                parts.success_of,
                parts.tasks,
            ),
        )
        per_task = [result.success_rate for result in results]
        state.eval_s += time.perf_counter() - eval_started
        state.success_rate = context.mean(float(np.mean(per_task)))
        state.wall_s = time.perf_counter() - self.started
        episodes = int(context.all_sum(np.array([state.episodes]))[0])  # every rank
        self.learner.read_metrics()
        tasks = (
            {}
            if len(per_task) == 1
            else {f"success_task_{i + 1}": context.mean(value) for i, value in enumerate(per_task)}
        )
        self.outputs.log(progress_row(state, self.metrics.take() | tasks, episodes))
        if not target_reached(config, state):
            return False
        if state.solved_at_env_steps is None:
            state.solved_at_env_steps = state.env_steps
            state.solved_at_updates = state.updates
            state.solved_at_wall_s = state.wall_s
        return True

    def go_online(self) -> None:
        """The gradient steps on the dataset alone are done: the schedule, the progress and
        the logs count env steps from here, and the run says so."""
        self.phase.go_online()
        self.outputs.go_online()
        if self.parts.context.is_main:
            config = self.parts.config
            say(
                f"{self.state.updates:,} gradient steps on the dataset done: on to "
                f"{config.steps:,} env steps in {config.env_id}, the dataset kept in the buffer"
            )

    def record_video(self) -> None:
        """One deterministic evaluation episode as ``RUN/videos/step-N.mp4``
        (:meth:`~herkit.training.outputs.RunOutputs.write_video`) and in TensorBoard."""
        parts = self.parts
        video_envs = parts.video_envs
        assert video_envs is not None
        seeds = episode_seeds(self.phase.episode_key(parts.seeds.video_offset), 1)
        frames: list[np.ndarray] = []

        def play() -> None:
            frames.clear()
            evaluate(parts.agent, video_envs, seeds, parts.success_of, frames=frames)

        self.restarts.replay(video_envs, play)
        self.outputs.write_video(frames, float(video_envs.metadata.get("render_fps") or 30))

    def checkpoint(self) -> None:
        """Save agent, buffer and counters (every rank: its own buffer) and config.json;
        append the episode and update records; then start redrawing the figures."""
        parts, state = self.parts, self.state
        state.wall_s = time.perf_counter() - self.started
        if not parts.agent.parameters_agree():
            raise DistributedError("the ranks' parameters have diverged")
        self.learner.settle()  # a diverged update stops the run before its weights
        self.outputs.records.write()  # first: rows cut short by a kill here go with it
        agent_state = {
            "agent": parts.agent.state_dict(),
            "torch_rng": torch.get_rng_state(),
            "random_actions": self.collector.random_actions_state(),
            "intervals": {
                "progress": self.metrics.state_dict(),
                "updates": self.outputs.records.updates.state_dict(),
            },
        }
        save_checkpoint(parts.run_dir, agent_state, parts.buffer, asdict(state), parts.context)
        self.last_checkpoint = self.phase.position
        if parts.context.is_main:
            self.outputs.write_config()
            self.outputs.presenter.refresh()

    def _go_on_from(self, saved: dict[str, Any]) -> None:
        """Continue from a checkpoint's ``saved`` agent state: the stream of random actions
        and the intervals of progress.csv and updates.csv in progress (a checkpoint
        written before they were kept starts them anew)."""
        if "random_actions" in saved:
            self.collector.set_random_actions_state(saved["random_actions"])
        intervals = saved.get("intervals")
        if intervals is not None:
            self.metrics.load_state_dict(intervals["progress"])
            self.outputs.records.updates.load_state_dict(intervals["updates"])

    def close(self) -> None:
        """Stop the progress bar, close the logs and every env (once; again does nothing)."""
        if self.closed:
            return
        self.closed = True
        self.outputs.close()
        self.parts.close_envs()

    def finish(self, interrupted: bool) -> dict[str, Any]:
        """Write ``summary.json``, then ``curve.png`` and ``report.html``
        (:mod:`herkit.presentation.presenter`); returns the summary."""
        write = self.outputs.write_summary
        summary = write(interrupted=True) if interrupted else write()
        if self.parts.context.is_main:
            self.outputs.presenter.final()
        return summary
