"""Configuration dataclasses; their attribute docstrings are the ``herkit`` CLI's help.

:class:`TrainConfig` is everything ``herkit train`` takes;
:func:`herkit.config.resolve.preset_config` gives its defaults for an env (the paper's
bit-flipping setup, baselines' Fetch setup).

The agents' settings (:class:`DQNConfig`, :class:`DDPGConfig`, :class:`SACConfig`, ...) are in
:mod:`herkit.agents.settings`, each agent's registry entry (:mod:`herkit.agents.registry`)
beside its settings class; a TrainConfig holds the settings of its ``algo`` in one slot,
``agent``, which ``herkit train`` shows as ``--ALGO.*`` flags and config.json writes as the
block ``ALGO``. Every config is frozen and checks its values in ``__post_init__``, raising
``ValueError`` naming the field.

A run's default directory name (:func:`herkit.config.resolve.default_run_name`) spells out
its env, algorithm, strategy and seed and the learning settings that differ from its env's
preset. ``herkit train`` is generated from :class:`TrainConfig`: its flags from the fields,
its help from the docstring under each field.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import tyro

from herkit.agents.registry import AgentEntry, agent_entry, algo_names
from herkit.agents.settings import OffPolicyConfig, UpdateMode
from herkit.buffer.checks import check_bool, check_float, check_int, is_number
from herkit.buffer.conventions import SuccessKey
from herkit.buffer.settings import HerSettings
from herkit.config.her import HER_ONLY, OFFLINE_LEFT_OUT, RunHerSettings, her_name
from herkit.config.recipes import RECIPES, check_recipe_task, recipe_values
from herkit.envs.registration import env_kwargs

__all__ = [
    "TrainConfig",
    "config_from_dict",
]


@dataclass(frozen=True)
class TrainConfig:
    """A training run: env, algorithm, HER settings, budget and bookkeeping."""

    env_id: Annotated[tyro.conf.Positional[str], tyro.conf.arg(metavar="[ENV_ID]")] = (
        "herkit/BitFlip-v0"
    )
    """Gymnasium id of a goal env: herkit/BitFlip-v0, herkit/PointReach-v0,
    herkit/GridWorld-v0, herkit/MountainCarGoal-v0, FetchReach-v4 (etc.) or module:Id."""
    algo: str = "dqn"
    """The agent: a name of the registry (:mod:`herkit.agents.registry`), e.g. dqn
    (discrete actions), ddpg (continuous) or gcivl (offline: it trains on --dataset); its
    settings are :attr:`agent`."""
    recipe: Annotated[
        Literal["baselines", "mrl-push", "mrl-slide"] | None,
        tyro.conf.arg(metavar="{" + ",".join(RECIPES) + "}"),
    ] = None
    """A cited code's Fetch setup for the preset's learning settings (baselines: the HER
    paper's DDPG; mrl's protoge_config, best_slide_config); flags change any; refused on a
    task it was not written for."""
    her: Annotated[RunHerSettings, tyro.conf.OmitArgPrefixes, tyro.conf.arg(name="her")] = (
        RunHerSettings()  # noqa: RUF009 (frozen, so sharing it is safe)
    )
    """The replay buffer's HER settings (:class:`herkit.buffer.settings.HerSettings`); their
    flags have no prefix: --strategy, --k, --goal-mix, --terminal-on-success, ..."""
    normalize_relabelled_goals: bool = True
    """Also feed the goal normaliser the goals of every sampled batch, relabelled ones
    included (as baselines' HER does), not only the goals the env gave. Without it an env
    with one fixed goal leaves the goal statistics at that goal (std at its floor), every
    relabelled goal is clipped to the normaliser's bound, and HER learns nothing (goal
    mountain car, docs/experiment-log.md)."""
    steps: int = 100_000
    """Budget in env steps (all envs together); by default the env's preset's, 100,000 for
    an env without a preset; with --dataset 0 (no env step) unless given."""
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
    fixed_goal: bool = False
    """One goal for every episode (training and evaluation): the goal of the env's reset
    with --seed, as in the HER paper's single-goal experiment."""
    goal_seed: int | None = None
    """With --fixed-goal: the reset seed that draws the goal, in place of --seed."""
    shaped_reward: tuple[float, float] | None = None
    """LAM P: the HER paper's shaped reward ``LAM*|g-ag|^P - |g-ag'|^P`` in place of the
    env's (ag, ag': achieved goal before and after the step); success stays the env's."""
    dataset: str | None = None
    """A recorded dataset (OGBench's layout: an .npz of observations, actions and
    terminals) that the buffer holds before any env step: an offline agent (--algo's)
    trains --offline-steps gradient steps on it, then --steps env steps online."""
    offline_steps: int = 0
    """With --dataset: gradient steps on the dataset alone, before any env step (OGBench's
    protocol: 1,000,000); --eval-every and --checkpoint-every count them meanwhile."""
    target_success: float | None = None
    """Stop once the mean success of --target-evaluations evaluations in a row reaches this."""
    target_evaluations: int = 3
    """Evaluations in a row whose mean success must reach --target-success (1: the first
    evaluation that reaches it; one evaluation of 20 episodes at 0.9 has a standard error
    near 0.07)."""
    buffer_size: int = 1_000_000
    """Replay buffer capacity in transitions."""
    warmup_steps: int = 1_000
    """Env steps collected before the first update."""
    random_steps: int = 0
    """Env steps at the start that take uniformly random actions."""
    updates_per_step: float = 1.0
    """Gradient updates per env step (after warm-up)."""
    eval_every: int = 2_000
    """Env steps between evaluations (gradient steps while on a dataset alone)."""
    eval_episodes: int = 10
    """Episodes per evaluation (of each task, on an env with tasks)."""
    n_eval_envs: int = 1
    """Envs that run the evaluation episodes (of the deterministic policy)."""
    checkpoint_every: int = 50_000
    """Env steps between checkpoints, and one at the end (gradient steps while on a dataset
    alone)."""
    video_every: int = 0
    """Env steps between videos of one evaluation episode (gradient steps while on a dataset
    alone), written to RUN/videos/ (and TensorBoard); 0: none. The env must render
    rgb_array frames."""
    log_updates_every: int = 50
    """Gradient updates per row of RUN/updates.csv (their mean losses and Q values)."""
    resume: str | None = None
    """Continue the run in this directory from its checkpoint (its config.json is used)."""
    reward_range: tuple[float, float] | None = None
    """Smallest and largest reward; Q targets are clipped to the returns they imply. None:
    probed from the env's compute_reward (no clipping where the reward is not bounded)."""
    success_key: SuccessKey | None = None
    """Where success is read: info["is_success"], info["success"], or compute_reward giving
    the reward of a reached goal; None: from the env."""
    dist_timeout_s: float = 300.0
    """torch.distributed (torchrun) runs: seconds a collective waits for the other ranks
    before failing."""
    env_restarts: int = 0
    """How many times per run a failed env (it raised, returned NaN or inf, or its worker
    process died or hung) is rebuilt: the episodes in progress end there as truncated,
    nothing of the failed step is stored, and training goes on. Past this many, the run
    stops with a checkpoint at its last whole step."""
    env_timeout_s: float = 300.0
    """Seconds an env worker process may take to answer one step or reset before it counts
    as hung (stopped, and a failed env as above)."""
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
    state, targets and losses stay float32); auto: bf16 where the device multiplies
    bfloat16 natively (AVX512-BF16, AMX, CUDA) and the networks are large enough to gain
    (hidden layers of 256 x 256 or more at batch 256), else fp32, decided by the machine
    and the command (a --recipe sets fp32); recorded in config.json, kept by --resume."""
    update_mode: Literal["auto"] | UpdateMode = "auto"
    """How each update runs: eager (op by op), compiled (torch.compile fuses its ops),
    captured (CUDA only: recorded once as a CUDA graph, then replayed) or
    compiled-captured; auto: eager on a CPU and across torchrun ranks; on one GPU
    compiled-captured for runs of 200,000 updates or more, else captured (a mode that
    fails there at start falls back to the next, and says why). Recorded in config.json
    and kept by --resume."""
    tensorboard: bool = True
    """Also write TensorBoard event files."""
    progress: bool = True
    """Show a progress bar."""
    agent: tyro.conf.Suppress[OffPolicyConfig | None] = None
    """The settings of the agent :attr:`algo` (of its registry entry's settings class; None:
    its defaults, :meth:`~herkit.agents.registry.AgentEntry.default_config`). ``herkit
    train`` shows them as ``--ALGO.FIELD`` flags, config.json writes them as the block
    ``ALGO``."""

    def __post_init__(self) -> None:
        if not isinstance(self.env_id, str) or not self.env_id:
            raise ValueError(f"env_id must be a non-empty string, got {self.env_id!r}")
        entry = self.entry()
        agent = entry.default_config() if self.agent is None else self.agent
        object.__setattr__(self, "agent", entry.checked(agent))
        check_int("steps", self.steps, 0 if self.dataset is not None else 1)
        for name, minimum in (
            ("offline_steps", 0),
            ("n_envs", 1),
            ("buffer_size", 1),
            ("warmup_steps", 0),
            ("random_steps", 0),
            ("eval_every", 1),
            ("eval_episodes", 1),
            ("n_eval_envs", 1),
            ("checkpoint_every", 1),
            ("video_every", 0),
            ("log_updates_every", 1),
        ):
            check_int(name, getattr(self, name), minimum)
        if self.torch_threads is not None:
            check_int("torch_threads", self.torch_threads, 1)
        if self.env_workers is not None:
            check_int("env_workers", self.env_workers, 0)
            if self.env_workers > self.n_envs:
                raise ValueError(
                    f"env_workers must be at most n_envs ({self.n_envs}): a worker steps one "
                    f"env at least, got {self.env_workers}"
                )
        check_bool("overlap", self.overlap)
        check_float("updates_per_step", self.updates_per_step, 0.0, open_low=True)
        check_float("dist_timeout_s", self.dist_timeout_s, 0.0, open_low=True)
        check_int("env_restarts", self.env_restarts, 0)
        check_float("env_timeout_s", self.env_timeout_s, 0.0, open_low=True)
        if self.target_success is not None:
            check_float("target_success", self.target_success, 0.0, 1.0, open_low=True)
        check_int("target_evaluations", self.target_evaluations, 1)
        if self.reward_range is not None:
            low, high = self.reward_range
            if not (is_number(low) and is_number(high) and low <= high):
                raise ValueError(
                    f"reward_range must be (low, high) with low <= high, got {self.reward_range}"
                )
        object.__setattr__(self, "her", RunHerSettings.of(self.her))
        given = self.her.given(HER_ONLY) if entry.offline else []
        if given:
            flags = " and ".join(f"--{name.replace('_', '-')}" for name in given)
            raise ValueError(
                f"{flags} {'set' if len(given) > 1 else 'sets'} HER's relabelling, which "
                f"{self.algo} (an offline agent) does not use: it draws its goals from "
                "OGBench's goal mixes, --value-goals and --actor-goals"
            )
        self.her_settings()  # the checks that need the agent's discount
        check_bool("fixed_goal", self.fixed_goal)
        if self.goal_seed is not None:
            if not self.fixed_goal:
                raise ValueError("goal_seed is the seed of --fixed-goal's goal: give --fixed-goal")
            check_int("goal_seed", self.goal_seed, 0)
        if self.shaped_reward is not None:
            lam, p = self.shaped_reward
            if not (is_number(lam) and is_number(p) and p > 0):
                raise ValueError(
                    f"shaped_reward must be LAM P, finite numbers with P > 0, got "
                    f"{self.shaped_reward}"
                )
        check_bool("overwrite", self.overwrite)
        recipe_values(self.recipe)  # a name it knows, or None
        check_recipe_task(self.recipe, self.env_id)
        device = self.device
        if not (device in ("cpu", "cuda", "auto", "mps") or device.startswith("cuda:")):
            raise ValueError(f"device must be cpu, cuda, cuda:N or auto, got {device!r}")
        env_kwargs(self.env_kwargs)  # each item KEY=VALUE

    def check_data(self) -> None:
        """ValueError unless the run has what it trains on: an offline agent a dataset, an
        online one none, and steps to train (checked when a run starts: a preset, such as
        OGBench's, names an offline agent before a dataset is given)."""
        offline = self.entry().offline
        if self.dataset is None:
            if offline:
                raise ValueError(
                    f"algo {self.algo!r} is an offline agent: it trains on a recorded dataset "
                    "(--dataset PATH; benchmarks/offline.py data makes pointmaze's); the "
                    f"online agents are {_spoken(algo_names(offline=False), 'and')}"
                )
            if self.offline_steps:
                raise ValueError(
                    f"offline_steps={self.offline_steps:,} are gradient steps on a dataset: "
                    "give --dataset PATH"
                )
            return
        if not isinstance(self.dataset, str) or not self.dataset:
            raise ValueError(f"dataset must be a path to an .npz file, got {self.dataset!r}")
        if not offline:
            offline_algos = _spoken(algo_names(offline=True), "or")
            raise ValueError(
                f"--dataset trains an offline agent (--algo {offline_algos}); "
                f"{self.algo} learns online from the env alone"
            )
        if not self.offline_steps and not self.steps:
            raise ValueError(
                "--dataset with nothing to train: give --offline-steps N (gradient steps on the "
                "dataset; OGBench's protocol: 1000000) and/or --steps N (env steps after it)"
            )

    def her_settings(self) -> HerSettings:
        """The buffer's settings of this run: :attr:`her` with the agent's ``gamma``; an
        offline agent's value and actor goals its registry entry's where none are given
        (OGBench's; no value goals for an agent without a value, GCBC), and the buffer
        settings its entry's ``buffer`` takes from its settings (HIQL's subgoals)."""
        settings = self.her.buffer_settings(self.agent_config().gamma)
        entry = self.entry()
        if not entry.offline:
            return settings
        value = entry.value_goals if settings.value_goals is None else settings.value_goals
        actor = entry.actor_goals if settings.actor_goals is None else settings.actor_goals
        own = {} if entry.buffer is None else entry.buffer(self.agent_config())
        return dataclasses.replace(settings, value_goals=value, actor_goals=actor, **own)

    def goal_mixes(self) -> dict[str, list[float] | None]:
        """An offline agent's goal mixes as its records write them: ``value_goals`` and
        ``actor_goals``, (current, future, random) weights, its own where none are given
        (value goals None for an agent without a value function, GCBC)."""
        settings = self.her_settings()
        return {
            name: None if mix is None else list(mix)
            for name, mix in (
                ("value_goals", settings.value_goals),
                ("actor_goals", settings.actor_goals),
            )
        }

    def with_her(self, **changes: Any) -> TrainConfig:
        """This config with ``changes`` to its HER settings."""
        return dataclasses.replace(self, her=RunHerSettings.of(self.her, changes))

    def agent_config(self) -> OffPolicyConfig:
        """The settings of the chosen algorithm (:attr:`agent`)."""
        assert self.agent is not None  # set by __post_init__
        return self.agent

    def entry(self) -> AgentEntry:
        """The registry entry of :attr:`algo` (ValueError for a name none holds)."""
        return agent_entry(self.algo)

    def her_name(self) -> str:
        """How goals are relabelled, in a word (:func:`herkit.config.her.her_name` of the
        buffer's settings, :meth:`her_settings`): ``future``, ``mix1:2:2``,
        ``values0.2:0.5:0.3``."""
        return her_name(self.her_settings().values())

    def method_name(self) -> str:
        """The run's method as a curve's title names it: ``ddpg+HER``, the algorithm alone
        without relabelling (``--strategy none``) or for an offline agent (its goals are
        its goal mixes, :meth:`goal_mixes`)."""
        relabels = not self.entry().offline and self.her_name() != "none"
        return f"{self.algo}+HER" if relabels else self.algo

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict (what config.json holds): the agent's settings as the
        block named after :attr:`algo` (``"dqn": {...}``), last. An offline agent's ``her``
        block starts with its goal mixes (:meth:`goal_mixes`) and leaves out what
        :data:`~herkit.config.her.OFFLINE_LEFT_OUT` names (HER's relabelling, which it does
        not use, and what its own settings decide)."""
        values = dataclasses.asdict(self)
        agent = values.pop("agent")
        her = self.her.to_dict()
        if self.entry().offline:  # the goal settings first, the mixes as they are drawn
            goals = ("value_goals", "value_future", "actor_goals", "gc_negative")
            kept = {k: v for k, v in her.items() if k not in OFFLINE_LEFT_OUT}
            her = {name: kept.pop(name) for name in goals} | self.goal_mixes() | kept
        return values | {"her": her, self.algo: agent}


def config_from_dict(values: dict[str, Any]) -> TrainConfig:
    """Rebuild a TrainConfig from :meth:`TrainConfig.to_dict` output (e.g. config.json):
    the agent's settings from the block named after its ``algo`` (its defaults where there
    is none). A config.json written before TrainConfig held one agent slot has a block per
    algorithm then known (:data:`OLD_BLOCKS`): the other algorithms' are left unread."""
    fields = dict(values)
    algo = fields.get("algo", TrainConfig.algo)
    entry = agent_entry(algo)
    block = fields.pop(algo, None)
    for name in (*OLD_BLOCKS, *algo_names()):
        fields.pop(name, None)  # another algorithm's block: a config.json of the old layout
    if block is not None:
        fields["agent"] = entry.read(block)
    for name in ("env_kwargs", "reward_range"):
        if fields.get(name) is not None:
            fields[name] = tuple(fields[name])
    if "online_steps" in fields:  # written before offline runs counted --offline-steps
        online = fields.pop("online_steps")
        if fields.get("dataset") is not None:
            fields["offline_steps"], fields["steps"] = fields.get("steps", 0), online
    # a config.json written before TrainConfig held a HerSettings has its fields at the top
    her = {name: fields.pop(name) for name in HerSettings.names() if name in fields}
    her = dict(fields.get("her") or {}) | her
    if entry.offline:
        for name in HER_ONLY:  # HER's relabelling, which an offline agent never used
            her.pop(name, None)
        for name, own in (("value_goals", entry.value_goals), ("actor_goals", entry.actor_goals)):
            mix = her.get(name)
            if mix is not None and own is not None and _same_mix(mix, own):
                her[name] = None  # written out as the agent's own: read back as its own
    fields["her"] = RunHerSettings.of(None, her)
    unknown = sorted(set(fields) - {field.name for field in dataclasses.fields(TrainConfig)})
    if unknown:
        raise ValueError(f"unknown settings {', '.join(unknown)}")
    return TrainConfig(**fields)


OLD_BLOCKS = ("dqn", "ddpg", "td3", "sac", "gcbc", "gcivl", "gciql")
"""The agent blocks of a config.json written before TrainConfig held one agent slot (one
per algorithm then known; :func:`config_from_dict` reads the run's own)."""


def _same_mix(mix: Any, own: tuple[float, ...]) -> bool:
    """Whether the weights ``mix`` (as config.json holds them) are ``own``'s."""
    return len(mix) == len(own) and all(
        is_number(a) and abs(a - b) <= 1e-12 for a, b in zip(mix, own, strict=True)
    )


def _spoken(names: tuple[str, ...], last: str) -> str:
    """Names as a sentence lists them: ``a, b and c`` (``last``: the word before the last)."""
    return names[0] if len(names) < 2 else f"{', '.join(names[:-1])} {last} {names[-1]}"
