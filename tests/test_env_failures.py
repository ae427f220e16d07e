"""WorkerVectorEnv when envs fail: each fault injected, named, never waited on forever,
and the failed envs rebuilt by ``restart`` (in worker processes and in this process)."""

from __future__ import annotations

import functools
import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from faulty import FaultyBitFlipEnv

from herkit.envs.workers import EnvFailure, WorkerVectorEnv

ACTIONS = np.zeros(3, dtype=np.int64)


def fns(**fault: Any) -> list[Any]:
    """Three bit-flipping envs; the last one fails as ``fault`` says."""
    healthy = functools.partial(FaultyBitFlipEnv, fault="none", n_bits=4)
    return [healthy, healthy, functools.partial(FaultyBitFlipEnv, n_bits=4, **fault)]


def no_children_left() -> bool:
    deadline = time.monotonic() + 10
    while multiprocessing.active_children() and time.monotonic() < deadline:
        time.sleep(0.05)
    return not multiprocessing.active_children()


@pytest.mark.parametrize("workers", [0, 1, 2])
@pytest.mark.parametrize("during", ["step", "reset"])
def test_a_raising_env_is_named_and_restart_rebuilds_it(
    workers: int, during: str, tmp_path: Path
) -> None:
    token = tmp_path / "token"
    token.touch()
    envs = WorkerVectorEnv(fns(during=during, at=2, token=str(token)), workers)
    try:
        envs.reset(seed=0)
        started = time.monotonic()
        with pytest.raises(EnvFailure) as caught:
            for _ in range(3):
                envs.step(ACTIONS)
                envs.reset(options={"reset_mask": np.ones(3, dtype=bool)})
        assert time.monotonic() - started < 5
        where = {0: "", 1: " (worker 0)", 2: " (worker 1)"}[workers]
        assert str(caught.value) == (
            f"env 2{where} raised RuntimeError('the simulator blew up at {during} 2') in {during}"
        )
        assert caught.value.envs == (2,)
        assert "Traceback" in caught.value.details and "_maybe_fail" in caught.value.details
        with pytest.raises(ValueError, match="needs a full reset first"):
            envs.reset(options={"reset_mask": np.ones(3, dtype=bool)})
        envs.restart(caught.value.envs)
        envs.reset(seed=1)
        for _ in range(5):  # the token is used up: the rebuilt env steps on
            envs.step(ACTIONS)
    finally:
        envs.close()
    assert no_children_left()


@pytest.mark.parametrize("workers", [0, 2])
@pytest.mark.parametrize("fault", ["nan", "inf"])
def test_non_finite_observations_are_a_failure_of_that_env(workers: int, fault: str) -> None:
    envs = WorkerVectorEnv(fns(fault=fault, at=2), workers)
    try:
        envs.reset(seed=0)
        envs.step(ACTIONS)
        with pytest.raises(EnvFailure) as caught:
            envs.step(ACTIONS)
        where = " (worker 1)" if workers else ""
        assert str(caught.value) == (
            f"env 2{where} returned 2 non-finite values (NaN or inf) in obs['observation'] in step"
        )
    finally:
        envs.close()


def test_a_killed_worker_is_seen_at_once_and_restarted() -> None:
    envs = WorkerVectorEnv(fns(fault="none"), 2)
    try:
        envs.reset(seed=0)
        victim = envs.worker_pids[1]
        os.kill(victim, signal.SIGKILL)
        started = time.monotonic()
        with pytest.raises(EnvFailure) as caught:
            envs.step(ACTIONS)
        assert time.monotonic() - started < 2
        assert str(caught.value) == (
            "env worker 1 (env 2) died (exit code -9: killed by SIGKILL, as the out-of-memory "
            "killer does)"
        )
        with pytest.raises(RuntimeError, match=r"worker\(s\) \[1\] are lost"):
            envs.step(ACTIONS)
        envs.restart(caught.value.envs)
        assert envs.worker_pids[1] != victim
        envs.reset(seed=0)
        envs.step(ACTIONS)
    finally:
        envs.close()
    assert no_children_left()


def test_a_hung_env_is_stopped_after_the_timeout() -> None:
    envs = WorkerVectorEnv(fns(fault="hang", at=2), 2, timeout_s=1.0)
    try:
        envs.reset(seed=0)
        envs.step(ACTIONS)
        started = time.monotonic()
        with pytest.raises(EnvFailure, match=r"env worker 1 \(env 2\) answered nothing for 1 s"):
            envs.step(ACTIONS)
        assert time.monotonic() - started < 5
    finally:
        envs.close()
    assert no_children_left()


def test_an_env_that_cannot_be_made_in_its_worker_is_named() -> None:
    def broken() -> Any:
        if multiprocessing.parent_process() is not None:  # fine in the trainer, not there
            raise OSError("no licence for the simulator")
        return FaultyBitFlipEnv(fault="none")

    with pytest.raises(EnvFailure) as caught:
        WorkerVectorEnv([broken] * 2, 1)
    assert str(caught.value) == (
        "env 0 (worker 0) raised OSError('no licence for the simulator') in start"
    )
    assert no_children_left()


def test_workers_end_when_the_trainer_is_killed(tmp_path: Path) -> None:
    script = textwrap.dedent(
        """
        import sys, time
        from faulty import FaultyBitFlipEnv
        from herkit.envs.workers import WorkerVectorEnv
        envs = WorkerVectorEnv([lambda: FaultyBitFlipEnv(fault="none")] * 2, 2)
        print(*envs.worker_pids, flush=True)
        time.sleep(600)
        """
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    trainer = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=env
    )
    assert trainer.stdout is not None
    pids = [int(pid) for pid in trainer.stdout.readline().split()]
    assert len(pids) == 2
    trainer.kill()
    trainer.wait()
    deadline = time.monotonic() + 10
    alive = pids
    while alive and time.monotonic() < deadline:
        time.sleep(0.1)
        alive = [pid for pid in pids if _running(pid)]
    assert not alive, f"workers {alive} outlived their trainer"


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_only_float_fields_are_searched_for_non_finite_values() -> None:
    from herkit.envs.failures import first_nonfinite

    obs = {
        "observation": np.array([[0.0, 1.0], [np.nan, 2.0]]),
        "name": np.array(["a", "b"]),  # an extra key of text: it cannot be NaN
        "count": np.array([[1], [2]]),
    }
    assert first_nonfinite(obs, np.zeros(2), np.array([4, 5])) == (5, "obs['observation']", 1)
    obs["observation"][1, 0] = 0.0
    assert first_nonfinite(obs, np.array([0.0, np.inf]), np.array([4, 5])) == (5, "reward", 1)
    assert first_nonfinite(obs, None, np.array([4, 5])) is None
