"""Offline training (``herkit train ENV_ID --dataset PATH --algo gciql --steps N``): N
gradient steps on a recorded dataset, evaluated on the env's own evaluation tasks.

The buffer is filled from the dataset (:meth:`herkit.HerReplayBuffer.from_dataset`) with
the offline goal mixes (:mod:`herkit.buffer.offline_goals`: OGBench's value and actor
goals unless ``--value-goals`` / ``--actor-goals`` are given); the normalisers take the
dataset's observations and goals once. No env is stepped for training. Every
``--eval-every`` gradient steps the deterministic policy plays ``--eval-episodes``
episodes of each evaluation task the env declares (``evaluation_tasks``: reset options
such as OGBench's ``{"task_id": k}``; one task, the env's own goals, where it declares
none); ``progress.csv`` gets a row (``updates``, ``wall_s``, ``success_rate`` over the
tasks, ``success_task_K`` each, the losses) and a checkpoint is written as online runs
write theirs. ``summary.json``'s ``success_rate`` is the last evaluation's.
"""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from herkit.buffer.conventions import SuccessSignal
from herkit.buffer.goal_env import compute_reward_of, wrapper_attr
from herkit.buffer.her import HerReplayBuffer
from herkit.buffer.offline_goals import OGBENCH_ACTOR_GOALS, OGBENCH_VALUE_GOALS
from herkit.buffer.settings import HerSettings
from herkit.config.train import TrainConfig
from herkit.rundir.checkpoint import load_checkpoint, save_checkpoint
from herkit.rundir.directory import check_new_run_dir, clear_run_dir, owned_run_dir
from herkit.rundir.logs import RunLogger
from herkit.rundir.paths import RunPaths
from herkit.runtime.console import say
from herkit.runtime.files import write_text
from herkit.training.build import (
    make_run_agent,
    make_vector_env,
    resolve_conventions,
    write_run_config,
)
from herkit.training.evaluation import evaluate

__all__ = ["VALUE_FREE_ALGOS", "offline_settings", "train_offline"]

VALUE_FREE_ALGOS = ("gcbc",)
"""Offline agents without a value function: their buffer draws no value goals."""


def offline_settings(config: TrainConfig) -> HerSettings:
    """The buffer's settings of an offline run: the run's HER settings with OGBench's
    goal mixes where none is given (no value mix for an agent without a value, GCBC)."""
    her = config.her_settings()
    gamma = config.agent_config().gamma
    value = her.value_goals
    if value is None and config.algo not in VALUE_FREE_ALGOS:
        value = OGBENCH_VALUE_GOALS
    actor = OGBENCH_ACTOR_GOALS if her.actor_goals is None else her.actor_goals
    return dataclasses.replace(her, value_goals=value, actor_goals=actor, gamma=gamma)


def train_offline(config: TrainConfig, resume: bool = False) -> dict[str, Any]:
    """Train ``config.algo`` for ``config.steps`` gradient steps on ``config.dataset``
    (see the module); returns the summary."""
    assert config.dataset is not None
    run_dir = Path(config.out_dir())
    with owned_run_dir(run_dir, True):
        replace = False if resume else check_new_run_dir(run_dir, config)
        config, conventions = resolve_conventions(dataclasses.replace(config, out=str(run_dir)))
        torch.manual_seed(config.seed)
        if config.torch_threads:
            torch.set_num_threads(config.torch_threads)
        n_eval = min(config.eval_episodes, config.n_eval_envs)
        envs = make_vector_env(
            config, n_eval, seed_offset=10_000, workers=0, label="evaluation env"
        )
        try:
            return _train(config, conventions, envs, run_dir, resume, replace)
        finally:
            envs.close()


def _train(
    config: TrainConfig, conventions: Any, envs: Any, run_dir: Path, resume: bool, replace: bool
) -> dict[str, Any]:
    device = config.resolved_device()
    agent = make_run_agent(config, envs.single_observation_space, envs.single_action_space, device)
    started = time.perf_counter()
    buffer = HerReplayBuffer.from_dataset(
        config.dataset,
        compute_reward_of(envs),
        settings=offline_settings(config),
        seed=config.seed,
    )
    loaded_s = time.perf_counter() - started
    stored = buffer.storage.data
    agent.update_normalizer(
        stored["observation"][: len(buffer)], stored["achieved_goal"][: len(buffer)]
    )
    updates, wall_s = 0, 0.0
    if resume:
        agent_state, buffer = load_checkpoint(run_dir, buffer.reward_fn, device)
        agent.load_state_dict(agent_state["agent"])
        torch.set_rng_state(agent_state["torch_rng"])
        updates, wall_s = int(agent_state["loop"]["updates"]), float(agent_state["loop"]["wall_s"])
        if updates >= config.steps:
            raise ValueError(
                f"run {str(run_dir)!r} has already trained {updates} gradient steps "
                f"(--steps {config.steps}): pass a larger --steps to extend it"
            )
    elif replace:
        clear_run_dir(run_dir)
    tasks = _evaluation_tasks(envs)
    say(
        f"{'resuming' if resume else 'training'} {config.env_id} offline with {config.algo} "
        f"for {config.steps:,} gradient steps from {config.dataset} ({len(buffer):,} "
        f"transitions, loaded in {loaded_s:.1f} s) in {run_dir}"
    )
    say(
        f"evaluation: {config.eval_episodes} episodes of each of {len(tasks)} task(s) every "
        f"{config.eval_every:,} gradient steps"
    )
    write_run_config(run_dir, config, conventions, buffer, {"loaded_s": loaded_s})
    logger = RunLogger(
        run_dir,
        tensorboard=config.tensorboard,
        step_key="updates",
        resume_from_step=updates if resume else None,
    )
    success_of = SuccessSignal(
        conventions.success_key, buffer.reward_fn, conventions.success_reward, config.her.info_keys
    )
    batch_size = config.agent_config().batch_size
    clock = time.perf_counter() - wall_s
    success = float("nan")
    try:
        while updates < config.steps:
            metrics = agent.update(buffer.sample(batch_size))
            updates += 1
            last = updates == config.steps
            if updates % config.eval_every == 0 or last:
                wall_s = time.perf_counter() - clock
                per_task = [
                    evaluate(
                        agent,
                        envs,
                        config.eval_episodes,
                        config.seed + 10_000 + i,
                        success_of,
                        options=task,
                    ).success_rate
                    for i, task in enumerate(tasks)
                ]
                success = float(np.mean(per_task))
                row = {
                    "env_steps": 0,
                    "updates": updates,
                    "wall_s": wall_s,
                    "success_rate": success,
                    **{f"success_task_{i + 1}": s for i, s in enumerate(per_task)},
                    **{name: float(value) for name, value in metrics.items()},
                }
                logger.log(row)
                say(
                    f"{updates:,} gradient steps: success {success:.2f} "
                    f"({' '.join(f'{s:.2f}' for s in per_task)}), {wall_s:.0f} s"
                )
            if last or (config.checkpoint_every and updates % config.checkpoint_every == 0):
                loop = {"env_steps": 0, "updates": updates, "wall_s": time.perf_counter() - clock}
                save_checkpoint(
                    run_dir,
                    {"agent": agent.state_dict(), "torch_rng": torch.get_rng_state()},
                    buffer,
                    loop,
                )
    finally:
        logger.close()
    summary = {
        "env_id": config.env_id,
        "algo": config.algo,
        "dataset": config.dataset,
        "seed": config.seed,
        "success_rate": success,
        "updates": updates,
        "env_steps": 0,
        "wall_s": round(time.perf_counter() - clock, 3),
        "run_dir": str(run_dir),
    }
    write_text(RunPaths(run_dir).summary, json.dumps(summary, indent=1))
    _draw_curve(run_dir)
    return summary


def _draw_curve(run_dir: Path) -> None:
    """``curve.png`` against gradient steps (skipped, and said, without matplotlib)."""
    try:
        from herkit.presentation.plots import plot_runs

        plot_runs([run_dir], RunPaths(run_dir).curve, x="updates")
    except ModuleNotFoundError as error:
        say(f"curve.png not drawn: {error.name} is missing (herkit's report extra)")


def _evaluation_tasks(envs: Any) -> list[dict[str, Any] | None]:
    """The reset options of the env's evaluation tasks (``evaluation_tasks``), or one task
    of the env's own goals."""
    tasks = wrapper_attr(envs.envs[0], "evaluation_tasks") if hasattr(envs, "envs") else None
    return list(tasks) if tasks else [None]
