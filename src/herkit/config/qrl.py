"""QRL's settings and its registry entry (``--algo qrl``, ``--qrl.*``): torch-free, so that
``herkit train --help`` lists it without importing the agent (:mod:`herkit.agents.qrl`).

Defaults, goal mixes and settings per dataset are OGBench's (``impls/agents/qrl.py``'s
``get_config`` and ``impls/hyperparameters.sh``, commit 1d41409).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from herkit.buffer.checks import check_float, check_int
from herkit.config.agents import OfflineGCConfig
from herkit.config.registry import AgentEntry, register

__all__ = ["QRL_VALUE_GOALS", "QRLConfig"]

QRL_VALUE_GOALS = (0.0, 0.0, 1.0)
"""QRL's value goals (``value_p_randomgoal=1.0``): random states only, the negatives of its
quasimetric's ``max d(s, g)`` (the buffer's ``(current, future, random)`` weights)."""


@dataclass(frozen=True)
class QRLConfig(OfflineGCConfig):
    """Quasimetric RL (OGBench's QRL, Wang et al., 2023): a quasimetric ``d(s, g)`` (IQE or
    MRN over a latent of ``phi``) pushed apart on random goals under the constraint that
    one-step distances stay near 1 (a learned Lagrange multiplier), a latent dynamics model
    and a DDPG+BC actor through it (:mod:`herkit.agents.qrl`). It has no target network
    (``polyak``, ``target_every`` and ``clip_return`` are unused); its value goals are
    random states (:data:`QRL_VALUE_GOALS`)."""

    polyak: float = 0.995
    """Unused by QRL: it has no target network."""
    quasimetric: Literal["iqe", "mrn"] = "iqe"
    """The quasimetric over the latents: iqe (interval quasimetric embedding) or mrn
    (metric residual network)."""
    latent_dim: int = 512
    """Size of the latent phi(s) of the quasimetric (and of the dynamics model)."""
    dim_per_component: int = 8
    """IQE: latent coordinates per component (latent_dim / dim_per_component components)."""
    eps: float = 0.05
    """Margin of the constraint on one-step distances: the multiplier lam grows while
    mean(relu(d(s, s') - 1) ** 2) exceeds eps."""
    alpha: float = 0.003
    """DDPG+BC's behavioural-cloning weight (OGBench's default 0.003; its pointmaze runs
    use 0.0003, the entry's preset)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.quasimetric not in ("iqe", "mrn"):
            raise ValueError(f"quasimetric must be 'iqe' or 'mrn', got {self.quasimetric!r}")
        check_int("latent_dim", self.latent_dim, 2)
        check_int("dim_per_component", self.dim_per_component, 1)
        if self.quasimetric == "iqe" and self.latent_dim % self.dim_per_component:
            raise ValueError(
                f"latent_dim ({self.latent_dim}) must be a multiple of dim_per_component "
                f"({self.dim_per_component}) for IQE"
            )
        check_float("eps", self.eps, 0.0)
        check_float("alpha", self.alpha, 0.0)


QRL = register(
    AgentEntry(
        "qrl",
        QRLConfig,
        "herkit.agents.qrl:QRLAgent",
        "offline quasimetric RL, a DDPG+BC actor through a latent dynamics model",
        offline=True,
        value_goals=QRL_VALUE_GOALS,
        presets={  # OGBench's impls/hyperparameters.sh, the lines that give each value
            # hyperparameters.sh:8,21,34,47,60,73,86,99
            "pointmaze-": {"alpha": 0.0003},
            # hyperparameters.sh:34,86
            "pointmaze-giant-": {"gamma": 0.995},
            # hyperparameters.sh:60,73,86,99
            "pointmaze-*-stitch-": {"actor_goals": (0.0, 0.5, 0.5)},
            # hyperparameters.sh:138,190
            "antmaze-giant-": {"gamma": 0.995},
            # hyperparameters.sh:164,177,190,203
            "antmaze-*-stitch-": {"actor_goals": (0.0, 0.5, 0.5)},
            # hyperparameters.sh:216,229,242
            "antmaze-*-explore-": {"actor_goals": (0.0, 0.0, 1.0), "alpha": 0.001},
            # hyperparameters.sh:255,268,281,294,307,320
            "humanoidmaze-": {"alpha": 0.001, "gamma": 0.995},
            # hyperparameters.sh:294,307,320
            "humanoidmaze-*-stitch-": {"actor_goals": (0.0, 0.5, 0.5)},
        },
    )
)
"""QRL's entry: random value goals, OGBench's future actor goals (the default), alpha
0.0003 on pointmaze and OGBench's other settings per dataset."""
