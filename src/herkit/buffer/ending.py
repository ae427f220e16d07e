"""Whether an env's episodes end on success (``terminal_on_success``): the one place that
decides it, which every caller asks.

Where episodes end on success, a relabelled sample whose goal is reached is terminal, as
the env would have ended there (:func:`herkit.buffer.rules.sample_returns` applies it). The
answer comes, in this order, from:

1. the caller: the setting ``terminal_on_success=True`` or ``False``
   (:class:`~herkit.buffer.settings.HerSettings`, ``herkit train --terminal-on-success``);
2. what the env declares (:data:`ENDING_DECLARATIONS`: ``terminates_on_success`` on
   herkit's envs, ``continuing_task`` on gymnasium-robotics' mazes);
3. what the env is seen to do at its first success (:func:`first_success_ends`): in the
   random steps of the conventions probe, else in the steps a buffer stores.

Until one of them answers, it is None (unknown) and samples keep the env's own flags.
:class:`Ending` holds an answer with where it came from; :meth:`Ending.otherwise` is the
order above and :meth:`Ending.after` the first success. :func:`sb3_ending` is
``herkit.sb3``'s answer for an env that declares nothing, which keeps SB3's flags unless
the env's rewards give a reason not to.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "ENDING_DECLARATIONS",
    "UNKNOWN",
    "Ending",
    "declared_ending",
    "first_success_ends",
    "sb3_ending",
]

ENDING_DECLARATIONS = (("terminates_on_success", True), ("continuing_task", False))
"""The attributes by which an env says whether its episodes end on success (herkit's envs;
gymnasium-robotics' mazes), in the order they are read, each with the value that says so."""

UNKNOWN = "not declared by the env: decided at the first success"
"""The source of an answer still unknown after the env's declarations."""


@dataclass(frozen=True)
class Ending:
    """Whether an env's episodes end on success (None: not known yet), and how that was
    established, in words (for logs, ``repr`` and config.json)."""

    ends: bool | None
    """True: they end on success; False: they go on; None: not known yet."""
    source: str = UNKNOWN
    """Where the answer came from."""

    @classmethod
    def given(cls, ends: bool | None, source: str = "given") -> Ending:
        """The caller's setting (None: not given)."""
        return cls(ends, source if ends is not None else UNKNOWN)

    def otherwise(self, other: Ending) -> Ending:
        """This answer, or ``other`` where this one is unknown (the order of the module's
        docstring: the caller's, then the env's declaration, then what it was seen to do)."""
        return self if self.ends is not None else other

    def after(self, success: np.ndarray | None, terminated: np.ndarray, where: str) -> Ending:
        """This answer, or, while it is unknown, what the steps with these ``success`` and
        ``terminated`` flags show (:func:`first_success_ends`); ``where`` says which steps
        (e.g. "observed at the first success added")."""
        if self.ends is not None:
            return self
        ends = first_success_ends(success, terminated)
        if ends is None:
            return self
        return Ending(ends, f"{where}, a success {'ended' if ends else 'did not end'} its episode")


def sb3_ending(seen: Ending, terms_differ: bool) -> Ending:
    """``herkit.sb3``'s ending for an env that declares none: what its first success showed
    (``seen``), where the env's step rewards hold a term ``compute_reward`` lacks (a crash
    penalty: highway-env's parking learned far more with reached goals terminal), else
    SB3's flags (False: SB3's own tests, its bit flipping among them, expect them)."""
    if seen.ends and terms_differ:
        return Ending(
            True, f"{seen.source}, and the env's rewards hold terms beyond compute_reward"
        )
    why = "not seen yet" if seen.ends is None else "no terms beyond compute_reward seen yet"
    if seen.ends is False:
        why = seen.source
    return Ending(False, f"SB3's flags: the env declares no ending on success ({why})")


def first_success_ends(success: np.ndarray | None, terminated: np.ndarray) -> bool | None:
    """Whether steps show an env ending its episodes on success: every step among them that
    reached its goal (``success``) was terminated; None where none reached it (or success
    is not known)."""
    if success is None:
        return None
    success = np.asarray(success, dtype=bool)
    if not success.any():
        return None
    return bool(np.asarray(terminated, dtype=bool)[success].all())


def declared_ending(read: Callable[[str], Any], owner: str) -> Ending:
    """What an env declares: the first of :data:`ENDING_DECLARATIONS` that ``read(name)``
    (the env's attribute) finds a bool for, its source naming ``owner`` (the env's class);
    unknown where none is found."""
    for name, ends in ENDING_DECLARATIONS:
        value = read(name)
        if isinstance(value, bool | np.bool_):
            return Ending(bool(value) == ends, f"declared by {owner}.{name}")
    return Ending(None)
