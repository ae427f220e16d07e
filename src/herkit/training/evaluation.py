"""Evaluating a policy: success rate, return and length of whole episodes, and optionally
their frames for a video.

The same function scores the periodic evaluations of training and ``herkit eval``, and
success is read by the env's own convention (:class:`herkit.buffer.conventions.SuccessSignal`).
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from herkit.agents import Agent
from herkit.buffer.conventions import SuccessSignal
from herkit.buffer.goal_env import wrapper_attr
from herkit.envs.workers import WorkerVectorEnv
from herkit.presentation.video import label_frames, render_frame

__all__ = ["EvalResult", "evaluate", "evaluate_run"]


@dataclass
class EvalResult:
    """Per-episode outcomes of an evaluation, in the order the episodes ended."""

    successes: list[float] = field(default_factory=list)
    """1.0 / 0.0 per episode (NaN where the env has no success signal)."""
    returns: list[float] = field(default_factory=list)
    """The sum of the env's rewards per episode."""
    lengths: list[int] = field(default_factory=list)
    """Steps per episode."""

    @property
    def success_rate(self) -> float:
        """Mean success over the episodes."""
        return float(np.mean(self.successes)) if self.successes else math.nan

    @property
    def mean_return(self) -> float:
        """Mean episode return."""
        return float(np.mean(self.returns)) if self.returns else math.nan

    @property
    def mean_length(self) -> float:
        """Mean episode length in steps."""
        return float(np.mean(self.lengths)) if self.lengths else math.nan

    @classmethod
    def joined(cls, results: list[EvalResult]) -> EvalResult:
        """The episodes of ``results``, one after another."""
        return cls(*([x for r in results for x in getattr(r, f.name)] for f in fields(cls)))

    def summary(self) -> dict[str, float | int]:
        """Episodes, success rate, mean return and mean length, as plain numbers rounded to
        what they are worth (4 places; 0.228, not 0.22800000000000004)."""
        return {
            "episodes": len(self.successes),
            "success_rate": round(self.success_rate, 4),
            "mean_return": round(self.mean_return, 4),
            "mean_length": round(self.mean_length, 4),
        }


def episode_seeds(key: Sequence[int], episodes: int) -> list[int]:
    """The reset seeds of the ``episodes`` episodes of one evaluation (of one task), each a
    function of the evaluation's ``key`` (non-negative integers: the run's seed, the envs'
    offset, the phase and step at which it runs, the task's index: :meth:`Phase.episode_key
    <herkit.training.phase.Phase.episode_key>`) and the episode's index alone, whichever env
    or worker plays it."""
    if any(part < 0 for part in key):
        raise ValueError(f"an evaluation's key must be non-negative integers, got {tuple(key)}")
    return [
        int(np.random.SeedSequence([*key, episode]).generate_state(1)[0])
        for episode in range(episodes)
    ]


def evaluate(
    agent: Agent,
    envs: WorkerVectorEnv,
    seeds: Sequence[int],
    success_of: SuccessSignal,
    deterministic: bool = True,
    frames: list[np.ndarray] | None = None,
    options: dict[str, Any] | None = None,
    on_episode: Callable[[int], None] | None = None,
) -> EvalResult:
    """Play one whole episode per seed of ``seeds`` on ``envs`` (autoreset disabled) with
    the policy: episode ``j`` starts with ``reset(seed=seeds[j])``
    (:func:`episode_seeds`), on whichever env is free.

    An episode's success is ``success_of`` at its last step. Where ``frames`` is a list, the
    frame after every step is appended to it (``envs`` must be one env made with
    ``render_mode="rgb_array"``), labelled with the episode's number and outcome; there is
    one frame per step played. ``options`` go to every reset (an env's evaluation task,
    e.g. OGBench's ``{"task_id": 1}``). ``on_episode`` is called with the number of episodes
    ended after each one ends.
    """
    if frames is not None and envs.num_envs != 1:
        raise ValueError(f"recording frames needs one env, got {envs.num_envs}")
    episodes = len(seeds)
    first = [int(seeds[i]) if i < episodes else None for i in range(envs.num_envs)]
    obs, _ = envs.reset(seed=first, options=options)
    counting = np.arange(envs.num_envs) < episodes  # envs whose current episode counts
    started = int(counting.sum())
    returns = np.zeros(envs.num_envs)
    lengths = np.zeros(envs.num_envs, dtype=np.int64)
    result = EvalResult()
    episode_frames: list[np.ndarray] = []
    while counting.any():
        action = agent.act(obs["observation"], obs["desired_goal"], deterministic=deterministic)
        obs, reward, terminated, truncated, info = envs.step(action)
        returns += reward
        lengths += 1
        if frames is not None:
            episode_frames.append(render_frame(envs))
        done = terminated | truncated
        finished = done & counting
        following: list[int | None] | None = None  # the seeds of the episodes started next
        if finished.any():
            success = success_of(info, obs)
            if success is None:
                success = np.full(envs.num_envs, math.nan)
            result.successes.extend(success[finished].tolist())
            result.returns.extend(returns[finished].tolist())
            result.lengths.extend(lengths[finished].tolist())
            if frames is not None:
                number = len(result.successes)
                outcome = None if math.isnan(success[0]) else bool(success[0])
                word = {True: "success", False: "failure", None: "no success signal"}[outcome]
                text = f"episode {number}/{episodes}: {word}"
                frames.extend(label_frames(episode_frames, text, outcome))
            if on_episode is not None:
                on_episode(len(result.successes))
            again = finished & (np.cumsum(finished) <= episodes - started)
            following = [None] * envs.num_envs
            for offset, env in enumerate(np.flatnonzero(again)):
                following[env] = int(seeds[started + offset])
            started += int(again.sum())
            counting = (counting & ~finished) | again
        if done.any():
            returns[done] = 0.0
            lengths[done] = 0
            episode_frames = []
            obs, _ = envs.reset(
                seed=following,
                options={**(options or {}), "reset_mask": done},
            )
    return result


def evaluation_tasks(env: gym.Env) -> list[dict[str, Any] | None]:
    """The reset options of the evaluation tasks that ``env`` declares (its
    ``evaluation_tasks``, e.g. OGBench's ``{"task_id": k}``), or ``[None]``: one task, the
    goals the env draws itself."""
    tasks = wrapper_attr(env, "evaluation_tasks")
    return list(tasks) if tasks else [None]


def evaluate_tasks(
    agent: Agent,
    envs: WorkerVectorEnv,
    episodes: int,
    key: Sequence[int],
    success_of: SuccessSignal,
    tasks: list[dict[str, Any] | None],
    deterministic: bool = True,
) -> list[EvalResult]:
    """:func:`evaluate` with ``episodes`` episodes of each of ``tasks`` (reset options),
    task ``i``'s seeded by :func:`episode_seeds` of ``(*key, i)``; each task's result."""
    return [
        evaluate(
            agent, envs, episode_seeds((*key, i), episodes), success_of, deterministic, options=task
        )
        for i, task in enumerate(tasks)
    ]


EVAL_COMMAND_OFFSET = 30_000
"""The offset to ``herkit eval --seed`` in its evaluations' keys (a run's evaluations are at
10,000 and up, its videos at 20,000: :class:`herkit.training.parts.RunSeeds`)."""


def evaluate_run(
    run_dir: str | Path,
    episodes: int,
    seed: int,
    deterministic: bool = True,
    video: str | Path | None = None,
    device: str = "cpu",
    env_id: str | None = None,
) -> dict[str, Any]:
    """Evaluate the policy of a run's checkpoint on fresh envs, as training evaluates it
    (success by the env's own convention; ``episodes`` of each evaluation task the env
    declares, their success rates in ``tasks``, the mean over them in ``success_rate``);
    with ``video``, also write the episodes (of the env's own goals) to that ``.mp4`` or
    ``.gif`` file (played one after another on a single env, the time it will take said
    first and each episode said as it ends). ``env_id`` makes another env id than the run's
    (see :func:`herkit.training.policy.load_policy`). The same arguments give the same
    episodes: episode ``j`` of task ``i`` is seeded by :func:`episode_seeds` of ``(seed,
    30_000, i)``."""
    from herkit.buffer.goal_env import compute_reward_of
    from herkit.presentation.video import check_video_path, write_video
    from herkit.training.build import make_run_env, make_vector_env, resolve_conventions
    from herkit.training.policy import load_policy

    if episodes < 1:
        raise ValueError(f"--episodes must be >= 1, got {episodes}")
    if seed < 0:
        raise ValueError(f"--seed must be >= 0, got {seed}")
    if video is not None:
        video = check_video_path(video)
    policy = load_policy(run_dir, device=device, env_id=env_id)
    config, conventions = resolve_conventions(policy.config)
    n_envs = 1 if video is not None else min(episodes, config.n_eval_envs)
    render_mode = "rgb_array" if video is not None else None
    envs = make_vector_env(
        config, n_envs, seed_offset=seed, render_mode=render_mode, label="evaluation env"
    )
    frames: list[np.ndarray] | None = [] if video is not None else None
    on_episode = None
    try:
        success_of = SuccessSignal(
            conventions.success_key,
            compute_reward_of(envs),
            conventions.success_reward,
            config.her.info_keys,
        )
        tasks: list[dict[str, Any] | None] = [None]
        if video is None:  # the tasks the env declares, read from an env made and closed
            with contextlib.closing(make_run_env(config)) as env:
                tasks = evaluation_tasks(env)
        else:
            on_episode = VideoProgress(envs, episodes)
        key = (seed, EVAL_COMMAND_OFFSET)
        results = [
            evaluate(
                policy.agent,
                envs,
                episode_seeds((*key, i), episodes),
                success_of,
                deterministic,
                frames,
                options=task,
                on_episode=on_episode,
            )
            for i, task in enumerate(tasks)
        ]
        fps = float(envs.metadata.get("render_fps") or 30)
    finally:
        envs.close()
    rates = [r.success_rate for r in results]
    result = EvalResult.joined(results)
    out: dict[str, Any] = {
        "env_id": config.env_id,
        "algo": config.algo,
        **result.summary(),
        "success_rate": round(float(np.mean(rates)), 4),
        "deterministic": deterministic,
        "success_key": conventions.success_key,
        "env_steps": policy.env_steps,
        "updates": policy.updates,
        "dataset": config.dataset,
        "episodes_per_task": episodes,
    }
    if len(tasks) > 1:  # the env's evaluation tasks, `episodes` each
        out["tasks"] = [round(rate, 4) for rate in rates]
    if video is not None and frames is not None:
        out["video"] = str(write_video(video, frames, fps))
        out["frames"] = len(frames)
    return out


class VideoProgress:
    """What a recording of ``episodes`` episodes on ``envs`` (one env that renders) will
    take, said at once from the time of one frame, and each episode said as it ends, with
    the time left at the pace so far: frames are drawn on the CPU, 0.15 s each for an
    OGBench maze, so a video of long episodes takes minutes."""

    def __init__(self, envs: WorkerVectorEnv, episodes: int) -> None:
        from herkit.runtime.console import clock, say

        self.episodes = episodes
        self.started = time.perf_counter()
        envs.reset(seed=0)
        render_frame(envs)
        frame_s = time.perf_counter() - self.started
        limit = episode_limit(envs)
        frames = f"at most {episodes * limit:,} frames" if limit else "its frames"
        worst = f": up to about {clock(episodes * limit * frame_s)}" if limit else ""
        say(
            f"recording {episodes} episode{'s' * (episodes != 1)} ({frames}, "
            f"{frame_s:.2f} s a frame here){worst}"
        )
        self.started = time.perf_counter()

    def __call__(self, ended: int) -> None:
        """Say that ``ended`` episodes are recorded, and the time left at this pace."""
        from herkit.runtime.console import clock, say

        spent = time.perf_counter() - self.started
        left = spent / ended * (self.episodes - ended)
        tail = f", about {clock(left)} left" if ended < self.episodes else ""
        say(f"episode {ended}/{self.episodes} recorded in {clock(spent)}{tail}")


def episode_limit(envs: WorkerVectorEnv) -> int | None:
    """The most steps an episode of ``envs`` lasts: its spec's ``max_episode_steps``, or
    the ``max_steps`` of an env that counts its own (herkit's bit flipping and grid world:
    they depend on its size); None where neither says."""
    limit = getattr(envs.spec, "max_episode_steps", None)
    if limit is None and not envs.workers:
        limit = getattr(envs.envs[0].unwrapped, "max_steps", None)
    return int(limit) if isinstance(limit, int | np.integer) else None
