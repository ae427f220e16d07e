"""A vector env whose envs step in worker processes, several envs per worker, or in this
process; either way a failing env is named, never waited on forever.

Gymnasium's ``AsyncVectorEnv`` gives every env a process of its own: 16 envs on a 2-core
machine are 16 processes fighting for 2 cores, and every step costs one round trip per
env. :class:`WorkerVectorEnv` spreads ``n`` envs over ``workers`` processes (workers <=
the cores left over by the learner); a worker steps its envs one after another and sends
their results back in one message. ``step_async`` / ``step_wait`` let the trainer update
its networks while the workers step. With ``workers=0`` the envs step in this process, by
the same code, with no pipes.

Semantics are those of ``gym.vector.SyncVectorEnv`` with autoreset disabled: ``reset(seed=s)``
seeds env ``i`` with ``s + i``; ``reset(options={"reset_mask": m})`` resets only the envs
of ``m`` and returns every env's current observation; infos are merged per env
(``info[key]`` and ``info["_key"]``). The same seeds give the same transitions, in
workers or in one process.

Failures (:mod:`herkit.envs.failures`): an env that raises, or returns a NaN or an
infinity in an observation or reward, a worker that dies (``kill -9``, the out-of-memory
killer) or answers nothing for ``timeout_s`` seconds: the call raises
:class:`~herkit.envs.failures.EnvFailure` naming the env and its worker, with the env's
traceback. Every wait on a worker also watches the process, so a death is seen at once.
Afterwards :meth:`WorkerVectorEnv.restart` rebuilds the failed envs (a new process for a
lost worker) and a full ``reset`` starts them again, or :meth:`~WorkerVectorEnv.close`
ends them. Workers end with the trainer, however it ends: they watch their parent.
"""

from __future__ import annotations

import contextlib
import multiprocessing
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from herkit.envs.failures import EnvFailure, Failed, first_nonfinite
from herkit.envs.worker import Worker, remake, reset_some, step_all

__all__ = ["EnvFailure", "WorkerVectorEnv"]

DEFAULT_TIMEOUT_S = 300.0
"""How long a worker may take to answer one command before it counts as hung."""


class WorkerVectorEnv(gym.vector.VectorEnv):
    """``len(env_fns)`` envs stepped in ``workers`` processes (0: in this process),
    autoreset disabled.

    Env ``i`` lives in worker ``i * workers // n`` (contiguous shares, as even as they
    come). Call :meth:`step_async` then :meth:`step_wait` to do other work while the
    workers step, or :meth:`step` for both. ``label`` names the envs in errors (``"env"``,
    ``"evaluation env"``).

    Raises:
        ValueError: ``workers`` is not in ``0..len(env_fns)``, or the observations are not
            a Dict (as a goal env's are).
        EnvFailure: an env failed (see the module docstring).
    """

    def __init__(
        self,
        env_fns: Sequence[Callable[[], gym.Env]],
        workers: int,
        context: str | None = None,
        label: str = "env",
        timeout_s: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        self.closed = True  # until the workers run
        self._workers: list[Worker] = []
        n = len(env_fns)
        if isinstance(workers, bool) or not isinstance(workers, int) or not 0 <= workers <= n:
            raise ValueError(
                f"workers must be an int in 0..{n} (0: in this process; one env at least "
                f"each), got {workers!r}"
            )
        if not timeout_s > 0:
            raise ValueError(f"timeout_s must be > 0 seconds, got {timeout_s!r}")
        self.env_fns = list(env_fns)
        self.num_envs = n
        self.workers = workers
        self.label = label
        self.timeout_s = float(timeout_s)
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
        self.observation_space = gym.vector.utils.batch_space(self.single_observation_space, n)
        self.action_space = gym.vector.utils.batch_space(self.single_action_space, n)
        self._owner = np.arange(n) * max(workers, 1) // n
        """The share (worker) of each env; one share in this process with ``workers=0``."""
        self._shares = [np.flatnonzero(self._owner == w) for w in range(max(workers, 1))]
        self._observations: dict[str, np.ndarray] | None = None
        self._waiting = False
        if workers == 0:
            self.envs = [probe]
            try:
                self.envs += [fn() for fn in self.env_fns[1:]]
            except Exception:
                for env in self.envs:
                    env.close()
                raise
            self.closed = False
            return
        probe.close()
        self.closed = False
        ctx = multiprocessing.get_context(context)
        try:
            for w, share in enumerate(self._shares):
                fns = [self.env_fns[i] for i in share]
                self._workers.append(Worker(ctx, w, share.tolist(), fns, self.timeout_s))
            self._raise_failures({w.index: w.receive("start") for w in self._workers})
        except BaseException:
            self.close(terminate=True)
            raise

    # --- stepping ------------------------------------------------------------------------
    def step_async(self, actions: Any) -> None:
        """Send ``actions`` (one per env) to the workers; they step while this returns."""
        if self._waiting:
            raise RuntimeError("step_async called twice without step_wait")
        self._check_usable()
        actions = np.asarray(actions)
        if len(actions) != self.num_envs:
            raise ValueError(
                f"actions must have {self.num_envs} rows (one per env), got {len(actions)}"
            )
        self._actions = actions
        for worker in self._workers:
            worker.send(("step", actions[list(worker.share)]))
        self._waiting = True

    def step_wait(
        self,
    ) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """The transitions of the actions sent by :meth:`step_async`:
        ``(obs, rewards, terminated, truncated, infos)``."""
        if not self._waiting:
            raise RuntimeError("step_wait called without step_async")
        self._waiting = False
        if self.workers:
            answers = {w.index: w.receive("step") for w in self._workers}
        else:
            answers = {0: step_all(self.envs, self._actions)}
        self._raise_failures(answers)
        parts = [answers[w][1] for w in range(len(self._shares))]
        obs = {key: np.concatenate([part[0][key] for part in parts]) for key in parts[0][0]}
        rewards, terminated, truncated = (np.concatenate([p[k] for p in parts]) for k in (1, 2, 3))
        self._check_finite(obs, rewards, np.arange(self.num_envs), "step")
        infos: dict[str, Any] = {}
        for i, info in enumerate(info for part in parts for info in part[4]):
            infos = self._add_info(infos, info, i)
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
        self._check_usable()
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
            raise ValueError(
                "options['reset_mask'] needs a full reset first (after the first one, and "
                "after a failure)"
            )
        asked: dict[int, dict[int, int | None]] = {}
        for w, share in enumerate(self._shares):
            chosen = {j: seeds[i] for j, i in enumerate(share) if mask[i]}
            if chosen:
                asked[w] = chosen
                if self.workers:
                    self._workers[w].send(("reset", (chosen, options or None)))
        if self.workers:
            answers = {w: self._workers[w].receive("reset") for w in asked}
        else:
            answers = {0: reset_some(self.envs, asked[0], options or None)} if asked else {}
        self._raise_failures(answers)
        fresh: dict[int, tuple[dict[str, np.ndarray], dict[str, Any]]] = {}
        for w, (_, reset) in answers.items():
            for j, pair in reset.items():
                fresh[int(self._shares[w][j])] = pair
        rows = np.array(sorted(fresh), dtype=np.int64)
        stacked: dict[str, np.ndarray] = {}
        if len(rows):
            stacked = {key: np.stack([fresh[i][0][key] for i in rows]) for key in fresh[rows[0]][0]}
            self._check_finite(stacked, None, rows, "reset")
        if self._observations is None:
            observations = stacked
        else:
            observations = {key: value.copy() for key, value in self._observations.items()}
            for key, value in stacked.items():
                observations[key][rows] = value
        infos: dict[str, Any] = {}
        for i in rows:
            infos = self._add_info(infos, fresh[int(i)][1], int(i))
        self._observations = observations
        return _copy(observations), infos

    def render(self) -> tuple[Any, ...] | None:
        """Each env's frame (envs in this process only: a worker's envs cannot draw here)."""
        if self.workers:
            raise RuntimeError("render needs workers=0: the envs live in worker processes")
        return tuple(env.render() for env in self.envs)

    # --- failures ------------------------------------------------------------------------
    def restart(self, envs: Sequence[int]) -> None:
        """Rebuild the envs of ``envs`` (indices; a lost worker is started anew with all its
        envs); a full :meth:`reset` must follow. Raises :class:`EnvFailure` if an env fails
        while being made."""
        if self.closed:
            raise RuntimeError("restart of a closed vector env")
        self._waiting = False
        self._observations = None
        if not self.workers:
            self._raise_failures({0: remake(self.envs, self.env_fns, list(envs))})
            return
        answers: dict[int, Any] = {}
        failed = {int(i) for i in envs}
        for worker in self._workers:
            inside = [j for j, i in enumerate(worker.share) if i in failed]
            if worker.lost:
                worker.stop(ask=False, owes_answer=False)
                worker.start()
            elif inside:
                worker.send(("restart", inside))
            else:
                continue
            answers[worker.index] = worker.receive("start")
        self._raise_failures(answers)

    def _check_usable(self) -> None:
        if self.closed:
            raise RuntimeError("the vector env is closed")
        lost = [worker.index for worker in self._workers if worker.lost]
        if lost:
            raise RuntimeError(f"worker(s) {lost} are lost: restart() or close() the vector env")

    def _check_finite(
        self, obs: dict[str, np.ndarray], rewards: np.ndarray | None, rows: np.ndarray, during: str
    ) -> None:
        found = first_nonfinite(obs, rewards, rows)
        if found is None:
            return
        env, name, count = found
        self._observations = None
        what = f"returned {count} non-finite value{'s' * (count > 1)} (NaN or inf) in {name}"
        raise EnvFailure(self.label, [Failed((env,), what, during, worker=self._worker_of(env))])

    def _raise_failures(self, answers: dict[int, Any]) -> None:
        """Raise :class:`EnvFailure` for the answers that report one (in env order)."""
        failures = []
        for w, (status, payload) in sorted(answers.items()):
            if status != "failed":
                continue
            if isinstance(payload, Failed):  # a lost worker, already in these terms
                failures.append(payload)
                continue
            j, what, during, details = payload
            env = int(self._shares[w][j])
            failures.append(Failed((env,), what, during, details, self._worker_of(env)))
        if failures:
            self._observations = None
            raise EnvFailure(self.label, sorted(failures, key=lambda failure: failure.envs))

    def _worker_of(self, env: int) -> int | None:
        return int(self._owner[env]) if self.workers else None

    # --- lifetime ------------------------------------------------------------------------
    @property
    def worker_pids(self) -> list[int]:
        """The process ids of the workers (empty with ``workers=0``)."""
        return [int(worker.process.pid) for worker in self._workers]

    def close(self, terminate: bool = False, **kwargs: Any) -> None:
        """Stop the workers (and close their envs); safe to call twice, never hangs: a
        worker that does not stop within seconds is killed."""
        if self.closed:
            return
        self.closed = True
        if not self.workers:
            for env in getattr(self, "envs", []):
                with contextlib.suppress(Exception):  # a failed env may not close: dropped
                    env.close()
            return
        for worker in self._workers:
            worker.stop(ask=not terminate, owes_answer=self._waiting)
        self._waiting = False

    def __del__(self) -> None:
        if not getattr(self, "closed", True):
            self.close(terminate=True)


def _copy(obs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {key: value.copy() for key, value in obs.items()}
