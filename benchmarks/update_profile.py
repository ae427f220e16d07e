"""Where an offline agent's update spends its time, on one thread: torch.profiler's ops
grouped by kind (matrix products, elementwise layers and their backward, Adam, the
draw, the rest), each as a share of the update's wall time.

    python benchmarks/update_profile.py --algos gcivl hiql --sizes 3x256:256 2x128:256
    python benchmarks/update_profile.py --modes eager compiled --top 15   # each agent's top ops

A compiled update's fused kernels are listed as ``graph_N_cpp_fused_*`` (inductor's kernel
profiling, turned on here), of kind ``fused``.

Builds agents and buffers as ``herkit bench update`` does (FetchPush's shapes, the
agent's own goal mixes), times ``--updates`` draws and updates under the profiler after a
warm-up, and adds a record to ``docs/update_profile.json`` under ``--label``.
"""

from __future__ import annotations

import argparse
import itertools
import time
from collections import defaultdict
from typing import Any

import common
from common import DOCS, add_run, code_version, machine

RECORD = DOCS / "update_profile.json"
ALGOS = ("gcbc", "gcivl", "gciql", "crl", "qrl", "hiql")

KINDS = {
    "matmul": ("addmm", "aten::mm", "aten::bmm", "baddbmm", "linear", "matmul"),
    "adam": ("_foreach", "adam", "optimizer", "lerp", "zero_grad"),
    "layer_norm": ("layer_norm",),
    "activation": ("gelu", "relu", "tanh", "elu", "softplus"),
    "autograd": ("autograd::engine", "accumulategrad", "backward"),
    "fused": ("cpp_fused", "graph_"),
}
"""Kinds of op by a part of their name, in order: an op goes to the first kind that
matches (its backward included where the name says so); the rest is ``elementwise``."""


def kind_of(name: str) -> str:
    """The kind of the op ``name`` (see :data:`KINDS`)."""
    lowered = name.lower()
    for kind, parts in KINDS.items():
        if any(part in lowered for part in parts):
            return kind
    return "elementwise"


def profile_one(
    algo: str, size: str, mode: str, updates: int, top: int, buffer: Any
) -> dict[str, Any]:
    """One agent's profile: the updates' rate outside the profiler, and self CPU time by
    kind of op (each a share of the wall time of an update, draw included)."""
    import gymnasium
    from torch.profiler import ProfilerActivity, profile, record_function

    from herkit.agents import make_agent
    from herkit.bench.data import ACTION_DIM, GOAL_DIM, OBSERVATION_DIM
    from herkit.bench.settings import UpdateBenchConfig
    from herkit.bench.update import _agent_config

    parsed = UpdateBenchConfig(algos=(algo,), sizes=(size,)).parsed_sizes()[0]
    space = gymnasium.spaces.Box(-1.0, 1.0, (ACTION_DIM,))
    config = _agent_config(algo, parsed)
    agent = make_agent(algo, config, OBSERVATION_DIM, GOAL_DIM, space, (-1.0, 0.0), seed=0)
    if mode == "compiled":
        import torch._inductor.config

        torch._inductor.config.cpp.enable_kernel_profile = True  # its kernels seen by name
    agent.set_update_mode(mode)

    def step() -> None:
        with record_function("## draw"):
            batch = buffer.sample(parsed.batch_size)
        agent.update(batch, count_goals=True)

    for _ in range(10):
        step()
    start = time.perf_counter()
    for _ in range(updates):
        step()
    wall = (time.perf_counter() - start) / updates
    with profile(activities=[ProfilerActivity.CPU]) as profiler:
        for _ in range(updates):
            step()
    events = profiler.key_averages()
    by_kind: dict[str, float] = defaultdict(float)
    ops = []
    for event in events:
        if event.key == "## draw":
            by_kind["draw"] += event.cpu_time_total
            continue
        if event.key.startswith(("## ", "Torch-Compiled", "CompiledFunction")):
            continue  # a span of other ops, not an op
        by_kind[kind_of(event.key)] += event.self_cpu_time_total
        ops.append((event.self_cpu_time_total, event.key, event.count))
    per_update = {kind: us / updates / 1e6 for kind, us in by_kind.items()}
    ops.sort(reverse=True)
    top_ops = [
        {"op": key, "ms_per_update": us / updates / 1e3, "calls_per_update": count / updates}
        for us, key, count in ops[:top]
    ]
    ops_per_update = sum(count for _, _, count in ops) / updates
    return {
        "algo": algo,
        "size": size,
        "mode": mode,
        "ms_per_update": wall * 1e3,
        "updates_per_s": 1 / wall,
        "share_by_kind": {kind: s / wall for kind, s in sorted(per_update.items())},
        "ops_per_update": ops_per_update,
        "top_ops": top_ops,
    }


def main(argv: list[str] | None = None) -> None:
    """The command line (see the module's docstring)."""
    cli = common.parser(__doc__)
    cli.add_argument("--algos", nargs="+", choices=ALGOS, default=list(ALGOS))
    cli.add_argument("--sizes", nargs="+", default=["3x256:256", "2x128:256"])
    cli.add_argument("--modes", nargs="+", default=["eager"], choices=("eager", "compiled"))
    cli.add_argument("--updates", type=int, default=200)
    cli.add_argument("--top", type=int, default=8, help="ops listed per agent")
    cli.add_argument("--label", default="", help="a name for the code in the record")
    args = cli.parse_args(argv)
    run(args)


def run(args: argparse.Namespace) -> None:
    """Profile every agent and size asked; print and record."""
    import torch

    from herkit.bench.update import filled_buffer
    from herkit.config.train import TrainConfig

    torch.set_num_threads(1)
    for algo in args.algos:
        settings = TrainConfig(algo=algo).her_settings()
        buffer = filled_buffer(50_000, None, False, 0, False, settings)
        for size, mode in itertools.product(args.sizes, args.modes):
            row = profile_one(algo, size, mode, args.updates, args.top, buffer)
            shares = ", ".join(f"{k} {v:.0%}" for k, v in row["share_by_kind"].items())
            print(
                f"{algo} {size} {mode}: {row['updates_per_s']:.1f} updates/s "
                f"({row['ms_per_update']:.2f} ms, {row['ops_per_update']:.0f} ops); {shares}"
            )
            for op in row["top_ops"]:
                print(
                    f"    {op['ms_per_update']:7.3f} ms  {op['calls_per_update']:5.1f}x  {op['op']}"
                )
            command = (
                f"python benchmarks/update_profile.py --algos {algo} --sizes {size} "
                f"--modes {mode} --updates {args.updates} --label {args.label or 'LABEL'} --record"
            )
            run_record = {**row, **code_version(), "command": command}
            add_run(RECORD, f"{args.label or 'trial'}/{size}/{mode}/{algo}", run_record, machine())


if __name__ == "__main__":
    main()
