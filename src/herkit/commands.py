"""The ``herkit`` subcommands in words: :data:`SUMMARIES`, and :func:`short_help`, the one
screen of help that works without the ``train`` extra (nothing here imports more than
herkit's version)."""

from __future__ import annotations

from herkit import __version__

__all__ = ["SUMMARIES", "TAGLINE", "short_help"]

TAGLINE = "Hindsight Experience Replay for goal-conditioned RL"
"""What herkit is, in the first line of ``herkit --help``."""

SUMMARIES = {
    "train": "train an agent with HER on a goal env (herkit train --help lists the flags)",
    "eval": "the success rate of a run's checkpointed policy, and videos of it",
    "plot": "success and losses of runs, seeds of a setting as one line",
    "report": "an interactive HTML page of runs (one offline file)",
    "bench": "speed benchmarks: bench buffer (the replay buffer), bench update (the learner)",
}
"""What each subcommand of ``herkit`` does; :mod:`herkit.cli` defines them."""


def short_help() -> str:
    """One screen: what herkit is and its commands."""
    width = max(map(len, SUMMARIES))
    lines = [
        f"herkit {__version__}: {TAGLINE}",
        "",
        "usage: herkit COMMAND [FLAGS]    (herkit COMMAND --help for its flags)",
        "",
        *(f"  {name:<{width}}  {what}" for name, what in SUMMARIES.items()),
        "",
        "herkit --version (or -V) prints the version.",
    ]
    return "\n".join(lines)
