"""The settings every agent shares: :class:`OffPolicyConfig` (every goal-conditioned
off-policy agent), :class:`ActorCriticConfig` (those with an actor) and
:class:`OfflineGCConfig` (the offline agents, OGBench's defaults); each agent's own
settings class subclasses one of them in its module (:mod:`herkit.agents`), and
``herkit train`` shows it as ``--NAME.*``.

Defaults take OpenAI baselines' HER values and Plappert et al. (2018), "Multi-Goal
Reinforcement Learning" (Fetch tasks: 3 x 256 ReLU layers, Adam 1e-3, gamma 0.98, polyak
0.95, batch 256, observations clipped to +-200 and normalised values to +-5, Q targets
clipped to the return range), but move the target networks after every update
(``target_every=1``), where baselines moves them once per cycle of 40 updates (the
``baselines`` recipe, :mod:`herkit.config.recipes`, runs it as baselines does). The
offline agents' defaults follow OGBench's reference implementations (Park et al., 2025:
3 x 512 GELU layers, Adam 3e-4, gamma 0.99, tau 0.005, batch 1024, LayerNorm in the value
networks). Every config is frozen and checks its values in ``__post_init__``, raising
``ValueError`` naming the field. The docstring under each field is its ``--help`` text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, get_args

from herkit.agents.registry import agent_entry, algo_names
from herkit.buffer.checks import check_bool, check_float, check_int

__all__ = [
    "ALGOS",
    "OFFLINE_ALGOS",
    "UPDATE_MODES",
    "ActorCriticConfig",
    "Algo",
    "OffPolicyConfig",
    "OfflineGCConfig",
    "UpdateMode",
    "check_expectile",
    "config_class",
    "default_agent_config",
]


@dataclass(frozen=True)
class OffPolicyConfig:
    """Settings shared by the goal-conditioned off-policy agents (baselines' HER values,
    the targets moved after every update)."""

    hidden: tuple[int, ...] = (256, 256, 256)
    """Sizes of the hidden ReLU layers of every network."""
    lr: float = 1e-3
    """Adam learning rate of the critic and the actor."""
    gamma: float = 0.98
    """Discount factor."""
    polyak: float = 0.95
    """Target-network averaging per move: target <- polyak * target + (1 - polyak) * online."""
    target_every: int = 1
    """Updates from one move of the target networks to the next (baselines: 40, mrl: 40 or
    10)."""
    batch_size: int = 256
    """Transitions per gradient step (sampled by the trainer)."""
    clip_obs: float = 200.0
    """Raw observations and goals are clipped to +-clip_obs before normalisation."""
    clip_normalized: float = 5.0
    """Normalised observations and goals are clipped to +-clip_normalized."""
    clip_return: bool = True
    """Clip Q targets to the discounted-return range implied by the reward range."""
    grad_clip: float | None = None
    """Largest gradient norm (or entry) per network and step; None: no clipping."""
    grad_clip_mode: Literal["norm", "value"] = "norm"
    """norm: scale a gradient to norm grad_clip; value: clamp each entry (mrl)."""
    critic_layer_norm: bool = False
    """LayerNorm after each hidden layer of the critics (the Q network for DQN), before
    its activation (as mrl's Fetch networks)."""
    normalize_inputs: bool = True
    """Standardise observations and goals by their running mean and std (clipped, as
    baselines' HER); False feeds them to the networks as they are (OGBench's agents)."""
    normalizer: Literal["baselines", "mrl"] = "baselines"
    """How the normalisers take the std: baselines (at least 0.01) or mrl (sqrt(var +
    1e-8), the moments from mrl's start: a count of 1e-4 at mean 0, variance 1)."""
    activation: Literal["relu", "gelu"] = "relu"
    """Activation between the layers of every network (gelu: exact, with erf)."""

    def __post_init__(self) -> None:
        hidden = self.hidden
        if (
            not isinstance(hidden, tuple)
            or not hidden
            or any(isinstance(h, bool) or not isinstance(h, int) or h < 1 for h in hidden)
        ):
            raise ValueError(f"hidden must be a non-empty tuple of positive ints, got {hidden!r}")
        check_float("lr", self.lr, 0.0, open_low=True)
        check_float("gamma", self.gamma, 0.0, 1.0)
        if self.gamma == 1.0:
            raise ValueError("gamma must be < 1 (the return range needs 1 / (1 - gamma)), got 1.0")
        check_float("polyak", self.polyak, 0.0, 1.0)
        check_int("target_every", self.target_every, 1)
        check_int("batch_size", self.batch_size, 1)
        check_float("clip_obs", self.clip_obs, 0.0, open_low=True)
        check_float("clip_normalized", self.clip_normalized, 0.0, open_low=True)
        check_bool("clip_return", self.clip_return)
        if self.grad_clip is not None:
            check_float("grad_clip", self.grad_clip, 0.0, open_low=True)
        if self.grad_clip_mode not in ("norm", "value"):
            raise ValueError(
                f"grad_clip_mode must be 'norm' or 'value', got {self.grad_clip_mode!r}"
            )
        check_bool("critic_layer_norm", self.critic_layer_norm)
        check_bool("normalize_inputs", self.normalize_inputs)
        if self.normalizer not in ("baselines", "mrl"):
            raise ValueError(f"normalizer must be 'baselines' or 'mrl', got {self.normalizer!r}")
        if self.activation not in ("relu", "gelu"):
            raise ValueError(f"activation must be 'relu' or 'gelu', got {self.activation!r}")


@dataclass(frozen=True)
class ActorCriticConfig(OffPolicyConfig):
    """Settings of the agents with an actor network beside their critics or values."""

    actor_layer_norm: bool = False
    """LayerNorm after each hidden layer of the actor, before its activation."""

    def __post_init__(self) -> None:
        super().__post_init__()
        check_bool("actor_layer_norm", self.actor_layer_norm)


@dataclass(frozen=True)
class OfflineGCConfig(ActorCriticConfig):
    """Settings shared by the offline goal-conditioned agents (OGBench's defaults). Their
    batches carry a value goal (``goal``, with reward
    ``success - 1`` and ``terminated = success``) and an actor goal (``actor_goal``)."""

    hidden: tuple[int, ...] = (512, 512, 512)
    """Sizes of the hidden layers of every network (actor and values)."""
    lr: float = 3e-4
    """Adam learning rate of every network."""
    gamma: float = 0.99
    """Discount factor."""
    polyak: float = 0.995
    """Target-network averaging per update: target <- polyak * target + (1 - polyak) *
    online (OGBench's tau = 1 - polyak = 0.005)."""
    batch_size: int = 1024
    """Transitions per gradient step (sampled by the trainer)."""
    clip_return: bool = False
    """Clip value targets to [-1 / (1 - gamma), 0], the return range of the -1/0 rewards
    (OGBench does not clip)."""
    critic_layer_norm: bool = True
    """LayerNorm after each hidden activation of the value networks (V and Q)."""
    normalize_inputs: bool = False
    """Standardise observations and goals by their running mean and std (clipped); False
    feeds them to the networks as they are, as OGBench's agents do."""
    activation: Literal["relu", "gelu"] = "gelu"
    """Activation between the layers of every network (OGBench's JAX uses GELU's tanh
    approximation, within 0.001 of the exact one)."""
    actor_init_scale: float = 1e-2
    """Scale of the variance-scaling init of the actor's output layer (the others: 1)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        check_float("actor_init_scale", self.actor_init_scale, 0.0, open_low=True)


def check_expectile(value: Any) -> None:
    """ValueError unless ``expectile`` is a finite number in (0, 1)."""
    check_float("expectile", value, 0.0, 1.0, open_low=True)
    if value == 1.0:
        raise ValueError(f"expectile must be a finite number in (0.0, 1.0), got {value!r}")


if TYPE_CHECKING:
    Algo = str
    """The name of a registered agent (``--algo``); at run time a ``Literal`` of them."""
    ALGOS: tuple[str, ...]
    OFFLINE_ALGOS: tuple[str, ...]


def __getattr__(name: str) -> Any:
    """:data:`Algo`, :data:`ALGOS` and :data:`OFFLINE_ALGOS`, read from the registry
    (:mod:`herkit.agents.registry`) when they are imported: ``Algo`` the ``Literal`` of the
    registered agents' names, ``ALGOS`` those names in order, ``OFFLINE_ALGOS`` the offline
    agents' (their batches carry actor goals; they update eager, compiled or captured, as
    the online ones do)."""
    if name == "Algo":
        return Literal[algo_names()]
    if name == "ALGOS":
        return algo_names()
    if name == "OFFLINE_ALGOS":
        return algo_names(offline=True)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


UpdateMode = Literal["eager", "compiled", "captured", "compiled-captured"]
"""How an update step runs (:mod:`herkit.agents.updates`): op by op, compiled, captured as a
CUDA graph and replayed, or compiled and captured."""

UPDATE_MODES: tuple[UpdateMode, ...] = get_args(UpdateMode)
"""The names of :data:`UpdateMode`, in order."""

UPDATE_MODE_WORDS: dict[str, str] = {
    "eager": "PyTorch runs each update operation by operation",
    "compiled": "torch.compile has fused each update's operations into fewer kernels",
    "captured": "each update is replayed as one recorded CUDA graph",
    "compiled-captured": "each update is compiled, then replayed as one recorded CUDA graph",
}
"""What each :data:`UpdateMode` means, in the words a run's first lines use."""


def config_class(algo: str) -> type[OffPolicyConfig]:
    """The settings class of ``algo`` (TD3 shares DDPG's); ValueError for another name."""
    return agent_entry(algo).config


def default_agent_config(algo: str) -> OffPolicyConfig:
    """The default settings of ``algo`` (:meth:`DDPGConfig.td3` for ``"td3"``)."""
    return agent_entry(algo).default_config()
