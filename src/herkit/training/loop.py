"""The training loop: learn, evaluate and checkpoint when due, collect; and again.

Read top to bottom, :func:`_train` is the whole algorithm, in labelled sections. Each is
one or two named calls on the parts of the :class:`~herkit.training.run.TrainingRun` that
:func:`~herkit.training.startup.start_run` sets up: the
:class:`~herkit.training.collector.Collector` acts and stores, the
:class:`~herkit.training.learner.Learner` runs the updates owed (its only call site), the
:class:`~herkit.training.phase.Phase` keeps the clock and says what is due, and the run evaluates,
records and checkpoints. Every run takes this loop: online, offline from a dataset
(``--dataset``: its first phase owes one gradient step per iteration and stores nothing),
and offline then online; what differs is where batches come from, never the machinery
around them (threads, progress, signals, checkpoints, NaN checks, records).
"""

from __future__ import annotations

import sys
from typing import Any

from herkit.config.resolve import run_directory
from herkit.config.train import TrainConfig
from herkit.envs.failures import EnvFailure
from herkit.rundir.directory import owned_run_dir
from herkit.runtime import distributed
from herkit.runtime.console import StopOnSignal
from herkit.runtime.devices import resolved_device
from herkit.runtime.distributed import Context
from herkit.runtime.failures import EXIT_CODES, DistributedError, Interrupted, RunFailed
from herkit.training.phase import Due
from herkit.training.run import TrainingRun
from herkit.training.startup import start_run
from herkit.training.stopping import stop_run
from herkit.training.update_plan import no_profiler_notes

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
    config.check_data()
    context = distributed.init(resolved_device(config.device), config.dist_timeout_s)
    try:
        with (
            owned_run_dir(run_directory(config), context.is_main),
            StopOnSignal() as stop,
            no_profiler_notes(),  # torch.compile's notes on what it leaves out: nothing lost
        ):
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
    collector, learner, phase = run.collector, run.learner, run.phase
    state, overlap = run.state, run.parts.overlap
    due = Due()  # what is due after the step just stored
    sent = False  # whether the envs already step on `action`
    try:
        obs = {} if phase.offline else collector.reset()  # offline: no env yet
        while True:
            # --- learn: every update owed so far (with overlap, the envs step meanwhile)
            if not due.interrupted:
                learner.learn()

            # --- evaluate, record a video, checkpoint: when due, after every update owed
            if due.evaluate:
                due = phase.evaluated(due, run.evaluate_and_log())  # target: last
            if run.parts.video_envs is not None and phase.video_due(due):
                run.record_video()
                phase.recorded()
            run.outputs.progress.update(state, phase.step, due.last, due.evaluate)
            if due.checkpoint:
                phase.checkpointed(due)
                run.checkpoint()
            if due.last:
                break

            # --- a dataset alone: owe one more gradient step on it, until they are done
            due = Due()  # nothing new is due until a step is stored
            if not phase.offline_done:
                learner.owe_gradient_step()
                due = phase.due(stop)
                continue
            if phase.offline:  # on to the env steps, the dataset kept
                run.go_online()
                obs, sent = collector.reset(), False

            # --- collect: act, store the envs' step, owe the updates it brings
            try:
                if not sent:
                    action = collector.act(obs)
                next_obs, done = collector.store(obs, action)
                learner.owe_updates()
                # what is due follows the steps stored alone (not a reset that fails after
                # them), so that every rank of a torchrun job asks at the same steps
                due = phase.due(stop)
                obs = collector.reset_ended(next_obs, done)
                # with overlap, the envs step on the next actions while the networks
                # learn: actions of the parameters one update batch behind
                sent = overlap and not due.anything
                if sent:
                    action = collector.act(obs)
            except EnvFailure as failure:  # nothing of a step not yet stored is stored
                obs = collector.restart(failure)  # or stop: no restart left
                sent = False
        run.close()
        summary = run.finish(due.interrupted)
    except (KeyboardInterrupt, DistributedError):
        raise
    except Exception as error:  # an env, the learner, the disk or a bug: said in one line
        run.close()
        raise stop_run(run, error) from error
    finally:
        run.close()
        run.outputs.presenter.close()  # a failed run's figures: not waited for
    if due.interrupted:
        raise Interrupted(run.run_dir, phase.steps_done)
    return summary


def _start(config: TrainConfig, resume: bool, context: Context) -> TrainingRun:
    """:func:`~herkit.training.startup.start_run`, with an env that fails while the envs are made
    said in one line (:class:`RunFailed`)."""
    try:
        return start_run(config, resume, context)
    except EnvFailure as failure:
        sys.stderr.write(failure.details + "\n")
        then = (
            f"continue with: herkit train --resume {run_directory(config)}"
            if resume
            else "nothing was trained: fix the cause and start again"
        )
        message = f"{failure} as the run started; traceback above; {then}"
        raise RunFailed(message, EXIT_CODES["env failed"]) from failure
