"""SB3's own algorithms with herkit's buffer (herkit.sb3) against SB3's HerReplayBuffer.

Everything but the ``replay_buffer_class`` is the same on both sides. Tasks (herkit's envs,
then envs herkit's authors did not write):

- ``bitflip``: ``DQN`` on ``herkit/BitFlip-v0`` (15 bits), 20,000 env steps: net [256],
  batch 256, Adam 1e-3, gamma 0.98, tau 0.01 every 4 steps, epsilon 0.5, one update per
  4 env steps after 256 steps.
- ``pointreach``: ``TD3`` on ``herkit/PointReach-v0``, 4,000 env steps.
- ``fetchreach``: ``SAC`` on ``FetchReach-v4`` (gymnasium-robotics) with 2 envs
  (DummyVecEnv), 10,000 env steps.
- ``fetchreach-td3``: the same with ``TD3``.
- ``pointreach-ddpg``, ``pointreach-tqc``: ``DDPG`` and sb3-contrib's ``TQC`` on
  PointReach, 4,000 env steps (TQC needs sb3-contrib: ``pip install 'herkit[bench]'``).
- ``pointmaze``: ``SAC`` on ``PointMaze_UMaze-v3`` (gymnasium-robotics; 0/1 rewards, success
  in ``info["success"]``, ``continuing_task=False``: episodes end on success, else after 100
  steps), 20,000 env steps.
- ``parking``: ``SAC`` on highway-env's ``parking-v0`` (a -5 collision penalty outside
  ``compute_reward``; episodes end on a crash or on success), 20,000 env steps. Not in the
  default list: about 15 minutes per run on one core.
- ``hazard``: ``SAC`` on ``HazardReach-v0`` (``benchmarks/hazard_reach.py``: PointReach
  around a hazard disc whose crash costs -5 outside ``compute_reward`` and ends the episode,
  as reaching the goal does; neither declared; success within 0.1), 6,000 env steps. Not in
  the default list.

SAC and TD3: 3x256, batch 256, Adam 1e-3, gamma 0.98, tau 0.05, one update per step of the
vector env after 1,000 env steps (acting at random before); SAC's entropy coefficient
learned from 0.1, TD3's action noise N(0, 0.2). Future k = 4 everywhere, buffer 1,000,000.

For each task and seed the two runs go at once, one per core, each its own process on one
torch thread, so both meet the same machine. Evaluation: every ``eval_every`` env steps,
``eval_episodes`` episodes of the deterministic policy on a separate env (success from
the env's success field at an episode's end), in the wall time. The time spent inside
``replay_buffer.sample`` is measured separately.

    python benchmarks/sb3_buffer.py                           # the default tasks, 3 seeds
    python benchmarks/sb3_buffer.py --tasks bitflip --seeds 0
    python benchmarks/sb3_buffer.py --table                   # the tables of docs/experiment-log.md
    python benchmarks/sb3_buffer.py --same-data               # what each buffer samples
    python benchmarks/sb3_buffer.py --tasks fetchreach-td3 --buffers herkit-finished
    python benchmarks/sb3_buffer.py --tasks bitflip --buffers herkit herkit-n3  # n-step
    python benchmarks/sb3_buffer.py --tasks parking --buffers herkit-computed --seeds 0 1
    python benchmarks/sb3_buffer.py --paired sb3 herkit      # differences, 95 % intervals

Needs stable-baselines3 (``bash install.sh sb3``), gymnasium-robotics for FetchReach and
PointMaze (``bash install.sh robotics``) and highway-env for parking. Writes
docs/sb3_buffer.json (merged by task, buffer, seed).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DOCS, add_run, code_version, machine, sb3_success_rate

RECORD = DOCS / "sb3_buffer.json"
TASKS: dict[str, dict[str, Any]] = {
    "bitflip": {
        "env_id": "herkit/BitFlip-v0",
        "kwargs": {"n_bits": 15},
        "algo": "dqn",
        "n_envs": 1,
        "steps": 20_000,
        "eval_every": 1_000,
        "eval_episodes": 10,
    },
    "pointreach": {
        "env_id": "herkit/PointReach-v0",
        "kwargs": {},
        "algo": "td3",
        "n_envs": 1,
        "steps": 4_000,
        "eval_every": 500,
        "eval_episodes": 20,
    },
    "fetchreach": {
        "env_id": "FetchReach-v4",
        "kwargs": {},
        "algo": "sac",
        "n_envs": 2,
        "steps": 10_000,
        "eval_every": 500,
        "eval_episodes": 10,
    },
    "fetchreach-td3": {
        "env_id": "FetchReach-v4",
        "kwargs": {},
        "algo": "td3",
        "n_envs": 2,
        "steps": 10_000,
        "eval_every": 500,
        "eval_episodes": 10,
    },
    "pointmaze": {
        "env_id": "PointMaze_UMaze-v3",
        "algo": "sac",
        "n_envs": 1,
        "kwargs": {"continuing_task": False, "max_episode_steps": 100},
        "steps": 20_000,
        "eval_every": 2_000,
        "eval_episodes": 20,
        "success_key": "success",
    },
    "pointreach-ddpg": {
        "env_id": "herkit/PointReach-v0",
        "kwargs": {},
        "algo": "ddpg",
        "n_envs": 1,
        "steps": 4_000,
        "eval_every": 500,
        "eval_episodes": 20,
    },
    "pointreach-tqc": {
        "env_id": "herkit/PointReach-v0",
        "kwargs": {},
        "algo": "tqc",
        "n_envs": 1,
        "steps": 4_000,
        "eval_every": 500,
        "eval_episodes": 20,
    },
    "parking": {
        "env_id": "highway_env:parking-v0",
        "kwargs": {},
        "algo": "sac",
        "n_envs": 1,
        "steps": 20_000,
        "eval_every": 2_000,
        "eval_episodes": 10,
    },
    "hazard": {
        "env_id": "hazard_reach:HazardReach-v0",
        "kwargs": {"distance_threshold": 0.1},
        "algo": "sac",
        "n_envs": 1,
        "steps": 6_000,
        "eval_every": 1_000,
        "eval_episodes": 20,
    },
}
DEFAULT_TASKS = ("bitflip", "pointreach", "fetchreach", "fetchreach-td3", "pointmaze")
BUFFERS = ("sb3", "herkit")
"""The pair each seed runs by default."""
VARIANTS = (
    "herkit-finished",
    "herkit-n3",
    "herkit-terminal",
    "herkit-computed",
    "herkit-sb3rewards",
    "herkit-terms",
    "herkit-ends",
    "herkit-sb3rules",
    "herkit-both",
)
"""Other buffers ``--buffers`` can name: herkit.sb3 sampling finished episodes only (an
experiment), with 3-step returns (``n_steps=3, gamma=0.98``), with
``terminal_on_success=True`` (what ``herkit train`` learns of an env that ends its episodes
on success without declaring it, such as parking), and storing ``compute_reward`` in place
of the env's step reward (an experiment: no sample keeps the terms ``compute_reward``
lacks, such as parking's crash penalty), and with SB3's rewards and flags (an experiment:
a relabelled sample gets ``compute_reward`` alone, a real one the env's reward, and a
reached relabelled goal is not terminal); and herkit's two rules for relabelled samples
through the facade's settings, each on its own: the env's reward terms kept with SB3's
flags (``herkit-terms``: ``keep_env_terms=True, terminal_on_success=False``), a reached
relabelled goal terminal with ``compute_reward`` alone (``herkit-ends``:
``keep_env_terms=False, terminal_on_success=True``), neither (``herkit-sb3rules``: SB3's
rules as settings, what ``herkit-sb3rewards`` does by patching), and both
(``herkit-both``: ``keep_env_terms=True``, the ending from the env, as the facade's
default was before it took SB3's rewards)."""


def finished_episodes_only() -> type:
    """An experiment, not a herkit setting: herkit.sb3's buffer sampling only the steps of
    finished episodes, as SB3's buffer does (herkit also samples episodes in progress)."""
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
    """An experiment, not a herkit setting: herkit.sb3's buffer storing the env's
    ``compute_reward`` as each step's reward, as SB3's buffer hands every sample (herkit
    keeps the env's own step reward and the terms ``compute_reward`` lacks)."""
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
    """An experiment, not a herkit setting: herkit.sb3's buffer giving rewards as SB3's
    buffer does, ``compute_reward`` alone to relabelled samples (herkit adds the terms of
    the env's reward that ``compute_reward`` lacks) and the env's reward to real ones."""
    import dataclasses

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


def model_for(task: str, buffer: str, env: Any, seed: int) -> Any:
    """The SB3 model of ``task`` with SB3's or herkit's HER buffer."""
    import stable_baselines3
    from stable_baselines3 import DDPG, DQN, SAC, TD3
    from stable_baselines3.common.noise import NormalActionNoise

    from herkit import sb3

    buffer_class = {"sb3": stable_baselines3.HerReplayBuffer}.get(buffer, sb3.HerReplayBuffer)
    if buffer == "herkit-finished":
        buffer_class = finished_episodes_only()
    if buffer == "herkit-computed":
        buffer_class = computed_rewards_only()
    her: dict[str, Any] = {"n_sampled_goal": 4, "goal_selection_strategy": "future"}
    if buffer == "herkit-sb3rewards":
        buffer_class = sb3_rewards()
        her |= {"terminal_on_success": False}
    if buffer == "herkit-n3":
        her |= {"n_steps": 3, "gamma": 0.98}
    if buffer == "herkit-terminal":
        her |= {"terminal_on_success": True}
    rules = {
        "herkit-terms": (True, False),
        "herkit-ends": (False, True),
        "herkit-sb3rules": (False, False),
        "herkit-both": (True, None),
    }
    if buffer in rules:
        keep, ends = rules[buffer]
        her |= {"keep_env_terms": keep, "terminal_on_success": ends}
    common: dict[str, Any] = {
        "learning_rate": 1e-3,
        "gamma": 0.98,
        "buffer_size": 1_000_000,
        "batch_size": 256,
        "replay_buffer_class": buffer_class,
        "seed": seed,
        "device": "cpu",
        "verbose": 0,
        "replay_buffer_kwargs": her,
    }
    algo = TASKS[task]["algo"]
    if algo == "dqn":
        return DQN(
            "MultiInputPolicy",
            env,
            tau=0.01,
            train_freq=4,
            gradient_steps=1,
            learning_starts=256,
            target_update_interval=4,
            exploration_initial_eps=0.5,
            exploration_final_eps=0.5,
            policy_kwargs={"net_arch": [256]},
            **common,
        )
    continuous: dict[str, Any] = {
        "tau": 0.05,
        "train_freq": 1,
        "gradient_steps": 1,
        "learning_starts": 1_000,
        "policy_kwargs": {"net_arch": [256, 256, 256]},
        **common,
    }
    if algo in ("td3", "ddpg"):
        dim = env.action_space.shape[0]
        noise = NormalActionNoise(np.zeros(dim), 0.2 * np.ones(dim))
        algorithm = TD3 if algo == "td3" else DDPG
        return algorithm("MultiInputPolicy", env, action_noise=noise, **continuous)
    if algo == "tqc":
        from sb3_contrib import TQC

        return TQC("MultiInputPolicy", env, ent_coef="auto_0.1", **continuous)
    return SAC("MultiInputPolicy", env, ent_coef="auto_0.1", **continuous)


def worker(task: str, buffer: str, seed: int) -> dict[str, Any]:
    """One training run in this process; its evaluation rows and sampling time."""
    import torch
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env

    from herkit.envs import make_goal_env

    torch.set_num_threads(1)
    spec = TASKS[task]
    env = make_vec_env(
        lambda: make_goal_env(spec["env_id"], **spec["kwargs"]), n_envs=spec["n_envs"], seed=seed
    )
    eval_env = make_goal_env(spec["env_id"], **spec["kwargs"])
    model = model_for(task, buffer, env, seed)
    rows: list[dict[str, float]] = []
    sampling = [0.0]
    started = time.perf_counter()

    class Evaluate(BaseCallback):
        def _on_training_start(self) -> None:
            replay = self.model.replay_buffer
            sample = replay.sample

            def timed(*args: Any, **kwargs: Any) -> Any:
                begin = time.perf_counter()
                try:
                    return sample(*args, **kwargs)
                finally:
                    sampling[0] += time.perf_counter() - begin

            replay.sample = timed

        def _on_step(self) -> bool:
            if self.num_timesteps % spec["eval_every"] < spec["n_envs"]:
                eval_seed = seed + 10_000 + self.num_timesteps
                key = spec.get("success_key", "is_success")
                success = sb3_success_rate(model, eval_env, spec["eval_episodes"], eval_seed, key)
                rows.append(
                    {
                        "env_steps": self.num_timesteps,
                        "wall_s": round(time.perf_counter() - started, 2),
                        "success_rate": success,
                    }
                )
            return True

    model.learn(total_timesteps=spec["steps"], callback=Evaluate())
    return {
        "rows": rows,
        "wall_s": round(time.perf_counter() - started, 1),
        "sample_s": round(sampling[0], 2),
        "updates": int(model._n_updates),
    }


def run_pair(task: str, seed: int, buffers: tuple[str, ...] = BUFFERS) -> None:
    """The buffers' runs of ``task`` with ``seed``, at once; each recorded as it ends."""
    started = {}
    for buffer in buffers:
        command = [sys.executable, __file__, "--worker", task, buffer, str(seed)]
        started[buffer] = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
    for buffer, process in started.items():
        out, err = process.communicate()
        if process.returncode:
            raise RuntimeError(f"{task} {buffer} seed {seed} failed:\n{err[-3000:]}")
        result = json.loads(out.strip().splitlines()[-1])
        rows = result["rows"]
        solved = next((row for row in rows if row["success_rate"] >= 0.9), None)
        other = [name for name in buffers if name != buffer]
        run = {
            "task": task,
            "buffer": buffer,
            "seed": seed,
            **result,
            "first_0.9": solved,
            "final_success": rows[-1]["success_rate"],
            "settings": TASKS[task],
            "concurrent_with": other,
            "code": code_version(),
        }
        add_run(RECORD, f"{task}/{buffer}/seed{seed}", run, machine())
        print(
            f"{task} {buffer} seed {seed}: first 0.9 {solved}, final "
            f"{rows[-1]['success_rate']:.2f}, {result['wall_s']} s "
            f"({result['sample_s']} s sampling)",
            flush=True,
        )


def same_data(task: str, steps: int, batches: int) -> dict[str, dict[str, float]]:
    """Both buffers fed the same ``steps`` of random actions in ``task``'s env, then
    sampled ``batches`` batches of 4,096: what each hands the learner, in numbers."""
    import stable_baselines3
    from stable_baselines3.common.env_util import make_vec_env

    from herkit import sb3
    from herkit.envs import make_goal_env

    spec = TASKS[task]
    env = make_vec_env(
        lambda: make_goal_env(spec["env_id"], **spec["kwargs"]), n_envs=spec["n_envs"], seed=0
    )
    kwargs = {"n_envs": spec["n_envs"], "n_sampled_goal": 4}
    buffers = {
        "sb3": stable_baselines3.HerReplayBuffer(
            100_000, env.observation_space, env.action_space, env, "cpu", **kwargs
        ),
        "herkit": sb3.HerReplayBuffer(
            100_000, env.observation_space, env.action_space, env, "cpu", seed=0, **kwargs
        ),
    }
    env.action_space.seed(0)
    obs = env.reset()
    for _ in range(steps // spec["n_envs"]):
        action = np.array([env.action_space.sample() for _ in range(spec["n_envs"])])
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
        rewards, dones = [], []
        for _ in range(batches):
            batch = buffer.sample(4096)
            rewards.append(batch.rewards.numpy().ravel())
            dones.append(batch.dones.numpy().ravel())
        reward, done = np.concatenate(rewards), np.concatenate(dones)
        stats[name] = {
            "samples": int(reward.size),
            "reward_mean": float(reward.mean()),
            "reward_std": float(reward.std()),
            "share_reward_max": float((reward == reward.max()).mean()),
            "done_mean": float(done.mean()),
        }
    return stats


def table(tasks: list[str]) -> str:
    """Markdown: per task and buffer, the success averaged over seeds and over all the
    evaluations (the area under the curve), at a quarter, half, three quarters and all of
    the budget, and over the last 4 evaluations; env steps to the first 0.9, wall times and
    time in ``sample`` per seed."""
    runs = json.loads(RECORD.read_text())["runs"]
    lines = [
        "| task | buffer | seeds | success: all evaluations | at 1/4, 1/2, 3/4, all of the "
        "env steps | last 4 evaluations | env steps to 0.9 | wall s, whole run | s in `sample` |",
        "|---|---|---|---:|---|---:|---|---|---|",
    ]
    for task in tasks:
        steps = TASKS[task]["steps"]
        marks = [steps // 4, steps // 2, 3 * steps // 4, steps]
        for buffer in (*BUFFERS, *VARIANTS):
            mine = sorted(
                (r for r in runs.values() if r["task"] == task and r["buffer"] == buffer),
                key=lambda r: r["seed"],
            )
            if not mine:
                continue

            def at(run: dict[str, Any], mark: int) -> float:
                done = [r for r in run["rows"] if r["env_steps"] <= mark]
                return float(done[-1]["success_rate"]) if done else 0.0

            def mean(values: Any) -> str:
                return f"{np.mean(list(values)):.2f}"

            curve = mean(np.mean([r["success_rate"] for r in run["rows"]]) for run in mine)
            success = " / ".join(mean(at(r, m) for r in mine) for m in marks)
            last = mean(np.mean([r["success_rate"] for r in run["rows"][-4:]]) for run in mine)
            solved = " / ".join(
                f"{r['first_0.9']['env_steps']:,}" if r["first_0.9"] else "never" for r in mine
            )
            walls = " / ".join(f"{r['wall_s']:.0f}" for r in mine)
            sampling = " / ".join(f"{r['sample_s']:.1f}" for r in mine)
            seeds = ", ".join(str(r["seed"]) for r in mine)
            name = f"{task} ({TASKS[task]['algo'].upper()})"
            cells = [name, buffer, seeds, curve, success, last, solved, walls, sampling]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


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
    """The seeds of ``task`` run with both buffers: each one's mean success over the last 4
    evaluations, runs that reached 0.9, the mean difference (second - first) with its 95 %
    bootstrap interval, and the mean env steps to 0.9 where both reached it (None: no seed
    run with both)."""
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
"""Paired seeds below which no interval is shown: a bootstrap over two pairs says nothing."""


def _difference(found: dict[str, Any]) -> str:
    if found["seeds"] < MIN_INTERVAL_SEEDS:
        return f"{found['difference']:+.2f} (no interval: {found['seeds']} seeds)"
    low, high = found["interval"]
    return f"{found['difference']:+.2f} [{low:+.2f}, {high:+.2f}]"


def paired_table(tasks: list[str], first: str, second: str) -> str:
    """Markdown: per task, :func:`paired`'s figures of ``first`` and ``second``."""
    runs = json.loads(RECORD.read_text())["runs"]
    lines = [
        f"| task | seeds | {first}: last 4 evaluations | {second}: last 4 evaluations | "
        f"reached 0.9 ({first} / {second}) | difference, 95 % interval | "
        f"env steps to 0.9 ({first} / {second}) |",
        "|---|---:|---:|---:|---|---|---|",
    ]
    for task in tasks:
        found = paired(runs, task, first, second)
        if found is None:
            continue
        steps = " / ".join(f"{mean:,.0f}" for mean in found["steps"]) or "-"
        solved = found["solved"]
        cells = [
            f"{task} ({TASKS[task]['algo'].upper()})",
            str(found["seeds"]),
            f"{found['first']:.2f}",
            f"{found['second']:.2f}",
            f"{solved[0]} / {solved[1]}",
            _difference(found),
            steps,
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


RULES = {
    "herkit-sb3rules": ("no", "no"),
    "herkit-terms": ("yes", "no"),
    "herkit-ends": ("no", "yes"),
    "herkit-both": ("yes", "from the env"),
    "herkit": ("no (default)", "from the env, with terms (default)"),
}
"""herkit.sb3's buffers by their rules for relabelled samples: the env's terms kept in the
reward, and a reached goal terminal (``from the env``: where it is seen to end episodes on
success; ``with terms``: and its rewards hold terms beyond ``compute_reward``)."""


def rules_table(tasks: list[str]) -> str:
    """Markdown: per task and buffer of :data:`RULES`, its paired figures against SB3's."""
    runs = json.loads(RECORD.read_text())["runs"]
    lines = [
        "| task | herkit.sb3 | env's terms kept | reached goal terminal | seeds | "
        "sb3: last 4 evaluations | herkit.sb3: last 4 evaluations | difference, 95 % interval |",
        "|---|---|---|---|---:|---:|---:|---|",
    ]
    for task in tasks:
        for buffer, (terms, ends) in RULES.items():
            found = paired(runs, task, "sb3", buffer)
            if found is None:
                continue
            cells = [
                f"{task} ({TASKS[task]['algo'].upper()})",
                buffer,
                terms,
                ends,
                str(found["seeds"]),
                f"{found['first']:.2f}",
                f"{found['second']:.2f}",
                _difference(found),
            ]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", choices=tuple(TASKS), default=list(DEFAULT_TASKS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    choices = [*BUFFERS, *VARIANTS]
    parser.add_argument(
        "--buffers",
        nargs="+",
        default=list(BUFFERS),
        choices=choices,
        help="the buffers run at once for each seed",
    )
    parser.add_argument("--table", action="store_true", help="print the tables, run nothing")
    parser.add_argument(
        "--paired",
        nargs=2,
        metavar=("FIRST", "SECOND"),
        choices=choices,
        help="print two buffers' paired differences, run nothing",
    )
    parser.add_argument(
        "--rules",
        nargs="+",
        metavar="TASK",
        choices=tuple(TASKS),
        help="print each rule's paired difference against SB3's buffer on these tasks, run nothing",
    )
    parser.add_argument(
        "--same-data",
        action="store_true",
        help="feed both buffers the same random steps of each task's env and "
        "compare what they sample (docs/sb3_buffer.json, same_data)",
    )
    parser.add_argument("--worker", nargs=3, metavar=("TASK", "BUFFER", "SEED"), help="internal")
    args = parser.parse_args()
    if args.worker:
        task, buffer, seed = args.worker
        print(json.dumps(worker(task, buffer, int(seed))))
        return
    if args.table:
        print(table(args.tasks))
        return
    if args.paired:
        print(paired_table(list(TASKS), *args.paired))
        return
    if args.rules:
        print(rules_table(args.rules))
        return
    if args.same_data:
        record = json.loads(RECORD.read_text()) if RECORD.exists() else {}
        found = record.get("same_data", {})
        for task in args.tasks:
            found[task] = {"steps": 6_000, "code": code_version(), **same_data(task, 6_000, 25)}
            print(task, json.dumps(found[task]), flush=True)
        RECORD.write_text(json.dumps(record | {"same_data": found}, indent=1))
        return
    for task in args.tasks:
        for seed in args.seeds:
            run_pair(task, seed, tuple(args.buffers))


if __name__ == "__main__":
    main()
