"""WorkerVectorEnv: several envs per worker process, the semantics of SyncVectorEnv."""

from __future__ import annotations

import os
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from herkit.envs import make_goal_env
from herkit.envs.workers import EnvFailure, WorkerVectorEnv
from herkit.runtime.cores import plan_cores


def fns(env_id: str, n: int) -> list[Any]:
    return [lambda: make_goal_env(env_id)] * n


def assert_same(left: Any, right: Any) -> None:
    if isinstance(left, dict):
        assert set(left) == set(right)
        for key in left:
            assert_same(left[key], right[key])
    elif isinstance(left, tuple):
        assert len(left) == len(right)
        for a, b in zip(left, right, strict=True):
            assert_same(a, b)
    else:
        np.testing.assert_array_equal(np.asarray(left), np.asarray(right))


@pytest.mark.parametrize(
    ("env_id", "n", "workers"),
    [
        ("herkit/BitFlip-v0", 3, 2),
        ("herkit/PointReach-v0", 4, 3),
        ("ledger:Ledger-v0", 5, 2),
        ("ledger:Ledger-v0", 4, 0),  # in this process
    ],
)
def test_same_transitions_as_sync_vector_env(env_id: str, n: int, workers: int) -> None:
    sync = gym.vector.SyncVectorEnv(
        fns(env_id, n), autoreset_mode=gym.vector.AutoresetMode.DISABLED
    )
    spread = WorkerVectorEnv(fns(env_id, n), workers)
    try:
        assert spread.single_observation_space == sync.single_observation_space
        assert spread.action_space == sync.action_space
        assert_same(spread.reset(seed=11), sync.reset(seed=11))
        actions = sync.action_space
        actions.seed(0)
        resets = 0
        for _ in range(120):
            action = actions.sample()
            spread.step_async(action)
            got = spread.step_wait()
            assert_same(got, sync.step(action))
            done = got[2] | got[3]
            if done.any():
                resets += 1
                assert_same(
                    spread.reset(options={"reset_mask": done}),
                    sync.reset(options={"reset_mask": done}),
                )
        assert resets > 0
    finally:
        spread.close()
        sync.close()
    spread.close()  # twice is fine


class Faulty(gym.Env):
    observation_space = gym.spaces.Dict({"observation": gym.spaces.Box(-1, 1, (2,))})
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed: int | None = None, options: Any = None) -> Any:
        return {"observation": np.zeros(2, np.float32)}, {}

    def step(self, action: Any) -> Any:
        if action == 1:
            raise RuntimeError("the simulator blew up")
        return {"observation": np.zeros(2, np.float32)}, 0.0, False, False, {}


class Flat(Faulty):
    observation_space = gym.spaces.Box(-1, 1, (2,))  # type: ignore[assignment]


def test_an_env_error_names_the_env_and_worker_and_carries_its_traceback() -> None:
    envs = WorkerVectorEnv([Faulty] * 2, 2)
    envs.reset(seed=0)
    envs.step(np.array([0, 0]))
    with pytest.raises(EnvFailure, match="the simulator blew up") as caught:
        envs.step(np.array([0, 1]))
    assert str(caught.value) == (
        "env 1 (worker 1) raised RuntimeError('the simulator blew up') in step"
    )
    assert caught.value.envs == (1,)
    assert 'raise RuntimeError("the simulator blew up")' in caught.value.details
    pids = envs.worker_pids
    envs.close()
    assert not [pid for pid in pids if os.path.exists(f"/proc/{pid}")]


def test_bad_arguments_are_named() -> None:
    with pytest.raises(ValueError, match=r"workers must be an int in 0\.\.2"):
        WorkerVectorEnv([Faulty] * 2, 3)
    with pytest.raises(ValueError, match="Dict observations"):
        WorkerVectorEnv([Flat] * 2, 1)
    envs = WorkerVectorEnv([Faulty] * 2, 1)
    try:
        with pytest.raises(ValueError, match="needs a full reset first"):
            envs.reset(options={"reset_mask": np.array([True, False])})
        envs.reset(seed=0)
        with pytest.raises(ValueError, match="actions must have 2 rows"):
            envs.step_async(np.array([0, 0, 0]))
        with pytest.raises(RuntimeError, match="step_wait called without step_async"):
            envs.step_wait()
    finally:
        envs.close()


def test_core_plan_fits_threads_and_workers_into_the_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    import herkit.runtime.cores as cores

    monkeypatch.setattr(cores, "available_cores", lambda local_ranks=1: 16 // local_ranks)
    plan = plan_cores(n_envs=32, torch_threads=None, env_workers=None, gpu=False)
    assert (plan.torch_threads, plan.env_workers) == (4, 12)
    assert plan_cores(8, None, None, gpu=True).env_workers == 8
    assert plan_cores(1, None, None, gpu=False).env_workers == 0  # one env: no pipe
    assert plan_cores(8, None, None, gpu=False, local_ranks=8).env_workers == 1
    assert plan_cores(8, None, None, gpu=False, local_ranks=16).env_workers == 0
    given = plan_cores(8, 16, 4, gpu=False)
    assert (given.torch_threads, given.env_workers) == (16, 4)
    assert "more than the cores" in given.describe()
    monkeypatch.setattr(cores, "available_cores", lambda local_ranks=1: 2)
    two = plan_cores(8, None, None, gpu=False)
    assert (two.torch_threads, two.env_workers) == (1, 1)
    assert (
        two.describe()
        == "8 envs in 1 worker process (8 each), torch on 1 thread (chosen for 2 CPU cores)"
    )
    # what was given is said to be given: --torch-threads 1 on a dataset, or beside envs
    assert plan_cores(1, 1, None, gpu=False, alone=True).describe() == (
        "1 env in the trainer process, torch on 1 thread (given, on 2 CPU cores)"
    )
    assert plan_cores(8, 1, None, gpu=False).describe() == (
        "8 envs in 1 worker process (8 each), torch on 1 thread (threads given, env workers "
        "chosen for 2 CPU cores)"
    )
    assert (
        plan_cores(8, None, 1, gpu=False)
        .describe()
        .endswith("(env workers given, threads chosen for 2 CPU cores)")
    )
    alone = plan_cores(1, None, None, gpu=False, alone=True)  # a run on a dataset
    assert (alone.torch_threads, alone.env_workers) == (2, 0)
    assert alone.describe() == (
        "1 env in the trainer process, torch on 2 threads (chosen for 2 CPU cores, nothing "
        "stepping beside it)"
    )
    assert plan_cores(1, None, None, gpu=True, alone=True).torch_threads == 1
    small = plan_cores(1, None, None, gpu=False, alone=True, large_update=False)
    assert small.torch_threads == 1  # nothing to share: one thread, busy or idle
    if small.cores > 1:
        assert small.describe().endswith(
            "nothing stepping beside it, an update too small to share)"
        )


def test_an_update_is_large_from_two_hidden_layers_of_256_at_batch_256() -> None:
    from herkit.runtime.cores import LARGE_UPDATE_WORK, update_work

    assert update_work((256, 256), 256) == LARGE_UPDATE_WORK
    assert update_work((256, 256, 256), 256) == 2 * LARGE_UPDATE_WORK
    assert update_work((128, 128), 256) < LARGE_UPDATE_WORK  # the offline guide's first run
    assert update_work((256,), 1 << 20) == 0  # one hidden layer: no product between two
