"""One training loop: collect -> store -> update -> evaluate -> log -> checkpoint.

Read top to bottom, :func:`train` is the whole algorithm. The vector envs run with
autoreset disabled: a finished env is reset by mask after its final transition is
stored, so the buffer always receives the true last observation of an episode.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import sys
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from herkit import distributed
from herkit.agents import Agent
from herkit.buffer.env_terms import RewardAudit
from herkit.buffer.her import HerReplayBuffer, compute_reward_of
from herkit.checkpoint import checkpoint_state, load_checkpoint, save_checkpoint
from herkit.config import TrainConfig, config_from_dict
from herkit.cores import CorePlan, plan_cores
from herkit.distributed import Context, DistributedError
from herkit.envs import make_goal_env
from herkit.envs.conventions import GoalConventions, SuccessSignal, probe_conventions
from herkit.envs.torch_rewards import torch_reward_of
from herkit.envs.workers import WorkerVectorEnv
from herkit.evaluation import evaluate
from herkit.logging import RunLogger
from herkit.plots import plot_runs
from herkit.policy import make_run_agent
from herkit.precision import check_precision, fast_bf16, measure_precision
from herkit.run_dir import check_new_run_dir, clear_run_dir, is_failed_run, owned_run_dir
from herkit.video import render_frame, write_video


@dataclass
class LoopState:
    """Counters of a run; saved in every checkpoint."""

    env_steps: int = 0
    updates: int = 0
    episodes: int = 0
    wall_s: float = 0.0
    eval_s: float = 0.0
    owed_updates: float = 0.0
    next_eval: int = 0
    next_checkpoint: int = 0
    next_video: int = 0
    success_rate: float = float("nan")
    solved_at_env_steps: int | None = None
    solved_at_wall_s: float | None = None
    resets: int = 0


def make_vector_env(
    config: TrainConfig,
    n_envs: int,
    seed_offset: int,
    render_mode: str | None = None,
    workers: int | None = None,
) -> gym.vector.VectorEnv:
    """``n_envs`` copies of the config's env, autoreset disabled (``render_mode``: for
    frames, e.g. ``"rgb_array"``).

    ``workers`` processes step them, several envs each (:class:`WorkerVectorEnv`); with 0
    they step in this process, where they cost no pipes and no process switches (always
    with a ``render_mode``: frames are read from the env object). None:
    as :func:`herkit.cores.plan_cores` chooses for ``n_envs`` envs. The env is first made
    here, so that a bad id or a non-goal env is reported as a ValueError, not from a worker.
    """
    kwargs = config.env_kwargs_dict()
    if render_mode is not None:
        kwargs["render_mode"] = render_mode
    make_goal_env(config.env_id, **kwargs).close()
    if render_mode is not None:
        workers = 0  # frames are read from the env object, so it lives here
    elif workers is None:
        given = None if config.env_workers is None else min(config.env_workers, n_envs)
        workers = _plan(config, n_envs, given).env_workers

    def make() -> gym.Env:
        return make_goal_env(config.env_id, **kwargs)

    fns = [make] * n_envs
    envs: gym.vector.VectorEnv
    if workers > 0:
        envs = WorkerVectorEnv(fns, min(workers, n_envs))
    else:
        envs = gym.vector.SyncVectorEnv(fns, autoreset_mode=gym.vector.AutoresetMode.DISABLED)
    envs.action_space.seed(config.seed + seed_offset)
    return envs


def _plan(config: TrainConfig, n_envs: int, env_workers: int | None) -> CorePlan:
    """The core plan of a process of this run with ``n_envs`` envs (torchrun's local
    ranks share the machine's cores)."""
    return plan_cores(
        n_envs,
        config.torch_threads,
        env_workers,
        gpu=_on_gpu(config),
        local_ranks=int(os.environ.get("LOCAL_WORLD_SIZE", "1")),
    )


def build(
    config: TrainConfig,
    envs: gym.vector.VectorEnv,
    with_buffer: bool = True,
    context: Context | None = None,
) -> tuple[Agent, HerReplayBuffer | None]:
    """The agent and (unless ``with_buffer`` is false) the buffer that fit ``envs``.

    ``config`` is resolved (:func:`resolve_conventions`): its ``reward_range`` bounds the
    agent's Q targets (None: not clipped) and ``terminal_on_success`` (None: not known yet)
    goes to the buffer. In a distributed run the agent joins ``context`` (rank 0's
    parameters, averaged gradients) and each rank's buffer and exploration get a seed of
    their own.
    """
    context = context or Context()
    device = context.device(config.resolved_device())
    agent = make_run_agent(config, envs.single_observation_space, envs.single_action_space, device)
    if context.active:
        agent.join(context, exploration_seed=_rank_seed(config, context))
    if not with_buffer:
        return agent, None
    buffer = HerReplayBuffer.from_env(
        envs,
        capacity=config.buffer_size,
        strategy=config.strategy,
        k=config.k,
        relabel=config.relabel,
        prioritized=config.prioritized,
        terminal_on_success=bool(config.terminal_on_success),
        success_threshold=config.success_threshold,
        info_keys=config.info_keys,
        goal_mix=config.goal_mix,
        n_step=config.n_step,
        gamma=config.agent_config().gamma,
        seed=_rank_seed(config, context),
        **buffer_placement(config.buffer_device, device, envs),
    )
    return agent, buffer


def buffer_placement(choice: str, device: Any, envs: Any) -> dict[str, Any]:
    """``device`` and ``torch_reward_fn`` of the buffer for ``--buffer-device choice``
    (see :attr:`TrainConfig.buffer_device`) when training on ``device``."""
    gpu = torch.device(device).type == "cuda"
    torch_reward = torch_reward_of(envs) if choice == "device" or gpu else None
    if choice == "device" or (choice == "auto" and gpu and torch_reward is not None):
        return {"device": device, "torch_reward_fn": torch_reward}
    return {"device": None, "torch_reward_fn": None}


def _on_gpu(config: TrainConfig) -> bool:
    """Whether the run's networks are on a GPU (False where its device is not available)."""
    try:
        return config.resolved_device() != "cpu"
    except ValueError:
        return False


def _rank_seed(config: TrainConfig, context: Context) -> int:
    return config.seed + 100_003 * context.rank


def _reset_masked(envs: gym.vector.VectorEnv, obs: dict, mask: np.ndarray) -> dict:
    if not mask.any():
        return obs
    fresh, _ = envs.reset(options={"reset_mask": mask})
    return fresh


class Interrupted(Exception):
    """Training was stopped by SIGINT or SIGTERM after a checkpoint at ``env_steps``."""

    def __init__(self, run_dir: Path, env_steps: int) -> None:
        super().__init__(f"interrupted at {env_steps} env steps")
        self.run_dir = run_dir
        self.env_steps = env_steps


def train(config: TrainConfig, resume: bool = False) -> dict[str, Any]:
    """Run (or resume) training as configured; returns the run's summary.

    Launched by torchrun, every rank runs this loop on its own envs and buffer (see
    :mod:`herkit.distributed`); env steps are counted over all ranks. SIGINT or SIGTERM
    (Ctrl-C) ends the step in progress, writes a checkpoint there, ``summary.json`` and
    ``curve.png``, and raises :class:`Interrupted`; a second one stops at once.

    Raises:
        ValueError: bad settings, an env that cannot be made, an existing run directory
            (unless ``config.overwrite``), one in use by another process (see
            :mod:`herkit.run_dir`), or a resume with nothing left to train.
    """
    context = distributed.init(config.resolved_device(), config.dist_timeout_s)
    try:
        with owned_run_dir(Path(config.out_dir()), context.is_main), _StopOnSignal() as stop:
            summary = _train(config, resume, context, stop)
    except DistributedError:
        raise  # the group is broken: tearing it down can abort the process (gloo threads)
    except Interrupted:
        distributed.shutdown()
        raise
    except BaseException:
        distributed.shutdown(synchronize=False)
        raise
    distributed.shutdown()
    return summary


def resolve_conventions(config: TrainConfig) -> tuple[TrainConfig, GoalConventions]:
    """Probe the env's conventions; fill the settings of ``config`` that are None from them.

    ``reward_range``, ``terminal_on_success`` and ``success_key`` that are set (flags, or a
    resumed run's config.json) win over the probe. See :mod:`herkit.envs.conventions`.
    """
    env = make_goal_env(config.env_id, **config.env_kwargs_dict())
    try:
        probed = probe_conventions(
            env, compute_reward_of(env), info_keys=config.info_keys, seed=config.seed
        )
    finally:
        env.close()
    given = "given (flag or config.json)"
    sources = dict(probed.sources)
    for name in ("reward_range", "terminal_on_success", "success_key"):
        if getattr(config, name) is not None:
            sources[name] = given
    success_key = config.success_key or probed.success_key
    if success_key == "compute_reward" and probed.success_reward is None:
        raise ValueError(
            "success_key 'compute_reward' needs a sparse reward (a reached goal's reward is the "
            f"largest of a few values); {config.env_id}'s reward is not: use another --success-key"
        )
    conventions = dataclasses.replace(
        probed,
        reward_range=config.reward_range or probed.reward_range,
        terminal_on_success=(
            config.terminal_on_success
            if config.terminal_on_success is not None
            else probed.terminal_on_success
        ),
        success_key=success_key,
        sources=sources,
    )
    resolved = dataclasses.replace(
        config,
        reward_range=conventions.reward_range,
        terminal_on_success=conventions.terminal_on_success,
        success_key=conventions.success_key,  # type: ignore[arg-type]
    )
    return resolved, conventions


def _train(
    config: TrainConfig, resume: bool, context: Context, stop: _StopOnSignal
) -> dict[str, Any]:
    run_dir = Path(config.out_dir())
    main = context.is_main
    replace = False
    if resume:
        _check_resumable(run_dir, config)
    elif main:
        replace = check_new_run_dir(run_dir, config)
    context.barrier()  # every rank has looked before rank 0 creates the directory
    config, conventions = resolve_conventions(dataclasses.replace(config, out=str(run_dir)))
    device = context.device(config.resolved_device())
    check_precision(config.precision, torch.device(device))
    plan = _plan(config, config.n_envs, config.env_workers)
    config = dataclasses.replace(
        config, torch_threads=plan.torch_threads, env_workers=plan.env_workers
    )
    torch.manual_seed(_rank_seed(config, context))
    torch.set_num_threads(plan.torch_threads)
    offset = 1_000 * context.rank
    envs = make_vector_env(config, config.n_envs, seed_offset=offset, workers=plan.env_workers)
    n_eval = min(config.eval_episodes, config.n_eval_envs)
    eval_envs = make_vector_env(
        config, n_eval, seed_offset=10_000 + offset, workers=min(plan.env_workers, n_eval)
    )
    video_envs = _video_envs(config, seed_offset=20_000) if config.video_every and main else None
    agent, new_buffer = build(config, envs, context=context)
    assert new_buffer is not None
    buffer = new_buffer
    machine: dict[str, Any] = {"cores": plan.cores, "core_plan": plan.describe()}
    if config.precision == "auto":
        if fast_bf16(torch.device(device)):
            precision, timings = measure_precision(
                agent,
                envs.single_observation_space,  # type: ignore[arg-type]
                envs.single_action_space,
                config.agent_config().batch_size,
                mean=context.mean if context.active else None,
            )
            why = (f"timed at batch {config.agent_config().batch_size}: {timings['fp32_ms']:g} "
                   f"ms per update in fp32, {timings['bf16_ms']:g} in bf16")  # fmt: skip
            machine["precision_ms"] = timings
        else:
            precision, why = "fp32", "the device does not multiply bfloat16 natively"
        agent.set_precision(precision)  # type: ignore[attr-defined]
        config = dataclasses.replace(config, precision=precision)  # type: ignore[arg-type]
        machine["precision"] = f"{precision} (auto: {why})"
    overlap = config.overlap and isinstance(envs, WorkerVectorEnv)
    workers = envs if isinstance(envs, WorkerVectorEnv) else None
    if main:  # only now: a bad env id or algorithm leaves no run directory behind
        if replace:
            if not config.overwrite:
                _say(f"{run_dir} held a run that failed before its first checkpoint: replacing it")
            clear_run_dir(run_dir)
        her = "no HER" if config.her_name() == "none" else f"HER {config.her_name()}"
        _say(f"{'resuming' if resume else 'training'} {config.env_id} with {config.algo} "
             f"({her}) for {config.steps:,} env steps in {run_dir}")  # fmt: skip
        _say(f"{config.env_id}: {conventions.describe()}")
        _say(f"machine: {plan.describe()}")
        batch = config.agent_config().batch_size
        _say(f"learner: batch {batch} x {config.updates_per_step:g} updates per env step = "
             f"{batch * config.updates_per_step:g} samples per env step")  # fmt: skip
        _say(f"precision: {machine.get('precision', config.precision + ' (given)')}")
        if overlap:
            _say("the envs step while the networks update: an action comes from the parameters "
                 "one update batch behind (--no-overlap to wait for the envs)")  # fmt: skip
        for warning in conventions.warnings:
            _say(f"warning: {warning}")
    context.barrier()
    state = LoopState(
        next_eval=config.eval_every,
        next_checkpoint=config.checkpoint_every,
        next_video=config.video_every,
    )
    if resume:
        agent_state, buffer = load_checkpoint(
            run_dir, buffer.reward_fn, device, context, buffer.device, buffer.torch_reward_fn
        )
        agent.load_state_dict(agent_state["agent"])
        torch.set_rng_state(agent_state["torch_rng"])
        state = LoopState(**agent_state["loop"])
        state.resets += 1
        buffer.end_episodes()  # the envs restart: episodes in progress end here
        buffer.terminal_on_success = bool(config.terminal_on_success)  # decided after it?
        machine = _saved_machine(run_dir) | machine
    if main:  # also on resume, where --steps may have grown
        _write_config(run_dir, config, conventions, buffer, machine)
    success_of = SuccessSignal(
        conventions.success_key, buffer.reward_fn, conventions.success_reward, config.info_keys
    )
    terminal_unknown = config.terminal_on_success is None
    # the env's reward terms beyond compute_reward, said once (by the probe or here)
    terms_reported = conventions.step_reward_extra is not None
    range_reported = False
    logger = (
        RunLogger(run_dir, config.tensorboard, state.env_steps if resume else None)
        if main
        else None
    )
    obs, _ = envs.reset(seed=config.seed + offset + 7919 * state.resets)
    sums: dict[str, float] = {}  # training metrics summed since the last log row
    counts: dict[str, int] = {}
    episode_successes: list[float] = []  # training episodes ended since the last log row
    batch_size = config.agent_config().batch_size
    steps_per_iteration = config.n_envs * context.world_size
    can_update = False
    interrupted = False
    started = time.perf_counter() - state.wall_s
    progress = _Progress(config, state.env_steps, enabled=main)

    def learn() -> None:
        """The gradient updates owed (``updates_per_step`` per env step stored)."""
        while state.owed_updates >= 1:
            batch = buffer.sample(batch_size)
            if config.normalize_relabelled_goals:
                agent.update_goal_normalizer(batch.goal)
            for key, value in agent.update(batch).items():
                sums[key] = sums.get(key, 0.0) + value
                counts[key] = counts.get(key, 0) + 1
            if config.prioritized:
                buffer.update_priorities(batch.indices, agent.priorities)
            state.updates += 1
            state.owed_updates -= 1

    try:
        while state.env_steps < config.steps:
            # collect (overlapped: the workers step while the updates owed so far run)
            if state.env_steps < config.random_steps:
                action = envs.action_space.sample()
            else:
                action = agent.act(obs["observation"], obs["desired_goal"], deterministic=False)
            if overlap and workers is not None:
                workers.step_async(action)
                learn()
                next_obs, reward, terminated, truncated, info = workers.step_wait()
            else:
                next_obs, reward, terminated, truncated, info = envs.step(action)
            success = success_of(info, next_obs)
            # store (the env's reward and success kept: relabelling adds only the goal's part)
            buffer.add(
                obs, action, next_obs, terminated, truncated, info, reward=reward,
                success=None if success is None else success > 0,
            )  # fmt: skip
            agent.update_normalizer(obs["observation"], obs["desired_goal"])
            if not terms_reported and buffer.audit.differing:
                terms_reported = True
                if main:
                    _say(f"warning: {buffer.audit.describe()}")
                    _write_config(run_dir, config, conventions, buffer, machine)
            if not range_reported and (outside := _outside(buffer.audit, config.reward_range)):
                range_reported = True
                if main:
                    _say(f"warning: {outside}")
            done = terminated | truncated
            state.episodes += int(done.sum())
            if terminal_unknown or done.any():
                if success is not None:
                    episode_successes.extend(success[done].tolist())
                    if terminal_unknown and success.any():  # the env shows what it does
                        ended = bool(terminated[success > 0].all())
                        conventions = conventions.with_terminal_evidence(ended, state.env_steps)
                        config = dataclasses.replace(config, terminal_on_success=ended)
                        buffer.terminal_on_success = ended
                        agent.set_terminal_on_success(ended)
                        terminal_unknown = False
                        if main:
                            _say(f"{config.env_id}: episodes end on success: {ended} "
                                 f"({conventions.sources['terminal_on_success']})")  # fmt: skip
                            _write_config(run_dir, config, conventions, buffer, machine)
            obs = _reset_masked(envs, next_obs, done)
            state.env_steps += steps_per_iteration
            # update (every rank must agree to start: store-time relabelling holds nothing
            # until an episode has ended, and ranks end episodes at different steps)
            if not can_update and state.env_steps >= config.warmup_steps:
                can_update = context.all_true(len(buffer) > 0)
            if can_update:
                state.owed_updates += config.n_envs * config.updates_per_step
                if not overlap:
                    learn()
            # a signal stops every rank at the same step (asked every 16 steps with torchrun)
            iteration = state.env_steps // steps_per_iteration
            if not context.active or iteration % 16 == 0:
                interrupted = not context.all_true(not stop.requested)
            finished = state.env_steps >= config.steps or interrupted
            due = (state.env_steps >= min(state.next_eval, state.next_checkpoint)) or finished
            if overlap and due and not interrupted:
                learn()  # evaluations and checkpoints see every update owed so far
            # evaluate and log
            if (state.env_steps >= state.next_eval or finished) and not interrupted:
                state.next_eval += config.eval_every
                eval_seed = config.seed + 10_000 + offset + state.env_steps
                eval_started = time.perf_counter()
                result = evaluate(agent, eval_envs, config.eval_episodes, eval_seed, success_of)
                state.eval_s += time.perf_counter() - eval_started
                state.success_rate = context.mean(result.success_rate)
                state.wall_s = time.perf_counter() - started
                episodes = int(context.all_sum(np.array([state.episodes]))[0])  # every rank
                if logger is not None:
                    metrics = {key: sums[key] / counts[key] for key in sums}
                    if episode_successes:
                        metrics["train_success_rate"] = float(np.mean(episode_successes))
                    logger.log(_row(state, metrics, episodes))
                sums, counts, episode_successes = {}, {}, []
                target = config.target_success
                if target is not None and state.success_rate >= target:
                    if state.solved_at_env_steps is None:
                        state.solved_at_env_steps = state.env_steps
                        state.solved_at_wall_s = state.wall_s
                    finished = True
            due = state.env_steps >= state.next_video or finished
            if video_envs is not None and due and not interrupted:
                state.next_video = state.env_steps + config.video_every
                seed = config.seed + 20_000 + state.env_steps
                _record_video(run_dir, agent, video_envs, state.env_steps, seed, success_of, logger)
            progress.update(state, force=finished)
            # checkpoint
            if state.env_steps >= state.next_checkpoint or finished:
                if not interrupted:
                    state.next_checkpoint += config.checkpoint_every
                state.wall_s = time.perf_counter() - started
                if not agent.parameters_agree():
                    raise DistributedError("the ranks' parameters have diverged")
                _checkpoint(run_dir, agent, buffer, state, context)
                if main:
                    _write_config(run_dir, config, conventions, buffer, machine)
            if finished:
                break
    finally:
        progress.close()
        if logger is not None:
            logger.close()
        envs.close()
        eval_envs.close()
        if video_envs is not None:
            video_envs.close()
    summary = _summary(config, state, context.world_size) | {"run_dir": str(run_dir)}
    if interrupted:
        summary["interrupted"] = True
    if main:
        (run_dir / "summary.json").write_text(json.dumps(summary, indent=1))
        plot_runs([run_dir], run_dir / "curve.png", title=f"{config.env_id} {config.algo}+HER")
    if interrupted:
        raise Interrupted(run_dir, state.env_steps)
    return summary


def _video_envs(config: TrainConfig, seed_offset: int) -> gym.vector.VectorEnv:
    """One env that renders rgb_array frames, checked to draw one now (not after hours)."""
    envs = make_vector_env(config, 1, seed_offset=seed_offset, render_mode="rgb_array")
    try:
        envs.reset(seed=config.seed + seed_offset)
        render_frame(envs)
    except BaseException:
        envs.close()
        raise
    return envs


def _record_video(
    run_dir: Path,
    agent: Agent,
    envs: gym.vector.VectorEnv,
    env_steps: int,
    seed: int,
    success_of: SuccessSignal,
    logger: RunLogger | None,
) -> None:
    """One deterministic evaluation episode as ``RUN/videos/step-N.mp4`` and in TensorBoard."""
    frames: list[np.ndarray] = []
    evaluate(agent, envs, 1, seed, success_of, frames=frames)
    fps = float(envs.metadata.get("render_fps") or 30)
    write_video(run_dir / "videos" / f"step-{env_steps:09d}.mp4", frames, fps)
    if logger is not None:
        logger.video("eval/video", frames, env_steps, fps)


def _say(text: str) -> None:
    """One line of ``herkit: ...`` on stderr (stdout carries the JSON summary)."""
    print(f"herkit: {text}", file=sys.stderr, flush=True)


class _StopOnSignal:
    """SIGINT/SIGTERM set :attr:`requested` (the loop checkpoints and stops); a second
    signal raises KeyboardInterrupt at once. Handlers are restored on exit."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.requested = False
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> _StopOnSignal:
        if threading.current_thread() is threading.main_thread():
            for signum in self.SIGNALS:
                self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)

    def _handle(self, signum: int, frame: object) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        _say(f"{signal.Signals(signum).name}: stopping after this step to write a checkpoint "
             "(again to quit at once)")  # fmt: skip


def _check_resumable(run_dir: Path, config: TrainConfig) -> None:
    """ValueError unless ``run_dir``'s checkpoint has env steps left before ``config.steps``."""
    if run_dir.is_dir() and is_failed_run(run_dir):
        raise ValueError(
            f"run {str(run_dir)!r} failed before its first checkpoint, so there is nothing to "
            "resume: run the same command without --resume (it replaces that directory)"
        )
    done = int(checkpoint_state(run_dir)["env_steps"])
    if done >= config.steps:
        raise ValueError(
            f"run {str(run_dir)!r} has already trained {done} env steps (--steps "
            f"{config.steps}): pass a larger --steps to extend it"
        )


def _write_config(
    run_dir: Path,
    config: TrainConfig,
    conventions: GoalConventions,
    buffer: HerReplayBuffer,
    machine: dict[str, Any],
) -> None:
    """config.json: the config, the env's conventions, what this rank's buffer found of
    the env's rewards (``env_terms``: how often and how much they differ from
    compute_reward, and how a relabelled goal counts as reached) and ``machine``: how the
    run uses the cores, and why its precision was chosen."""
    buffer.flush()
    env_terms = {"success_rule": buffer.success_rule(), **buffer.audit.to_dict()}
    values = {
        **config.to_dict(),
        "conventions": conventions.to_dict() | {"env_terms": env_terms},
        "machine": machine,
    }
    path = run_dir / "config.json"
    tmp = path.with_name("config.json.tmp")
    tmp.write_text(json.dumps(values, indent=1))
    os.replace(tmp, path)


def _saved_machine(run_dir: Path) -> dict[str, Any]:
    """The ``machine`` record of a run's config.json (empty if it has none)."""
    try:
        saved = json.loads((run_dir / "config.json").read_text()).get("machine")
    except (OSError, ValueError):
        return {}
    return saved if isinstance(saved, dict) else {}


def _outside(audit: RewardAudit, reward_range: tuple[float, float] | None) -> str:
    """A warning if the env gave step rewards outside ``reward_range``, else ''."""
    if reward_range is None:
        return ""
    low, high = reward_range
    if audit.reward_low >= low - 1e-6 and audit.reward_high <= high + 1e-6:
        return ""
    return (
        f"the env gave step rewards from {audit.reward_low:g} to {audit.reward_high:g}, "
        f"outside the range [{low:g}, {high:g}] that Q targets are clipped to: pass "
        "--reward-range LOW HIGH covering every reward the env can give"
    )


def load_run_config(run_dir: str | Path) -> TrainConfig:
    """The TrainConfig a run was started with (from ``RUN/config.json``).

    Raises ValueError naming the file when it is missing, not JSON, or not a config.
    """
    path = Path(run_dir) / "config.json"
    if not path.is_file():
        raise ValueError(f"run directory {str(run_dir)!r} has no config.json")
    try:
        values = json.loads(path.read_text())
        if not isinstance(values, dict):
            raise ValueError(f"expected a JSON object, got {type(values).__name__}")
        values.pop("conventions", None)
        values.pop("machine", None)
        return config_from_dict(values)
    except (ValueError, TypeError) as error:
        raise ValueError(f"{path} is not a valid herkit config ({error})") from None


def _checkpoint(
    run_dir: Path, agent: Agent, buffer: HerReplayBuffer, state: LoopState, context: Context
) -> None:
    agent_state = {"agent": agent.state_dict(), "torch_rng": torch.get_rng_state()}
    save_checkpoint(run_dir, agent_state, buffer, asdict(state), context)


def _row(state: LoopState, metrics: dict[str, float], episodes: int) -> dict[str, float]:
    return {
        "env_steps": state.env_steps,
        "updates": state.updates,
        "episodes": episodes,
        "wall_s": state.wall_s,
        "eval_s": state.eval_s,
        "sps": state.env_steps / max(state.wall_s, 1e-9),
        "success_rate": state.success_rate,
        **metrics,
    }


def _summary(config: TrainConfig, state: LoopState, world_size: int) -> dict[str, Any]:
    summary: dict[str, Any] = {
        "env_id": config.env_id,
        "algo": config.algo,
        "strategy": config.strategy,
        "seed": config.seed,
        "success_rate": state.success_rate,
        "env_steps": state.env_steps,
        "updates": state.updates,
        "wall_s": round(state.wall_s, 3),
        "world_size": world_size,
    }
    if state.solved_at_env_steps is not None:
        summary["solved_at_env_steps"] = state.solved_at_env_steps
        summary["solved_at_wall_s"] = round(state.solved_at_wall_s or 0.0, 3)
    return summary


class _Progress:
    """A rich progress bar with live success rate and steps/s (silent when disabled)."""

    def __init__(self, config: TrainConfig, done: int, enabled: bool = True) -> None:
        self._bar: Any = None
        if not (config.progress and enabled):
            return
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
        )

        self._bar = Progress(
            TextColumn(f"[bold]{config.env_id}[/] {config.algo}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("success {task.fields[success]}"),
            TextColumn("{task.fields[sps]} steps/s"),
            TimeRemainingColumn(),
            auto_refresh=False,  # a refresh thread would contend with the loop for the GIL
        )
        self._task = self._bar.add_task(
            "train", total=config.steps, completed=done, success="-", sps="-"
        )
        self._bar.start()
        self._last = self._start = (time.perf_counter(), done)

    def update(self, state: LoopState, force: bool = False) -> None:
        if self._bar is None:
            return
        now = time.perf_counter()
        then, steps = self._last
        if now - then < 0.25 and not force:
            return
        if force:  # the last line: the whole run's rate (its last interval held the
            then, steps = self._start  # evaluation, video and checkpoint that end a run)
        sps = (state.env_steps - steps) / max(now - then, 1e-9)
        self._last = (now, state.env_steps)
        success = "-" if np.isnan(state.success_rate) else f"{state.success_rate:.2f}"
        self._bar.update(self._task, completed=state.env_steps, success=success, sps=f"{sps:,.0f}")
        self._bar.refresh()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
