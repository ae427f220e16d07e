"""Whether a relabelled sample that reaches its goal ends, for an env that says nothing of
it: :class:`EndingRule`.

An env that declares whether its episodes end on success (``terminates_on_success``,
``continuing_task``) is taken at its word. For one that declares nothing, herkit.sb3
keeps SB3's flags (a reached relabelled goal bootstraps) unless the env is seen both to end
an episode at a success and to give step rewards with a term ``compute_reward`` lacks (a
crash penalty): bootstrapping past a reached goal then charges it with the penalties of
steps the env would never have run, and highway-env's parking learned to avoid its goals.
There a reached relabelled goal ends the sample, as herkit's own buffer decides.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["EndingRule"]


class EndingRule:
    """The ending rule of an env that declares nothing (``learns``); otherwise inert."""

    def __init__(self, learns: bool) -> None:
        self.learns = learns
        self.ends_on_success: bool | None = None
        """Whether the env ended its episode at the first success added (None: none yet)."""

    def observe(self, success: np.ndarray | None, terminated: np.ndarray) -> None:
        """One added step of every env: its success flags (None: not given) and which
        envs' episodes the env terminated."""
        if self.ends_on_success is None and success is not None and success.any():
            self.ends_on_success = bool(terminated[success].all())

    def terminal_on_success(self, buffer: Any) -> bool:
        """The rule for the next sample of herkit's ``buffer`` (its reward audit up to date)."""
        buffer.flush()
        return bool(self.ends_on_success) and buffer.audit.differing > 0
