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

With ``--online-steps M`` the run then goes on online (:func:`online_config`): M env steps
in one env, into the same buffer (the dataset plus room for ``--buffer-size`` steps, so
the recorded episodes are kept), by the loop of online runs (:mod:`herkit.training.loop`),
which evaluates on the same tasks; ``herkit train --resume RUN --online-steps M`` does the
same for a finished offline run.
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch

from herkit.buffer.conventions import SuccessSignal
from herkit.buffer.goal_env import compute_reward_of
from herkit.buffer.her import HerReplayBuffer
from herkit.buffer.offline_goals import OGBENCH_ACTOR_GOALS, OGBENCH_VALUE_GOALS
from herkit.buffer.settings import HerSettings
from herkit.config.her import RunHerSettings
from herkit.config.train import TrainConfig
from herkit.presentation.presenter import Presenter
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
from herkit.training.evaluation import evaluate_tasks, evaluation_tasks
from herkit.training.schedule import first_state
from herkit.training.state import LoopState

__all__ = ["VALUE_FREE_ALGOS", "offline_settings", "online_config", "train_offline"]

EVALUATION_SEED = 10_000
"""Added to the run's seed for the evaluation envs and their episodes."""

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
            config, n_eval, seed_offset=EVALUATION_SEED, workers=0, label="evaluation env"
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
    state = first_state(config)
    started = time.perf_counter()
    if resume:
        agent_state, buffer = load_checkpoint(run_dir, compute_reward_of(envs), device)
        agent.load_state_dict(agent_state["agent"])
        torch.set_rng_state(agent_state["torch_rng"])
        state = LoopState(**agent_state["loop"])
        if state.updates >= config.steps:
            if config.online_steps:  # on to the online steps
                return {"success_rate": state.success_rate, "updates": state.updates}
            raise ValueError(
                f"run {str(run_dir)!r} has already trained {state.updates} gradient steps "
                f"(--steps {config.steps}): pass a larger --steps to extend it, or "
                "--online-steps to go on online"
            )
    else:
        buffer = HerReplayBuffer.from_dataset(
            config.dataset,
            compute_reward_of(envs),
            room=config.buffer_size,
            settings=offline_settings(config),
            seed=config.seed,
        )
        recorded = buffer.recorded
        assert recorded is not None
        agent.update_normalizer(
            recorded.states["observation"], recorded.states["observation"][:, : agent.goal_dim]
        )
        if replace:
            clear_run_dir(run_dir)
    loaded_s = time.perf_counter() - started
    tasks = evaluation_tasks(envs.envs[0])
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
        resume_from_step=state.updates if resume else None,
    )
    success_of = SuccessSignal(
        conventions.success_key, buffer.reward_fn, conventions.success_reward, config.her.info_keys
    )
    batch_size = config.agent_config().batch_size
    clock = time.perf_counter() - state.wall_s
    try:
        while state.updates < config.steps:
            metrics = agent.update(buffer.sample(batch_size))
            state.updates += 1
            last = state.updates == config.steps
            if state.updates % config.eval_every == 0 or last:
                state.wall_s = time.perf_counter() - clock
                seed = config.seed + EVALUATION_SEED
                state.success_rate, per_task = evaluate_tasks(
                    agent, envs, config.eval_episodes, seed, success_of, tasks
                )
                logger.log(
                    {
                        "env_steps": 0,
                        "updates": state.updates,
                        "wall_s": state.wall_s,
                        "success_rate": state.success_rate,
                        **{f"success_task_{i + 1}": s for i, s in enumerate(per_task)},
                        **{name: float(value) for name, value in metrics.items()},
                    }
                )
                say(
                    f"{state.updates:,} gradient steps: success {state.success_rate:.2f} "
                    f"({' '.join(f'{s:.2f}' for s in per_task)}), {state.wall_s:.0f} s"
                )
            if last or state.updates % config.checkpoint_every == 0:
                state.wall_s = time.perf_counter() - clock
                agent_state = {"agent": agent.state_dict(), "torch_rng": torch.get_rng_state()}
                save_checkpoint(run_dir, agent_state, buffer, asdict(state))
    finally:
        logger.close()
    summary = {
        "env_id": config.env_id,
        "algo": config.algo,
        "dataset": config.dataset,
        "seed": config.seed,
        "success_rate": state.success_rate,
        "updates": state.updates,
        "env_steps": 0,
        "wall_s": round(time.perf_counter() - clock, 3),
        "run_dir": str(run_dir),
    }
    write_text(RunPaths(run_dir).summary, json.dumps(summary, indent=1))
    Presenter(run_dir, f"{config.env_id} {config.algo} offline").final()
    return summary


def online_config(config: TrainConfig) -> TrainConfig:
    """The settings of an offline run's online steps (``--online-steps``): the run goes on
    in its env for that many env steps, into the buffer that holds the dataset."""
    her = RunHerSettings(**(offline_settings(config).values() | {"gamma": None}))
    return dataclasses.replace(
        config, dataset=None, online_steps=0, steps=config.online_steps, her=her
    )
