"""The update step at the hardware's speed: no host read inside an update, metrics kept on
the device until the loop reads them, goal statistics gathered where the batch lies, the
update compiled or captured (CUDA graphs) with the same result as eager, and the choice
of precision and mode made by timing and kept."""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import math
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
from herkit.agents.updates import UPDATE_MODES, UpdateLog, check_update_mode
from herkit.runtime.distributed import Context
from herkit.training.update_plan import AUTO_BF16_SPEEDUP, UpdatePlan, choose_update
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


# --- choosing by timing --------------------------------------------------------------------


def fake_timings(ms: dict[str, float]) -> Any:
    def timed(agent: Any, batch: Any, precision: str, mode: str, mean: Any) -> float:
        agent.update(batch)  # it changes the agent, as a real timing does
        if f"{precision} {mode}" not in ms:
            raise RuntimeError(f"{mode} cannot run here")
        return ms[f"{precision} {mode}"]

    return timed


def a_cpu_with_bf16(monkeypatch: pytest.MonkeyPatch, timings: dict[str, float]) -> None:
    """Timings as given on a device with fast bf16 that cannot capture."""
    import herkit.training.update_plan as plan

    monkeypatch.setattr(plan, "fast_bf16", lambda device: True)
    monkeypatch.setattr(plan, "mode_available", lambda mode, device: "captured" not in mode)
    monkeypatch.setattr(plan, "_timed", fake_timings(timings))


def test_choose_update_times_every_combination_and_restores_the_agent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    timings = {"fp32 eager": 10.0, "bf16 eager": 9.5, "fp32 compiled": 6.0, "bf16 compiled": 5.0}
    a_cpu_with_bf16(monkeypatch, timings)
    agent = agent_for("ddpg")
    before = agent.state_dict()
    chosen = choose_update(agent, spaces(), space("ddpg"), 64, expected_updates=1e9)
    assert (chosen.precision, chosen.mode) == ("bf16", "compiled")  # 6.0 >= 1.1 x 5.0
    assert chosen.timings_ms == timings
    assert (agent.precision, agent.update_mode) == ("bf16", "compiled")
    after = agent.state_dict()
    assert after["updates"] == before["updates"]
    for name, net in before["networks"].items():
        for key, value in net.items():
            assert torch.equal(after["networks"][name][key], value), (name, key)


def test_choose_update_keeps_fp32_and_eager_unless_others_win_clearly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    timings = {"fp32 eager": 10.0, "bf16 eager": 9.3, "fp32 compiled": 9.8, "bf16 compiled": 9.2}
    a_cpu_with_bf16(monkeypatch, timings)
    chosen = choose_update(agent_for("ddpg"), spaces(), space("ddpg"), 64, expected_updates=1e9)
    assert 10.0 < AUTO_BF16_SPEEDUP * 9.2 and (chosen.precision, chosen.mode) == ("fp32", "eager")


def test_compiling_is_timed_only_where_the_run_pays_for_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import herkit.training.update_plan as plan

    monkeypatch.setattr(plan, "fast_bf16", lambda device: False)
    monkeypatch.setattr(plan, "_timed", fake_timings({"fp32 eager": 4.0, "fp32 compiled": 1.0}))
    short = choose_update(agent_for("ddpg"), spaces(), space("ddpg"), 64, expected_updates=1000)
    assert short.mode == "eager" and set(short.timings_ms) == {"fp32 eager"}
    assert any("compiling not timed" in note for note in short.notes)
    long = choose_update(agent_for("ddpg"), spaces(), space("ddpg"), 64, expected_updates=1e6)
    assert long.mode == "compiled" and not long.notes


def test_the_slow_timings_are_said_before_and_after(monkeypatch: pytest.MonkeyPatch) -> None:
    import herkit.training.update_plan as plan

    said: list[str] = []
    timings = {"fp32 eager": 4.0, "fp32 compiled": 1.0}
    timed = fake_timings(timings)

    def recorded(agent: Any, batch: Any, precision: str, mode: str, mean: Any) -> float:
        said.append(f"timed {precision} {mode}")
        return timed(agent, batch, precision, mode, mean)

    monkeypatch.setattr(plan, "fast_bf16", lambda device: False)
    monkeypatch.setattr(plan, "_timed", recorded)
    choose_update(
        agent_for("ddpg"), spaces(), space("ddpg"), 64, expected_updates=1e9, tell=said.append
    )
    assert said[0] == "timed fp32 eager" and said[2] == "timed fp32 compiled"
    assert said[1].startswith(
        "timing the update in fp32 compiled against eager, to run the fastest; compiling "
        "takes a minute or two (--update-mode"
    )
    assert said[3].startswith("timed in ") and said[3].endswith("the updates run fp32 compiled")
    said.clear()  # a short run compiles nothing: nothing slow to say
    choose_update(
        agent_for("ddpg"), spaces(), space("ddpg"), 64, expected_updates=10, tell=said.append
    )
    assert said == ["timed fp32 eager"]


@pytest.mark.slow("torch.compile compiles an update: about 30 s")
@pytest.mark.skipif(
    shutil.which("g++") is None and shutil.which("c++") is None,
    reason="torch.compile on a CPU needs a C++ compiler",
)
def test_compiling_while_timing_says_what_it_does_and_no_torch_profiler_note(
    capfd: pytest.CaptureFixture[str],
) -> None:
    cached = getattr(torch._logging, "warning_once", None)  # torch says each note once
    if cached is not None and hasattr(cached, "cache_clear"):  # a process: as if new
        cached.cache_clear()
    said: list[str] = []
    chosen = choose_update(
        agent_for("dqn"),
        spaces(),
        space("dqn"),
        32,
        precision="fp32",
        expected_updates=1e9,
        tell=said.append,
    )
    assert "fp32 compiled" in chosen.timings_ms, chosen
    assert len(said) == 2 and said[0].startswith("timing the update in fp32 compiled")
    assert said[1].startswith("timed in ")
    printed = capfd.readouterr()
    assert "Profiler" not in printed.out + printed.err, printed.err


def test_a_mode_that_fails_here_is_left_out_and_said(monkeypatch: pytest.MonkeyPatch) -> None:
    import herkit.training.update_plan as plan

    monkeypatch.setattr(plan, "fast_bf16", lambda device: False)
    monkeypatch.setattr(plan, "_timed", fake_timings({"fp32 eager": 4.0}))
    agent = agent_for("ddpg")
    chosen = choose_update(agent, spaces(), space("ddpg"), 64, expected_updates=1e9)
    assert chosen.mode == "eager" and "compiled failed here: RuntimeError" in chosen.notes[0]
    assert agent.update_mode == "eager"


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


def test_given_choices_are_kept_without_timing(monkeypatch: pytest.MonkeyPatch) -> None:
    import herkit.training.update_plan as plan

    monkeypatch.setattr(plan, "_timed", fake_timings({}))  # a timing would raise
    agent = agent_for("sac")
    chosen = choose_update(agent, spaces(), space("sac"), 64, precision="bf16", mode="eager")
    assert chosen == UpdatePlan("bf16", "eager")
    assert (agent.precision, agent.update_mode) == ("bf16", "eager")


@dataclasses.dataclass(frozen=True)
class TwoRanks(Context):
    """Rank 0 of two whose twin sums what it does (``other``: the twin's values by
    collective, counted from 0, where they differ), recording each collective."""

    rank: int = 0
    world_size: int = 2
    other: dict[int, float] = dataclasses.field(default_factory=dict)
    calls: list[str] = dataclasses.field(default_factory=list)

    def all_sum(self, values: np.ndarray) -> np.ndarray:
        twin = self.other.get(len(self.calls))
        self.calls.append("all_sum")
        return np.asarray(values, np.float64) + (values if twin is None else twin)

    def average_gradients(self, params: Any) -> None:
        self.calls.append("average_gradients")

    def broadcast_parameters(self, modules: Any) -> None:
        self.calls.append("broadcast")


def test_ranks_time_their_updates_alone_and_agree_by_one_mean_per_timing() -> None:
    """How many updates fit a timing follows each rank's clock: a collective inside a
    timing would cross the ranks' messages (gloo aborts). Each timing is averaged once."""
    context = TwoRanks()
    agent = agent_for("ddpg")
    agent.join(context, exploration_seed=1)
    chosen = choose_update(
        agent, spaces(), space("ddpg"), 32, expected_updates=10, distributed=True, mean=context.mean
    )
    assert context.calls == ["broadcast", *["all_sum"] * len(chosen.timings_ms)]
    assert agent.dist is context
    agent.update(random_batch("ddpg", 32))
    assert context.calls[-1] == "average_gradients"  # joined again after the timing


def test_a_mode_that_fails_on_another_rank_is_left_out_on_every_rank(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import herkit.training.update_plan as plan

    monkeypatch.setattr(plan, "fast_bf16", lambda device: False)
    monkeypatch.setattr(plan, "mode_available", lambda mode, device: "captured" not in mode)
    monkeypatch.setattr(plan, "time_update", lambda *args, **kwargs: 2.0)
    context = TwoRanks(other={1: math.inf})  # the twin's compiled timing failed
    chosen = choose_update(
        agent_for("ddpg"),
        spaces(),
        space("ddpg"),
        32,
        expected_updates=1e9,
        distributed=True,
        mean=context.mean,
    )
    assert chosen.mode == "eager" and chosen.timings_ms == {"fp32 eager": 2.0}
    assert "fp32 compiled failed on another rank" in chosen.notes[0]

    def fails(agent: Any, batch: Any, precision: str, mode: str) -> float:
        if mode != "eager":
            raise RuntimeError("cannot compile here")
        return 2.0

    monkeypatch.setattr(plan, "time_update", fails)
    context = TwoRanks()  # the twin succeeds: it learns of this failure by the mean
    chosen = choose_update(
        agent_for("ddpg"),
        spaces(),
        space("ddpg"),
        32,
        expected_updates=1e9,
        distributed=True,
        mean=context.mean,
    )
    assert chosen.mode == "eager" and "cannot compile here" in chosen.notes[0]
    assert context.calls == ["all_sum", "all_sum"]  # the failed timing's mean is still made


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
    graph = updates._Graph(lambda x: (x * weight).sum().detach(), {}, None)
    graph.calls = updates.CAPTURE_WARMUP  # warmed up: the next call captures
    enabled = gc.isenabled()
    gc.disable()  # the cycle outlives the call unless the capture collects it
    try:
        dead = leave_a_dead_cycle()
        assert dead() is not None
        graph([torch.ones(3)])
    finally:
        if enabled:
            gc.enable()
    assert alive_at_capture == [False] and graph.graph is not None


def test_a_real_timing_of_eager_updates_on_the_cpu() -> None:
    agent = agent_for("td3")
    chosen = choose_update(
        agent, spaces(), space("td3"), 32, precision="auto", mode="auto", expected_updates=10
    )
    assert chosen.mode == "eager" and chosen.timings_ms["fp32 eager"] > 0
    assert agent.updates == 0 and agent.update_metrics() == []
    assert set(UPDATE_MODES) >= {chosen.mode}


@pytest.mark.skipif(not CUDA, reason="the captured modes need a CUDA device")
def test_a_real_timing_on_a_gpu_leaves_no_mode_out() -> None:
    """The timing a GPU run starts with: eager, compiled, captured and compiled-captured
    updates of one agent in turn, on a batch on the device. Each runs (a FetchPush run
    on an H100 once left captured out: its capture was invalidated after the others)."""
    agent = make_agent("ddpg", None, OBS_DIM, GOAL_DIM, space("ddpg"), (-1.0, 0.0), "cuda", 3)
    agent.log_updates()
    chosen = choose_update(
        agent,
        spaces(),
        space("ddpg"),
        256,
        precision="auto",
        mode="auto",
        expected_updates=1e9,
        on_device=True,
    )
    assert chosen.notes == ()
    precisions = {name.split()[0] for name in chosen.timings_ms}
    assert "fp32" in precisions
    assert set(chosen.timings_ms) == {f"{p} {mode}" for p in precisions for mode in UPDATE_MODES}
    assert agent.updates == 0 and agent.update_metrics() == []


@pytest.mark.slow("a training run, timed and resumed")
def test_a_run_records_its_timed_choice_and_a_resume_keeps_it(
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
    assert saved["update_mode"] in ("eager", "compiled") and saved["precision"] != "auto"
    assert "auto:" in saved["machine"]["update_mode"]
    asked: list[tuple[str, str]] = []
    choose = herkit.training.startup.choose_update

    def recorded(agent: Any, *args: Any, **kwargs: Any) -> UpdatePlan:
        asked.append((kwargs["precision"], kwargs["mode"]))
        return choose(agent, *args, **kwargs)

    monkeypatch.setattr(herkit.training.startup, "choose_update", recorded)
    import dataclasses

    from herkit.rundir.settings import load_run_config

    resumed = dataclasses.replace(load_run_config(run), steps=600, out=str(run))
    train(resumed, resume=True)
    assert asked == [(saved["precision"], saved["update_mode"])]  # given: nothing timed


def test_a_given_mode_is_kept_and_only_its_timings_pick_the_precision(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """--update-mode compiled --precision auto: eager is timed (the precision's reference)
    but never chosen, however fast, and the compiled timings decide the precision."""
    timings = {"fp32 eager": 1.0, "bf16 eager": 0.5, "fp32 compiled": 4.0, "bf16 compiled": 6.0}
    a_cpu_with_bf16(monkeypatch, timings)
    agent = agent_for("ddpg")
    chosen = choose_update(
        agent, spaces(), space("ddpg"), 64, mode="compiled", expected_updates=1e9
    )
    assert (chosen.precision, chosen.mode) == ("fp32", "compiled")
    assert (agent.precision, agent.update_mode) == ("fp32", "compiled")
