"""OGBench's CRL as ``herkit train --algo crl`` knows it, without torch: its settings
(:class:`CRLConfig`, ``--crl.*``) and its registry entry (:mod:`herkit.config.registry`),
whose goal mixes are OGBench's crl config's (:data:`CRL_VALUE_GOALS`,
:data:`CRL_ACTOR_GOALS`) and whose settings per dataset are OGBench's
``impls/hyperparameters.sh`` (alpha 0.03 on pointmaze; the entry's ``presets``). The agent is
:class:`herkit.agents.crl.CRLAgent`, imported when a run builds it.
"""

from __future__ import annotations

from dataclasses import dataclass

from herkit.buffer.checks import check_float, check_int
from herkit.config.agents import OfflineGCConfig
from herkit.config.registry import AgentEntry, register

__all__ = ["CRL_ACTOR_GOALS", "CRL_VALUE_GOALS", "CRLConfig"]

CRL_VALUE_GOALS = (0.0, 1.0, 0.0)
"""CRL's value goals (OGBench's crl config: ``value_p_curgoal`` 0, ``value_p_trajgoal`` 1,
``value_p_randomgoal`` 0, ``value_geom_sample`` True): a future state of the sample's
trajectory, at a geometric offset with ``gamma`` (the buffer's ``value_future``
``"geometric"``)."""
CRL_ACTOR_GOALS = (0.0, 1.0, 0.0)
"""CRL's actor goals (``actor_p_trajgoal`` 1, ``actor_geom_sample`` False): a future state
of the trajectory, uniformly (OGBench's for every agent)."""


@dataclass(frozen=True)
class CRLConfig(OfflineGCConfig):
    """Contrastive RL (OGBench's CRL): a bilinear critic phi(s, a) . psi(g) ensemble of 2
    trained with the batch's other goals as negatives, and a DDPG+BC actor. Value goals:
    future states at geometric offsets (gamma); no target network (polyak and
    target_every unused)."""

    polyak: float = 0.995
    """Unused by CRL: it has no target network."""
    latent_dim: int = 512
    """Size of the representations phi(s, a) and psi(g)."""
    alpha: float = 0.1
    """DDPG+BC's behavioural-cloning weight (OGBench's default 0.1; its pointmaze runs use
    0.03, the entry's preset)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        check_int("latent_dim", self.latent_dim, 1)
        check_float("alpha", self.alpha, 0.0)
        check_int("batch_size", self.batch_size, 2)  # one sample has no negatives


register(
    AgentEntry(
        "crl",
        CRLConfig,
        "herkit.agents.crl:CRLAgent",
        "offline contrastive RL, a DDPG+BC actor",
        offline=True,
        value_goals=CRL_VALUE_GOALS,
        actor_goals=CRL_ACTOR_GOALS,
        presets={  # OGBench's impls/hyperparameters.sh, the lines that give each value
            # hyperparameters.sh:10,23,36,49,62,75,88,101
            "pointmaze-": {"alpha": 0.03},
            # hyperparameters.sh:36,88
            "pointmaze-giant-": {"gamma": 0.995},
            # hyperparameters.sh:62,75,88,101
            "pointmaze-*-stitch-": {"actor_goals": (0.0, 0.5, 0.5)},
            # hyperparameters.sh:140,192
            "antmaze-giant-": {"gamma": 0.995},
            # hyperparameters.sh:166,179,192,205
            "antmaze-*-stitch-": {"actor_goals": (0.0, 0.5, 0.5)},
            # hyperparameters.sh:218,231,244
            "antmaze-*-explore-": {"actor_goals": (0.0, 0.0, 1.0), "alpha": 0.003},
            # hyperparameters.sh:257,270,283,296,309,322
            "humanoidmaze-": {"gamma": 0.995},
            # hyperparameters.sh:296,309,322
            "humanoidmaze-*-stitch-": {"actor_goals": (0.0, 0.5, 0.5)},
        },
    )
)
