"""The update step at the hardware's speed: no host read inside an update, metrics kept on
the device until the loop reads them, goal statistics gathered where the batch lies, the
update compiled or captured (CUDA graphs) with the same result as eager, and the choice
of precision and mode made once, from the machine and the command, never by a timing."""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import os
import shutil
import sys
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
import pytest
import torch

from herkit.agents import Normalizer, make_agent, updates
from herkit.agents.update_log import UpdateLog
from herkit.agents.updates import check_update_mode
from herkit.buffer.batch import Batch
from herkit.config import DDPGConfig
from herkit.training.update_plan import UpdatePlan, choose_update
from test_agents import (
    GOAL_DIM,
    OBS_DIM,
    ONLINE_ALGOS,
    agent_for,
    assert_orders_differ,
    assert_same_gradients,
    host,
    one_update_gradients,
    parameters,
    random_batch,
    space,
)

CUDA = torch.cuda.is_available()


def spaces() -> gymnasium.spaces.Dict:
    box = gymnasium.spaces.Box
    return gymnasium.spaces.Dict(
        {
            "observation": box(-1, 1, (OBS_DIM,)),
            "achieved_goal": box(-1, 1, (GOAL_DIM,)),
            "desired_goal": box(-1, 1, (GOAL_DIM,)),
        }
    )


@contextlib.contextmanager
def no_host_reads() -> Iterator[None]:
    """Every way a tensor's value reaches Python raises inside: a read on a GPU waits.
    torch.compile's own reads while it compiles (it folds constants) are no update's."""

    def guarded(name: str) -> Any:
        method = saved[name]

        def refuse(*args: Any, **kwargs: Any) -> Any:
            if not compiling():
                raise AssertionError("a tensor was read to the host inside an update")
            return method(*args, **kwargs)

        return refuse

    names = ("item", "tolist", "numpy", "cpu", "__float__", "__int__", "__bool__", "__index__")
    saved = {name: getattr(torch.Tensor, name) for name in names}
    try:
        for name in names:
            setattr(torch.Tensor, name, guarded(name))
        yield
    finally:
        for name, method in saved.items():
            setattr(torch.Tensor, name, method)


def compiling() -> bool:
    """Whether torch.compile's compiler is on the call stack (compiled code runs without it)."""
    compiler = os.path.join("torch", "_inductor", "compile_fx.py")
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_filename.endswith(compiler):
            return True
        frame = frame.f_back
    return False


# --- no host read in an update ---------------------------------------------------------


@pytest.mark.parametrize("algo", ONLINE_ALGOS)
@pytest.mark.parametrize("weights", [False, True])
def test_an_update_of_a_device_batch_reads_nothing_to_the_host(algo: str, weights: bool) -> None:
    agent = agent_for(algo)
    agent.log_updates()
    extra = {"weights": np.linspace(0.1, 1, 64, dtype=np.float32)} if weights else {}
    batches = [random_batch(algo, seed=s, **extra).to_torch() for s in range(3)]
    agent.update_normalizer(np.ones((4, OBS_DIM)), np.zeros((4, GOAL_DIM)))
    with no_host_reads():
        for batch in batches:
            metrics = agent.update(batch, count_goals=True)
            assert agent.priorities.shape == (64,)
    assert all(value.shape == () for value in metrics.values())
    rows = agent.update_metrics()  # one read for all three
    assert len(rows) == 3 and all(np.isfinite(list(row.values())).all() for row in rows)
    assert rows[-1] == host(metrics)
    assert agent.goal_normalizer.count == 4 + 3 * 64  # the relabelled goals were counted


@pytest.mark.parametrize("clip_mode", ["norm", "value"])
def test_an_update_with_mrls_normaliser_and_clipping_reads_nothing_to_the_host(
    clip_mode: str,
) -> None:
    """The mrl recipes' normaliser form and gradient clipping are device work only, so an
    update that uses them can be compiled or captured."""
    agent = agent_for("ddpg", normalizer="mrl", grad_clip=0.5, grad_clip_mode=clip_mode)
    agent.log_updates()
    batches = [random_batch("ddpg", seed=s).to_torch() for s in range(3)]
    agent.update_normalizer(np.ones((4, OBS_DIM)), np.zeros((4, GOAL_DIM)))
    with no_host_reads():
        for batch in batches:
            agent.update(batch, count_goals=False)
    rows = agent.update_metrics()
    assert len(rows) == 3 and all(np.isfinite(list(row.values())).all() for row in rows)


@pytest.mark.skipif(not CUDA, reason="CUDA graphs need a CUDA device")
def test_a_captured_update_with_mrls_settings_learns_what_the_eager_one_does() -> None:
    """mrl's normaliser form and value clipping replayed from a CUDA graph, as eager."""
    agents = {}
    for each in ("eager", "captured"):
        agent = make_agent(
            "ddpg",
            DDPGConfig(normalizer="mrl", grad_clip=0.01, grad_clip_mode="value"),
            OBS_DIM,
            GOAL_DIM,
            space("ddpg"),
            (-1.0, 0.0),
            "cuda",
            5,
        )
        agent.set_update_mode(each)
        agent.log_updates()
        agent.update_normalizer(np.ones((4, OBS_DIM)), np.zeros((4, GOAL_DIM)))
        with no_host_reads() if each != "eager" else contextlib.nullcontext():
            for i in range(12):
                agent.update(random_batch("ddpg", seed=i).to_torch("cuda"), count_goals=False)
        agents[each] = (agent, agent.update_metrics())
    (eager, rows_eager), (captured, rows_captured) = agents.values()
    assert_same_learning(eager, captured, rows_eager, rows_captured, tol=2e-3)


def test_td3_logs_the_actor_loss_of_actor_steps_only() -> None:
    agent = agent_for("td3")
    agent.log_updates()
    for seed in range(4):
        agent.update(random_batch("td3", seed=seed))
    rows = agent.update_metrics()
    assert ["actor_loss" in row for row in rows] == [True, False, True, False]
    assert agent.update_metrics() == []


def test_without_log_updates_the_metrics_are_not_kept() -> None:
    agent = agent_for("ddpg")
    for seed in range(300):  # more than the device log holds
        agent.update(random_batch("ddpg", size=8, seed=seed))
    assert agent.update_metrics() == []


def test_updates_before_log_updates_never_reach_the_log() -> None:
    agent = agent_for("dqn")
    for seed in range(5):  # written on the device, not kept
        agent.update(random_batch("dqn", seed=seed))
    agent.log_updates()
    kept = host(agent.update(random_batch("dqn", seed=9)))
    assert agent.update_metrics() == [kept]


def test_the_update_log_moves_full_rows_to_the_host_and_keeps_order() -> None:
    log = UpdateLog(("a", "b"), capacity=3, device=torch.device("cpu"))
    for i in range(7):
        log.write(torch.tensor([float(i), -float(i)]))
        log.note(("a", "b") if i % 2 == 0 else ("a",))
    assert len(log) == 7
    rows = log.take()
    assert [row["a"] for row in rows] == [float(i) for i in range(7)]
    assert [("b" in row) for row in rows] == [i % 2 == 0 for i in range(7)]
    assert log.take() == [] and len(log) == 0


# --- goal statistics on the device ---------------------------------------------------------


def test_statistics_added_on_a_device_equal_the_hosts() -> None:
    rng = np.random.default_rng(0)
    host_side, device_side = Normalizer(3), Normalizer(3)
    first, second = rng.normal(2, 3, (50, 3)), rng.normal(-1, 0.5, (70, 3)) * 500
    for normalizer in (host_side, device_side):
        normalizer.update(first)
    host_side.update(second)
    device_side.add_tensor(torch.from_numpy(second).float())
    device_side.added_on_device()  # said after the step that added them
    x = torch.from_numpy(rng.normal(0, 4, (16, 3))).float()
    device_view = device_side.normalize_tensor(x)  # includes the device's statistics
    np.testing.assert_allclose(device_side.mean, host_side.mean, rtol=1e-6)  # folded in
    np.testing.assert_allclose(device_side.std, host_side.std, rtol=1e-6)
    torch.testing.assert_close(device_view, host_side.normalize_tensor(x))
    state = device_side.state_dict()
    assert state["count"] == 120
    fresh = Normalizer(3)
    fresh.add_tensor(x)
    fresh.added_on_device()
    fresh.load_state_dict(state)  # what was added before a load is gone
    assert fresh.count == 120 and np.allclose(fresh.mean, host_side.mean)


def test_an_empty_normaliser_on_the_device_is_the_identity_within_its_clip() -> None:
    normalizer = Normalizer(2, clip_normalized=5.0)
    x = torch.tensor([[0.5, -7.0]])
    torch.testing.assert_close(normalizer.normalize_tensor(x), torch.tensor([[0.5, -5.0]]))


# --- modes ---------------------------------------------------------------------------------


def test_modes_are_checked_against_the_device() -> None:
    check_update_mode("compiled", torch.device("cpu"))
    with pytest.raises(ValueError, match=r"update_mode 'captured' .*needs a CUDA device"):
        check_update_mode("captured", torch.device("cpu"))
    with pytest.raises(ValueError, match="update_mode must be one of"):
        check_update_mode("jit", torch.device("cpu"))
    with pytest.raises(ValueError, match="needs a CUDA device"):
        agent_for("ddpg").set_update_mode("compiled-captured")


def run_updates(agent: Any, algo: str, n: int, device: str, seed: int = 0) -> list[dict]:
    agent.log_updates()
    batches = [random_batch(algo, seed=seed + i).to_torch(device) for i in range(n)]
    agent.update_normalizer(batches[0].observation.cpu().numpy(), batches[0].goal.cpu().numpy())
    for batch in batches:
        agent.update(batch, count_goals=True)
    return agent.update_metrics()


def assert_same_learning(a: Any, b: Any, rows_a: list, rows_b: list, tol: float) -> None:
    for (name, x), y in zip(parameters(a).items(), parameters(b).values(), strict=True):
        torch.testing.assert_close(x.cpu(), y.cpu(), rtol=tol, atol=tol, msg=name)
    assert [set(row) for row in rows_a] == [set(row) for row in rows_b]
    for row_a, row_b in zip(rows_a, rows_b, strict=True):
        for key in row_a:
            assert row_a[key] == pytest.approx(row_b[key], rel=10 * tol, abs=10 * tol), key
    np.testing.assert_allclose(a.goal_normalizer.mean, b.goal_normalizer.mean, rtol=1e-6)


@pytest.mark.slow("torch.compile compiles each algorithm's update: about 40 s each")
@pytest.mark.skipif(
    shutil.which("g++") is None and shutil.which("c++") is None,
    reason="torch.compile on a CPU needs a C++ compiler",
)
@pytest.mark.parametrize("algo", ["dqn", "td3", "sac"])  # ddpg: td3 with its switches off
def test_a_compiled_update_learns_what_the_eager_one_does(algo: str) -> None:
    eager, compiled = agent_for(algo, seed=3), agent_for(algo, seed=3)
    compiled.set_update_mode("compiled")
    rows_eager = run_updates(eager, algo, 6, "cpu")
    rows_compiled = run_updates(compiled, algo, 6, "cpu")
    assert_same_learning(eager, compiled, rows_eager, rows_compiled, tol=1e-4)


@pytest.mark.slow("torch.compile compiles DDPG's update in each order: about 60 s")
@pytest.mark.skipif(
    shutil.which("g++") is None and shutil.which("c++") is None,
    reason="torch.compile on a CPU needs a C++ compiler",
)
def test_a_compiled_update_takes_its_gradients_in_the_order_asked() -> None:
    """step_order="together" (baselines' _grads) compiled: the actor's gradient is the one
    of the critic before its step, as in eager (tests/test_agents.py)."""
    together = one_update_gradients("ddpg", "together", "compiled")
    first = one_update_gradients("ddpg", "critic-first", "compiled")
    assert_orders_differ(together)
    assert_same_gradients(together["actor"], together["actor with the critic before"])
    assert_same_gradients(first["actor"], first["actor with the critic after"])
    assert_same_gradients(together["critic"], first["critic"])


@pytest.mark.skipif(not CUDA, reason="CUDA graphs need a CUDA device")
@pytest.mark.parametrize("mode", ["captured", "compiled-captured"])
def test_a_captured_update_takes_its_gradients_in_the_order_asked(mode: str) -> None:
    """The same, replayed from a CUDA graph: the update checked comes after the warm-up
    calls and the capture (CAPTURE_WARMUP + 1)."""
    before = updates.CAPTURE_WARMUP + 1
    for order, critic in (("together", "before"), ("critic-first", "after")):
        gradients = one_update_gradients("ddpg", order, mode, "cuda", before)
        assert_orders_differ(gradients)
        expected = gradients[f"actor with the critic {critic}"]
        for got, want in zip(gradients["actor"], expected, strict=True):
            torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.skipif(not CUDA, reason="CUDA graphs need a CUDA device")
@pytest.mark.parametrize(
    ("algo", "mode"),
    # compiling: ~1 min
    [(algo, "captured") for algo in ONLINE_ALGOS] + [("td3", "compiled-captured")],
)
def test_a_captured_update_learns_what_the_eager_one_does(algo: str, mode: str) -> None:
    """Warm-up, capture, then replays of each graph (TD3: two), with no host read in any."""
    agents = {}
    for each in ("eager", mode):
        agent = make_agent(algo, None, OBS_DIM, GOAL_DIM, space(algo), (-1.0, 0.0), "cuda", 5)
        agent.set_update_mode(each)
        agent.log_updates()
        batches = [random_batch(algo, seed=i).to_torch("cuda") for i in range(12)]
        agent.update_normalizer(np.ones((4, OBS_DIM)), np.zeros((4, GOAL_DIM)))
        with no_host_reads() if each != "eager" else contextlib.nullcontext():
            for batch in batches:
                agent.update(batch, count_goals=True)
        agents[each] = (agent, agent.update_metrics())
    (eager, rows_eager), (captured, rows_captured) = agents.values()
    assert_same_learning(eager, captured, rows_eager, rows_captured, tol=2e-3)


@pytest.mark.parametrize("algo", ONLINE_ALGOS)
def test_one_state_loaded_into_two_agents_learns_alike_in_each(algo: str) -> None:
    """A state loaded into a fresh agent and back into the one that saved it: each goes
    on alike and on its own (torch's optimisers would share the loaded moments)."""
    agent = make_agent(algo, None, OBS_DIM, GOAL_DIM, space(algo), (-1.0, 0.0), "cpu", 1)
    run_updates(agent, algo, 6, "cpu")
    state = agent.state_dict()
    twin = make_agent(algo, None, OBS_DIM, GOAL_DIM, space(algo), (-1.0, 0.0), "cpu", 2)
    twin.load_state_dict(state)
    agent.load_state_dict(state)
    rows_a = run_updates(agent, algo, 6, "cpu", seed=50)
    rows_b = run_updates(twin, algo, 6, "cpu", seed=50)
    assert_same_learning(agent, twin, rows_a, rows_b, tol=1e-5)


@pytest.mark.skipif(not CUDA, reason="CUDA graphs need a CUDA device")
def test_a_captured_update_is_captured_again_after_a_load() -> None:
    agent = make_agent("td3", None, OBS_DIM, GOAL_DIM, space("td3"), (-1.0, 0.0), "cuda", 1)
    agent.set_update_mode("captured")
    run_updates(agent, "td3", 10, "cuda")
    state = agent.state_dict()
    twin = make_agent("td3", None, OBS_DIM, GOAL_DIM, space("td3"), (-1.0, 0.0), "cuda", 2)
    twin.set_update_mode("captured")
    twin.load_state_dict(state)
    agent.load_state_dict(state)
    rows_a = run_updates(agent, "td3", 10, "cuda", seed=50)
    rows_b = run_updates(twin, "td3", 10, "cuda", seed=50)
    assert_same_learning(agent, twin, rows_a, rows_b, tol=1e-5)


# --- choosing by the machine, once --------------------------------------------------------


def a_device(monkeypatch: pytest.MonkeyPatch, bf16: bool, captures: bool = False) -> None:
    """A device that multiplies bfloat16 natively or not, and can capture or not."""
    import herkit.training.update_plan as plan

    monkeypatch.setattr(plan, "fast_bf16", lambda device: bf16)
    monkeypatch.setattr(plan, "mode_available", lambda mode, device: captures)


def no_trial(*args: Any, **kwargs: Any) -> str | None:
    raise AssertionError("nothing is tried where nothing can fail")


def test_the_work_between_hidden_layers_decides_bf16(monkeypatch: pytest.MonkeyPatch) -> None:
    from herkit.runtime.cores import LARGE_UPDATE_WORK, update_work
    from herkit.training.update_plan import auto_precision

    cpu = torch.device("cpu")
    assert update_work((256, 256, 256), 256) == 2 * 256 * 256 * 256
    assert update_work((256,), 4096) == 0  # one layer: no product between hidden layers
    assert update_work((256, 256), 256) == LARGE_UPDATE_WORK
    a_device(monkeypatch, bf16=True)
    assert auto_precision(cpu, (256, 256, 256), 256)[0] == "bf16"
    assert auto_precision(cpu, (256, 256), 256)[0] == "bf16"
    assert auto_precision(cpu, (256,), 256)[0] == "fp32"  # bit flipping's DQN
    precision, why = auto_precision(cpu, (64, 64), 256)
    assert precision == "fp32"
    assert "too small to gain: the hidden layers make 1,048,576 multiply-adds" in why
    a_device(monkeypatch, bf16=False)
    precision, why = auto_precision(cpu, (512, 512, 512), 2048)
    assert (precision, why) == ("fp32", "this CPU does not multiply bfloat16 natively")


def test_the_modes_follow_the_device_and_the_runs_length(monkeypatch: pytest.MonkeyPatch) -> None:
    from herkit.training.update_plan import COMPILE_MIN_UPDATES, auto_modes

    cpu, gpu = torch.device("cpu"), torch.device("cuda")
    assert auto_modes(cpu, 1e9, distributed=False)[0] == ["eager"]
    a_device(monkeypatch, bf16=True, captures=True)
    assert auto_modes(gpu, COMPILE_MIN_UPDATES, distributed=False)[0] == [
        "compiled-captured",
        "captured",
        "eager",
    ]
    modes, why = auto_modes(gpu, COMPILE_MIN_UPDATES - 1, distributed=False)
    assert modes == ["captured", "eager"] and "too few for compiling to pay" in why
    assert auto_modes(gpu, 1e9, distributed=True)[0] == ["eager"]


def test_a_cpu_compiles_a_long_offline_phase_where_a_compiler_is_found(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import herkit.training.update_plan as plan

    cpu = torch.device("cpu")
    least = plan.CPU_COMPILE_MIN_UPDATES
    monkeypatch.setattr(plan.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.delenv("CXX", raising=False)
    modes, why = plan.auto_modes(cpu, least, False, offline_updates=least)
    assert modes == ["compiled"] and f"{least:,} gradient steps on a dataset" in why
    modes, why = plan.auto_modes(cpu, 1e9, False, offline_updates=least - 1)
    assert modes == ["eager"] and f"an offline phase of {least:,} steps or more" in why
    assert plan.auto_modes(cpu, 1e9, True, offline_updates=least)[0] == ["eager"]  # torchrun
    modes, why = plan.auto_modes(cpu, least, False, offline_updates=least, learns_values=False)
    assert modes == ["eager"] and "an actor alone (no value to learn)" in why  # GCBC
    monkeypatch.setattr(plan.shutil, "which", lambda name: None)
    monkeypatch.setenv("CXX", "clang++-19")
    modes, why = plan.auto_modes(cpu, least, False, offline_updates=least)
    assert modes == ["eager"] and "without a C++ compiler (clang++-19 not found)" in why


def test_auto_on_a_cpu_tries_and_times_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    import herkit.training.update_plan as plan

    a_device(monkeypatch, bf16=True)
    monkeypatch.setattr(plan, "_trial", no_trial)
    assert not hasattr(plan, "time")  # nothing here reads a clock
    agent = agent_for("ddpg")
    before = agent.state_dict()
    chosen = choose_update(
        agent, spaces(), space("ddpg"), (256, 256, 256), 256, expected_updates=1e9
    )
    assert (chosen.precision, chosen.mode) == ("bf16", "eager")
    assert chosen.why.startswith("this CPU multiplies bfloat16 natively")
    assert chosen.notes == (
        "on a CPU; --update-mode compiled compiles, at a minute's start-up cost (auto "
        "compiles an offline phase of 20,000 steps or more)",
    )
    assert (agent.precision, agent.update_mode) == ("bf16", "eager")
    assert agent.state_dict()["updates"] == before["updates"]


def test_a_captured_mode_that_fails_its_trial_gives_way_to_the_next(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On a GPU the captured modes are tried (pass or fail, not timed) in order; the
    agent comes out of each trial as it went in."""
    import herkit.training.update_plan as plan

    a_device(monkeypatch, bf16=False, captures=True)
    tried: list[str] = []

    def trial(agent: Any, *args: Any) -> str | None:
        mode = args[3]
        tried.append(mode)
        agent.update(random_batch("ddpg", 32))  # a trial changes the agent, as a real one
        if mode == "compiled-captured":
            try:
                raise RuntimeError("operation not permitted when stream is capturing")
            except RuntimeError as error:
                return plan.first_error(error)
        return None

    monkeypatch.setattr(plan, "_trial", trial)
    said: list[str] = []
    agent = agent_for("ddpg")
    monkeypatch.setattr(agent, "set_update_mode", lambda mode: setattr(agent, "mode_set", mode))
    chosen = choose_update(
        agent, spaces(), space("ddpg"), (64, 64), 32, expected_updates=1e9, tell=said.append
    )
    assert tried == ["compiled-captured", "captured"]
    assert (chosen.precision, chosen.mode) == ("fp32", "captured")
    assert chosen.notes[1] == (
        "compiled-captured failed here: RuntimeError: operation not permitted when stream is "
        "capturing"
    )
    assert agent.mode_set == "captured"
    assert said == [
        "trying compiled-captured, captured updates (a few updates each, not a timing)..."
    ]


def test_a_trial_restores_the_agent_and_says_what_failed() -> None:
    """A real trial (eager here: the CPU cannot capture) leaves no update behind; one that
    raises comes back as its first line."""
    from herkit.training.update_plan import _trial

    agent = agent_for("td3")
    agent.log_updates()
    before = {k: v.clone() for k, v in agent.state_dict()["networks"]["actor"].items()}
    assert _trial(agent, spaces(), space("td3"), 32, "eager", False, False) is None
    assert agent.updates == 0 and agent.update_metrics() == []
    for key, value in agent.state_dict()["networks"]["actor"].items():
        assert torch.equal(value, before[key]), key
    error = _trial(agent, spaces(), space("td3"), 32, "no such mode", False, False)
    assert error is not None and error.startswith("ValueError: update_mode must be one of")


def test_a_failed_mode_is_said_by_the_error_that_started_it() -> None:
    """A step's error inside a capture ends in the capture's own: the note names the
    step's first, each by its first line."""
    from herkit.training.update_plan import first_error

    try:
        try:
            raise RuntimeError("Cannot copy between CPU and CUDA tensors\nmore lines")
        finally:
            raise ValueError("capture invalidated\nhint")
    except ValueError as error:
        said = first_error(error)
    assert said == (
        "RuntimeError: Cannot copy between CPU and CUDA tensors "
        "(then ValueError: capture invalidated)"
    )
    assert first_error(KeyError("slots")) == "KeyError: 'slots'"
    assert first_error(RuntimeError()) == "RuntimeError"


def test_given_choices_are_kept_without_a_trial(monkeypatch: pytest.MonkeyPatch) -> None:
    import herkit.training.update_plan as plan

    monkeypatch.setattr(plan, "_trial", no_trial)
    agent = agent_for("sac")
    chosen = choose_update(
        agent, spaces(), space("sac"), (256,), 64, precision="bf16", mode="eager"
    )
    assert chosen == UpdatePlan("bf16", "eager")
    assert (agent.precision, agent.update_mode) == ("bf16", "eager")


def test_ranks_take_bf16_only_where_every_rank_takes_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each rank asks once, whatever it chose, so the ranks' collectives stay in step."""
    a_device(monkeypatch, bf16=True)
    asked: list[bool] = []

    def another_rank_says_no(mine: bool) -> bool:
        asked.append(mine)
        return False

    chosen = choose_update(
        agent_for("ddpg"),
        spaces(),
        space("ddpg"),
        (256, 256, 256),
        256,
        distributed=True,
        all_true=another_rank_says_no,
    )
    assert asked == [True] and chosen.precision == "fp32"
    assert chosen.why == "another rank's device does not multiply bfloat16 natively"
    assert chosen.notes == ("the ranks of a torchrun job average gradients within each update",)
    small = choose_update(
        agent_for("ddpg"),
        spaces(),
        space("ddpg"),
        (64,),
        32,
        distributed=True,
        all_true=another_rank_says_no,
    )
    assert asked == [True, False] and small.precision == "fp32"


def test_a_capture_begins_after_dead_cycles_are_collected(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Garbage in a reference cycle that holds an earlier step's autograd graph is gone
    when a capture begins: on a GPU (an H200) that graph's gradient accumulators, made on
    the default stream, broke the capture of plain ``captured`` after the compiled timing,
    and torch no longer collects garbage before a capture. CUDA is faked here: only the
    order of collection and capture is checked."""
    weight = torch.nn.Parameter(torch.ones(3))

    class Cycle:
        loss: torch.Tensor
        me: Cycle

    def leave_a_dead_cycle() -> weakref.ref[Cycle]:
        cycle = Cycle()
        cycle.me, cycle.loss = cycle, (weight * 2).sum()
        return weakref.ref(cycle)

    class FakeGraph:
        def replay(self) -> None:
            pass

    alive_at_capture: list[bool] = []

    @contextlib.contextmanager
    def capture(graph: FakeGraph, capture_error_mode: str) -> Iterator[None]:
        alive_at_capture.append(dead() is not None)
        yield

    monkeypatch.setattr(torch.cuda, "CUDAGraph", FakeGraph)
    monkeypatch.setattr(torch.cuda, "graph", capture)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *args: None)
    graph = updates._Graph(lambda batch: (batch.reward * weight).sum().detach(), {}, None)
    graph.calls = updates.CAPTURE_WARMUP  # warmed up: the next call captures
    enabled = gc.isenabled()
    gc.disable()  # the cycle outlives the call unless the capture collects it
    try:
        dead = leave_a_dead_cycle()
        assert dead() is not None
        graph(Batch(*[torch.ones(3)] * 8))
    finally:
        if enabled:
            gc.enable()
    assert alive_at_capture == [False] and graph.graph is not None


@pytest.mark.skipif(not CUDA, reason="the captured modes need a CUDA device")
def test_on_a_gpu_a_long_run_compiles_and_captures() -> None:
    """The trial a GPU run starts with: compiled-captured runs at once (a FetchPush run on
    an H100 once failed plain captured after other modes had run)."""
    agent = make_agent("ddpg", None, OBS_DIM, GOAL_DIM, space("ddpg"), (-1.0, 0.0), "cuda", 3)
    agent.log_updates()
    chosen = choose_update(
        agent, spaces(), space("ddpg"), (256, 256, 256), 256, expected_updates=1e9, on_device=True
    )
    assert chosen.mode == "compiled-captured" and len(chosen.notes) == 1, chosen.notes
    assert agent.updates == 0 and agent.update_metrics() == []


@pytest.mark.slow("two training runs")
def test_a_run_records_its_choice_and_a_resume_keeps_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    import herkit.training.startup
    from herkit.config.train import TrainConfig
    from herkit.rundir.paths import RunPaths
    from herkit.training.loop import train
    from runs import QUIET

    run = tmp_path / "run"
    config = TrainConfig(steps=300, out=str(run), **QUIET)
    train(config)
    saved = json.loads(RunPaths(run).config.read_text())
    assert saved["update_mode"] == "eager" and saved["precision"] == "fp32"  # 1 x 256
    assert saved["machine"]["update_mode"].startswith("eager (auto: on a CPU;")
    assert saved["machine"]["precision"].startswith("fp32 (auto: ")
    asked: list[tuple[str, str]] = []
    choose = herkit.training.startup.choose_update

    def recorded(agent: Any, *args: Any, **kwargs: Any) -> UpdatePlan:
        asked.append((kwargs["precision"], kwargs["mode"]))
        return choose(agent, *args, **kwargs)

    monkeypatch.setattr(herkit.training.startup, "choose_update", recorded)
    from herkit.rundir.settings import load_run_config

    resumed = dataclasses.replace(load_run_config(run), steps=600, out=str(run))
    train(resumed, resume=True)
    assert asked == [(saved["precision"], saved["update_mode"])]  # given: kept as it was


@pytest.mark.slow("torch.compile compiles an update: about 30 s")
@pytest.mark.skipif(
    shutil.which("g++") is None and shutil.which("c++") is None,
    reason="torch.compile on a CPU needs a C++ compiler",
)
def test_a_compiled_update_leaves_no_torch_profiler_note(
    capfd: pytest.CaptureFixture[str],
) -> None:
    """torch.compile notes the profiler hooks of the optimiser's step it leaves out; a run
    holds them back (they change nothing of the update)."""
    from herkit.training.update_plan import no_profiler_notes

    cached = getattr(torch._logging, "warning_once", None)  # torch says each note once
    if cached is not None and hasattr(cached, "cache_clear"):  # a process: as if new
        cached.cache_clear()
    agent = agent_for("dqn")
    agent.set_update_mode("compiled")
    with no_profiler_notes():
        for seed in range(3):
            agent.update(random_batch("dqn", 32, seed=seed))
    printed = capfd.readouterr()
    assert "Profiler" not in printed.out + printed.err, printed.err
