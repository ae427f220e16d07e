"""One training loop: collect -> store -> update -> evaluate -> log -> checkpoint.

Read top to bottom, :func:`train` is the whole algorithm. The vector envs run with
autoreset disabled: a finished env is reset by mask after its final transition is
stored, so the buffer always receives the true last observation of an episode.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from herkit import distributed
from herkit.agents import Agent, make_agent
from herkit.buffer.her import HerReplayBuffer
from herkit.checkpoint import load_agent_state, load_checkpoint, save_checkpoint
from herkit.config import TrainConfig, config_from_dict
from herkit.distributed import Context, DistributedError
from herkit.envs import make_goal_env
from herkit.logging import RunLogger
from herkit.plots import plot_runs


@dataclass
class LoopState:
    """Counters of a run; saved in every checkpoint."""

    env_steps: int = 0
    updates: int = 0
    episodes: int = 0
    wall_s: float = 0.0
    owed_updates: float = 0.0
    next_eval: int = 0
    next_checkpoint: int = 0
    success_rate: float = float("nan")
    solved_at_env_steps: int | None = None
    solved_at_wall_s: float | None = None
    resets: int = 0


def make_vector_env(config: TrainConfig, n_envs: int, seed_offset: int) -> gym.vector.VectorEnv:
    """``n_envs`` copies of the config's env, autoreset disabled.

    The envs step in worker processes (async) when there are several and this process has
    a spare CPU core for them (cores / torchrun's local world size >= 2); otherwise in this
    process, where they cost no pipes and no process switches. The env is first made once
    here, so that a bad id or a non-goal env is reported as a ValueError, not from a worker.
    """
    kwargs = config.env_kwargs_dict()
    make_goal_env(config.env_id, **kwargs).close()
    fns = [lambda: make_goal_env(config.env_id, **kwargs)] * n_envs
    cores_per_process = (os.cpu_count() or 1) // int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
    use_async = n_envs > 1 and cores_per_process >= 2
    vector_cls = gym.vector.AsyncVectorEnv if use_async else gym.vector.SyncVectorEnv
    envs = vector_cls(fns, autoreset_mode=gym.vector.AutoresetMode.DISABLED)
    envs.action_space.seed(config.seed + seed_offset)
    return envs


def build(
    config: TrainConfig,
    envs: gym.vector.VectorEnv,
    with_buffer: bool = True,
    context: Context | None = None,
) -> tuple[Agent, HerReplayBuffer | None]:
    """The agent and (unless ``with_buffer`` is false) the buffer that fit ``envs``.

    In a distributed run the agent joins ``context`` (rank 0's parameters, averaged
    gradients) and each rank's buffer and exploration get a seed of their own.
    """
    context = context or Context()
    space: Any = envs.single_observation_space
    agent = make_agent(
        config.algo,
        config.agent_config(),
        observation_dim=int(np.prod(space["observation"].shape)),
        goal_dim=int(np.prod(space["desired_goal"].shape)),
        action_space=envs.single_action_space,
        reward_range=config.reward_range,
        device=context.device(config.resolved_device()),
        seed=config.seed,
    )
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
        terminal_on_success=config.terminal_on_success,
        seed=_rank_seed(config, context),
    )
    return agent, buffer


def _rank_seed(config: TrainConfig, context: Context) -> int:
    return config.seed + 100_003 * context.rank


def evaluate(agent: Agent, envs: gym.vector.VectorEnv, episodes: int, seed: int) -> float:
    """Success rate of the deterministic policy over ``episodes`` episodes."""
    obs, _ = envs.reset(seed=seed)
    counting = np.arange(envs.num_envs) < episodes  # envs whose current episode counts
    started = int(counting.sum())
    successes: list[float] = []
    while counting.any():
        action = agent.act(obs["observation"], obs["desired_goal"], deterministic=True)
        obs, _, terminated, truncated, info = envs.step(action)
        done = terminated | truncated
        finished = done & counting
        if finished.any():
            success = np.asarray(info.get("is_success", np.zeros(envs.num_envs)), float)
            successes.extend(success[finished].tolist())
            again = finished & (np.cumsum(finished) <= episodes - started)
            started += int(again.sum())
            counting = (counting & ~finished) | again
        obs = _reset_masked(envs, obs, done)
    return float(np.mean(successes))


def _reset_masked(envs: gym.vector.VectorEnv, obs: dict, mask: np.ndarray) -> dict:
    if not mask.any():
        return obs
    fresh, _ = envs.reset(options={"reset_mask": mask})
    return fresh


def train(config: TrainConfig, resume: bool = False) -> dict[str, Any]:
    """Run (or resume) training as configured; returns the run's summary.

    Launched by torchrun, every rank runs this loop on its own envs and buffer (see
    :mod:`herkit.distributed`); env steps are counted over all ranks.
    """
    context = distributed.init(config.resolved_device(), config.dist_timeout_s)
    try:
        summary = _train(config, resume, context)
    except DistributedError:
        raise  # the group is broken: tearing it down can abort the process (gloo threads)
    except BaseException:
        distributed.shutdown(synchronize=False)
        raise
    distributed.shutdown()
    return summary


def _train(config: TrainConfig, resume: bool, context: Context) -> dict[str, Any]:
    run_dir = Path(config.out_dir())
    main = context.is_main
    torch.manual_seed(_rank_seed(config, context))
    torch.set_num_threads(config.torch_threads)
    offset = 1_000 * context.rank
    envs = make_vector_env(config, config.n_envs, seed_offset=offset)
    n_eval = min(config.eval_episodes, config.n_eval_envs)
    eval_envs = make_vector_env(config, n_eval, seed_offset=10_000 + offset)
    agent, new_buffer = build(config, envs, context=context)
    assert new_buffer is not None
    buffer = new_buffer
    if main:  # only now: a bad env id or algorithm leaves no run directory behind
        run_dir.mkdir(parents=True, exist_ok=True)
    context.barrier()
    state = LoopState(next_eval=config.eval_every, next_checkpoint=config.checkpoint_every)
    if resume:
        device = context.device(config.resolved_device())
        agent_state, buffer = load_checkpoint(run_dir, buffer.reward_fn, device, context)
        agent.load_state_dict(agent_state["agent"])
        torch.set_rng_state(agent_state["torch_rng"])
        state = LoopState(**agent_state["loop"])
        state.resets += 1
        buffer.end_episodes()  # the envs restart: episodes in progress end here
    if main:  # also on resume, where --steps may have grown
        (run_dir / "config.json").write_text(json.dumps(config.to_dict(), indent=1))
    logger = (
        RunLogger(run_dir, config.tensorboard, state.env_steps if resume else None)
        if main
        else None
    )
    obs, _ = envs.reset(seed=config.seed + offset + 7919 * state.resets)
    sums: dict[str, float] = {}  # training metrics summed since the last log row
    counts: dict[str, int] = {}
    batch_size = config.agent_config().batch_size
    steps_per_iteration = config.n_envs * context.world_size
    can_update = False
    started = time.perf_counter() - state.wall_s
    progress = _Progress(config, state.env_steps, enabled=main)
    try:
        while state.env_steps < config.steps:
            # collect
            if state.env_steps < config.random_steps:
                action = envs.action_space.sample()
            else:
                action = agent.act(obs["observation"], obs["desired_goal"], deterministic=False)
            next_obs, _, terminated, truncated, info = envs.step(action)
            # store
            buffer.add(obs, action, next_obs, terminated, truncated, info)
            agent.update_normalizer(obs["observation"], obs["desired_goal"])
            done = terminated | truncated
            state.episodes += int(done.sum())
            obs = _reset_masked(envs, next_obs, done)
            state.env_steps += steps_per_iteration
            # update (every rank must agree to start: store-time relabelling holds nothing
            # until an episode has ended, and ranks end episodes at different steps)
            if not can_update and state.env_steps >= config.warmup_steps:
                can_update = context.all_true(len(buffer) > 0)
            if can_update:
                state.owed_updates += config.n_envs * config.updates_per_step
                while state.owed_updates >= 1:
                    batch = buffer.sample(batch_size)
                    for key, value in agent.update(batch).items():
                        sums[key] = sums.get(key, 0.0) + value
                        counts[key] = counts.get(key, 0) + 1
                    if config.prioritized:
                        buffer.update_priorities(batch.indices, agent.priorities)
                    state.updates += 1
                    state.owed_updates -= 1
            # evaluate and log
            finished = state.env_steps >= config.steps
            if state.env_steps >= state.next_eval or finished:
                state.next_eval += config.eval_every
                eval_seed = config.seed + 10_000 + offset + state.env_steps
                success = evaluate(agent, eval_envs, config.eval_episodes, eval_seed)
                state.success_rate = context.mean(success)
                state.wall_s = time.perf_counter() - started
                episodes = int(context.all_sum(np.array([state.episodes]))[0])  # every rank
                if logger is not None:
                    metrics = {key: sums[key] / counts[key] for key in sums}
                    logger.log(_row(state, metrics, episodes))
                sums, counts = {}, {}
                target = config.target_success
                if target is not None and state.success_rate >= target:
                    if state.solved_at_env_steps is None:
                        state.solved_at_env_steps = state.env_steps
                        state.solved_at_wall_s = state.wall_s
                    finished = True
            progress.update(state, force=finished)
            # checkpoint
            if state.env_steps >= state.next_checkpoint or finished:
                state.next_checkpoint += config.checkpoint_every
                state.wall_s = time.perf_counter() - started
                if not agent.parameters_agree():
                    raise DistributedError("the ranks' parameters have diverged")
                _checkpoint(run_dir, agent, buffer, state, context)
            if finished:
                break
    finally:
        progress.close()
        if logger is not None:
            logger.close()
        envs.close()
        eval_envs.close()
    summary = _summary(config, state, context.world_size)
    if main:
        (run_dir / "summary.json").write_text(json.dumps(summary, indent=1))
        plot_runs([run_dir], run_dir / "curve.png", title=f"{config.env_id} {config.algo}+HER")
    return summary


def evaluate_checkpoint(run_dir: str | Path, episodes: int, seed: int) -> dict[str, Any]:
    """Evaluate the policy of a run's checkpoint on fresh envs."""
    config = load_run_config(run_dir)
    envs = make_vector_env(config, min(episodes, config.n_eval_envs), seed_offset=seed)
    try:
        agent = build(config, envs, with_buffer=False)[0]
        agent_state = load_agent_state(run_dir, config.resolved_device())
        agent.load_state_dict(agent_state["agent"])
        state = agent_state["loop"]
        success = evaluate(agent, envs, episodes, seed)
    finally:
        envs.close()
    return {
        "env_id": config.env_id,
        "algo": config.algo,
        "episodes": episodes,
        "success_rate": success,
        "env_steps": state["env_steps"],
    }


def load_run_config(run_dir: str | Path) -> TrainConfig:
    """The TrainConfig a run was started with (from ``RUN/config.json``)."""
    path = Path(run_dir) / "config.json"
    if not path.exists():
        raise ValueError(f"run directory {str(run_dir)!r} has no config.json")
    return config_from_dict(json.loads(path.read_text()))


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
        self._last = (time.perf_counter(), done)

    def update(self, state: LoopState, force: bool = False) -> None:
        if self._bar is None:
            return
        now = time.perf_counter()
        then, steps = self._last
        if now - then < 0.25 and not force:
            return
        sps = (state.env_steps - steps) / max(now - then, 1e-9)
        self._last = (now, state.env_steps)
        success = "-" if np.isnan(state.success_rate) else f"{state.success_rate:.2f}"
        self._bar.update(self._task, completed=state.env_steps, success=success, sps=f"{sps:,.0f}")
        self._bar.refresh()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
