"""OGBench's own JAX agents timed on one pinned core: the JAX side of ``offline.py speed``.

    PY benchmarks/ogbench_jax.py --ogbench IMPLS --data NPZ --algo gcivl --size 3x256:256 \\
        --ways update draw --seconds 5 --core 1

``PY`` needs only numpy, jax, flax, optax, distrax and ml_collections, and ``--ogbench`` is
the ``impls/`` folder of OGBench's code (put on ``sys.path``, as its ``main.py`` runs): this
file imports no herkit, torch, gymnasium or tyro. The process pins itself to ``--core``
before it imports numpy or jax, so every thread they start (XLA's pools, OpenBLAS's) runs
on that core alone; the CPU time of all its threads over the wall time of each timed window
(``cpu_per_wall``) says whether it did (at most 1.0, and about 1.0 where nothing else runs
on that core).

The agent is OGBench's (``agents[config['agent_name']]``) with its ``get_config()``, its
hidden layers and batch size set by ``--size`` (``3x256:256``: 3 x 256, batch 256); the
dataset is ``--data``, an OGBench-layout ``.npz``, read as OGBench's ``load_dataset(...,
compact_dataset=True)`` reads it (:func:`load_compact`) into the agent's
``config['dataset_class']`` (``GCDataset``, ``HGCDataset`` for HIQL) with the agent's
config, as its ``main.py`` does. Each of ``--ways``:

- ``update``: ``agent.update`` alone, on a ring of :data:`RING` batches drawn in advance
  by the dataset and already on the device (``jnp`` arrays);
- ``draw``: ``agent.update(dataset.sample(batch_size))``, the loop of OGBench's ``main.py``.

It prints one JSON line per measurement (``measure``: ``versions``, ``peak``, ``flops``,
``draw_alone`` and one per way): updates/s over a window of ``--seconds`` after
:data:`WARMUP` updates (compiling), ended by ``block_until_ready`` on the parameters; the
core's fp32 matrix peak (a :data:`PEAK_SHAPE` product, GFLOP/s); the FLOPs of one update by
XLA's ``cost_analysis()`` and its matrix products alone (from the jaxpr). The loop that
times (:func:`timed`) is herkit's side's too (``benchmarks/offline_speed.py``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

WARMUP = 3
"""Untimed updates before a window, at least (the first compiles)."""
WARMUP_SECONDS = 1.0
"""Untimed seconds before a window, at least (at most the window's own): a first window
right after the warm-up's few calls ran about 5-10% slower than the next, on both sides."""
RING = 16
"""Batches drawn in advance for the ``update`` way."""
PEAK_SHAPE = (1024, 512, 512)
"""The matrix product of the peak: (m, k, n), an (m x k) by (k x n) product in fp32."""
PEAK_SECONDS = 1.0
"""Seconds the peak's product is timed."""
WAYS = ("update", "draw")
ALGOS = ("gcbc", "gcivl", "gciql", "crl", "qrl", "hiql")
"""OGBench's goal-conditioned agents (``impls/agents/``) that herkit has too."""


def pin(core: int) -> None:
    """Run this process on ``core`` alone (the calling thread and every thread started after:
    call it before importing numpy, jax or torch)."""
    os.sched_setaffinity(0, {core})


def threads_pinned(core: int) -> dict[str, int]:
    """This process's threads and how many may run on ``core`` alone (Linux's
    ``/proc/self/task``): a thread started before :func:`pin` keeps its old cores."""
    threads = pinned = 0
    for task in Path("/proc/self/task").iterdir():
        try:
            status = (task / "status").read_text()
        except OSError:  # a thread that ended meanwhile
            continue
        allowed = next(line for line in status.splitlines() if line.startswith("Cpus_allowed_list"))
        threads += 1
        pinned += allowed.split(":")[1].strip() == str(core)
    return {"threads": threads, "threads_pinned": pinned}


def timed(
    step: Callable[[], Any],
    seconds: float,
    synchronize: Callable[[], Any] | None = None,
    warmup: int = WARMUP,
    min_calls: int = 2,
) -> dict[str, float]:
    """``step()`` called ``warmup`` times (and for :data:`WARMUP_SECONDS`, at most
    ``seconds``, where they take less), then timed for ``seconds`` of wall time (at least
    ``min_calls`` calls; a call started in the window counts whole), ``synchronize()`` after
    the warm-up and at the window's end (None: the work is done when a call returns), as
    herkit's ``herkit.bench.clock.time_updates`` times. Returns ``updates_per_s``,
    ``calls``, ``wall_s``, ``warmup_s`` and ``cpu_s``, the CPU time of all the process's
    threads in the window, with ``cpu_per_wall``."""
    sync = synchronize or (lambda: None)
    started, warmed = time.perf_counter(), 0
    while warmed < warmup or time.perf_counter() - started < min(WARMUP_SECONDS, seconds):
        step()
        warmed += 1
        if warmed == warmup:
            sync()  # what the first calls queued, done before the time counts
    sync()
    warmup_s = time.perf_counter() - started
    calls, cpu, start = 0, time.process_time(), time.perf_counter()
    while calls < min_calls or time.perf_counter() - start < seconds:
        step()
        calls += 1
    sync()
    wall_s, cpu_s = time.perf_counter() - start, time.process_time() - cpu
    return {
        "updates_per_s": calls / wall_s,
        "calls": calls,
        "wall_s": wall_s,
        "warmup_s": warmup_s,
        "cpu_s": cpu_s,
        "cpu_per_wall": cpu_s / wall_s,
    }


def peak_flops() -> int:
    """FLOPs of one :data:`PEAK_SHAPE` product (a multiply and an add per term)."""
    m, k, n = PEAK_SHAPE
    return 2 * m * k * n


def parse_size(size: str) -> tuple[tuple[int, ...], int]:
    """``3x256:256`` as ``((256, 256, 256), 256)``: hidden layers and batch size."""
    layers, _, batch = size.partition(":")
    count, _, width = layers.partition("x")
    if not (count.isdigit() and width.isdigit() and batch.isdigit()):
        raise ValueError(f"a size is LAYERSxWIDTH:BATCH, e.g. 3x256:256; got {size!r}")
    return (int(width),) * int(count), int(batch)


def emit(row: dict[str, Any]) -> None:
    """One measurement as a JSON line on stdout."""
    print(json.dumps(row), flush=True)


def load_compact(path: str) -> dict[str, Any]:
    """An OGBench-layout ``.npz`` as OGBench's ``ogbench.utils.load_dataset(path,
    compact_dataset=True)`` returns it (its lines; that module imports gymnasium): float32
    arrays, ``valids`` 0 at each episode's last state, ``terminals`` 1 at its last two."""
    import numpy as np

    file = np.load(path)
    dataset = {
        "observations": file["observations"][...].astype(np.float32, copy=False),
        "actions": file["actions"][...].astype(np.float32, copy=False),
        "terminals": file["terminals"][...].astype(np.float32, copy=False),
    }
    dataset["valids"] = 1.0 - dataset["terminals"]
    new_terminals = np.concatenate([dataset["terminals"][1:], [1.0]])
    dataset["terminals"] = np.minimum(dataset["terminals"] + new_terminals, 1.0).astype(np.float32)
    return dataset


def matmul_flops(jaxpr: Any) -> int:
    """FLOPs of the matrix products (``dot_general``: 2 per multiply-add) of a jaxpr, its
    inner jaxprs (jit, custom derivatives) included, a scan's times its length."""
    total = 0
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "dot_general":
            (contract, _), _ = eqn.params["dimension_numbers"]
            lhs = eqn.invars[0].aval.shape
            total += 2 * math.prod(eqn.outvars[0].aval.shape) * math.prod(lhs[d] for d in contract)
        times = eqn.params.get("length", 1) if eqn.primitive.name == "scan" else 1
        for value in eqn.params.values():
            for inner in value if isinstance(value, (tuple, list)) else (value,):
                inner = getattr(inner, "jaxpr", inner)  # a ClosedJaxpr's Jaxpr
                if hasattr(inner, "eqns"):
                    total += times * matmul_flops(inner)
    return total


def run(args: argparse.Namespace) -> None:
    """Pin, build OGBench's agent and dataset, and print each measurement."""
    pin(args.core)
    sys.path.insert(0, args.ogbench)
    import flax
    import jax
    import jax.numpy as jnp
    import numpy as np
    import optax
    from agents import agents
    from utils.datasets import Dataset, GCDataset, HGCDataset

    hidden, batch_size = parse_size(args.size)
    emit(
        {
            "measure": "versions",
            "side": "ogbench-jax",
            "jax": jax.__version__,
            "jaxlib": getattr(jax.lib, "__version__", None) or jax.__version__,
            "flax": flax.__version__,
            "optax": optax.__version__,
            "numpy": np.__version__,
            "devices": [str(d) for d in jax.devices()],
        }
    )
    module = __import__(f"agents.{args.algo}", fromlist=["get_config"])
    config = module.get_config()
    changes = {"batch_size": batch_size, "actor_hidden_dims": hidden}
    if "value_hidden_dims" in config:
        changes["value_hidden_dims"] = hidden
    config.update(changes)
    dataset_class = {"GCDataset": GCDataset, "HGCDataset": HGCDataset}[config["dataset_class"]]
    dataset = dataset_class(Dataset.create(**load_compact(args.data)), config)
    np.random.seed(args.seed)  # noqa: NPY002 (OGBench's datasets draw from numpy's global one)
    example = dataset.sample(1)
    agent = agents[config["agent_name"]].create(
        args.seed, example["observations"], example["actions"], config
    )
    update = type(agent).update  # jax.jit of (agent, batch)
    ring = [jax.tree_util.tree_map(jnp.asarray, dataset.sample(batch_size)) for _ in range(RING)]
    state = {"agent": agent, "calls": 0}

    def synchronize() -> None:
        jax.block_until_ready(state["agent"].network.params)

    def on_ring() -> None:
        state["agent"], _ = state["agent"].update(ring[state["calls"] % RING])
        state["calls"] += 1

    def drawn() -> None:
        state["agent"], _ = state["agent"].update(dataset.sample(batch_size))

    shared = {"side": "ogbench-jax", "algo": args.algo, "size": args.size, "core": args.core}
    for way in args.ways:
        step = on_ring if way == "update" else drawn
        emit({"measure": way, **shared, **timed(step, args.seconds, synchronize)})
    if "draw" in args.ways:  # how much of draw + update the draw is
        alone = timed(lambda: dataset.sample(batch_size), min(1.0, args.seconds))
        emit({"measure": "draw_alone", **shared, **alone})
    if args.flops:
        cost = update.lower(state["agent"], ring[0]).compile().cost_analysis()
        cost = cost[0] if isinstance(cost, (list, tuple)) else cost  # a list before jax 0.4.30
        jaxpr = jax.make_jaxpr(update)(state["agent"], ring[0]).jaxpr
        emit(
            {
                "measure": "flops",
                **shared,
                "flops": float(cost["flops"]),
                "flops_tool": "XLA cost_analysis() of the compiled update: every op's FLOPs",
                "matmul_flops": matmul_flops(jaxpr),
                "matmul_flops_tool": "dot_general of the update's jaxpr, 2 per multiply-add "
                "(before XLA's optimisations: products it removes are counted)",
            }
        )
    if args.peak:
        m, k, n = PEAK_SHAPE
        left, right = jnp.ones((m, k), jnp.float32), jnp.ones((k, n), jnp.float32)
        product = jax.jit(jnp.dot)
        timing = timed(lambda: product(left, right).block_until_ready(), PEAK_SECONDS)
        gflops = peak_flops() * timing["updates_per_s"] / 1e9
        emit({"measure": "peak", **shared, "shape": list(PEAK_SHAPE), "gflops": gflops, **timing})
    emit({"measure": "pinning", **shared, **threads_pinned(args.core)})


def parser() -> argparse.ArgumentParser:
    """The command line (see the module's docstring)."""
    cli = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    cli.add_argument("--ogbench", required=True, help="the impls/ folder of OGBench's code")
    cli.add_argument("--data", required=True, help="an OGBench-layout .npz dataset")
    cli.add_argument("--algo", required=True, choices=ALGOS)
    cli.add_argument("--size", default="3x256:256", help="LAYERSxWIDTH:BATCH")
    cli.add_argument("--ways", nargs="+", choices=WAYS, default=list(WAYS))
    cli.add_argument("--seconds", type=float, default=5.0, help="each way's timed window")
    cli.add_argument("--core", type=int, default=0, help="the one core it runs on")
    cli.add_argument("--seed", type=int, default=0)
    cli.add_argument("--no-flops", dest="flops", action="store_false", help="no FLOPs count")
    cli.add_argument("--no-peak", dest="peak", action="store_false", help="no matrix peak")
    return cli


if __name__ == "__main__":
    run(parser().parse_args())
