"""Everything a training run does before its first step (:func:`start_run`).

It checks the run directory (a new run, or one to resume), asks the env for its
conventions, plans the cores, makes the envs, the agent and the buffer, chooses the
precision, prints what will run, and on resume restores the checkpoint.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import torch

from herkit.agents import Agent
from herkit.agents.settings import UPDATE_MODE_WORDS
from herkit.agents.updates import check_update_mode
from herkit.buffer.conventions import GoalConventions
from herkit.buffer.datasets import RecordedEpisodes, read_for_env
from herkit.buffer.her import HerReplayBuffer
from herkit.config.her import goal_mix_words, her_name
from herkit.config.recipes import recipe_values
from herkit.config.resolve import resolve, run_directory
from herkit.config.train import TrainConfig
from herkit.envs.workers import WorkerVectorEnv
from herkit.presentation.video import render_frame
from herkit.rundir.checkpoint import checkpoint_state, load_checkpoint
from herkit.rundir.directory import check_new_run_dir, clear_run_dir, is_failed_run
from herkit.runtime.console import say
from herkit.runtime.devices import resolved_device
from herkit.runtime.distributed import Context
from herkit.runtime.precision import check_precision
from herkit.training.build import (
    build,
    make_vector_env,
    plan_run_cores,
    saved_machine,
    write_run_config,
)
from herkit.training.parts import RunParts, RunSeeds
from herkit.training.phase import check_steps_left, first_state, saved_state
from herkit.training.run import TrainingRun
from herkit.training.update_plan import choose_update

__all__ = ["start_run"]


def start_run(config: TrainConfig, resume: bool, context: Context) -> TrainingRun:
    """Everything before the first step: check the run directory, resolve the env's
    conventions, make the envs, agent and buffer, choose the precision, say what will
    run, and (on resume) restore the checkpoint."""
    run_dir = run_directory(config)
    main = context.is_main
    replace = False
    if config.dataset is not None and context.active:
        raise ValueError("--dataset trains in one process: run it with herkit, not torchrun")
    if resume:
        _check_resumable(run_dir, config)
    elif main:
        replace = check_new_run_dir(run_dir, config)
    context.barrier()  # every rank has looked before rank 0 creates the directory
    # the settings as resolved with the env's probe (herkit.config.resolve; made here for a
    # config from Python or config.json, handed over by the command line's resolution)
    resolution = resolve(dataclasses.replace(config, out=str(run_dir)))
    config, conventions = resolution.config, resolution.conventions
    assert conventions is not None and resolution.probe is not None
    started = time.perf_counter()
    recorded = None
    if config.dataset is not None and not resume:
        found = resolution.probe
        recorded = read_for_env(
            config.dataset, config.env_id, found.observation_space, found.action_space
        )
    loaded_s = time.perf_counter() - started
    device = context.device(resolved_device(config.device))
    check_precision(config.precision, torch.device(device))
    if config.update_mode != "auto":
        check_update_mode(config.update_mode, torch.device(device))
        if "captured" in config.update_mode and context.active:
            raise ValueError(
                f"update_mode {config.update_mode!r} runs in one process: with torchrun the "
                "ranks average gradients between the steps of an update; use eager or compiled"
            )
    plan = plan_run_cores(config, config.n_envs, config.env_workers)
    config = dataclasses.replace(
        config, torch_threads=plan.torch_threads, env_workers=plan.env_workers
    )
    seeds = RunSeeds(config.seed, context.rank)
    torch.manual_seed(seeds.learner)
    torch.set_num_threads(plan.torch_threads)
    with contextlib.ExitStack() as opened:  # envs may be worker processes: closed on failure
        envs = make_vector_env(
            config, config.n_envs, seeds.training_offset, workers=plan.env_workers, checked=True
        )
        opened.callback(envs.close)
        n_eval = min(config.eval_episodes, config.n_eval_envs)
        eval_envs = make_vector_env(
            config,
            n_eval,
            seed_offset=seeds.evaluation_offset,
            workers=min(plan.env_workers, n_eval),
            label="evaluation env",
            checked=True,
        )
        opened.callback(eval_envs.close)
        video_envs = None
        if config.video_every and main:
            video_envs = _video_envs(config, seed_offset=seeds.video_offset)
            opened.callback(video_envs.close)
        tasks = list(resolution.probe.tasks)  # the evaluation tasks the env declares
        agent, buffer = build(config, envs, context, conventions, recorded)
        machine: dict[str, Any] = {"cores": plan.cores, "core_plan": plan.describe()}
        if buffer.recorded is not None:  # the dataset as the buffer holds it
            _count_states(agent, buffer.recorded)
            machine["dataset"] = _held(buffer.recorded, loaded_s)
        config = _choose_update(config, agent, envs, buffer, context, machine)
        resolution = resolution.with_machine(config)  # threads, precision, update mode
        overlap = config.overlap and envs.workers > 0
        if main:  # only now: a bad env id or algorithm leaves no run directory behind
            if replace:
                if not config.overwrite:
                    say(
                        f"{run_dir} held a run that failed before its first checkpoint: "
                        "replacing it"
                    )
                clear_run_dir(run_dir)
            _announce(
                config, conventions, resume, run_dir, plan.describe(), machine, overlap, len(tasks)
            )
            if not resume:
                say(f"settings: {resolution.describe()}")
        context.barrier()
        state = first_state(config)
        agent_state = None
        if resume:
            started = time.perf_counter()
            agent_state, buffer = load_checkpoint(
                run_dir,
                buffer.reward_fn,
                device,
                context,
                buffer.device,
                buffer.torch_reward_fn,
                room=config.buffer_size if config.steps else None,
            )
            if buffer.recorded is not None:
                machine["dataset"] = _held(buffer.recorded, time.perf_counter() - started)
            agent.load_state_dict(agent_state["agent"])
            torch.set_rng_state(agent_state["torch_rng"])
            state = saved_state(agent_state["loop"], config)
            state.resets += 1
            buffer.end_episodes()  # the envs restart: episodes in progress end here
            if conventions.terminal_on_success is not None:  # maybe decided after it
                buffer.set_ending(conventions.ending)
            machine = saved_machine(run_dir) | machine
        buffer.follow_ending(agent.set_terminal_on_success)  # the buffer holds it
        if main:  # also on resume, where --steps may have grown
            provenance = None if resume else resolution.record()  # a resume keeps the run's
            write_run_config(run_dir, config, conventions, buffer, machine, provenance)
        parts = RunParts(
            config=config,
            conventions=conventions,
            context=context,
            run_dir=run_dir,
            envs=envs,
            eval_envs=eval_envs,
            video_envs=video_envs,
            agent=agent,
            buffer=buffer,
            machine=machine,
            seeds=seeds,
            overlap=overlap,
            tasks=tasks,
        )
        run = TrainingRun(parts, state, agent_state)
        opened.pop_all()  # the run closes its envs from now on
    return run


def _check_resumable(run_dir: Path, config: TrainConfig) -> None:
    """ValueError unless ``run_dir`` holds a checkpoint with steps left with ``config``
    (:func:`~herkit.training.phase.check_steps_left`)."""
    if run_dir.is_dir() and is_failed_run(run_dir):
        raise ValueError(
            f"run {str(run_dir)!r} failed before its first checkpoint, so there is nothing to "
            "resume: run the same command without --resume (it replaces that directory)"
        )
    check_steps_left(run_dir, checkpoint_state(run_dir), config)


def _count_states(agent: Agent, recorded: RecordedEpisodes, chunk: int = 1 << 16) -> None:
    """Feed the dataset's states and their goals to the agent's normalisers (where it
    normalises its inputs), ``chunk`` states at a time."""
    if not agent.inputs.normalize:
        return
    ops = recorded.ops
    observation, goal = recorded.states["observation"], recorded.achieved_goals
    for first in range(0, len(observation), chunk):
        rows = slice(first, first + chunk)
        agent.update_normalizer(ops.to_host(observation[rows]), ops.to_host(goal[rows]))


def _held(recorded: RecordedEpisodes, loaded_s: float) -> dict[str, Any]:
    """What config.json says of the dataset the buffer holds."""
    return {
        "path": None if recorded.source is None else recorded.source.path,
        "transitions": recorded.transitions,
        "episodes": recorded.episodes,
        "bytes_held": recorded.nbytes,
        "loaded_s": round(loaded_s, 3),
    }


def _choose_update(
    config: TrainConfig,
    agent: Agent,
    envs: gym.vector.VectorEnv,
    buffer: HerReplayBuffer,
    context: Context,
    machine: dict[str, Any],
) -> TrainConfig:
    """The precision and update mode (:func:`~herkit.training.update_plan.choose_update`): what is
    given kept, ``auto`` decided by the machine and the command; set on the agent and
    recorded in ``machine``."""
    agent_config = config.agent_config()
    plan = choose_update(
        agent,
        envs.single_observation_space,  # type: ignore[arg-type]
        envs.single_action_space,
        agent_config.hidden,
        agent_config.batch_size,
        precision=config.precision,
        mode=config.update_mode,
        expected_updates=config.offline_steps
        + config.steps * config.updates_per_step / context.world_size,
        offline_updates=config.offline_steps,
        learns_values=buffer.settings.value_goals is not None,
        on_device=buffer.device is not None,
        distributed=context.active,
        all_true=context.all_true if context.active else None,
        tell=say if context.is_main else None,
        actor_goals=buffer.settings.actor_goals is not None,
        subgoals=buffer.settings.subgoal_steps is not None,
    )
    if config.precision == "auto":
        machine["precision"] = f"{plan.precision} (auto: {plan.why})"
    if config.update_mode == "auto":
        machine["update_mode"] = f"{plan.mode} (auto: {'; '.join(plan.notes)})"
    chosen: dict[str, Any] = {"precision": plan.precision, "update_mode": plan.mode}
    return dataclasses.replace(config, **chosen)


def _announce(
    config: TrainConfig,
    conventions: GoalConventions,
    resume: bool,
    run_dir: Path,
    core_plan: str,
    machine: dict[str, Any],
    overlap: bool,
    tasks: int,
) -> None:
    """The lines a run starts with: what trains where, the env's conventions, the cores,
    the learner's batch, the precision, the evaluation, and the conventions' warnings."""
    her_settings = config.her_settings()
    relabelling = her_name(her_settings.values())
    her = "no HER" if relabelling == "none" else f"HER {relabelling}"
    if config.recipe is not None:
        her += f", recipe {config.recipe}"
    task = ", one goal for every episode" if config.fixed_goal else ""
    if config.goal_seed is not None:
        task += f" (the goal of seed {config.goal_seed})"
    if config.shaped_reward is not None:
        task += ", shaped reward lambda={:g} p={:g}".format(*config.shaped_reward)
    if conventions.task:
        task = f" ({conventions.task}){task}"
    doing = "resuming" if resume else "training"
    if config.dataset is None:
        say(
            f"{doing} {config.env_id}{task} with {config.algo} ({her}) for {config.steps:,} env "
            f"steps in {run_dir}"
        )
    else:
        data, held = machine.get("dataset"), ""  # on resume, read with the checkpoint after this
        if data is not None:
            held = (
                f" ({data['transitions']:,} transitions in {data['episodes']:,} episodes, "
                f"{data['bytes_held'] / 2**20:,.0f} MiB held, read in {data['loaded_s']:.1f} s)"
            )
        then = f", then {config.steps:,} env steps" if config.steps else ""
        say(
            f"{doing} {config.env_id}{task} with {config.algo} on {config.dataset}{held}: "
            f"{config.offline_steps:,} gradient steps on it{then}, in {run_dir}"
        )
        mixes = goal_mix_words(her_settings.value_goals, her_settings.actor_goals)
        if her_settings.subgoal_steps is not None:  # HIQL's
            mixes += f", subgoals {her_settings.subgoal_steps} steps on"
        say(f"goals: {mixes} (current, future, random states; OGBench's rules)")
    say(f"{config.env_id}: {conventions.describe()}")
    say(f"machine: {core_plan}")
    batch = config.agent_config().batch_size
    if config.offline_steps:
        say(f"learner: batch {batch} per gradient step on the dataset")
    if config.steps:
        say(
            f"learner: batch {batch} x {config.updates_per_step:g} updates per env step = "
            f"{batch * config.updates_per_step:g} samples per env step"
        )
    given = "given"
    if config.recipe is not None and recipe_values(config.recipe).get("precision") == (
        config.precision
    ):
        given = f"set by --recipe {config.recipe}"
    say(f"precision: {machine.get('precision', f'{config.precision} ({given})')}")
    mode = config.update_mode
    why = machine.get("update_mode", f"{mode} (given)").removeprefix(mode).strip()
    say(f"update mode: {mode}: {UPDATE_MODE_WORDS.get(mode, mode)} {why}")
    if overlap:
        say(
            "the envs step while the networks update: an action comes from the parameters "
            "one update batch behind (--no-overlap to wait for the envs)"
        )
    each = f" of each of {tasks} tasks" if tasks > 1 else ""
    every = [
        f"every {config.eval_every:,} {unit}"
        for unit, steps in (
            ("gradient steps on the dataset", config.offline_steps),
            ("env steps", config.steps),
        )
        if steps
    ]
    episodes = f"{config.eval_episodes} episode{'s' if config.eval_episodes != 1 else ''}"
    say(f"evaluation: {episodes}{each} {', then '.join(every)}")
    for warning in conventions.warnings:
        say(f"warning: {warning}")


def _video_envs(config: TrainConfig, seed_offset: int) -> WorkerVectorEnv:
    """One env that renders rgb_array frames, checked to draw one now (not after hours)."""
    envs = make_vector_env(
        config, 1, seed_offset=seed_offset, render_mode="rgb_array", label="video env"
    )
    try:
        envs.reset(seed=config.seed + seed_offset)
        render_frame(envs)
    except BaseException:
        envs.close()
        raise
    return envs
