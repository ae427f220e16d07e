"""A vector env whose envs step in worker processes, several envs per worker.

Gymnasium's ``AsyncVectorEnv`` gives every env a process of its own: 16 envs on a 2-core
machine are 16 processes fighting for 2 cores, and every step costs one round trip per
env. :class:`WorkerVectorEnv` spreads ``n`` envs over ``workers`` processes (workers <=
the cores left over by the learner); a worker steps its envs one after another and sends
their results back in one message. ``step_async`` / ``step_wait`` let the trainer update
its networks while the workers step.

Semantics are those of ``gym.vector.SyncVectorEnv`` with autoreset disabled: ``reset(seed=s)``
seeds env ``i`` with ``s + i``; ``reset(options={"reset_mask": m})`` resets only the envs
of ``m`` and returns every env's current observation; infos are merged per env
(``info[key]`` and ``info["_key"]``). The same seeds give the same transitions, in
workers or in one process.
"""

from __future__ import annotations

import multiprocessing
import pickle
import signal
import traceback
from collections.abc import Callable, Sequence
from typing import Any

import cloudpickle
import gymnasium as gym
import numpy as np

__all__ = ["EnvWorkerError", "WorkerVectorEnv"]


class EnvWorkerError(RuntimeError):
    """An env raised in a worker process (the worker's traceback is the message), or a
    worker died."""


def _stack(observations: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    return {key: np.stack([obs[key] for obs in observations]) for key in observations[0]}


def _work(pipe: Any, parent_pipe: Any, pickled_fns: bytes) -> None:
    """A worker's loop: make its envs, then answer step / reset / close commands."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the trainer's to handle
    parent_pipe.close()
    envs: list[gym.Env] = []
    try:
        envs = [fn() for fn in pickle.loads(pickled_fns)]
        pipe.send(("ok", None))
        while True:
            command, payload = pipe.recv()
            if command == "close":
                break
            try:
                if command == "step":
                    results = [env.step(action) for env, action in zip(envs, payload, strict=True)]
                    obs, rewards, terminated, truncated, infos = zip(*results, strict=True)
                    pipe.send(
                        (
                            "ok",
                            (
                                _stack(list(obs)),
                                np.asarray(rewards, np.float64),
                                np.asarray(terminated, np.bool_),
                                np.asarray(truncated, np.bool_),
                                list(infos),
                            ),
                        )
                    )
                elif command == "reset":
                    seeds, options = payload
                    reset = {
                        i: envs[i].reset(seed=seed, options=options) for i, seed in seeds.items()
                    }
                    pipe.send(("ok", reset))
                else:
                    raise ValueError(f"unknown command {command!r}")
            except Exception:
                pipe.send(("error", traceback.format_exc()))
    except (EOFError, KeyboardInterrupt, BrokenPipeError):
        pass
    except Exception:
        pipe.send(("error", traceback.format_exc()))
    finally:
        for env in envs:
            env.close()
        pipe.close()


class WorkerVectorEnv(gym.vector.VectorEnv):
    """``len(env_fns)`` envs stepped in ``workers`` processes, autoreset disabled.

    Env ``i`` lives in worker ``i * workers // n`` (contiguous shares, as even as they
    come). Call :meth:`step_async` then :meth:`step_wait` to do other work while the
    workers step, or :meth:`step` for both.

    Raises:
        ValueError: ``workers`` is not in ``1..len(env_fns)``, or the observations are not
            a Dict (as a goal env's are).
        EnvWorkerError: an env failed in its worker (the worker's traceback included).
    """

    def __init__(
        self,
        env_fns: Sequence[Callable[[], gym.Env]],
        workers: int,
        context: str | None = None,
    ) -> None:
        self.closed = True  # until the workers run
        self._pipes: list[Any] = []
        self._processes: list[Any] = []
        n = len(env_fns)
        if isinstance(workers, bool) or not isinstance(workers, int) or not 1 <= workers <= n:
            raise ValueError(
                f"workers must be an int in 1..{n} (one env at least each), got {workers!r}"
            )
        self.env_fns = list(env_fns)
        self.num_envs = n
        self.workers = workers
        probe = self.env_fns[0]()
        if not isinstance(probe.observation_space, gym.spaces.Dict):
            probe.close()
            raise ValueError(
                "WorkerVectorEnv steps envs with Dict observations (goal envs), got "
                f"{probe.observation_space}"
            )
        self.single_observation_space = probe.observation_space
        self.single_action_space = probe.action_space
        self.metadata = dict(probe.metadata) | {"autoreset_mode": gym.vector.AutoresetMode.DISABLED}
        self.render_mode = probe.render_mode
        self.spec = probe.spec
        probe.close()
        self.observation_space = gym.vector.utils.batch_space(self.single_observation_space, n)
        self.action_space = gym.vector.utils.batch_space(self.single_action_space, n)
        owner = np.arange(n) * workers // n
        self._shares = [np.flatnonzero(owner == w) for w in range(workers)]
        self._observations: dict[str, np.ndarray] | None = None
        self._waiting = False
        self.closed = False
        ctx: Any = multiprocessing.get_context(context)
        for share in self._shares:
            parent, child = ctx.Pipe()
            fns = cloudpickle.dumps([self.env_fns[i] for i in share])
            process = ctx.Process(target=_work, args=(child, parent, fns), daemon=True)
            process.start()
            child.close()
            self._pipes.append(parent)
            self._processes.append(process)
        for w in range(workers):
            self._receive(w)

    # --- stepping ------------------------------------------------------------------------
    def step_async(self, actions: Any) -> None:
        """Send ``actions`` (one per env) to the workers; they step while this returns."""
        if self._waiting:
            raise RuntimeError("step_async called twice without step_wait")
        actions = np.asarray(actions)
        if len(actions) != self.num_envs:
            raise ValueError(
                f"actions must have {self.num_envs} rows (one per env), got {len(actions)}"
            )
        for pipe, share in zip(self._pipes, self._shares, strict=True):
            pipe.send(("step", actions[share]))
        self._waiting = True

    def step_wait(
        self,
    ) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """The transitions of the actions sent by :meth:`step_async`:
        ``(obs, rewards, terminated, truncated, infos)``."""
        if not self._waiting:
            raise RuntimeError("step_wait called without step_async")
        self._waiting = False
        parts = [self._receive(w) for w in range(self.workers)]
        obs = {key: np.concatenate([part[0][key] for part in parts]) for key in parts[0][0]}
        rewards = np.concatenate([part[1] for part in parts])
        terminated = np.concatenate([part[2] for part in parts])
        truncated = np.concatenate([part[3] for part in parts])
        infos: dict[str, Any] = {}
        i = 0
        for part in parts:
            for info in part[4]:
                infos = self._add_info(infos, info, i)
                i += 1
        self._observations = obs
        return _copy(obs), rewards, terminated, truncated, infos

    def step(
        self, actions: Any
    ) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """:meth:`step_async` and :meth:`step_wait`."""
        self.step_async(actions)
        return self.step_wait()

    def reset(
        self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Reset every env (``seed``: an int gives env ``i`` the seed ``seed + i``), or only
        those of ``options["reset_mask"]``; returns every env's observation and the infos
        of the envs reset."""
        if self._waiting:
            raise RuntimeError("reset called between step_async and step_wait")
        seeds: list[int | None]
        if isinstance(seed, int):
            seeds = [seed + i for i in range(self.num_envs)]
        else:
            seeds = [None] * self.num_envs if seed is None else list(seed)
        if len(seeds) != self.num_envs:
            raise ValueError(
                f"seed must be an int or a list of {self.num_envs} seeds, got {seed!r}"
            )
        options = dict(options or {})
        mask = options.pop("reset_mask", None)
        if mask is None:
            mask = np.ones(self.num_envs, np.bool_)
        elif not (
            isinstance(mask, np.ndarray)
            and mask.dtype == np.bool_
            and mask.shape == (self.num_envs,)
        ):
            raise ValueError(
                f"options['reset_mask'] must be a bool array of shape ({self.num_envs},)"
            )
        elif self._observations is None:
            raise ValueError("options['reset_mask'] needs a first reset of every env")
        asked = []
        for w, (pipe, share) in enumerate(zip(self._pipes, self._shares, strict=True)):
            chosen = {j: seeds[i] for j, i in enumerate(share) if mask[i]}
            if chosen:
                pipe.send(("reset", (chosen, options or None)))
                asked.append(w)
        results = {w: self._receive(w) for w in asked}
        infos: dict[str, Any] = {}
        fresh: dict[int, tuple[dict[str, np.ndarray], dict[str, Any]]] = {}
        for w, reset in results.items():
            for j, pair in reset.items():
                fresh[int(self._shares[w][j])] = pair
        if self._observations is None:
            observations = _stack([fresh[i][0] for i in range(self.num_envs)])
        else:
            observations = {key: value.copy() for key, value in self._observations.items()}
            for i, (obs, _) in fresh.items():
                for key in observations:
                    observations[key][i] = obs[key]
        for i in sorted(fresh):
            infos = self._add_info(infos, fresh[i][1], i)
        self._observations = observations
        return _copy(observations), infos

    # --- lifetime ------------------------------------------------------------------------
    def _receive(self, worker: int) -> Any:
        try:
            status, payload = self._pipes[worker].recv()
        except (EOFError, ConnectionResetError, BrokenPipeError):
            self.close(terminate=True)
            raise EnvWorkerError(
                f"env worker {worker} died (exit code {self._processes[worker].exitcode})"
            ) from None
        if status == "error":
            self.close(terminate=True)
            raise EnvWorkerError(f"an env failed in worker process {worker}:\n{payload}")
        return payload

    def close(self, terminate: bool = False, **kwargs: Any) -> None:
        """Stop the workers (and close their envs); safe to call twice."""
        if self.closed:
            return
        self.closed = True
        for pipe, process in zip(self._pipes, self._processes, strict=True):
            if not terminate and process.is_alive():
                try:
                    if self._waiting:
                        pipe.recv()
                    pipe.send(("close", None))
                except (EOFError, BrokenPipeError, ConnectionResetError, OSError):
                    pass
        for process in self._processes:
            process.join(timeout=1.0 if terminate else 10.0)
            if process.is_alive():
                process.terminate()
                process.join()
        for pipe in self._pipes:
            pipe.close()
        self._waiting = False

    def __del__(self) -> None:
        if not getattr(self, "closed", True):
            self.close(terminate=True)


def _copy(obs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {key: value.copy() for key, value in obs.items()}
