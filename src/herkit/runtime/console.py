"""What a training run says and hears on the terminal: its ``herkit: ...`` lines, its
progress bar, and the signals (Ctrl-C, SIGTERM) that ask it to stop."""

from __future__ import annotations

import signal
import sys
import threading
import time
from typing import Any, Protocol

import numpy as np

__all__ = ["Progress", "StopOnSignal", "say"]


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
        say(f"{signal.Signals(signum).name}: stopping after this step to write a checkpoint "
            "(again to quit at once)")  # fmt: skip


class _Counters(Protocol):
    env_steps: int
    updates: int
    success_rate: float


class Progress:
    """A rich progress bar with live success rate, env steps/s and updates/s (silent when
    disabled): the envs' and the learner's rates side by side."""

    def __init__(
        self, label: str, steps: int, done: int, enabled: bool = True, updates: int = 0
    ) -> None:
        self._bar: Any = None
        if not enabled:
            return
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
        )

        self._bar = Progress(
            TextColumn(label),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("success {task.fields[success]}"),
            TextColumn("{task.fields[sps]} steps/s"),
            TextColumn("{task.fields[ups]} updates/s"),
            TimeRemainingColumn(),
            auto_refresh=False,  # a refresh thread would contend with the loop for the GIL
        )
        self._task = self._bar.add_task(
            "train", total=steps, completed=done, success="-", sps="-", ups="-"
        )
        self._bar.start()
        self._last = self._start = (time.perf_counter(), done, updates)

    def update(self, state: _Counters, force: bool = False) -> None:
        """Show ``state``'s env steps and success rate (at most 4 times a second unless
        ``force``; the forced last line gives the whole run's rate)."""
        if self._bar is None:
            return
        now = time.perf_counter()
        then, steps, updates = self._last
        if now - then < 0.25 and not force:
            return
        if force:  # the last line: the whole run's rate (its last interval held the
            then, steps, updates = self._start  # evaluation, video and checkpoint)
        elapsed = max(now - then, 1e-9)
        sps = (state.env_steps - steps) / elapsed
        ups = f"{(state.updates - updates) / elapsed:,.0f}"
        self._last = (now, state.env_steps, state.updates)
        success = "-" if np.isnan(state.success_rate) else f"{state.success_rate:.2f}"
        self._bar.update(
            self._task, completed=state.env_steps, success=success, sps=f"{sps:,.0f}", ups=ups
        )
        self._bar.refresh()

    def close(self) -> None:
        """Leave the bar's last line on the terminal."""
        if self._bar is not None:
            self._bar.stop()
