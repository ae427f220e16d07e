"""A step that may be compiled or captured changes no Python state: a CUDA graph's replay
runs no Python, so a flag or counter set inside the step would be set once, at capture,
and then lie. Everything a step changes lives in tensors; the host learns of it after the
step (tests/python_state.py; on a CPU, a replay is doubled by putting Python state back
after each call of the step)."""

from __future__ import annotations

import shutil
import traceback
from typing import Any

import numpy as np
import pytest
import torch
from python_state import PythonState, ReplayDouble
from test_device_sampler import random_buffer
from torch.utils._python_dispatch import TorchDispatchMode

from herkit.agents import make_agent, updates
from herkit.buffer.device_sampler import DeviceSampler
from test_agents import (
    GOAL_DIM,
    OBS_DIM,
    ONLINE_ALGOS,
    agent_for,
    parameters,
    random_batch,
    small_config,
    space,
)


def steps_of(algo: str, prioritized: bool = False) -> tuple[Any, DeviceSampler, list[Any]]:
    """An agent drawing from a sampler on CPU tensors, and its two steps as the runners
    compile or capture them, each a call with its inputs."""
    sampler = DeviceSampler(random_buffer(algo, prioritized=prioritized))
    agent = agent_for(algo, seed=2)
    agent.attach_sampler(sampler.draw, 64, sampler.reprioritize if prioritized else None)
    agent.log_updates()
    batch = random_batch(algo, seed=1).to_torch()
    on_device = agent.inputs.to_device(batch)
    flags = sampler.prepare()

    def batch_step() -> Any:  # the step as the runners compile or capture it
        return agent.step(on_device, actor_step=True, move_targets=True, count_goals=True)

    def drawn_step() -> Any:
        return agent.step(None, actor_step=True, move_targets=True, count_goals=True, **flags)

    return agent, sampler, [batch_step, drawn_step]


@pytest.mark.parametrize("prioritized", [False, True])
@pytest.mark.parametrize("algo", ONLINE_ALGOS)
def test_no_step_changes_python_state(algo: str, prioritized: bool) -> None:
    """Each step, called after the calls that set it up (a graph's warm-up), leaves every
    attribute, container and array reachable from the agent and its sampler as it was."""
    agent, sampler, steps = steps_of(algo, prioritized)
    obs, goal = np.zeros((2, OBS_DIM)), np.zeros((2, GOAL_DIM))
    for step in steps:
        step(), step()  # warm-up: optimiser state and the like, as before a capture
        agent.act(obs, goal, deterministic=True)  # what the loop does between two updates
        state = PythonState([agent, sampler])
        step()
        assert state.changes() == [], step.__name__


class HostData(TorchDispatchMode):
    """Notes each tensor made from host data (a number, a list, a numpy array): on a GPU
    that is a copy from host memory, which a CUDA graph's capture refuses."""

    def __init__(self) -> None:
        super().__init__()
        self.made: list[str] = []

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        if func in (torch.ops.aten.lift_fresh.default, torch.ops.aten.lift_fresh_copy.default):
            self.made.append("".join(traceback.format_stack(limit=8)[:-2]))
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("prioritized", [False, True])
@pytest.mark.parametrize("algo", ONLINE_ALGOS)
def test_no_step_copies_host_data_to_the_device(algo: str, prioritized: bool) -> None:
    """Every tensor a step uses is made on the device: a number becomes a fill there,
    not a tensor copied from the host (the draw by priority once did, and its capture
    failed on a GPU)."""
    _, _, steps = steps_of(algo, prioritized)
    for step in steps:
        step()  # warm-up: optimiser state and the like, as before a capture
        with HostData() as host_data:
            step()
        assert host_data.made == [], f"{step.__name__}: {host_data.made[0]}"


def test_a_number_made_a_tensor_inside_a_step_is_caught() -> None:
    """The rule's test would fail on a step that copies a number from the host."""
    with HostData() as host_data:
        torch.full((), 0.5) + torch.as_tensor(0.5)
    assert len(host_data.made) == 1


def test_a_flag_set_inside_a_step_is_caught() -> None:
    """The rule's test would fail on a step that writes Python state."""
    agent, sampler, (batch_step, _) = steps_of("ddpg")
    batch_step()
    state = PythonState([agent, sampler])
    batch_step()
    agent.goal_normalizer.seen_on_device = True  # what a careless step would do
    agent.log.rows_written = 1
    changes = state.changes()
    assert any("seen_on_device: <missing" in line or "seen_on_device" in line for line in changes)
    assert any("rows_written" in line for line in changes)
    state.restore()
    assert state.changes() == []


def act_learn_and_save(eager: Any, replayed: Any, algo: str, device: str) -> None:
    """Rounds of updates that count their goals on the device, each followed by acting and
    a checkpoint: both agents act alike and save the same goal statistics, and end with the
    same parameters."""
    rng = np.random.default_rng(0)
    seen = rng.normal(size=(50, OBS_DIM)), rng.normal(size=(50, GOAL_DIM))
    for agent in (eager, replayed):
        agent.update_normalizer(*seen)
    obs, goal = rng.normal(size=(4, OBS_DIM)), rng.normal(size=(4, GOAL_DIM))
    for round_ in range(5):  # a captured graph: warm-up, capture, then replays
        for step in range(3):
            batch = random_batch(algo, seed=10 * round_ + step).to_torch(device)
            for agent in (eager, replayed):
                agent.update(batch, count_goals=True)
        acted = [agent.act(obs, goal, deterministic=True) for agent in (eager, replayed)]
        np.testing.assert_allclose(*acted, rtol=1e-4, atol=1e-4)
        saved = [agent.state_dict()["goal_normalizer"] for agent in (eager, replayed)]
        assert saved[0]["count"] == saved[1]["count"] == 50 + 64 * 3 * (round_ + 1)
        torch.testing.assert_close(saved[0]["sum"], saved[1]["sum"])
    for name, value in parameters(eager).items():
        torch.testing.assert_close(parameters(replayed)[name], value, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("algo", ONLINE_ALGOS)
def test_replayed_updates_between_acting_and_checkpoints_equal_eager_ones(
    algo: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Steps run as a replay runs them (Python state put back after each call, on a CPU):
    the host learns of the goals counted on the device after the step, not from a flag
    set inside it, so acting and saving see them as in eager updates."""
    eager, replayed = agent_for(algo, seed=5), agent_for(algo, seed=5)
    monkeypatch.setattr(
        updates.torch, "compile", lambda step, **_: ReplayDouble(step, lambda: [replayed])
    )
    replayed.set_update_mode("compiled")  # the step that would be compiled or captured
    act_learn_and_save(eager, replayed, algo, "cpu")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graphs need a CUDA device")
@pytest.mark.parametrize("algo", ONLINE_ALGOS)
def test_captured_updates_between_acting_and_checkpoints_equal_eager_ones(algo: str) -> None:
    """The same with real CUDA graphs, replayed by the GPU."""
    agents = []
    for mode in ("eager", "captured"):
        agent = make_agent(
            algo, small_config(algo), OBS_DIM, GOAL_DIM, space(algo), (-1.0, 0.0), "cuda", 5
        )
        agent.set_update_mode(mode)
        agents.append(agent)
    act_learn_and_save(*agents, algo, "cuda")


@pytest.mark.slow("torch.compile compiles each algorithm's step (about a minute each)")
@pytest.mark.skipif(
    shutil.which("g++") is None and shutil.which("c++") is None,
    reason="torch.compile on a CPU needs a C++ compiler",
)
@pytest.mark.parametrize("algo", ["dqn", "sac"])
def test_compiled_updates_between_acting_and_checkpoints_equal_eager_ones(algo: str) -> None:
    """The same with the step really compiled (torch.compile, on the CPU)."""
    eager, compiled = agent_for(algo, seed=5), agent_for(algo, seed=5)
    compiled.set_update_mode("compiled")
    act_learn_and_save(eager, compiled, algo, "cpu")
