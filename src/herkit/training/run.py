"""A run in progress, :class:`TrainingRun`: its collection and bookkeeping phases.

:mod:`herkit.training.loop` calls them in its loop: act, store, observe the env, reset the
ended envs; evaluate and log, record a video, checkpoint. Learning is its
:attr:`~TrainingRun.learner` (:class:`herkit.training.learner.Learner`);
:class:`herkit.training.state.LoopState` holds the counters that every checkpoint saves,
:class:`herkit.rundir.records.RunRecords` the per-episode and per-update records."""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from herkit.agents import Agent
from herkit.buffer.conventions import GoalConventions, SuccessSignal
from herkit.buffer.env_terms import RewardAudit
from herkit.buffer.her import HerReplayBuffer
from herkit.config.train import TrainConfig
from herkit.envs.workers import WorkerVectorEnv
from herkit.rundir.checkpoint import save_checkpoint
from herkit.rundir.logs import RunLogger
from herkit.rundir.paths import RunPaths
from herkit.rundir.records import RunRecords
from herkit.runtime.console import Progress, StopOnSignal, say
from herkit.runtime.distributed import Context
from herkit.runtime.failures import DistributedError, check_finite_action
from herkit.runtime.files import naming, write_text
from herkit.training.build import write_run_config
from herkit.training.evaluation import evaluate
from herkit.training.learner import Learner
from herkit.training.presenter import Presenter
from herkit.training.restarts import with_restarts
from herkit.training.state import LoopState, Metrics, progress_row, summary_of, target_reached
from herkit.training.video import write_video

__all__ = ["TrainingRun"]


@dataclass(kw_only=True)
class TrainingRun:
    """A run in progress: its settings, envs, agent, buffer, counters and logs. Its methods
    are the phases of one iteration of the loop in :mod:`herkit.training.loop`, in the loop's order;
    :func:`herkit.training.startup.start_run` makes it."""

    config: TrainConfig
    conventions: GoalConventions
    context: Context
    run_dir: Path
    envs: WorkerVectorEnv
    eval_envs: WorkerVectorEnv
    video_envs: WorkerVectorEnv | None
    agent: Agent
    buffer: HerReplayBuffer
    machine: dict[str, Any]
    state: LoopState
    offset: int
    overlap: bool
    success_of: SuccessSignal = field(init=False)
    logger: RunLogger | None = field(init=False)
    records: RunRecords = field(init=False)
    progress: Progress = field(init=False)
    presenter: Presenter = field(init=False)
    metrics: Metrics = field(default_factory=Metrics)
    terminal_unknown: bool = field(init=False)
    terms_reported: bool = field(init=False)
    range_reported: bool = False
    learner: Learner = field(init=False)
    started: float = field(init=False)
    closed: bool = False
    last_checkpoint: int | None = field(init=False)
    """Env steps of the checkpoint on disk (None: none yet)."""

    def __post_init__(self) -> None:
        config, state, main = self.config, self.state, self.context.is_main
        self.success_of = SuccessSignal(
            self.conventions.success_key,
            self.buffer.reward_fn,
            self.conventions.success_reward,
            config.info_keys,
        )
        self.terminal_unknown = config.terminal_on_success is None
        # the env's reward terms beyond compute_reward, said once (by the probe or here)
        self.terms_reported = self.conventions.step_reward_extra is not None
        resumed = state.resets > 0
        self.last_checkpoint = state.env_steps if resumed else None
        self.logger = (
            RunLogger(self.run_dir, config.tensorboard, state.env_steps if resumed else None)
            if main
            else None
        )
        self.records = RunRecords(
            self.run_dir, config.n_envs, config.log_updates_every, self.context,
            bounds=lambda: self.agent.return_bounds,
            resumed_at=(state.env_steps, state.updates) if resumed else None,
        )  # fmt: skip
        self.started = time.perf_counter() - state.wall_s
        label = f"[bold]{config.env_id}[/] {config.algo}"
        self.progress = Progress(
            label, config.steps, state.env_steps, config.progress and main, state.updates
        )
        self.presenter = Presenter(self.run_dir, f"{config.env_id} {config.algo}+HER")
        self.learner = Learner.of_run(
            config, context=self.context, agent=self.agent, buffer=self.buffer, state=state,
            metrics=self.metrics, records=self.records,
        )  # fmt: skip

    @property
    def error_log(self) -> Path:
        """This rank's ``error.log`` (``error.rank{r}.log`` for rank r > 0): the tracebacks
        of env restarts and of the failure that stopped the run."""
        return RunPaths(self.run_dir).error_log(self.context.rank)

    def reset_seed(self) -> int:
        """The seed of a full reset of the training envs: new after a resume or a restart."""
        state = self.state
        return self.config.seed + self.offset + 7919 * state.resets + 104_729 * state.env_restarts

    @property
    def steps_per_iteration(self) -> int:
        """Env steps of one iteration, over all ranks."""
        return self.config.n_envs * self.context.world_size

    def act(self, obs: dict[str, np.ndarray]) -> np.ndarray:
        """Random actions for the first ``random_steps``, then the exploring policy's."""
        if self.state.env_steps < self.config.random_steps:
            return self.envs.action_space.sample()
        action = self.agent.act(obs["observation"], obs["desired_goal"], deterministic=False)
        check_finite_action(action, self.state.updates)
        return action

    def store(
        self,
        obs: dict[str, np.ndarray],
        action: np.ndarray,
        next_obs: dict[str, np.ndarray],
        reward: np.ndarray,
        terminated: np.ndarray,
        truncated: np.ndarray,
        info: dict[str, Any],
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """Store the step in the buffer and the normalisers and note its ended episodes;
        returns which envs ended an episode and which reached their goal (None: unknown)."""
        success = self.success_of(info, next_obs)
        self.buffer.add(
            obs, action, next_obs, terminated, truncated, info, reward=reward,
            success=None if success is None else success > 0,
        )  # fmt: skip
        self.agent.update_normalizer(obs["observation"], obs["desired_goal"])
        done: np.ndarray = terminated | truncated
        self.state.episodes += int(done.sum())
        env_steps = self.state.env_steps + self.steps_per_iteration  # once this step counts
        self.records.episodes.step(env_steps, reward, done, success, next_obs)
        if success is not None:
            self.metrics.episode_successes.extend(success[done].tolist())
        return done, success

    def observe_env(self, terminated: np.ndarray, success: np.ndarray | None) -> None:
        """What the stored steps show of the env: step rewards beyond ``compute_reward`` or
        outside the Q-target range (a warning, once each), and, at its first success,
        whether its episodes end on success (told to the config, buffer and agent)."""
        self._report_rewards()
        if self.terminal_unknown and success is not None and success.any():
            self._learn_terminal_on_success(bool(terminated[success > 0].all()))

    def _report_rewards(self) -> None:
        """Warn once where the env's step rewards differ from compute_reward, and once
        where they leave the range that Q targets are clipped to."""
        main = self.context.is_main
        if not self.terms_reported and self.buffer.audit.differing:
            self.terms_reported = True
            if main:
                say(f"warning: {self.buffer.audit.describe()}")
                self._write_config()
        if not self.range_reported:
            outside = _outside(self.buffer.audit, self.config.reward_range)
            if outside:
                self.range_reported = True
                if main:
                    say(f"warning: {outside}")

    def _learn_terminal_on_success(self, ended: bool) -> None:
        """The env's first success shows whether its episodes end on success: tell the
        config, the conventions, the buffer and the agent."""
        state = self.state
        self.conventions = self.conventions.with_terminal_evidence(ended, state.env_steps)
        self.config = dataclasses.replace(self.config, terminal_on_success=ended)
        self.buffer.terminal_on_success = ended
        self.agent.set_terminal_on_success(ended)
        self.terminal_unknown = False
        if self.context.is_main:
            say(f"{self.config.env_id}: episodes end on success: {ended} "
                f"({self.conventions.sources['terminal_on_success']})")  # fmt: skip
            self._write_config()

    def reset_ended(self, next_obs: dict[str, np.ndarray], done: np.ndarray) -> dict:
        """The observations to act on next: ``next_obs``, where the envs whose episode
        ended (``done``) are reset first."""
        if not done.any():
            return next_obs
        fresh, _ = self.envs.reset(options={"reset_mask": done})
        return fresh

    def stop_requested(self, stop: StopOnSignal) -> bool:
        """Whether a signal asks to stop; every rank stops at the same step (asked every
        16 iterations with torchrun)."""
        iteration = self.state.env_steps // self.steps_per_iteration
        if not self.context.active or iteration % 16 == 0:
            return not self.context.all_true(not stop.requested)
        return False

    def evaluate_and_log(self) -> bool:
        """Evaluate the deterministic policy, log a row (and the episode and update
        records); True once the target is reached."""
        state, config, context = self.state, self.config, self.context
        eval_seed = config.seed + 10_000 + self.offset + state.env_steps
        eval_started = time.perf_counter()
        result = with_restarts(self, self.eval_envs, lambda: evaluate(
            self.agent, self.eval_envs, config.eval_episodes, eval_seed, self.success_of
        ))  # fmt: skip
        state.eval_s += time.perf_counter() - eval_started
        state.success_rate = context.mean(result.success_rate)
        state.wall_s = time.perf_counter() - self.started
        episodes = int(context.all_sum(np.array([state.episodes]))[0])  # every rank
        self.learner.read_metrics()
        metrics = self.metrics.take()
        if self.logger is not None:
            self.logger.log(progress_row(state, metrics, episodes))
        self.records.write()
        if not target_reached(config, state):
            return False
        if state.solved_at_env_steps is None:
            state.solved_at_env_steps = state.env_steps
            state.solved_at_wall_s = state.wall_s
        return True

    def record_video(self) -> None:
        """One deterministic evaluation episode as ``RUN/videos/step-N.mp4`` and in
        TensorBoard."""
        video_envs = self.video_envs
        assert video_envs is not None
        state = self.state
        seed = self.config.seed + 20_000 + state.env_steps
        frames: list[np.ndarray] = []

        def play() -> None:
            frames.clear()
            evaluate(self.agent, video_envs, 1, seed, self.success_of, frames=frames)

        with_restarts(self, video_envs, play)
        fps = float(video_envs.metadata.get("render_fps") or 30)
        path = RunPaths(self.run_dir).video(state.env_steps)
        with naming(path):
            write_video(path, frames, fps)
        if self.logger is not None:
            self.logger.video("eval/video", frames, state.env_steps, fps)

    def checkpoint(self) -> None:
        """Save agent, buffer and counters (every rank: its own buffer) and config.json;
        append the episode and update records; then start redrawing the figures."""
        state = self.state
        state.wall_s = time.perf_counter() - self.started
        if not self.agent.parameters_agree():
            raise DistributedError("the ranks' parameters have diverged")
        self.learner.read_metrics()  # a diverged update stops the run before its weights
        self.records.write()  # first: rows cut short by a kill here go with this checkpoint
        agent_state = {"agent": self.agent.state_dict(), "torch_rng": torch.get_rng_state()}
        save_checkpoint(self.run_dir, agent_state, self.buffer, asdict(state), self.context)
        self.last_checkpoint = state.env_steps
        if self.context.is_main:
            self._write_config()
            self.presenter.refresh()

    def _write_config(self) -> None:
        write_run_config(self.run_dir, self.config, self.conventions, self.buffer, self.machine)

    def close(self) -> None:
        """Stop the progress bar, close the logs and every env (once; again does nothing)."""
        if self.closed:
            return
        self.closed = True
        self.progress.close()
        if self.logger is not None:
            self.logger.close()
        for envs in (self.envs, self.eval_envs, self.video_envs):
            if envs is not None:
                envs.close()

    def finish(self, interrupted: bool) -> dict[str, Any]:
        """Write ``summary.json``, then ``curve.png`` and ``report.html``
        (:mod:`herkit.training.presenter`); returns the summary."""
        summary = self.write_summary(interrupted=True) if interrupted else self.write_summary()
        if self.context.is_main:
            self.presenter.final()
        return summary

    def write_summary(self, **extra: Any) -> dict[str, Any]:
        """``summary.json`` (rank 0) with ``extra`` entries; returns the summary."""
        summary = summary_of(self.config, self.state, self.context.world_size)
        summary["run_dir"] = str(self.run_dir)
        summary |= extra
        if self.context.is_main:
            write_text(RunPaths(self.run_dir).summary, json.dumps(summary, indent=1))
        return summary


def _outside(audit: RewardAudit, reward_range: tuple[float, float] | None) -> str:
    """A warning if the env gave step rewards outside ``reward_range``, else ''."""
    if reward_range is None:
        return ""
    low, high = reward_range
    if audit.reward_low >= low - 1e-6 and audit.reward_high <= high + 1e-6:
        return ""
    return (
        f"the env gave step rewards from {audit.reward_low:g} to {audit.reward_high:g}, "
        f"outside the range [{low:g}, {high:g}] that Q targets are clipped to: pass "
        "--reward-range LOW HIGH covering every reward the env can give"
    )
