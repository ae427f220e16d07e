"""Configuration dataclasses; their attribute docstrings are the ``herkit`` CLI's help.

:class:`TrainConfig` is everything ``herkit train`` takes; :func:`preset_config` gives
its defaults for an env (the paper's bit-flipping setup, baselines' Fetch setup).

Agent configs: :class:`OffPolicyConfig` holds what every goal-conditioned off-policy agent
shares, with one subclass per algorithm (:class:`DQNConfig`, :class:`DDPGConfig` for
DDPG and TD3, :class:`SACConfig`). Defaults follow OpenAI baselines' HER code and Plappert
et al. (2018), "Multi-Goal Reinforcement Learning" (Fetch tasks: 3 x 256 ReLU layers, Adam
1e-3, gamma 0.98, polyak 0.95, batch 256, observations clipped to +-200 and normalised
values to +-5, Q targets clipped to the return range); :class:`DQNConfig` follows the HER
paper's bit-flipping setup (Andrychowicz et al., 2017). Every config is frozen and checks
its values in ``__post_init__``, raising ``ValueError`` naming the field.

Also importable from here: the presets (:mod:`herkit.presets`, loaded on first use) and
the run naming (:mod:`herkit.run_names`). The dataclasses stay one module (some 460
lines): they are one tree (:class:`TrainConfig` holds an agent config per algorithm) from
which ``herkit train`` is generated, its flags from the fields and its help from the
docstring under each field.
"""

from __future__ import annotations

import ast
import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import tyro

from herkit.run_names import AGENT_BLOCKS, BOOKKEEPING, default_run_name, learning_differences

if TYPE_CHECKING:
    from herkit.presets import PRESETS, preset_config

__all__ = [
    "AGENT_BLOCKS",
    "BOOKKEEPING",
    "PRESETS",
    "DDPGConfig",
    "DQNConfig",
    "OffPolicyConfig",
    "SACConfig",
    "TrainConfig",
    "config_from_dict",
    "default_run_name",
    "learning_differences",
    "preset_config",
]


def __getattr__(name: str) -> Any:
    """``PRESETS`` and ``preset_config`` of :mod:`herkit.presets`, imported on first use:
    the presets are built from the classes below, so that module imports this one."""
    if name in ("PRESETS", "preset_config"):
        from herkit import presets

        return getattr(presets, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _check_float(
    name: str, value: Any, low: float, high: float = math.inf, open_low: bool = False
) -> None:
    """Require a finite real number in ``[low, high]`` (``(low, high]`` if ``open_low``)."""
    ok = _is_number(value) and (value > low if open_low else value >= low) and value <= high
    if not ok:
        bracket = "(" if open_low else "["
        raise ValueError(
            f"{name} must be a finite number in {bracket}{low}, {high}], got {value!r}"
        )


def _check_int(name: str, value: Any, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")


def _check_bool(name: str, value: Any) -> None:
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be a bool, got {value!r}")


@dataclass(frozen=True)
class OffPolicyConfig:
    """Settings shared by the goal-conditioned off-policy agents (baselines HER defaults)."""

    hidden: tuple[int, ...] = (256, 256, 256)
    """Sizes of the hidden ReLU layers of every network."""
    lr: float = 1e-3
    """Adam learning rate of the critic and the actor."""
    gamma: float = 0.98
    """Discount factor."""
    polyak: float = 0.95
    """Target-network averaging per update: target <- polyak * target + (1 - polyak) * online."""
    batch_size: int = 256
    """Transitions per gradient step (sampled by the trainer)."""
    clip_obs: float = 200.0
    """Raw observations and goals are clipped to +-clip_obs before normalisation."""
    clip_normalized: float = 5.0
    """Normalised observations and goals are clipped to +-clip_normalized."""
    clip_return: bool = True
    """Clip Q targets to the discounted-return range implied by the reward range."""
    grad_clip: float | None = None
    """Largest gradient norm per network and step; None for no clipping."""
    actor_layer_norm: bool = False
    """LayerNorm after each hidden layer of the actor, before its ReLU (DDPG, TD3, SAC)."""
    critic_layer_norm: bool = False
    """LayerNorm after each hidden layer of the critics (the Q network for DQN), before
    its ReLU (as mrl's Fetch recipe)."""

    def __post_init__(self) -> None:
        hidden = self.hidden
        if (
            not isinstance(hidden, tuple)
            or not hidden
            or any(isinstance(h, bool) or not isinstance(h, int) or h < 1 for h in hidden)
        ):
            raise ValueError(f"hidden must be a non-empty tuple of positive ints, got {hidden!r}")
        _check_float("lr", self.lr, 0.0, open_low=True)
        _check_float("gamma", self.gamma, 0.0, 1.0)
        if self.gamma == 1.0:
            raise ValueError("gamma must be < 1 (the return range needs 1 / (1 - gamma)), got 1.0")
        _check_float("polyak", self.polyak, 0.0, 1.0)
        _check_int("batch_size", self.batch_size, 1)
        _check_float("clip_obs", self.clip_obs, 0.0, open_low=True)
        _check_float("clip_normalized", self.clip_normalized, 0.0, open_low=True)
        _check_bool("clip_return", self.clip_return)
        if self.grad_clip is not None:
            _check_float("grad_clip", self.grad_clip, 0.0, open_low=True)
        _check_bool("actor_layer_norm", self.actor_layer_norm)
        _check_bool("critic_layer_norm", self.critic_layer_norm)


@dataclass(frozen=True)
class DQNConfig(OffPolicyConfig):
    """DQN for discrete actions, as in the HER paper's bit-flipping experiment."""

    hidden: tuple[int, ...] = (256,)
    """Sizes of the hidden ReLU layers (bit flipping: one layer of 256)."""
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
        _check_float("epsilon", self.epsilon, 0.0, 1.0)
        _check_bool("double_q", self.double_q)
        _check_bool("huber", self.huber)


@dataclass(frozen=True)
class DDPGConfig(OffPolicyConfig):
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
    """TD3: critic updates per actor and target-network update."""
    target_noise: float = 0.0
    """TD3: std of the target-policy smoothing noise, as a fraction of the half-range."""
    target_noise_clip: float = 0.5
    """TD3: the smoothing noise is clipped to +-target_noise_clip (half-range fraction)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_float("action_l2", self.action_l2, 0.0)
        _check_float("noise_eps", self.noise_eps, 0.0)
        _check_float("random_eps", self.random_eps, 0.0, 1.0)
        _check_bool("twin_q", self.twin_q)
        _check_int("policy_delay", self.policy_delay, 1)
        _check_float("target_noise", self.target_noise, 0.0)
        _check_float("target_noise_clip", self.target_noise_clip, 0.0)

    @classmethod
    def td3(cls, **changes: Any) -> DDPGConfig:
        """TD3 defaults (Fujimoto et al., 2018): twin critics, policy delay 2, smoothing 0.2.

        ``changes`` override any field, e.g. ``DDPGConfig.td3(hidden=(64, 64))``.
        """
        settings: dict[str, Any] = {"twin_q": True, "policy_delay": 2, "target_noise": 0.2}
        settings.update(changes)
        return cls(**settings)


@dataclass(frozen=True)
class SACConfig(OffPolicyConfig):
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
        _check_float("init_alpha", self.init_alpha, 0.0, open_low=True)
        _check_bool("autotune", self.autotune)
        if self.target_entropy is not None and not _is_number(self.target_entropy):
            raise ValueError(
                f"target_entropy must be a finite number or None, got {self.target_entropy!r}"
            )
        _check_float("lr_alpha", self.lr_alpha, 0.0, open_low=True)


Algo = Literal["dqn", "ddpg", "td3", "sac"]


@dataclass(frozen=True)
class TrainConfig:
    """A training run: env, algorithm, HER settings, budget and bookkeeping."""

    env_id: Annotated[tyro.conf.Positional[str], tyro.conf.arg(metavar="[ENV_ID]")] = (
        "herkit/BitFlip-v0"
    )
    """Gymnasium id of a goal env: herkit/BitFlip-v0, herkit/PointReach-v0,
    herkit/GridWorld-v0, herkit/MountainCarGoal-v0, FetchReach-v4 (etc.) or module:Id."""
    algo: Algo = "dqn"
    """Agent: dqn (discrete actions), ddpg, td3 or sac (continuous actions)."""
    strategy: Literal["future", "final", "episode", "random", "none"] = "future"
    """HER goal strategy; none trains without relabelling."""
    k: int = 4
    """Relabelled goals per real transition (relabel probability k / (k + 1))."""
    relabel: Literal["sample", "store"] = "sample"
    """Relabel a copy at sample time, or store k relabelled goals at episode end."""
    prioritized: bool = False
    """Prioritized experience replay."""
    goal_mix: tuple[float, float, float] | None = None
    """Weights of a goal mix (REAL FUTURE DESIRED) in place of --strategy and --k: a
    sample keeps its goal, takes a future achieved goal of its episode, or takes the
    desired goal of any stored transition (mrl's Fetch recipe: 1 2 2); sample mode only."""
    n_step: int = 1
    """n-step returns: rewards of up to n steps of the episode summed per sample, each
    recomputed for the sample's relabelled goal (truncation and termination respected)."""
    normalize_relabelled_goals: bool = True
    """Also feed the goal normaliser the goals of every sampled batch, relabelled ones
    included (as baselines' HER does), not only the goals the env gave. Without it an env
    with one fixed goal leaves the goal statistics at that goal (std at its floor), every
    relabelled goal is clipped to the normaliser's bound, and HER learns nothing (goal
    mountain car, docs/results.md)."""
    steps: int = 100_000
    """Budget in env steps (all envs together)."""
    n_envs: int = 1
    """Training envs per process (in worker processes when more than one and a CPU core
    per process is spare, else stepped in turn in the trainer)."""
    seed: int = 0
    """Seed of envs, agent and buffer."""
    out: str | None = None
    """Run directory. Default: runs/ and a name made of the env id, its --env-kwargs, the
    algorithm, the strategy, the seed and the learning settings that differ from the env's
    preset, e.g. runs/herkit-BitFlip-v0-dqn-future-s0. An existing run directory is
    refused (use --resume DIR, another --out, or --overwrite)."""
    overwrite: bool = False
    """Empty an existing run directory first instead of refusing to train into it."""
    device: str = "cpu"
    """Torch device: cpu, cuda, cuda:N, or auto (cuda when available)."""
    buffer_device: Literal["auto", "host", "device"] = "auto"
    """Where the replay buffer keeps its data: host (numpy arrays), device (torch tensors on
    --device: batches are relabelled there and never copied from the host), or auto:
    device when --device is a GPU and the env's reward has a torch form, else host."""
    env_kwargs: tuple[str, ...] = ()
    """Keyword arguments of the env as KEY=VALUE (values parsed as Python literals)."""
    target_success: float | None = None
    """Stop once an evaluation reaches this success rate."""
    buffer_size: int = 1_000_000
    """Replay buffer capacity in transitions."""
    warmup_steps: int = 1_000
    """Env steps collected before the first update."""
    random_steps: int = 0
    """Env steps at the start that take uniformly random actions."""
    updates_per_step: float = 1.0
    """Gradient updates per env step (after warm-up)."""
    eval_every: int = 2_000
    """Env steps between evaluations."""
    eval_episodes: int = 10
    """Episodes per evaluation (deterministic policy, separate envs)."""
    n_eval_envs: int = 1
    """Envs that run the evaluation episodes."""
    checkpoint_every: int = 50_000
    """Env steps between checkpoints (one is also written at the end)."""
    video_every: int = 0
    """Env steps between videos of one evaluation episode, written to RUN/videos/ (and
    TensorBoard); 0: none. The env must render rgb_array frames."""
    resume: str | None = None
    """Continue the run in this directory from its checkpoint (its config.json is used)."""
    terminal_on_success: bool | None = None
    """Relabelled successes are terminal (for envs that end episodes on success, e.g. bit
    flipping, PointMaze); None: from the env (what it declares, else what it does). Also
    given as --terminal-on-success / --no-terminal-on-success."""
    reward_range: tuple[float, float] | None = None
    """Smallest and largest reward; Q targets are clipped to the returns they imply. None:
    probed from the env's compute_reward (no clipping where the reward is not bounded)."""
    success_key: Literal["is_success", "success", "compute_reward"] | None = None
    """Where success is read: info["is_success"], info["success"], or compute_reward giving
    the reward of a reached goal; None: from the env."""
    success_threshold: float | None = None
    """A relabelled goal counts as reached where compute_reward gives at least this (dense
    rewards; e.g. -0.12 for highway-env's parking); None: learned from the env's success
    signal on the goals it was given, else compute_reward equal to that of a goal reached
    exactly. Decides which relabelled samples are terminal where episodes end on success."""
    info_keys: tuple[str, ...] = ()
    """Numeric info fields stored with each transition and passed to compute_reward (for
    envs whose reward needs info)."""
    dist_timeout_s: float = 300.0
    """torch.distributed (torchrun) runs: seconds a collective waits for the other ranks
    before failing."""
    torch_threads: int | None = None
    """Threads of torch's CPU kernels; None: chosen with --env-workers so that threads
    plus env workers fit this process's CPU cores (printed at start, recorded in
    config.json)."""
    env_workers: int | None = None
    """Worker processes that step the training envs (and, as many as fit, the evaluation
    envs), several envs each; 0: every env steps in the trainer process. None: the CPU
    cores left over by --torch-threads, at most --n-envs; 0 for a single env."""
    overlap: bool = True
    """With envs in worker processes, update the networks while the envs step: the action
    of env step t then comes from the parameters before the updates owed by step t - 1
    (one update batch behind). --no-overlap waits for the envs, then updates."""
    precision: Literal["auto", "fp32", "bf16"] = "auto"
    """Forward passes in float32, or in bfloat16 under autocast (parameters, optimiser
    state, targets and losses stay float32); auto: where the device multiplies bfloat16
    natively (AVX512-BF16, AMX, CUDA), a few updates of the run's networks at its batch
    size are timed in both and the faster is taken (bf16 only if >= 1.1x faster). The
    choice and the timings are recorded in config.json."""
    tensorboard: bool = True
    """Also write TensorBoard event files."""
    progress: bool = True
    """Show a progress bar."""
    dqn: DQNConfig = DQNConfig()
    """Settings of --algo dqn."""
    ddpg: DDPGConfig = DDPGConfig()
    """Settings of --algo ddpg."""
    td3: DDPGConfig = DDPGConfig.td3()  # noqa: RUF009 (frozen, so sharing it is safe)
    """Settings of --algo td3."""
    sac: SACConfig = SACConfig()
    """Settings of --algo sac."""

    def __post_init__(self) -> None:
        if not isinstance(self.env_id, str) or not self.env_id:
            raise ValueError(f"env_id must be a non-empty string, got {self.env_id!r}")
        for name, minimum in (
            ("k", 0), ("steps", 1), ("n_envs", 1), ("buffer_size", 1), ("warmup_steps", 0),
            ("random_steps", 0), ("eval_every", 1), ("eval_episodes", 1), ("n_eval_envs", 1),
            ("checkpoint_every", 1), ("video_every", 0), ("n_step", 1),
        ):  # fmt: skip
            _check_int(name, getattr(self, name), minimum)
        if self.torch_threads is not None:
            _check_int("torch_threads", self.torch_threads, 1)
        if self.env_workers is not None:
            _check_int("env_workers", self.env_workers, 0)
            if self.env_workers > self.n_envs:
                raise ValueError(
                    f"env_workers must be at most n_envs ({self.n_envs}): a worker steps one "
                    f"env at least, got {self.env_workers}"
                )
        _check_bool("overlap", self.overlap)
        _check_float("updates_per_step", self.updates_per_step, 0.0, open_low=True)
        _check_float("dist_timeout_s", self.dist_timeout_s, 0.0, open_low=True)
        if self.target_success is not None:
            _check_float("target_success", self.target_success, 0.0, 1.0, open_low=True)
        if self.reward_range is not None:
            low, high = self.reward_range
            if not (_is_number(low) and _is_number(high) and low <= high):
                raise ValueError(
                    f"reward_range must be (low, high) with low <= high, got {self.reward_range}"
                )
        if self.terminal_on_success is not None:
            _check_bool("terminal_on_success", self.terminal_on_success)
        if self.success_threshold is not None and not _is_number(self.success_threshold):
            raise ValueError(
                f"success_threshold must be a finite number, got {self.success_threshold!r}"
            )
        _check_bool("overwrite", self.overwrite)
        device = self.device
        if not (device in ("cpu", "cuda", "auto", "mps") or device.startswith("cuda:")):
            raise ValueError(f"device must be cpu, cuda, cuda:N or auto, got {device!r}")
        self.env_kwargs_dict()

    def env_kwargs_dict(self) -> dict[str, Any]:
        """``env_kwargs`` as a dict; ValueError for an item that is not KEY=VALUE."""
        kwargs: dict[str, Any] = {}
        for item in self.env_kwargs:
            key, sep, text = item.partition("=")
            if not sep or not key.isidentifier():
                raise ValueError(f"env_kwargs items must look like KEY=VALUE, got {item!r}")
            try:
                kwargs[key] = ast.literal_eval(text)
            except (ValueError, SyntaxError):
                kwargs[key] = text
        return kwargs

    def agent_config(self) -> OffPolicyConfig:
        """The settings of the chosen algorithm."""
        config: OffPolicyConfig = getattr(self, self.algo)
        return config

    def resolved_device(self) -> str:
        """``device`` with auto resolved."""
        import torch

        if self.device == "auto":
            return "cuda" if torch.cuda.is_available() else "cpu"
        if self.device.startswith("cuda") and not torch.cuda.is_available():
            build = "a CPU-only build" if torch.version.cuda is None else "no CUDA device visible"
            raise ValueError(
                f"device {self.device!r} needs CUDA, but torch {torch.__version__} has {build} "
                "here: use --device cpu (or auto)"
            )
        return self.device

    def out_dir(self) -> Path:
        """The run directory: ``out``, else a name under ``runs/`` that tells runs of
        different tasks and learning settings apart (see :func:`default_run_name`)."""
        if self.out is not None:
            return Path(self.out)
        return Path("runs") / default_run_name(self)

    def her_name(self) -> str:
        """How goals are relabelled, in a word: the strategy, or ``mix1:2:2`` for a goal mix."""
        if self.goal_mix is None:
            return self.strategy
        return "mix" + ":".join(f"{weight:g}" for weight in self.goal_mix)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict (what config.json holds)."""
        return dataclasses.asdict(self)


def config_from_dict(values: dict[str, Any]) -> TrainConfig:
    """Rebuild a TrainConfig from :meth:`TrainConfig.to_dict` output (e.g. config.json)."""
    agents = {"dqn": DQNConfig, "ddpg": DDPGConfig, "td3": DDPGConfig, "sac": SACConfig}
    fields = dict(values)
    for name, cls in agents.items():
        agent = dict(fields.get(name, {}))
        if "hidden" in agent:
            agent["hidden"] = tuple(agent["hidden"])
        fields[name] = cls(**agent)
    for name in ("env_kwargs", "reward_range", "info_keys"):
        if fields.get(name) is not None:
            fields[name] = tuple(fields[name])
    unknown = sorted(set(fields) - {field.name for field in dataclasses.fields(TrainConfig)})
    if unknown:
        raise ValueError(f"unknown settings {', '.join(unknown)}")
    return TrainConfig(**fields)
