"""Is the learner's update as fast as at an earlier commit, on this machine?

Times sample + update (DDPG on FetchPush's shapes, one thread) with the code of REV (a
temporary git worktree) and the working tree's, in turns, in fresh processes, by the
working tree's ``time_updates`` on both sides; adds a record to docs/update_speed.json.

    python benchmarks/update_speed.py --against HEAD~3
    python benchmarks/update_speed.py --against 0af653d --repeats 5 --seconds 4
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path

import common
from common import DOCS, ROOT, code_version, commit_of, machine, parser, with_code, worktree

RECORD = DOCS / "update_speed.json"
CASES = [((256, 256, 256), False, 256), ((512, 512, 512), True, 2048)]
"""(hidden, LayerNorm, batch) of each row: baselines' Fetch networks, and mrl's."""

CLOCK = ROOT / "src" / "herkit" / "bench" / "clock.py"
"""The working tree's clock, loaded by its path on both sides: only the code timed differs."""
CHILD = r"""
import importlib.util, inspect, json, sys
import gymnasium, numpy as np, torch
from herkit import HerReplayBuffer
from herkit.agents import make_agent
from herkit.config import DDPGConfig
from herkit.bench import fetch_reward

hidden, layer_norm, batch, precision, seconds = json.loads(sys.argv[1])
torch.set_num_threads(1)
rng = np.random.default_rng(0)
envs, length, rounds = 16, 50, 250  # 200,000 transitions
buffer = HerReplayBuffer(envs * length * rounds, observation_shape=25, goal_shape=3,
                         action_shape=4, reward_fn=fetch_reward, n_envs=envs, seed=0)
for _ in range(rounds):
    obs = rng.normal(size=(length + 1, envs, 25)).astype(np.float32)
    achieved = rng.uniform(0, 0.2, size=(length + 1, envs, 3)).astype(np.float32)
    desired = rng.uniform(0, 0.2, size=(envs, 3)).astype(np.float32)
    actions = rng.uniform(-1, 1, size=(length, envs, 4)).astype(np.float32)
    for t in range(length):
        buffer.add({"observation": obs[t], "achieved_goal": achieved[t], "desired_goal": desired},
                   actions[t], {"observation": obs[t + 1], "achieved_goal": achieved[t + 1],
                                "desired_goal": desired},
                   np.zeros(envs, bool), np.full(envs, t == length - 1))
config = DDPGConfig(hidden=tuple(hidden), batch_size=batch, actor_layer_norm=layer_norm,
                    critic_layer_norm=layer_norm)
box = gymnasium.spaces.Box(-1.0, 1.0, (4,))
agent = make_agent("ddpg", config, 25, 3, box, (-1.0, 0.0), seed=0, precision=precision)
agent.update_normalizer(obs[0], desired)
counts_goals = "count_goals" in inspect.signature(agent.update).parameters

def step():
    sampled = buffer.sample(batch)
    if counts_goals:
        agent.update(sampled, count_goals=True)
    else:
        agent.update_goal_normalizer(sampled.goal)
        agent.update(sampled)

spec = importlib.util.spec_from_file_location("clock", sys.argv[2])
clock = importlib.util.module_from_spec(spec)
spec.loader.exec_module(clock)
print(json.dumps(clock.time_updates(step, seconds=seconds, warmup=3).updates_per_s))
"""


def time_once(source: Path, case: list[object]) -> float:
    """Updates/s of one fresh process with the package under ``source/src``."""
    command = [sys.executable, "-c", CHILD, json.dumps(case), str(CLOCK)]
    out = subprocess.run(command, check=True, capture_output=True, text=True, **with_code(source))
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    """The command line (see the module's docstring)."""
    cli = parser(__doc__)
    cli.add_argument("--against", required=True, help="the earlier commit (any git rev)")
    cli.add_argument("--repeats", type=int, default=3)
    cli.add_argument("--seconds", type=float, default=3.0)
    cli.add_argument("--precisions", nargs="+", default=["fp32", "bf16"])
    cli.add_argument(
        "--sizes",
        nargs="+",
        type=int,
        choices=[256, 512],
        default=[256, 512],
        help="the rows to time, by width (256: 3x256, 512: 3x512 LN)",
    )
    args = cli.parse_args()
    rows = []
    with worktree(args.against) as old_tree:
        for hidden, layer_norm, batch in [case for case in CASES if case[0][0] in args.sizes]:
            for precision in args.precisions:
                case = [list(hidden), layer_norm, batch, precision, args.seconds]
                before, after = [], []
                for repeat in range(args.repeats):  # in turns, each side first in half of them
                    sides = [(before, old_tree), (after, ROOT)]
                    for times, tree in sides[:: 1 if repeat % 2 == 0 else -1]:
                        times.append(time_once(tree, case))
                row = {
                    "hidden": list(hidden),
                    "layer_norm": layer_norm,
                    "batch_size": batch,
                    "precision": precision,
                    "before": before,
                    "after": after,
                    "before_median": statistics.median(before),
                    "after_median": statistics.median(after),
                }
                row["ratio"] = row["after_median"] / row["before_median"]
                rows.append(row)
                size = f"{len(hidden)}x{hidden[0]}{' LN' if layer_norm else ''}"
                print(
                    f"{size} batch {batch} {precision}: {row['before_median']:.2f} -> "
                    f"{row['after_median']:.2f} updates/s ({row['ratio']:.2f}x)",
                    flush=True,
                )
    record = {
        "machine": machine(),
        "against": commit_of(args.against),
        "code": code_version(),
        "rows": rows,
    }
    common.add_record(RECORD, record)


if __name__ == "__main__":
    main()
