"""Evaluating a policy: success rate, return and length of whole episodes, and optionally
their frames for a video.

The same function scores the periodic evaluations of training and ``herkit eval``, and
success is read by the env's own convention (:class:`herkit.buffer.conventions.SuccessSignal`).
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from herkit.agents import Agent
from herkit.buffer.conventions import SuccessSignal
from herkit.buffer.goal_env import wrapper_attr
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


def evaluate(
    agent: Agent,
    envs: gym.vector.VectorEnv,
    episodes: int,
    seed: int,
    success_of: SuccessSignal,
    deterministic: bool = True,
    frames: list[np.ndarray] | None = None,
    options: dict[str, Any] | None = None,
) -> EvalResult:
    """Play ``episodes`` whole episodes on ``envs`` (autoreset disabled) with the policy.

    An episode's success is ``success_of`` at its last step. Where ``frames`` is a list, the
    frame after every step is appended to it (``envs`` must be one env made with
    ``render_mode="rgb_array"``), labelled with the episode's number and outcome; there is
    one frame per step played. ``options`` go to every reset (an env's evaluation task,
    e.g. OGBench's ``{"task_id": 1}``).
    """
    if frames is not None and envs.num_envs != 1:
        raise ValueError(f"recording frames needs one env, got {envs.num_envs}")
    obs, _ = envs.reset(seed=seed, options=options)
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
            again = finished & (np.cumsum(finished) <= episodes - started)
            started += int(again.sum())
            counting = (counting & ~finished) | again
        if done.any():
            returns[done] = 0.0
            lengths[done] = 0
            episode_frames = []
            obs, _ = envs.reset(options={**(options or {}), "reset_mask": done})
    return result


def evaluation_tasks(env: gym.Env) -> list[dict[str, Any] | None]:
    """The reset options of the evaluation tasks that ``env`` declares (its
    ``evaluation_tasks``, e.g. OGBench's ``{"task_id": k}``), or ``[None]``: one task, the
    goals the env draws itself."""
    tasks = wrapper_attr(env, "evaluation_tasks")
    return list(tasks) if tasks else [None]


def evaluate_tasks(
    agent: Agent,
    envs: gym.vector.VectorEnv,
    episodes: int,
    seed: int,
    success_of: SuccessSignal,
    tasks: list[dict[str, Any] | None],
) -> tuple[float, list[float]]:
    """:func:`evaluate` with ``episodes`` episodes of each of ``tasks`` (reset options);
    returns the mean success over the tasks and each task's."""
    per_task = [
        evaluate(agent, envs, episodes, seed + i, success_of, options=task).success_rate
        for i, task in enumerate(tasks)
    ]
    return float(np.mean(per_task)), per_task


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
    declares, their success rates in ``tasks``); with ``video``, also write the episodes
    (of the env's own goals) to that ``.mp4`` or ``.gif`` file (played one after another on
    a single env). ``env_id`` makes another env id than the run's (see
    :func:`herkit.training.policy.load_policy`)."""
    from herkit.buffer.goal_env import compute_reward_of
    from herkit.presentation.video import check_video_path, write_video
    from herkit.training.build import make_run_env, make_vector_env, resolve_conventions
    from herkit.training.policy import load_policy

    if episodes < 1:
        raise ValueError(f"--episodes must be >= 1, got {episodes}")
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
        results = [
            evaluate(
                policy.agent,
                envs,
                episodes,
                seed + i,
                success_of,
                deterministic,
                frames,
                options=task,
            )
            for i, task in enumerate(tasks)
        ]
        result = EvalResult.joined(results)
        fps = float(envs.metadata.get("render_fps") or 30)
    finally:
        envs.close()
    out: dict[str, Any] = {
        "env_id": config.env_id,
        "algo": config.algo,
        **result.summary(),
        "deterministic": deterministic,
        "success_key": conventions.success_key,
        "env_steps": policy.env_steps,
    }
    if len(tasks) > 1:  # the env's evaluation tasks, `episodes` each
        out["tasks"] = [r.success_rate for r in results]
    if video is not None and frames is not None:
        out["video"] = str(write_video(video, frames, fps))
        out["frames"] = len(frames)
    return out
