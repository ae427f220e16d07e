"""HIQL's settings (:class:`HIQLConfig`) and its registry entry (``--algo hiql``), kept
apart from its agent (:mod:`herkit.agents.hiql`) so that ``herkit train --help`` reads them
without torch.

OGBench's HIQL (Park et al., 2023; ``impls/agents/hiql.py`` at commit 1d41409 and its
``get_config``): 3 x 512 GELU layers, Adam 3e-4 over every parameter, batch 1024, gamma
0.99, tau 0.005, expectile 0.7, AWR temperatures 3 (low and high), subgoals 25 steps on,
a 10-dimensional goal representation; its value goals 20 % current, 50 % future
(geometric), 30 % random states, its high actor's goals future states (uniform), the low
actor's subgoals and the high actor's targets by ``HGCDataset``'s rules
(:func:`herkit.buffer.rules.subgoal_slots`; the entry hands ``subgoal_steps`` and
``actor_geom_sample`` to the buffer). Its settings per dataset (``impls/hyperparameters.sh``:
discount 0.995 on the giant mazes, actor goals 0, 0.5, 0.5 on the stitch datasets, ...) are
the entry's ``presets``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from herkit.buffer.checks import check_bool, check_float, check_int
from herkit.config.agents import OfflineGCConfig
from herkit.config.registry import AgentEntry, register

__all__ = ["HIQL_ACTOR_GOALS", "HIQL_VALUE_GOALS", "HIQLConfig"]

HIQL_VALUE_GOALS = (0.2, 0.5, 0.3)
"""HIQL's value goals (OGBench's ``value_p_curgoal``, ``value_p_trajgoal``,
``value_p_randomgoal``): current, future (geometric with the discount), random states."""
HIQL_ACTOR_GOALS = (0.0, 1.0, 0.0)
"""HIQL's high actor's goals (``actor_p_*``; ``HGCDataset`` reads only the random share:
a current share here gives the state itself as the target)."""


@dataclass(frozen=True)
class HIQLConfig(OfflineGCConfig):
    """Hierarchical implicit Q-learning (OGBench's HIQL): an IVL value V(s, phi([s; g]))
    ensemble of 2 over a learned, length-normalised goal representation phi, a low actor
    pi(a | s, phi([s; w])) towards subgoals w and a high actor pi(phi([s; w]) | s, g) that
    proposes them, both AWR."""

    expectile: float = 0.7
    """Expectile of the value loss, in (0, 1) (OGBench's HIQL: 0.7)."""
    low_alpha: float = 3.0
    """The low actor's AWR inverse temperature: weights min(exp(low_alpha * A), 100)."""
    high_alpha: float = 3.0
    """The high actor's AWR inverse temperature: weights min(exp(high_alpha * A), 100)."""
    subgoal_steps: int = 25
    """Steps from a state to its subgoal: the low actor's goal (at most the episode's last
    state) and the high actor's target (at most its goal's step)."""
    rep_dim: int = 10
    """Size of the goal representation phi([s; g]) (length-normalised to sqrt(rep_dim))."""
    low_actor_rep_grad: bool = False
    """Let the low actor's loss train the goal representation too (OGBench: for pixels);
    False: only the value's loss trains it."""
    actor_geom_sample: bool = False
    """The high actor's future goals at a geometric offset with the discount; False:
    uniformly ahead (OGBench's default)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        check_float("expectile", self.expectile, 0.0, 1.0, open_low=True)
        if self.expectile == 1.0:
            raise ValueError("expectile must be a finite number in (0.0, 1.0), got 1.0")
        check_float("low_alpha", self.low_alpha, 0.0)
        check_float("high_alpha", self.high_alpha, 0.0)
        check_int("subgoal_steps", self.subgoal_steps, 1)
        check_int("rep_dim", self.rep_dim, 1)
        check_bool("low_actor_rep_grad", self.low_actor_rep_grad)
        check_bool("actor_geom_sample", self.actor_geom_sample)


def _subgoals(config: HIQLConfig) -> dict[str, Any]:
    """The buffer settings HIQL's settings decide: its subgoals ``subgoal_steps`` on and its
    high actor's future goals' law (``actor_geom_sample``)."""
    future = "geometric" if config.actor_geom_sample else "uniform"
    return {"subgoal_steps": config.subgoal_steps, "actor_future": future}


register(
    AgentEntry(
        "hiql",
        HIQLConfig,
        "herkit.agents.hiql:HIQLAgent",
        "offline hierarchical implicit Q-learning: a high actor proposes subgoals",
        offline=True,
        value_goals=HIQL_VALUE_GOALS,
        actor_goals=HIQL_ACTOR_GOALS,
        buffer=_subgoals,
        presets={  # OGBench's impls/hyperparameters.sh, the lines that give each value
            # hyperparameters.sh:38,90
            "pointmaze-giant-": {"gamma": 0.995},
            # hyperparameters.sh:64,77,90,103
            "pointmaze-*-stitch-": {"actor_goals": (0.0, 0.5, 0.5)},
            # hyperparameters.sh:142,194
            "antmaze-giant-": {"gamma": 0.995},
            # hyperparameters.sh:168,181,194,207
            "antmaze-*-stitch-": {"actor_goals": (0.0, 0.5, 0.5)},
            # hyperparameters.sh:220,233,246
            "antmaze-*-explore-": {
                "actor_goals": (0.0, 0.0, 1.0),
                "high_alpha": 10.0,
                "low_alpha": 10.0,
            },
            # hyperparameters.sh:259,272,285,298,311,324
            "humanoidmaze-": {"gamma": 0.995, "subgoal_steps": 100},
            # hyperparameters.sh:298,311,324
            "humanoidmaze-*-stitch-": {"actor_goals": (0.0, 0.5, 0.5)},
        },
    )
)
