"""SB3's own algorithms with herkit's buffer (herkit.sb3) against its HerReplayBuffer.

All but ``replay_buffer_class`` is the same (:func:`sb3_model`); per task and seed the
buffers run at once, one process and core each, the time in ``sample`` measured apart.
``--buffers`` names herkit.sb3's other settings (:data:`VARIANTS`). See docs/guide-sb3.md.

    python benchmarks/sb3_compare.py buffer                    # the default tasks, 3 seeds
    python benchmarks/sb3_compare.py buffer --tasks bitflip --seeds 0
    python benchmarks/sb3_compare.py buffer --table            # docs/experiment-log.md's tables
    python benchmarks/sb3_compare.py buffer --same-data        # what each buffer samples
    python benchmarks/sb3_compare.py buffer --tasks fetchreach-td3 --buffers herkit-finished
    python benchmarks/sb3_compare.py buffer --tasks bitflip --buffers herkit herkit-n3  # n-step
    python benchmarks/sb3_compare.py buffer --tasks parking --buffers herkit-computed --seeds 0 1
    python benchmarks/sb3_compare.py buffer --paired sb3 herkit   # differences, 95 % intervals

Writes sb3_buffer.json (merged by task, buffer, seed).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import common
import numpy as np
from sb3_common import MAZE, learn, sb3_envs, sb3_model

BUFFER_RECORD = common.DOCS / "sb3_buffer.json"
ENTRY = str(Path(__file__).with_name("sb3_compare.py"))
"""The script each run of a pair starts as its ``buffer --worker``."""


@dataclasses.dataclass(frozen=True)
class Task:
    """A task of the buffer comparison: its env (and keyword arguments), algorithm, budget,
    evaluations and the info field of an episode's success."""

    env_id: str
    algo: str
    n_envs: int
    steps: int
    eval_every: int
    eval_episodes: int
    kwargs: dict[str, Any] = dataclasses.field(default_factory=dict)
    success_key: str = "is_success"


BUFFER_TASKS = {
    "bitflip": Task("herkit/BitFlip-v0", "dqn", 1, 20_000, 1_000, 10, {"n_bits": 15}),
    "pointreach": Task("herkit/PointReach-v0", "td3", 1, 4_000, 500, 20),
    "fetchreach": Task("FetchReach-v4", "sac", 2, 10_000, 500, 10),
    "fetchreach-td3": Task("FetchReach-v4", "td3", 2, 10_000, 500, 10),
    "pointmaze": Task("PointMaze_UMaze-v3", "sac", 1, 20_000, 2_000, 20, MAZE, "success"),
    "pointreach-ddpg": Task("herkit/PointReach-v0", "ddpg", 1, 4_000, 500, 20),
    "pointreach-tqc": Task("herkit/PointReach-v0", "tqc", 1, 4_000, 500, 20),
    "parking": Task("highway_env:parking-v0", "sac", 1, 20_000, 2_000, 10),
    "hazard": Task(
        "hazard_reach:HazardReach-v0", "sac", 1, 6_000, 1_000, 20, {"distance_threshold": 0.1}
    ),
}
DEFAULT_TASKS = ("bitflip", "pointreach", "fetchreach", "fetchreach-td3", "pointmaze")
BUFFERS = ("sb3", "herkit")
VARIANTS = {
    "herkit-finished": {},
    "herkit-n3": {"n_steps": 3, "gamma": 0.98},
    "herkit-terminal": {"terminal_on_success": True},
    "herkit-computed": {},
    "herkit-sb3rewards": {"terminal_on_success": False},
    "herkit-terms": {"keep_env_terms": True, "terminal_on_success": False},
    "herkit-ends": {"keep_env_terms": False, "terminal_on_success": True},
    "herkit-sb3rules": {"keep_env_terms": False, "terminal_on_success": False},
    "herkit-both": {"keep_env_terms": True, "terminal_on_success": None},
}
"""Other buffers ``--buffers`` can name, with their herkit.sb3 settings (or, for
:data:`EXPERIMENTS`, a subclass made here)."""


def finished_episodes_only() -> type:
    """An experiment: herkit.sb3's buffer sampling only finished episodes, as SB3's does."""
    from herkit import sb3

    class FinishedEpisodesOnly(sb3.HerReplayBuffer):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            storage = self.buffer.storage
            sample_slots = storage.sample_slots
            storage.sample_slots = (  # type: ignore[method-assign]
                lambda n, rng, closed_only: sample_slots(n, rng, True)
            )

    return FinishedEpisodesOnly


def computed_rewards_only() -> type:
    """An experiment: herkit.sb3's buffer storing ``compute_reward`` as each step's reward."""
    from herkit import sb3

    class ComputedRewardsOnly(sb3.HerReplayBuffer):
        def add(
            self, obs: Any, next_obs: Any, action: Any, reward: Any, done: Any, infos: Any
        ) -> None:
            computed = self._compute_reward(
                np.asarray(next_obs["achieved_goal"]), np.asarray(next_obs["desired_goal"]), {}
            )
            super().add(obs, next_obs, action, computed, done, infos)

    return ComputedRewardsOnly


def sb3_rewards() -> type:
    """An experiment: herkit.sb3's buffer giving ``compute_reward`` alone to relabelled
    samples and the env's reward to real ones, as SB3's does."""
    from herkit import sb3

    class Sb3Rewards(sb3.HerReplayBuffer):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            inner = self.buffer
            goals, sample = inner.relabeller.goals, inner.sample
            relabelled: list[Any] = [None]

            def recorded(*goal_args: Any) -> Any:
                goal, relabel = goals(*goal_args)
                relabelled[0] = relabel
                return goal, relabel

            def sampled(*sample_args: Any, **sample_kwargs: Any) -> Any:
                batch = sample(*sample_args, **sample_kwargs)
                if relabelled[0] is None:
                    return batch
                computed = self._compute_reward(batch.next_achieved_goal, batch.goal, {})
                reward = np.where(relabelled[0], computed, batch.reward).astype(np.float32)
                return dataclasses.replace(batch, reward=reward)

            inner.relabeller.goals = recorded
            inner.sample = sampled  # type: ignore[method-assign]

    return Sb3Rewards


EXPERIMENTS = {
    "herkit-finished": finished_episodes_only,
    "herkit-computed": computed_rewards_only,
    "herkit-sb3rewards": sb3_rewards,
}


def buffer_model(task: str, buffer: str, env: Any, seed: int) -> Any:
    """The SB3 model of ``task`` with SB3's HER buffer or one of herkit's."""
    import stable_baselines3

    from herkit import sb3

    buffer_class = EXPERIMENTS[buffer]() if buffer in EXPERIMENTS else sb3.HerReplayBuffer
    if buffer == "sb3":
        buffer_class = stable_baselines3.HerReplayBuffer
    her = {"n_sampled_goal": 4, "goal_selection_strategy": "future", **VARIANTS.get(buffer, {})}
    return sb3_model(BUFFER_TASKS[task].algo, env, seed, buffer_class, her)


def buffer_worker(task: str, buffer: str, seed: int) -> dict[str, Any]:
    """One training run (the ``--worker``): its evaluations and the time spent sampling."""
    spec = BUFFER_TASKS[task]
    env, eval_env = sb3_envs(spec.env_id, spec.n_envs, seed, spec.kwargs)
    model = buffer_model(task, buffer, env, seed)
    sampling = [0.0]
    replay = model.replay_buffer
    sample = replay.sample

    def timed(*args: Any, **kwargs: Any) -> Any:
        begin = time.perf_counter()
        try:
            return sample(*args, **kwargs)
        finally:
            sampling[0] += time.perf_counter() - begin

    replay.sample = timed
    started = time.perf_counter()
    eval_args = (eval_env, spec.eval_episodes, seed, spec.success_key)
    rows = learn(model, spec.steps, spec.eval_every, *eval_args)
    return {
        "rows": [
            {
                "env_steps": r["env_steps"],
                "wall_s": round(r["wall_s"], 2),
                "success_rate": r["success_rate"],
            }
            for r in rows
        ],
        "wall_s": round(time.perf_counter() - started, 1),
        "sample_s": round(sampling[0], 2),
        "updates": int(model._n_updates),
    }


def run_pair(task: str, seed: int, buffers: tuple[str, ...]) -> None:
    """The buffers' runs of ``task`` with ``seed``, at once; each recorded as it ends."""
    started = {
        buffer: subprocess.Popen(
            [sys.executable, ENTRY, "buffer", "--worker", task, buffer, str(seed)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for buffer in buffers
    }
    for buffer, process in started.items():
        out, err = process.communicate()
        if process.returncode:
            raise RuntimeError(f"{task} {buffer} seed {seed} failed:\n{err[-3000:]}")
        result = json.loads(out.strip().splitlines()[-1])
        rows = result["rows"]
        solved = common.first_at(rows)
        run = {
            "task": task,
            "buffer": buffer,
            "seed": seed,
            **result,
            "first_0.9": solved,
            "final_success": rows[-1]["success_rate"],
            "settings": dataclasses.asdict(BUFFER_TASKS[task]),
            "concurrent_with": [name for name in buffers if name != buffer],
            "code": common.code_version(),
        }
        common.add_run(BUFFER_RECORD, f"{task}/{buffer}/seed{seed}", run, common.machine())
        print(
            f"{task} {buffer} seed {seed}: first 0.9 {solved}, final "
            f"{rows[-1]['success_rate']:.2f}, {result['wall_s']} s "
            f"({result['sample_s']} s sampling)",
            flush=True,
        )


def same_data(task: str, steps: int, batches: int) -> dict[str, dict[str, float]]:
    """Both buffers fed the same ``steps`` random steps, then ``batches`` of 4,096 sampled:
    what each hands the learner."""
    import stable_baselines3

    from herkit import sb3

    spec = BUFFER_TASKS[task]
    env, _ = sb3_envs(spec.env_id, spec.n_envs, 0, spec.kwargs)
    spaces = (100_000, env.observation_space, env.action_space, env, "cpu")
    kwargs = {"n_envs": spec.n_envs, "n_sampled_goal": 4}
    buffers = {
        "sb3": stable_baselines3.HerReplayBuffer(*spaces, **kwargs),
        "herkit": sb3.HerReplayBuffer(*spaces, seed=0, **kwargs),
    }
    env.action_space.seed(0)
    obs = env.reset()
    for _ in range(steps // spec.n_envs):
        action = np.array([env.action_space.sample() for _ in range(spec.n_envs)])
        new_obs, reward, done, infos = env.step(action)
        nxt = {key: value.copy() for key, value in new_obs.items()}
        for i in np.flatnonzero(done):
            for key in nxt:
                nxt[key][i] = infos[i]["terminal_observation"][key]
        for buffer in buffers.values():
            buffer.add(obs, nxt, action, reward, done, infos)
        obs = new_obs
    stats = {}
    for name, buffer in buffers.items():
        batches_drawn = [buffer.sample(4096) for _ in range(batches)]
        reward = np.concatenate([batch.rewards.numpy().ravel() for batch in batches_drawn])
        done = np.concatenate([batch.dones.numpy().ravel() for batch in batches_drawn])
        stats[name] = {
            "samples": int(reward.size),
            "reward_mean": float(reward.mean()),
            "reward_std": float(reward.std()),
            "share_reward_max": float((reward == reward.max()).mean()),
            "done_mean": float(done.mean()),
        }
    return stats


def task_name(task: str) -> str:
    """``bitflip (DQN)``: a task as the tables name it."""
    return f"{task} ({BUFFER_TASKS[task].algo.upper()})"


def buffer_table(tasks: list[str]) -> str:
    """Markdown: per task and buffer, the success over the evaluations, at four budgets and
    over the last 4; env steps to 0.9, wall times and time in ``sample`` per seed."""
    runs = common.read_json(BUFFER_RECORD)["runs"]

    def mean(values: Any) -> str:
        return f"{np.mean(list(values)):.2f}"

    def at(run: dict[str, Any], mark: int) -> float:
        done = [r for r in run["rows"] if r["env_steps"] <= mark]
        return float(done[-1]["success_rate"]) if done else 0.0

    rows = []
    for task in tasks:
        steps = BUFFER_TASKS[task].steps
        marks = [steps // 4, steps // 2, 3 * steps // 4, steps]
        for buffer in (*BUFFERS, *VARIANTS):
            mine = sorted(
                (r for r in runs.values() if r["task"] == task and r["buffer"] == buffer),
                key=lambda r: r["seed"],
            )
            if not mine:
                continue
            rows.append(
                [
                    task_name(task),
                    buffer,
                    ", ".join(str(r["seed"]) for r in mine),
                    mean(np.mean([r["success_rate"] for r in run["rows"]]) for run in mine),
                    " / ".join(mean(at(r, m) for r in mine) for m in marks),
                    mean(last_evaluations(run) for run in mine),
                    " / ".join(
                        f"{r['first_0.9']['env_steps']:,}" if r["first_0.9"] else "never"
                        for r in mine
                    ),
                    " / ".join(f"{r['wall_s']:.0f}" for r in mine),
                    " / ".join(f"{r['sample_s']:.1f}" for r in mine),
                ]
            )
    columns = ["task", "buffer", "seeds", "success: all evaluations"]
    columns += ["at 1/4, 1/2, 3/4, all of the env steps", "last 4 evaluations"]
    columns += ["env steps to 0.9", "wall s, whole run", "s in `sample`"]
    return common.markdown(columns, "lllrlrlll", rows)


def last_evaluations(run: dict[str, Any], count: int = 4) -> float:
    """A run's success over its last ``count`` evaluations."""
    return float(np.mean([row["success_rate"] for row in run["rows"][-count:]]))


def interval(differences: list[float], draws: int = 20_000) -> tuple[float, float]:
    """95 % bootstrap interval of the mean of paired differences (seeded: reproducible)."""
    values = np.asarray(differences)
    rng = np.random.default_rng(0)
    means = rng.choice(values, size=(draws, len(values))).mean(axis=1)
    low, high = np.quantile(means, [0.025, 0.975])
    return float(low), float(high)


def paired(runs: dict[str, Any], task: str, first: str, second: str) -> dict[str, Any] | None:
    """The seeds of ``task`` run with both buffers: their success over the last 4
    evaluations, the mean difference with its 95 % interval, env steps to 0.9 (or None)."""
    pairs = [
        (runs.get(f"{task}/{first}/seed{s}"), runs.get(f"{task}/{second}/seed{s}"))
        for s in range(1_000)
    ]
    pairs = [(a, b) for a, b in pairs if a and b]
    if not pairs:
        return None
    a = [last_evaluations(x) for x, _ in pairs]
    b = [last_evaluations(y) for _, y in pairs]
    both = [
        (x["first_0.9"]["env_steps"], y["first_0.9"]["env_steps"])
        for x, y in pairs
        if x["first_0.9"] and y["first_0.9"]
    ]
    solved = [sum(bool(run["first_0.9"]) for run in side) for side in zip(*pairs, strict=True)]
    return {
        "seeds": len(pairs),
        "first": float(np.mean(a)),
        "second": float(np.mean(b)),
        "solved": solved,
        "difference": float(np.mean(b) - np.mean(a)),
        "interval": interval([y - x for x, y in zip(a, b, strict=True)]),
        "steps": [float(np.mean([pair[side] for pair in both])) for side in (0, 1)] if both else [],
    }


MIN_INTERVAL_SEEDS = 3
"""Paired seeds below which no interval is shown."""


def difference(found: dict[str, Any]) -> str:
    """The mean difference of :func:`paired`, with its interval where there are seeds enough."""
    if found["seeds"] < MIN_INTERVAL_SEEDS:
        return f"{found['difference']:+.2f} (no interval: {found['seeds']} seeds)"
    low, high = found["interval"]
    return f"{found['difference']:+.2f} [{low:+.2f}, {high:+.2f}]"


def paired_table(tasks: list[str], first: str, second: str) -> str:
    """Markdown: per task, :func:`paired`'s figures of ``first`` and ``second``."""
    runs = common.read_json(BUFFER_RECORD)["runs"]
    rows = []
    for task in tasks:
        found = paired(runs, task, first, second)
        if found is not None:
            rows.append(
                [
                    task_name(task),
                    found["seeds"],
                    f"{found['first']:.2f}",
                    f"{found['second']:.2f}",
                    " / ".join(map(str, found["solved"])),
                    difference(found),
                    " / ".join(f"{mean:,.0f}" for mean in found["steps"]) or "-",
                ]
            )
    columns = ["task", "seeds", f"{first}: last 4 evaluations", f"{second}: last 4 evaluations"]
    columns += [f"reached 0.9 ({first} / {second})", "difference, 95 % interval"]
    columns += [f"env steps to 0.9 ({first} / {second})"]
    return common.markdown(columns, "lrrrlll", rows)


RULES = {
    "herkit-sb3rules": ("no", "no"),
    "herkit-terms": ("yes", "no"),
    "herkit-ends": ("no", "yes"),
    "herkit-both": ("yes", "from the env"),
    "herkit": ("no (default)", "from the env, with terms (default)"),
}
"""herkit.sb3's buffers by their rules for relabelled samples: the env's terms kept in the
reward, and a reached goal terminal."""


def rules_table(tasks: list[str]) -> str:
    """Markdown: per task and buffer of :data:`RULES`, its paired figures against SB3's."""
    runs = common.read_json(BUFFER_RECORD)["runs"]
    rows = []
    for task in tasks:
        for buffer, (terms, ends) in RULES.items():
            found = paired(runs, task, "sb3", buffer)
            if found is not None:
                figures = [f"{found['first']:.2f}", f"{found['second']:.2f}", difference(found)]
                rows.append([task_name(task), buffer, terms, ends, found["seeds"], *figures])
    columns = ["task", "herkit.sb3", "env's terms kept", "reached goal terminal", "seeds"]
    columns += ["sb3: last 4 evaluations", "herkit.sb3: last 4 evaluations"]
    columns += ["difference, 95 % interval"]
    return common.markdown(columns, "llllrrrl", rows)


def run_buffer(options: argparse.Namespace) -> None:
    """The ``buffer`` subcommand: run the pairs of runs, or print a table of the records."""
    if options.worker:
        task, name, seed = options.worker
        print(json.dumps(buffer_worker(task, name, int(seed))))
    elif options.table:
        print(buffer_table(options.tasks))
    elif options.paired:
        print(paired_table(list(BUFFER_TASKS), *options.paired))
    elif options.rules:
        print(rules_table(options.rules))
    elif options.same_data:
        record = common.read_json(BUFFER_RECORD)
        found = record.get("same_data", {})
        for task in options.tasks:
            found[task] = {
                "steps": 6_000,
                "code": common.code_version(),
                **same_data(task, 6_000, 25),
            }
            print(task, json.dumps(found[task]), flush=True)
        BUFFER_RECORD.write_text(json.dumps(record | {"same_data": found}, indent=1))
    else:
        for task in options.tasks:
            for seed in options.seeds:
                run_pair(task, seed, tuple(options.buffers))
