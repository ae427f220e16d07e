"""Tests of :func:`herkit.bench.time_updates`, the clock of every update timing, on a
clock that only moves when a step or a synchronize says so."""

from __future__ import annotations

import gc
import types
from collections.abc import Iterator
from typing import Any

import pytest

from herkit.bench import clock, time_updates


class FakeClock:
    """``perf_counter`` of a world where time passes only by :meth:`advance`."""

    def __init__(self) -> None:
        self.now = 0.0

    def perf_counter(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeClock]:
    faked = FakeClock()
    monkeypatch.setattr(clock, "time", types.SimpleNamespace(perf_counter=faked.perf_counter))
    yield faked


def test_a_count_times_exactly_that_many_calls_after_the_warmup(fake: FakeClock) -> None:
    events: list[str] = []

    def step() -> None:
        events.append("step")
        fake.advance(0.01)

    def synchronize() -> None:
        events.append("sync")
        fake.advance(0.5)  # the device's queued work: inside the window it ends

    timed = time_updates(step, count=10, warmup=3, synchronize=synchronize, repeats=2)
    assert events == ["step"] * 3 + ["sync"] + (["step"] * 10 + ["sync"]) * 2
    assert timed.calls == 20
    assert timed.warmup_s == pytest.approx(0.53)
    assert timed.rates == pytest.approx((10 / 0.6, 10 / 0.6))
    assert timed.updates_per_s == pytest.approx(10 / 0.6)
    assert timed.seconds == pytest.approx(1.2)
    assert timed.median_ms is None


def test_a_window_counts_every_call_that_starts_within_it(fake: FakeClock) -> None:
    calls = []

    def step() -> None:
        calls.append(fake.now)
        fake.advance(0.25)

    timed = time_updates(step, seconds=1.0)
    assert timed.calls == 4 and calls == [0.0, 0.25, 0.5, 0.75]
    assert timed.updates_per_s == pytest.approx(4.0)
    longer = time_updates(step, seconds=0.1, min_calls=6)
    assert longer.calls == 6 and longer.updates_per_s == pytest.approx(4.0)


def test_the_median_of_a_call_and_updates_per_call(fake: FakeClock) -> None:
    durations = iter([0.001, 0.009, 0.002, 0.003, 0.100])

    def step() -> None:
        fake.advance(next(durations))

    timed = time_updates(step, count=5, per_call=True, updates_per_call=500)
    assert timed.median_ms == pytest.approx(3.0)
    assert timed.updates_per_s == pytest.approx(5 * 500 / 0.115)


def test_the_collector_is_paused_only_when_asked() -> None:
    seen: list[bool] = []
    time_updates(lambda: seen.append(gc.isenabled()), count=2, warmup=1, gc_paused=True)
    assert seen == [True, False, False] and gc.isenabled()
    seen.clear()
    time_updates(lambda: seen.append(gc.isenabled()), count=2)
    assert seen == [True, True]


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({}, "seconds or count"),
        ({"seconds": 1.0, "count": 5}, "seconds or count"),
        ({"seconds": 0.0}, "seconds"),
        ({"count": 0}, "count"),
        ({"count": 2, "warmup": -1}, "warmup"),
        ({"seconds": 1.0, "min_calls": 0}, "min_calls"),
        ({"count": 2, "repeats": 0}, "repeats"),
        ({"count": 2, "updates_per_call": 1.5}, "updates_per_call"),
    ],
)
def test_bad_settings_raise_value_error_naming_the_argument(
    settings: dict[str, Any], named: str
) -> None:
    with pytest.raises(ValueError, match=named):
        time_updates(lambda: None, **settings)
