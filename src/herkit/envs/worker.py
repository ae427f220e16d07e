"""One share of envs: what steps it, in a worker process (:func:`work`) or in the
trainer's own (:func:`step_all`, :func:`reset_some`, :func:`remake`, called directly), and
the trainer's handle on a worker process (:class:`Worker`).

Each call answers ``("ok", payload)``, or ``("failed", (j, what, during, traceback))``
for the first env ``j`` of the share that raised; the envs after it are not stepped (the
vector env is reset as a whole after a failure, so their state does not matter).
"""

from __future__ import annotations

import contextlib
import multiprocessing.connection
import os
import pickle
import signal
import traceback
from collections.abc import Callable, Sequence
from typing import Any

import cloudpickle
import gymnasium as gym
import numpy as np

from herkit.envs.failures import Failed, exit_reason, raised

__all__ = ["Worker", "remake", "reset_some", "step_all", "work"]

PARENT_CHECK_S = 1.0
"""How often an idle worker looks whether the trainer that started it is still there."""


def step_all(envs: Sequence[gym.Env], actions: Any) -> tuple[str, Any]:
    """Step every env of a share with its action; results stacked per observation key."""
    results = []
    for j, (env, action) in enumerate(zip(envs, actions, strict=True)):
        try:
            results.append(env.step(action))
        except Exception as error:
            return "failed", (j, raised(error), "step", traceback.format_exc())
    obs, rewards, terminated, truncated, infos = zip(*results, strict=True)
    return "ok", (
        {key: np.stack([each[key] for each in obs]) for key in obs[0]},
        np.asarray(rewards, np.float64),
        np.asarray(terminated, np.bool_),
        np.asarray(truncated, np.bool_),
        list(infos),
    )


def reset_some(
    envs: Sequence[gym.Env], seeds: dict[int, int | None], options: dict[str, Any] | None
) -> tuple[str, Any]:
    """Reset the envs ``j`` of ``seeds`` (share positions) with their seeds."""
    reset = {}
    for j, seed in seeds.items():
        try:
            reset[j] = envs[j].reset(seed=seed, options=options)
        except Exception as error:
            return "failed", (j, raised(error), "reset", traceback.format_exc())
    return "ok", reset


def remake(
    envs: list[gym.Env], fns: Sequence[Callable[[], gym.Env]], positions: Sequence[int]
) -> tuple[str, Any]:
    """Replace the envs at ``positions`` by new ones from their ``fns`` (the old ones are
    closed as far as they still can be)."""
    for j in positions:
        with contextlib.suppress(Exception):  # a failed env may not close: it is replaced
            envs[j].close()
        try:
            envs[j] = fns[j]()
        except Exception as error:
            return "failed", (j, raised(error), "start", traceback.format_exc())
    return "ok", None


def work(pipe: Any, parent_pipe: Any, pickled_fns: bytes) -> None:
    """A worker's loop: make its envs, then answer step / reset / restart / close commands
    until told to close or until the trainer is gone."""
    # Ctrl-C, and a SIGTERM sent to the whole process group (timeout, a job scheduler),
    # are the trainer's to handle: it checkpoints, then closes the workers
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_IGN)
    parent_pipe.close()
    parent = os.getppid()
    envs: list[gym.Env] = []
    try:
        fns = pickle.loads(pickled_fns)
        for j, fn in enumerate(fns):
            try:
                envs.append(fn())
            except Exception as error:
                pipe.send(("failed", (j, raised(error), "start", traceback.format_exc())))
                return
        pipe.send(("ok", None))
        while True:
            while not pipe.poll(PARENT_CHECK_S):
                if os.getppid() != parent:  # the trainer died (kill -9): so do we
                    return
            command, payload = pipe.recv()
            if command == "close":
                break
            if command == "step":
                pipe.send(step_all(envs, payload))
            elif command == "reset":
                seeds, options = payload
                pipe.send(reset_some(envs, seeds, options))
            elif command == "restart":
                pipe.send(remake(envs, fns, payload))
            else:
                raise ValueError(f"unknown command {command!r}")
    except (EOFError, KeyboardInterrupt, BrokenPipeError, ConnectionResetError):
        pass
    finally:
        for env in envs:
            with contextlib.suppress(Exception):
                env.close()
        pipe.close()


class Worker:
    """The trainer's side of worker process number ``index``, which makes and steps the
    envs ``share`` (their indices in the vector env) from ``fns``: every wait for an answer
    also watches the process, so its death is seen at once and silence for ``timeout_s``
    seconds counts as a hang (the process is then killed)."""

    def __init__(
        self,
        context: Any,
        index: int,
        share: Sequence[int],
        fns: Sequence[Callable[[], gym.Env]],
        timeout_s: float,
    ) -> None:
        self.index, self.share, self.timeout_s = index, tuple(int(i) for i in share), timeout_s
        self._context, self._fns = context, cloudpickle.dumps(list(fns))
        self.lost = False
        """The process died or hung: it answers nothing more until :meth:`start`."""
        self.pipe: Any = None
        self.process: Any = None
        self.start()

    def start(self) -> None:
        """Start (or start anew) the process; it answers ``"start"`` once its envs exist."""
        parent, child = self._context.Pipe()
        self.process = self._context.Process(
            target=work, args=(child, parent, self._fns), daemon=True
        )
        self.process.start()
        child.close()
        self.pipe, self.lost = parent, False

    def send(self, message: Any) -> None:
        """Send a command; a dead process is reported by the next :meth:`receive`."""
        with contextlib.suppress(BrokenPipeError, ConnectionResetError, OSError):
            self.pipe.send(message)

    def receive(self, during: str) -> tuple[str, Any]:
        """The answer to the last command, ``("ok", payload)`` or ``("failed", ...)``; a
        process that dies or stays silent gives a :class:`~herkit.envs.failures.Failed` of
        all its envs."""
        pipe, process = self.pipe, self.process
        ready = multiprocessing.connection.wait([pipe, process.sentinel], self.timeout_s)
        if pipe in ready or pipe.poll():  # an answer sent just before dying still counts
            with contextlib.suppress(EOFError, ConnectionResetError, BrokenPipeError, OSError):
                answer: tuple[str, Any] = pipe.recv()
                return answer
        self.lost = True
        if not ready:
            process.kill()
            process.join(timeout=5.0)
            what = f"answered nothing for {self.timeout_s:g} s (hung): stopped it"
            details = (
                f"worker {self.index} (pid {process.pid}) gave no answer to '{during}' within "
                f"{self.timeout_s:g} s; it was killed"
            )
        else:
            process.join(timeout=5.0)
            what = exit_reason(process.exitcode)
            details = f"worker {self.index} (pid {process.pid}) {what} during '{during}'"
        return "failed", Failed(self.share, what, during, details, self.index, process_lost=True)

    def stop(self, ask: bool, owes_answer: bool) -> None:
        """End the process: asked to close (after the answer it ``owes_answer``) when
        ``ask`` and it can still answer, else killed; waits seconds at most."""
        process = self.process
        if ask and not self.lost and process.is_alive():
            if owes_answer:
                ready = multiprocessing.connection.wait([self.pipe, process.sentinel], 10.0)
                ask = self.pipe in ready
                if ask:
                    try:
                        self.pipe.recv()
                    except (EOFError, ConnectionResetError, BrokenPipeError, OSError):
                        ask = False
            if ask:
                self.send(("close", None))
                process.join(timeout=10.0)
        for end in (process.terminate, process.kill):
            if process.is_alive():
                end()
                process.join(timeout=2.0)
        self.pipe.close()
