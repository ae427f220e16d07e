"""The agents' settings: :class:`OffPolicyConfig` holds what every goal-conditioned
off-policy agent shares, with one subclass per algorithm (:class:`DQNConfig`,
:class:`DDPGConfig` for DDPG and TD3, :class:`SACConfig`, and the offline agents'
:class:`GCBCConfig`, :class:`GCIVLConfig` and :class:`GCIQLConfig`, whose shared part is
:class:`OfflineGCConfig`); ``herkit train`` shows them as ``--dqn.*``, ``--ddpg.*``,
``--td3.*``, ``--sac.*``, ``--gcbc.*``, ``--gcivl.*`` and ``--gciql.*``.

Defaults take OpenAI baselines' HER values and Plappert et al. (2018), "Multi-Goal
Reinforcement Learning" (Fetch tasks: 3 x 256 ReLU layers, Adam 1e-3, gamma 0.98, polyak
0.95, batch 256, observations clipped to +-200 and normalised values to +-5, Q targets
clipped to the return range), but move the target networks after every update
(``target_every=1``), where baselines moves them once per cycle of 40 updates (the
``baselines`` recipe, :mod:`herkit.config.recipes`, runs it as baselines does);
:class:`DQNConfig` follows the HER paper's bit-flipping setup (Andrychowicz et al., 2017).
The offline agents' defaults follow OGBench's reference implementations (Park et al., 2025:
3 x 512 GELU layers, Adam 3e-4, gamma 0.99, tau 0.005, batch 1024, LayerNorm in the value
networks). Every config is frozen and checks its values in ``__post_init__``, raising
``ValueError`` naming the field. The docstring under each field is its ``--help`` text. All
are also importable from :mod:`herkit.config.train`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, get_args

from herkit.buffer.checks import check_bool, check_float, check_int, is_number
from herkit.config.registry import AgentEntry, agent_entry, algo_names, register

__all__ = [
    "ALGOS",
    "INITS",
    "OFFLINE_ALGOS",
    "STEP_ORDERS",
    "UPDATE_MODES",
    "ActorCriticConfig",
    "Algo",
    "DDPGConfig",
    "DQNConfig",
    "GCBCConfig",
    "GCIQLConfig",
    "GCIVLConfig",
    "Init",
    "OffPolicyConfig",
    "OfflineGCConfig",
    "SACConfig",
    "StepOrder",
    "UpdateMode",
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
class DQNConfig(OffPolicyConfig):
    """DQN for discrete actions, as in the HER paper's bit-flipping experiment."""

    hidden: tuple[int, ...] = (256,)
    """Sizes of the hidden ReLU layers (bit flipping: one layer of 256)."""
    lr: float = 1e-3
    """Adam learning rate of the Q-network."""
    batch_size: int = 128
    """Transitions per gradient step (the HER paper used minibatches of 128)."""
    epsilon: float = 0.2
    """Probability of a uniformly random action when exploring (epsilon-greedy)."""
    double_q: bool = True
    """Double DQN: the online network picks the next action, the target network values it."""
    huber: bool = True
    """Huber (smooth L1) TD loss instead of the squared error."""

    def __post_init__(self) -> None:
        super().__post_init__()
        check_float("epsilon", self.epsilon, 0.0, 1.0)
        check_bool("double_q", self.double_q)
        check_bool("huber", self.huber)


register(
    AgentEntry(
        "dqn",
        DQNConfig,
        "herkit.agents.dqn:DQNAgent",
        "DQN for discrete actions (the HER paper's bit flipping)",
        discrete=True,
        retired=("actor_layer_norm",),  # written while DQN's settings held an actor's
    )
)


Init = Literal["torch", "xavier", "orthogonal"]
"""How an actor's and critics' layers start (:attr:`DDPGConfig.init`)."""

INITS: tuple[Init, ...] = get_args(Init)
"""The names of :data:`Init`."""

StepOrder = Literal["critic-first", "together"]
"""Where an update's actor loss takes the critic (:attr:`DDPGConfig.step_order`)."""

STEP_ORDERS: tuple[StepOrder, ...] = get_args(StepOrder)
"""The names of :data:`StepOrder`."""


@dataclass(frozen=True)
class DDPGConfig(ActorCriticConfig):
    """DDPG as in baselines HER; the TD3 switches turn it into TD3 (see :meth:`td3`)."""

    action_l2: float = 1.0
    """Weight of the actor's penalty mean((action / max_action) ** 2)."""
    noise_eps: float = 0.2
    """Std of the Gaussian exploration noise, as a fraction of the action half-range."""
    random_eps: float = 0.3
    """Probability of a uniformly random action when exploring."""
    twin_q: bool = False
    """TD3: two critics, the target uses their minimum."""
    policy_delay: int = 1
    """TD3: critic updates per actor step; the targets move with the actor (target_every
    counts actor steps)."""
    target_noise: float = 0.0
    """TD3: std of the target-policy smoothing noise, as a fraction of the half-range."""
    target_noise_clip: float = 0.5
    """TD3: the smoothing noise is clipped to +-target_noise_clip (half-range fraction)."""
    init: Init = "torch"
    """Initialisation of every layer of the actor and the critics: torch (PyTorch's default:
    weights and biases uniform within +-1/sqrt(fan_in)), xavier (weights uniform within
    +-sqrt(6 / (fan_in + fan_out)), biases zero, output layers included: baselines' HER) or
    orthogonal (orthogonal weights, the output layers' scaled by 0.1, biases zero: mrl)."""
    step_order: StepOrder = "critic-first"
    """critic-first: the critic steps, then the actor's loss is taken with the stepped
    critic; together: the critic's and the actor's gradients are both taken at the weights
    before the update, then both networks step (baselines' HER)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.init not in INITS:
            raise ValueError(f"init must be one of {', '.join(INITS)}, got {self.init!r}")
        if self.step_order not in STEP_ORDERS:
            raise ValueError(
                f"step_order must be one of {', '.join(STEP_ORDERS)}, got {self.step_order!r}"
            )
        check_float("action_l2", self.action_l2, 0.0)
        check_float("noise_eps", self.noise_eps, 0.0)
        check_float("random_eps", self.random_eps, 0.0, 1.0)
        check_bool("twin_q", self.twin_q)
        check_int("policy_delay", self.policy_delay, 1)
        check_float("target_noise", self.target_noise, 0.0)
        check_float("target_noise_clip", self.target_noise_clip, 0.0)

    @classmethod
    def td3(cls, **changes: Any) -> DDPGConfig:
        """TD3's three changes to DDPG (Fujimoto et al., 2018): twin critics, policy delay 2,
        target policy smoothing 0.2. The rest stays this class's DDPG defaults, which
        follow OpenAI baselines' HER (action L2 penalty 1.0, 30 % random actions), not the
        TD3 paper (no action penalty, Gaussian exploration noise only).

        ``changes`` override any field, e.g. ``DDPGConfig.td3(hidden=(64, 64))``.
        """
        settings: dict[str, Any] = {"twin_q": True, "policy_delay": 2, "target_noise": 0.2}
        settings.update(changes)
        return cls(**settings)


def _twin_critics(config: Any) -> None:
    if not config.twin_q:
        raise ValueError("algo='td3' needs a DDPGConfig with twin_q=True, e.g. DDPGConfig.td3()")


register(
    AgentEntry("ddpg", DDPGConfig, "herkit.agents.ddpg_td3:DDPGAgent", "DDPG as baselines' HER")
)
register(
    AgentEntry(
        "td3",
        DDPGConfig,
        "herkit.agents.ddpg_td3:DDPGAgent",
        "TD3: DDPG with twin critics, policy delay 2, target smoothing",
        default=DDPGConfig.td3,
        check=_twin_critics,
    )
)


@dataclass(frozen=True)
class SACConfig(ActorCriticConfig):
    """Soft actor-critic with twin critics and automatic entropy tuning."""

    init_alpha: float = 0.1
    """Initial entropy coefficient alpha."""
    autotune: bool = True
    """Learn alpha so that the policy's entropy tracks target_entropy."""
    target_entropy: float | None = None
    """Entropy target of the tuning, in the [-1, 1] action space; None for -act_dim."""
    lr_alpha: float = 1e-3
    """Adam learning rate of log(alpha)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        check_float("init_alpha", self.init_alpha, 0.0, open_low=True)
        check_bool("autotune", self.autotune)
        if self.target_entropy is not None and not is_number(self.target_entropy):
            raise ValueError(
                f"target_entropy must be a finite number or None, got {self.target_entropy!r}"
            )
        check_float("lr_alpha", self.lr_alpha, 0.0, open_low=True)


register(
    AgentEntry(
        "sac", SACConfig, "herkit.agents.sac:SACAgent", "soft actor-critic with its entropy tuned"
    )
)


@dataclass(frozen=True)
class OfflineGCConfig(ActorCriticConfig):
    """Settings shared by the offline goal-conditioned agents (OGBench's defaults): GCBC,
    GCIVL and GCIQL. Their batches carry a value goal (``goal``, with reward
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


@dataclass(frozen=True)
class GCBCConfig(OfflineGCConfig):
    """Goal-conditioned behavioural cloning: maximise log pi(a | s, actor goal)."""

    gamma: float = 0.99
    """Unused by GCBC: it has no value function to discount."""
    polyak: float = 0.995
    """Unused by GCBC: it has no target network."""


register(
    AgentEntry(
        "gcbc",
        GCBCConfig,
        "herkit.agents.offline:GCBCAgent",
        "offline goal-conditioned behaviour cloning",
        offline=True,
        value_goals=None,  # no value function: no value goals drawn
    )
)


@dataclass(frozen=True)
class GCIVLConfig(OfflineGCConfig):
    """Goal-conditioned implicit V-learning (OGBench's GCIVL): an expectile value V(s, g)
    ensemble of 2 and an AWR actor."""

    expectile: float = 0.9
    """Expectile of the value loss, in (0, 1) (0.5: mean squared error)."""
    alpha: float = 10.0
    """AWR inverse temperature: actor weights min(exp(alpha * advantage), 100)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_expectile(self.expectile)
        check_float("alpha", self.alpha, 0.0)


register(
    AgentEntry(
        "gcivl",
        GCIVLConfig,
        "herkit.agents.offline:GCIVLAgent",
        "offline implicit V-learning, an AWR actor",
        offline=True,
        presets={  # OGBench's impls/hyperparameters.sh, the lines that give each value
            # hyperparameters.sh:30,82
            "pointmaze-giant-": {"gamma": 0.995},
            # hyperparameters.sh:56,69,82,95
            "pointmaze-*-stitch-": {"actor_goals": (0.0, 0.5, 0.5)},
            # hyperparameters.sh:134,186
            "antmaze-giant-": {"gamma": 0.995},
            # hyperparameters.sh:160,173,186,199
            "antmaze-*-stitch-": {"actor_goals": (0.0, 0.5, 0.5)},
            # hyperparameters.sh:212,225,238
            "antmaze-*-explore-": {"actor_goals": (0.0, 0.0, 1.0)},
            # hyperparameters.sh:251,264,277,290,303,316
            "humanoidmaze-": {"gamma": 0.995},
            # hyperparameters.sh:290,303,316
            "humanoidmaze-*-stitch-": {"actor_goals": (0.0, 0.5, 0.5)},
        },
    )
)


@dataclass(frozen=True)
class GCIQLConfig(OfflineGCConfig):
    """Goal-conditioned implicit Q-learning (OGBench's GCIQL): an expectile V(s, g), a
    Q(s, a, g) ensemble of 2 and a DDPG+BC actor."""

    expectile: float = 0.9
    """Expectile of the value loss, in (0, 1) (0.5: mean squared error)."""
    alpha: float = 0.3
    """DDPG+BC's behavioural-cloning weight (OGBench's default 0.3; 0.003 on pointmaze, as
    OGBench's pointmaze runs, herkit's preset there)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_expectile(self.expectile)
        check_float("alpha", self.alpha, 0.0)

    @classmethod
    def pointmaze(cls, **changes: Any) -> GCIQLConfig:
        """OGBench's GCIQL settings for the pointmaze datasets: alpha 0.003
        (``impls/hyperparameters.sh``); ``changes`` override any field."""
        settings: dict[str, Any] = {"alpha": 0.003}
        settings.update(changes)
        return cls(**settings)


def _check_expectile(value: Any) -> None:
    check_float("expectile", value, 0.0, 1.0, open_low=True)
    if value == 1.0:
        raise ValueError(f"expectile must be a finite number in (0.0, 1.0), got {value!r}")


register(
    AgentEntry(
        "gciql",
        GCIQLConfig,
        "herkit.agents.offline:GCIQLAgent",
        "offline implicit Q-learning, a DDPG+BC actor",
        offline=True,
        presets={  # OGBench's impls/hyperparameters.sh, the lines that give each value
            # hyperparameters.sh:6,19,32,45,58,71,84,97
            "pointmaze-": {"alpha": 0.003},
            # hyperparameters.sh:32,84
            "pointmaze-giant-": {"gamma": 0.995},
            # hyperparameters.sh:58,71,84,97
            "pointmaze-*-stitch-": {"actor_goals": (0.0, 0.5, 0.5)},
            # hyperparameters.sh:136,188
            "antmaze-giant-": {"gamma": 0.995},
            # hyperparameters.sh:162,175,188,201
            "antmaze-*-stitch-": {"actor_goals": (0.0, 0.5, 0.5)},
            # hyperparameters.sh:214,227,240
            "antmaze-*-explore-": {"actor_goals": (0.0, 0.0, 1.0), "alpha": 0.01},
            # hyperparameters.sh:253,266,279,292,305,318
            "humanoidmaze-": {"alpha": 0.1, "gamma": 0.995},
            # hyperparameters.sh:292,305,318
            "humanoidmaze-*-stitch-": {"actor_goals": (0.0, 0.5, 0.5)},
        },
    )
)

if TYPE_CHECKING:
    Algo = str
    """The name of a registered agent (``--algo``); at run time a ``Literal`` of them."""
    ALGOS: tuple[str, ...]
    OFFLINE_ALGOS: tuple[str, ...]


def __getattr__(name: str) -> Any:
    """:data:`Algo`, :data:`ALGOS` and :data:`OFFLINE_ALGOS`, read from the registry
    (:mod:`herkit.config.registry`) when they are imported: ``Algo`` the ``Literal`` of the
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
