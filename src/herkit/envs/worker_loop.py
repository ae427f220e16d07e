"""What steps a share of envs, in a worker process (:func:`work`) or in the trainer's own
(:func:`step_all`, :func:`reset_some`, :func:`remake`, called directly).

Each call answers ``("ok", payload)``, or ``("failed", (j, what, during, traceback))``
for the first env ``j`` of the share that raised; the envs after it are not stepped (the
vector env is reset as a whole after a failure, so their state does not matter).
"""

from __future__ import annotations

import os
import pickle
import signal
import traceback
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from herkit.envs.failures import raised

__all__ = ["remake", "reset_some", "step_all", "work"]

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
        _stack(list(obs)),
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
        try:
            envs[j].close()
        except Exception:  # a failed env may not close cleanly; it is replaced all the same
            pass
        try:
            envs[j] = fns[j]()
        except Exception as error:
            return "failed", (j, raised(error), "start", traceback.format_exc())
    return "ok", None


def work(pipe: Any, parent_pipe: Any, pickled_fns: bytes) -> None:
    """A worker's loop: make its envs, then answer step / reset / restart / close commands
    until told to close or until the trainer is gone."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the trainer's to handle
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
            try:
                env.close()
            except Exception:
                pass
        pipe.close()


def _stack(observations: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    return {key: np.stack([obs[key] for obs in observations]) for key in observations[0]}
