"""``offline.py speed``: herkit's offline agents' updates beside OGBench's own JAX agents',
each side in a fresh process pinned to one core, both ways, on the same dataset.

    python benchmarks/offline.py speed --ogbench IMPLS --jax-python PY   # every algo and size

Per network size (``--sizes``, ``3x256:256``: 3 x 256 hidden, batch 256), algorithm and
repeat (``--repeats``, the sides' order alternating), each side runs in a fresh process that
pins itself to ``--core`` before it imports numpy, torch or jax: herkit's here
(:func:`herkit_run`, ``python benchmarks/offline_speed.py herkit-worker ...``), OGBench's in
``benchmarks/ogbench_jax.py`` under ``--jax-python`` (a Python that has jax and no herkit).
Both time two ways (``--ways``) with one loop (:func:`ogbench_jax.timed`):

- ``update``: the update alone, on a ring of batches drawn in advance and already the side's
  tensors (torch on herkit's side, ``jnp`` on JAX's);
- ``draw``: draw + update, each side drawing as its training loop draws: herkit's buffer
  holding the dataset (``HerReplayBuffer.from_dataset``, the agent's goal settings, as
  ``herkit train --dataset``), OGBench's ``GCDataset.sample`` (``HGCDataset`` for HIQL).

Each row carries the CPU time of all the process's threads over the window's wall time
(``cpu_per_wall``: 1.0 for a side alone on its core; above 1.02 it used more than one core,
below 0.95 something else ran on its core), the FLOPs of one update by each side's own tool
(torch's ``FlopCounterMode``: matrix products; XLA's ``cost_analysis()``: every op of the
compiled update, and the jaxpr's matrix products beside it), the core's fp32 matrix peak in
each framework (a 1024 x 512 by 512 x 512 product, GFLOP/s) and each side's achieved GFLOP/s
(its FLOPs times its updates/s) and share of its framework's peak.
The medians over the repeats go to ``offline_speed.json`` under ``fair/SIZE/ALGO/WAY``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from ogbench_jax import (
    ALGOS,
    PEAK_SECONDS,
    PEAK_SHAPE,
    RING,
    WAYS,
    emit,
    parse_size,
    peak_flops,
    pin,
    threads_pinned,
    timed,
)

HERE = Path(__file__).resolve().parent
SIDES = ("herkit", "ogbench-jax")
SIZES = ("3x256:256", "3x512:1024")
"""herkit's table's networks and batch, and OGBench's defaults."""
MODES = ("eager", "compiled")
"""herkit's update modes the comparison times (a CPU has no captured ones)."""
ONE_CORE = (0.95, 1.02)
"""The CPU/wall ratio of a side alone on its one core lies within these."""
GOAL_TOLERANCE = 1.0
"""The point maze's success radius in ``xy`` (OGBench's ``_goal_tol``)."""


def pointmaze_reward(achieved: Any, desired: Any, info: Any = None) -> Any:
    """The point maze's ``compute_reward`` (herkit's ``OGBenchGoalEnv``'s, which a training
    run's buffer calls): 0 within :data:`GOAL_TOLERANCE` in ``xy``, else -1."""
    import numpy as np

    achieved = np.asarray(achieved, dtype=np.float64)[..., :2]
    desired = np.asarray(desired, dtype=np.float64)[..., :2]
    return -(np.linalg.norm(achieved - desired, axis=-1) > GOAL_TOLERANCE).astype(np.float32)


def herkit_run(args: argparse.Namespace) -> None:
    """herkit's side (run in a fresh process): pin, build the agent and the buffer holding
    the dataset, and print each measurement as ``ogbench_jax.py`` prints its own."""
    pin(args.core)  # before numpy and torch start their threads
    import dataclasses

    import gymnasium
    import numpy as np
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    import herkit
    from herkit import HerReplayBuffer
    from herkit.agents import make_agent
    from herkit.agents.registry import agent_entry
    from herkit.config.train import TrainConfig

    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    hidden, batch_size = parse_size(args.size)
    emit(
        {
            "measure": "versions",
            "side": "herkit",
            "herkit": herkit.__version__,
            "herkit_from": str(Path(herkit.__file__).parent),
            "torch": torch.__version__,
            "numpy": np.__version__,
            "torch_threads": torch.get_num_threads(),
        }
    )
    buffer = HerReplayBuffer.from_dataset(
        args.data,
        pointmaze_reward,
        settings=TrainConfig(algo=args.algo).her_settings(),  # the agent's goals, as a run's
        seed=args.seed,
    )
    config = agent_entry(args.algo).default_config()
    config = dataclasses.replace(config, hidden=hidden, batch_size=batch_size)
    example = buffer.sample(1)
    actions = example.action.shape[1]
    agent = make_agent(
        args.algo,
        config,
        example.observation.shape[1],
        example.goal.shape[1],
        gymnasium.spaces.Box(-1.0, 1.0, (actions,)),
        (-1.0, 0.0),
        device="cpu",
        seed=args.seed,
        precision=args.precision,
    )
    ring = [buffer.sample(batch_size).to_torch(agent.device) for _ in range(RING)]
    calls = [0]
    shared = {"side": "herkit", "algo": args.algo, "size": args.size, "core": args.core}
    shared |= {"precision": args.precision, "mode": args.mode}
    if args.flops:  # eager: the FLOPs of any mode, seen op by op
        with FlopCounterMode(display=False) as counter:
            agent.update(ring[0], count_goals=True)
        flops = counter.get_total_flops()
        tool = "torch FlopCounterMode over one update: matrix products (mm, addmm, bmm), 2 per "
        tool += "multiply-add, forward and backward"
        emit(
            {
                "measure": "flops",
                **shared,
                "flops": flops,
                "flops_tool": tool,
                "matmul_flops": flops,
                "matmul_flops_tool": tool,
            }
        )
    agent.set_update_mode(args.mode)

    def on_ring() -> None:
        agent.update(ring[calls[0] % RING], count_goals=True)
        calls[0] += 1

    def drawn() -> None:  # as herkit bench update and the training loop
        agent.update(buffer.sample(batch_size), count_goals=True)

    for way in args.ways:
        step = on_ring if way == "update" else drawn
        emit({"measure": way, **shared, **timed(step, args.seconds)})
    if "draw" in args.ways:
        alone = timed(lambda: buffer.sample(batch_size), min(1.0, args.seconds))
        emit({"measure": "draw_alone", **shared, **alone})
    if args.peak:
        m, k, n = PEAK_SHAPE
        left, right = torch.ones(m, k), torch.ones(k, n)
        timing = timed(lambda: torch.mm(left, right), PEAK_SECONDS)
        gflops = peak_flops() * timing["updates_per_s"] / 1e9
        emit({"measure": "peak", **shared, "shape": list(PEAK_SHAPE), "gflops": gflops, **timing})
    emit({"measure": "pinning", **shared, **threads_pinned(args.core)})


def worker_parser() -> argparse.ArgumentParser:
    """The command line of :func:`herkit_run` (``herkit-worker``), ``ogbench_jax.py``'s flags."""
    cli = argparse.ArgumentParser(description="herkit's side of offline.py speed")
    cli.add_argument("--data", required=True, help="an OGBench-layout .npz dataset")
    cli.add_argument("--algo", required=True, choices=ALGOS)
    cli.add_argument("--size", default=SIZES[0], help="LAYERSxWIDTH:BATCH")
    cli.add_argument("--ways", nargs="+", choices=WAYS, default=list(WAYS))
    cli.add_argument("--seconds", type=float, default=5.0)
    cli.add_argument("--core", type=int, default=0)
    cli.add_argument("--seed", type=int, default=0)
    cli.add_argument("--precision", choices=("fp32", "bf16"), default="fp32")
    cli.add_argument("--mode", choices=MODES, default="compiled")
    cli.add_argument("--no-flops", dest="flops", action="store_false")
    cli.add_argument("--no-peak", dest="peak", action="store_false")
    return cli


def worker_command(
    side: str, args: argparse.Namespace, algo: str, size: str, repeat: int
) -> list[str]:
    """The command line of one side's process in ``repeat``: the ways in their order, and
    reversed in every other repeat; FLOPs counted in the first repeat only (they do not
    change, and XLA compiles the update again to count them)."""
    ways = args.ways if repeat % 2 == 0 else args.ways[::-1]
    first = repeat == 0
    common = ["--data", args.data, "--algo", algo, "--size", size, "--ways", *ways]
    common += ["--seconds", str(args.seconds), "--core", str(args.core)]
    if side == "herkit":
        herkit = [sys.executable, str(HERE / "offline_speed.py"), "herkit-worker", *common]
        return herkit + ["--mode", args.mode] + ([] if first else ["--no-flops"])
    jax = [args.jax_python, str(HERE / "ogbench_jax.py"), "--ogbench", args.ogbench, *common]
    return jax + ([] if first else ["--no-flops"])


def run_worker(command: list[str]) -> dict[str, dict[str, Any]]:
    """Run one side's process; its measurements by ``measure`` (SystemExit with its
    stderr's end where it fails). herkit's side imports this checkout's herkit (``src/``
    first on its ``PYTHONPATH``), the code whose commit the record names."""
    env = None
    if command[1] == str(HERE / "offline_speed.py"):
        paths = [str(HERE.parent / "src"), *filter(None, [os.environ.get("PYTHONPATH")])]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    done = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
    if done.returncode != 0:
        tail = "\n".join(done.stderr.strip().splitlines()[-15:])
        raise SystemExit(f"{' '.join(command)}\nexited {done.returncode}:\n{tail}")
    rows: dict[str, dict[str, Any]] = {}
    for line in done.stdout.splitlines():
        if line.startswith("{"):
            row = json.loads(line)
            rows.setdefault(row.pop("measure"), {}).update(row)
    return rows


def checked_size(size: str) -> str:
    """``size`` where it reads as ``LAYERSxWIDTH:BATCH`` (argparse's error otherwise)."""
    try:
        parse_size(size)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return size


def ratio_words(ratio: float) -> str:
    """A CPU/wall ratio with what it says of the core."""
    low, high = ONE_CORE
    if ratio > high:
        return f"{ratio:.2f} (more than one core!)"
    if ratio < low:
        return f"{ratio:.2f} (its core shared)"
    return f"{ratio:.2f}"


def side_summary(runs: list[dict[str, dict[str, Any]]], way: str) -> dict[str, Any]:
    """One side's figures of ``way`` over its repeats: medians and every repeat's. Its
    GFLOP/s (``gflops``) are its FLOPs per update by its own tool times its median rate, and
    ``peak_share`` their share of its framework's matrix peak on the same core;
    ``matmul_gflops`` counts the matrix products alone (on JAX's side from the jaxpr,
    before XLA removes what it finds unused or repeated)."""
    rates = [run[way]["updates_per_s"] for run in runs]
    ratios = [run[way]["cpu_per_wall"] for run in runs]
    rate = statistics.median(rates)
    peaks = [run["peak"]["gflops"] for run in runs if "peak" in run]
    flops = next(run["flops"] for run in runs if "flops" in run)
    summary: dict[str, Any] = {
        "updates_per_s": rate,
        "rates": rates,
        "cpu_per_wall": statistics.median(ratios),
        "cpu_per_wall_each": ratios,
        "calls": [run[way]["calls"] for run in runs],
        "warmup_s": [run[way]["warmup_s"] for run in runs],
        **{key: flops[key] for key in ("flops", "flops_tool", "matmul_flops", "matmul_flops_tool")},
        "gflops": flops["flops"] * rate / 1e9,
        "matmul_gflops": flops["matmul_flops"] * rate / 1e9,
        "peak_gflops": statistics.median(peaks) if peaks else None,
        "peak_cpu_per_wall": [run["peak"]["cpu_per_wall"] for run in runs if "peak" in run],
        "threads_pinned": [
            f"{run['pinning']['threads_pinned']}/{run['pinning']['threads']}" for run in runs
        ],
        "versions": {k: v for k, v in runs[0]["versions"].items() if k != "side"},
    }
    if peaks:
        summary["peak_share"] = summary["gflops"] / summary["peak_gflops"]
    if way == "draw":
        alone = statistics.median(run["draw_alone"]["updates_per_s"] for run in runs)
        summary["draws_alone_per_s"] = alone
        summary["draw_share"] = rate / alone  # the draw's share of draw + update's time
    for key in ("precision", "mode"):
        if key in runs[0][way]:
            summary[key] = runs[0][way][key]
    return summary


def one_core(sides: dict[str, dict[str, Any]]) -> bool:
    """Whether every timed window of both sides ran on one core, alone (:data:`ONE_CORE`)."""
    low, high = ONE_CORE
    ratios = [r for side in sides.values() for r in side["cpu_per_wall_each"]]
    ratios += [r for side in sides.values() for r in side["peak_cpu_per_wall"]]
    return all(low <= ratio <= high for ratio in ratios)


def speed(args: argparse.Namespace, record: Path) -> None:
    """Every size, algorithm and way (see the module's docstring), each recorded into the
    record file ``record``."""
    from common import add_run, code_version, machine

    if not Path(args.data).is_file():
        raise SystemExit(
            f"no dataset at {args.data}: make it first (python benchmarks/offline.py data)"
        )
    code = code_version()  # the code that runs, as it starts
    if args.core not in os.sched_getaffinity(0):
        raise SystemExit(
            f"core {args.core} is not one of this machine's: {os.sched_getaffinity(0)}"
        )
    for size in args.sizes:
        for algo in args.algos:
            runs: dict[str, list[dict[str, dict[str, Any]]]] = {side: [] for side in SIDES}
            for repeat in range(args.repeats):
                order = SIDES if repeat % 2 == 0 else SIDES[::-1]
                for side in order:
                    command = worker_command(side, args, algo, size, repeat)
                    runs[side].append(run_worker(command))
            for way in args.ways:
                sides = {side: side_summary(runs[side], way) for side in SIDES}
                herkit, jax = sides["herkit"], sides["ogbench-jax"]
                print(row_text(f"{size} {algo} {way}", sides), flush=True)
                run = {
                    "algo": algo,
                    "size": size,
                    "hidden": list(parse_size(size)[0]),
                    "batch": parse_size(size)[1],
                    "way": way,
                    "timed": WAY_WORDS[way],
                    "core": args.core,
                    "seconds": args.seconds,
                    "repeats": args.repeats,
                    "dataset": Path(args.data).name,
                    "sides": sides,
                    "jax_over_herkit": jax["updates_per_s"] / herkit["updates_per_s"],
                    "one_core_alone": one_core(sides),
                    "ogbench_impls": args.ogbench,
                    **code,
                    "command": command_line(args, algo, size),
                }
                add_run(record, f"fair/{size}/{algo}/{way}/{args.mode}", run, machine())


def row_text(head: str, sides: dict[str, dict[str, Any]]) -> str:
    """One recorded row in a line: each side's rate, CPU/wall, GFLOP/s and share of its
    peak (and of draw + update's time, its draw's), and JAX's rate over herkit's."""
    parts = []
    for side, name, peak in (("herkit", "herkit", "torch"), ("ogbench-jax", "OGBench JAX", "XLA")):
        figures = sides[side]
        text = f"{name} {figures['updates_per_s']:.1f} updates/s (CPU/wall "
        text += f"{ratio_words(figures['cpu_per_wall'])}, {figures['gflops']:.1f} GFLOP/s"
        if figures["peak_gflops"]:
            text += f", {figures['peak_share']:.0%} of {peak}'s {figures['peak_gflops']:.0f}"
        if "draw_share" in figures:
            text += f"; drawing {figures['draw_share']:.1%} of the time"
        parts.append(text + ")")
    ratio = sides["ogbench-jax"]["updates_per_s"] / sides["herkit"]["updates_per_s"]
    alone = "" if one_core(sides) else " [not alone on one core: indicative only]"
    return f"{head}: {', '.join(parts)}; JAX/herkit {ratio:.2f}{alone}"


WAY_WORDS = {
    "update": "the update alone, on a ring of batches drawn in advance as the side's tensors",
    "draw": "draw + update: herkit's buffer holding the dataset, OGBench's GCDataset.sample",
}


def command_line(args: argparse.Namespace, algo: str, size: str) -> str:
    """The command that records this row."""
    return (
        f"python benchmarks/offline.py speed --algos {algo} --sizes {size} --ways "
        f"{' '.join(args.ways)} --mode {args.mode} --core {args.core} --seconds "
        f"{args.seconds:g} --repeats "
        f"{args.repeats} --ogbench IMPLS --jax-python PY --record"
    )


if __name__ == "__main__":
    if sys.argv[1:2] != ["herkit-worker"]:
        raise SystemExit("run by offline.py speed: offline_speed.py herkit-worker FLAGS")
    herkit_run(worker_parser().parse_args(sys.argv[2:]))
