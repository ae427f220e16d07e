"""What a training run says and hears on the terminal: its ``herkit: ...`` lines, its
progress (a bar, or plain lines where stderr is no terminal), and the signals (Ctrl-C,
SIGTERM) that ask it to stop."""

from __future__ import annotations

import signal
import sys
import threading
import time
from typing import Any, Protocol

import numpy as np

__all__ = ["Progress", "StopOnSignal", "TimeLeft", "clock", "say"]


def say(text: str) -> None:
    """One line of ``herkit: ...`` on stderr (stdout carries the JSON summary)."""
    print(f"herkit: {text}", file=sys.stderr, flush=True)


class StopOnSignal:
    """SIGINT/SIGTERM set :attr:`requested` (the loop checkpoints and stops); a second
    signal raises KeyboardInterrupt at once. Handlers are restored on exit."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.requested = False
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> StopOnSignal:
        if threading.current_thread() is threading.main_thread():
            for signum in self.SIGNALS:
                self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)

    def _handle(self, signum: int, frame: object) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        say(
            f"{signal.Signals(signum).name}: stopping after this step to write a checkpoint "
            "(again to quit at once)"
        )


class _Counters(Protocol):
    updates: int
    success_rate: float


BAR_EVERY_S = 0.25
"""The progress bar is redrawn at most this often (seconds)."""
PLAIN_EVERY_S = 30.0
"""Where stderr is no terminal, a progress line follows every evaluation, and one is
written at least this often (seconds) while evaluations are rarer."""
DAY_S = 86_400.0
"""A run whose time left is estimated above this (seconds) says so, once."""
JUDGE_AFTER_S = 10.0
"""Seconds of training timed before a run's length is judged (the first steps are slower:
allocations, caches)."""


class TimeLeft:
    """The time a run has left, from what it has done: its steps at the seconds per step of
    the stretches that updated the networks at least half as often as the run will
    (``updates_per_step``: a warm-up of env steps alone is faster than what follows, so it
    tells nothing of it: no estimate until such a stretch has been timed), plus evaluations
    at the share of the time they took so far."""

    def __init__(self, updates_per_step: float | None = None) -> None:
        self._least = 0.5 * updates_per_step if updates_per_step else 0.0
        self._training_s = 0.0
        self._steps = 0
        self._eval_s = 0.0
        self._done = 0

    def add(self, seconds: float, steps: int, updates: int, eval_s: float) -> None:
        """A stretch of the run: its wall ``seconds``, its ``steps`` (of the run's unit),
        its ``updates`` and the seconds of it spent evaluating (``eval_s``)."""
        self._eval_s += eval_s
        self._done += steps
        if updates > 0 and steps > 0 and updates >= self._least * steps:
            self._training_s += max(seconds - eval_s, 0.0)
            self._steps += steps

    @property
    def timed_s(self) -> float:
        """The seconds of training timed so far (evaluations aside)."""
        return self._training_s

    def seconds(self, left: int) -> float | None:
        """Seconds for ``left`` more steps; None before an update has been timed."""
        if self._steps == 0 or left <= 0:
            return None
        evaluating = self._eval_s / self._done if self._done else 0.0
        return left * (self._training_s / self._steps + evaluating)


class Progress:
    """A run's progress on stderr, counted in ``unit`` (env steps, or gradient steps while
    a run trains on a dataset alone): where stderr is a terminal, a rich progress bar with
    live success rate, steps/s and updates/s (the envs' and the learner's rates side by
    side); elsewhere (a log file, a pipe, a job scheduler) a plain ``herkit: ...`` line
    after each evaluation and at least every :data:`PLAIN_EVERY_S` seconds, with the time
    left. Once :data:`JUDGE_AFTER_S` seconds of training are timed, a phase with more than
    a day left says so in one line, with how many steps fit a day and the flag that sets
    them (``budget_flag``). Silent when disabled."""

    def __init__(
        self,
        label: str,
        total: int,
        done: int,
        enabled: bool = True,
        updates: int = 0,
        unit: str = "env steps",
        eval_s: float = 0.0,
        updates_per_step: float | None = None,
        budget_flag: str = "--steps",
    ) -> None:
        self._bar: Any = None
        self._plain = False
        self._total = total
        self.unit = unit
        self._budget_flag = budget_flag
        self._judged = False  # whether the run's length has been judged (once)
        self._last = self._start = (time.perf_counter(), done, updates)
        self._time_left = TimeLeft(updates_per_step)
        self._eval_s = eval_s  # the run's seconds of evaluation at the last sample
        if not enabled:
            return
        from rich.console import Console

        console = Console(stderr=True)  # stdout carries the JSON summary
        if not (console.is_jupyter or _is_terminal(sys.stderr)):
            self._plain = True
            return
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
        )

        self._bar = Progress(
            TextColumn(label),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("success {task.fields[success]}"),
            TextColumn("{task.fields[sps]} steps/s"),
            TextColumn("{task.fields[ups]} updates/s"),
            TextColumn("{task.fields[left]}"),
            console=console,
            auto_refresh=False,  # a refresh thread would contend with the loop for the GIL
        )
        self._task = self._bar.add_task(
            "train", total=total, completed=done, success="-", sps="-", ups="-", left=""
        )
        self._bar.start()

    def update(
        self, state: _Counters, done: int, force: bool = False, evaluated: bool = False
    ) -> None:
        """Show ``done`` (of the unit) and ``state``'s success rate: the bar at most 4 times
        a second, a plain line after every evaluation (``evaluated``) and at least every
        :data:`PLAIN_EVERY_S` seconds; both at once when ``force`` (the last line gives the
        whole run's rate)."""
        now = time.perf_counter()
        if self._bar is not None:
            due = now - self._last[0] >= BAR_EVERY_S
        elif self._plain:  # since the last line, or the start
            due = evaluated or now - self._last[0] >= PLAIN_EVERY_S
        else:
            return
        if not (due or force):
            return
        eval_s = float(getattr(state, "eval_s", 0.0))
        then, steps, updates = self._last
        self._time_left.add(
            now - then, done - steps, state.updates - updates, eval_s - self._eval_s
        )
        self._eval_s = eval_s
        if force:  # the whole run
            then, steps, updates = self._start
        elapsed = max(now - then, 1e-9)  # of a forced line held evaluation and checkpoint
        rate = (done - steps) / elapsed
        ups = (state.updates - updates) / elapsed
        self._last = (now, done, state.updates)
        left = self._time_left.seconds(self._total - done)
        long_run = self._judge(done, left)
        if self._bar is None:
            say(self._line(state, done, rate, ups, now - self._start[0], left))
            if long_run:
                say(long_run)
            return
        if long_run:
            say(long_run)  # above the bar (rich prints what reaches stderr there)
        success = "-" if np.isnan(state.success_rate) else f"{state.success_rate:.2f}"
        self._bar.update(
            self._task,
            completed=done,
            success=success,
            sps=_rate(rate),
            ups=_rate(ups),
            left="" if left is None else f"about {clock(left)} left",
        )
        self._bar.refresh()

    def _judge(self, done: int, left_s: float | None) -> str | None:
        """The line that says the phase takes more than a day (once, after
        :data:`JUDGE_AFTER_S` seconds of training timed), or None."""
        if self._judged or left_s is None or self._time_left.timed_s < JUDGE_AFTER_S:
            return None
        self._judged = True
        left = self._total - done
        if left_s <= DAY_S:
            return None
        per_day = left * DAY_S / left_s
        flag = self._budget_flag
        return (
            f"this run is long: about {clock(left_s)} left for {left:,} {self.unit} at the "
            f"speed so far; about {_two_digits(per_day):,} {self.unit} fit in a day "
            f"({flag} {_two_digits(done + per_day)} ends there; a run resumed with a larger "
            f"{flag} trains on)"
        )

    def _line(
        self,
        state: _Counters,
        done: int,
        rate: float,
        ups: float,
        elapsed: float,
        left_s: float | None,
    ) -> str:
        """The plain progress line: steps, success, rates, time spent and left."""
        share = done / max(self._total, 1)
        success = (
            "not evaluated yet" if np.isnan(state.success_rate) else f"{state.success_rate:.2f}"
        )
        rates = f"{_rate(rate)} {self.unit}/s"
        if self.unit == "env steps":
            rates += f", {_rate(ups)} updates/s"
        line = (
            f"{done:,}/{self._total:,} {self.unit} ({share:.0%}), success rate {success}, "
            f"{rates}, {clock(elapsed)} elapsed"
        )
        if left_s is not None:
            line += f", about {clock(left_s)} left"
        return line

    def close(self) -> None:
        """Leave the bar's last line on the terminal."""
        if self._bar is not None:
            self._bar.stop()


def _is_terminal(stream: Any) -> bool:
    """Whether ``stream`` is a terminal (not a file or pipe; FORCE_COLOR aside, which
    asks for colours, not for a bar redrawn in place)."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or closed
        return False


def clock(seconds: float) -> str:
    """``seconds`` as m:ss, h:mm:ss from an hour on, or days and hours from a day on
    (``23 days 1 h``)."""
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    if hours >= 24:
        days, hours = divmod(round(seconds / 3600), 24)
        return f"{days} day{'s' if days != 1 else ''} {hours} h"
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def _rate(per_second: float) -> str:
    """A rate as a progress line shows it: whole from 10 on (``1,234``), else to two
    significant digits (``0.48``: a large update on a CPU is no 0 steps/s)."""
    return f"{per_second:,.0f}" if per_second >= 10 else f"{per_second:.2g}"


def _two_digits(count: float) -> int:
    """``count`` rounded down to its first two digits (at least 1): 43,200 -> 43,000."""
    whole = max(int(count), 1)
    scale = 10 ** max(len(str(whole)) - 2, 0)
    return whole // scale * scale
