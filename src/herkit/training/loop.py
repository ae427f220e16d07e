"""One training loop: collect -> store -> update -> evaluate -> log -> checkpoint.

Read top to bottom, :func:`_train` is the whole algorithm. Each phase of an iteration is
one named call on the :class:`herkit.training.run.TrainingRun` that
:func:`herkit.training.startup.start_run` sets up, and each can be opened on its own. What a run
is made of (its config file, envs, conventions, agent and buffer) comes from
:mod:`herkit.training.build`. The vector envs run with autoreset disabled: a finished env is reset
by mask after its final transition is stored, so the buffer always receives the true
last observation of an episode.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from herkit.config.train import TrainConfig
from herkit.envs.failures import EnvFailure
from herkit.rundir.directory import owned_run_dir
from herkit.runtime import distributed
from herkit.runtime.console import StopOnSignal
from herkit.runtime.distributed import Context
from herkit.runtime.failures import EXIT_CODES, DistributedError, Interrupted, RunFailed
from herkit.training.restarts import restart_training_envs
from herkit.training.run import TrainingRun
from herkit.training.startup import start_run
from herkit.training.stopping import stop_run

__all__ = ["Interrupted", "train"]


def train(config: TrainConfig, resume: bool = False) -> dict[str, Any]:
    """Run (or resume) training as configured; returns the run's summary.

    Launched by torchrun, every rank runs this loop on its own envs and buffer (see
    :mod:`herkit.runtime.distributed`); env steps are counted over all ranks. SIGINT or SIGTERM
    (Ctrl-C) ends the step in progress, writes a checkpoint there, ``summary.json`` and
    ``curve.png``, and raises :class:`Interrupted`; a second one stops at once.

    Raises:
        ValueError: bad settings, an env that cannot be made, an existing run directory
            (unless ``config.overwrite``), one in use by another process (see
            :mod:`herkit.rundir.directory`), or a resume with nothing left to train.
        RunFailed: the run stopped on a failure (an env, a diverging learner, a write,
            an unforeseen error; see :mod:`herkit.runtime.failures`): its text is one line, the
            traceback is in ``RUN/error.log``, the last good checkpoint kept.
    """
    context = distributed.init(config.resolved_device(), config.dist_timeout_s)
    try:
        with owned_run_dir(Path(config.out_dir()), context.is_main), StopOnSignal() as stop:
            summary = _train(config, resume, context, stop)
    except DistributedError:
        raise  # the group is broken: tearing it down can abort the process (gloo threads)
    except Interrupted:
        distributed.shutdown()
        raise
    except BaseException:
        distributed.shutdown(synchronize=False)
        raise
    distributed.shutdown()
    return summary


def _train(
    config: TrainConfig, resume: bool, context: Context, stop: StopOnSignal
) -> dict[str, Any]:
    run = _start(config, resume, context)
    state, config = run.state, run.config
    interrupted = False
    try:
        try:
            obs, _ = run.envs.reset(seed=run.reset_seed())
        except EnvFailure as failure:
            obs = restart_training_envs(run, failure)  # or stop: no restart left
        while state.env_steps < config.steps:
            try:
                # act and learn: the updates owed so far run before acting, or (overlapped)
                # while the env workers step on actions of the parameters before them
                if run.overlap:
                    action = run.act(obs)
                    run.envs.step_async(action)
                run.learner.learn()
                if not run.overlap:
                    action = run.act(obs)
                    run.envs.step_async(action)
                next_obs, reward, terminated, truncated, info = run.envs.step_wait()
                # store (the env's reward and success kept: relabelling adds only the goal's part)
                done, success = run.store(
                    obs, action, next_obs, reward, terminated, truncated, info
                )
                run.observe_env(terminated, success)  # its reward terms, ending on success
                state.env_steps += run.steps_per_iteration
                run.learner.owe_updates()
                obs = run.reset_ended(next_obs, done)
            except EnvFailure as failure:  # nothing of this step is stored
                obs = restart_training_envs(run, failure)  # or stop: no restart left
                continue
            interrupted = run.stop_requested(stop)
            last = interrupted or state.env_steps >= config.steps
            eval_due = last or state.env_steps >= state.next_eval
            checkpoint_due = last or state.env_steps >= state.next_checkpoint
            if (eval_due or checkpoint_due) and not interrupted:
                run.learner.learn()  # evaluations and checkpoints see every update owed so far
            if eval_due and not interrupted:
                last = run.evaluate_and_log() or last  # True: the target is reached
                state.next_eval += config.eval_every
            video_due = last or state.env_steps >= state.next_video
            if run.video_envs is not None and video_due and not interrupted:
                run.record_video()
                state.next_video = state.env_steps + config.video_every
            run.progress.update(state, force=last)
            if checkpoint_due or last:
                if not interrupted:  # an interrupted run's next checkpoint stays where it was
                    state.next_checkpoint += config.checkpoint_every
                run.checkpoint()
            if last:
                break
        run.close()
        summary = run.finish(interrupted)
    except (KeyboardInterrupt, DistributedError):
        raise
    except Exception as error:  # an env, the learner, the disk or a bug: said in one line
        run.close()
        raise stop_run(run, error) from error
    finally:
        run.close()
        run.presenter.close()  # a failed run's figures: not waited for
    if interrupted:
        raise Interrupted(run.run_dir, state.env_steps)
    return summary


def _start(config: TrainConfig, resume: bool, context: Context) -> TrainingRun:
    """:func:`~herkit.training.startup.start_run`, with an env that fails while the envs are made
    said in one line (:class:`RunFailed`)."""
    try:
        return start_run(config, resume, context)
    except EnvFailure as failure:
        sys.stderr.write(failure.details + "\n")
        then = f"continue with: herkit train --resume {config.out_dir()}" if resume else (
            "nothing was trained: fix the cause and start again"
        )  # fmt: skip
        message = f"{failure} as the run started; traceback above; {then}"
        raise RunFailed(message, EXIT_CODES["env failed"]) from failure
