"""Speed of the learner: ``herkit bench update``.

It times what the training loop does per update, ``agent.update(buffer.sample(batch),
count_goals=True)``, with FetchPush's shapes (observation 25, goals 3, action 4; DQN
with 4 discrete actions) from a buffer of ``fill`` random transitions of 16 envs in
episodes of 50 steps (future, k = 4; with ``prioritized`` sampled by priority, the
priorities set from each update's TD errors), for every algorithm, network size and
batch, precision and update mode asked
(:class:`~herkit.bench.settings.UpdateBenchConfig`). Each row gives updates per
second over ``seconds`` after a warm-up (compiling and capturing, timed as
``warmup_s``; :func:`herkit.bench.clock.time_updates`), sampled as the training loop
samples (``sampled``: a captured update on a buffer on the GPU draws its batch there,
within the graph); on CUDA also ``busy``, the
share of an update's wall time the GPU spends in kernels (torch.profiler over 20 updates:
kernel time per update times updates per second). A mode that fails here gives a row
with ``updates_per_s`` None and its error.

Torch is imported when the command runs (the ``train`` extra), not with ``herkit.bench``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

import numpy as np

from herkit.agents.registry import agent_entry
from herkit.bench.clock import time_updates
from herkit.bench.data import ACTION_DIM, GOAL_DIM, OBSERVATION_DIM, fetch_reward
from herkit.bench.settings import NetworkSize, UpdateBenchConfig
from herkit.buffer import HerReplayBuffer
from herkit.buffer.settings import HerSettings

__all__ = [
    "ENVS",
    "EPISODE_STEPS",
    "bench_update",
    "filled_buffer",
    "print_update_table",
    "run_update_bench",
]

ENVS = 16
"""Envs whose steps the benchmark's buffer holds (a 16-env run's)."""
EPISODE_STEPS = 50
"""Steps per episode of the benchmark's buffer (Fetch's)."""
_PROFILED_UPDATES = 20


def filled_buffer(
    fill: int,
    device: Any,
    discrete: bool,
    seed: int,
    prioritized: bool = False,
    settings: HerSettings | None = None,
) -> HerReplayBuffer:
    """A buffer of at least ``fill`` random FetchPush-shaped transitions from
    :data:`ENVS` envs in episodes of :data:`EPISODE_STEPS` steps, its data on ``device``
    (None: numpy on the host; rewards in torch on a device), sampled by priority where
    ``prioritized``; its goals by ``settings`` (None: HER's future, k = 4)."""
    from herkit.envs.torch_rewards import GoalDistanceReward

    rng = np.random.default_rng(seed)
    rounds = max(1, -(-fill // (ENVS * EPISODE_STEPS)))
    buffer = HerReplayBuffer(
        rounds * ENVS * EPISODE_STEPS,
        observation_shape=OBSERVATION_DIM,
        goal_shape=GOAL_DIM,
        action_shape=() if discrete else ACTION_DIM,
        action_dtype=np.int64 if discrete else np.float32,
        reward_fn=fetch_reward,
        settings=settings or HerSettings(strategy="future", k=4),
        n_envs=ENVS,
        seed=seed,
        device=device,
        prioritized=prioritized,
        torch_reward_fn=GoalDistanceReward(0.05) if device is not None else None,
    )
    running = np.zeros(ENVS, bool)
    for _ in range(rounds):
        shape = (EPISODE_STEPS + 1, ENVS)
        obs = rng.normal(size=(*shape, OBSERVATION_DIM)).astype(np.float32)
        achieved = rng.uniform(0, 0.2, size=(*shape, GOAL_DIM)).astype(np.float32)
        desired = rng.uniform(0, 0.2, size=(ENVS, GOAL_DIM)).astype(np.float32)
        if discrete:
            actions: np.ndarray = rng.integers(4, size=(EPISODE_STEPS, ENVS))
        else:
            actions = rng.uniform(-1, 1, size=(EPISODE_STEPS, ENVS, ACTION_DIM)).astype(np.float32)
        for t in range(EPISODE_STEPS):
            buffer.add(
                {"observation": obs[t], "achieved_goal": achieved[t], "desired_goal": desired},
                actions[t],
                {
                    "observation": obs[t + 1],
                    "achieved_goal": achieved[t + 1],
                    "desired_goal": desired,
                },
                running,
                np.full(ENVS, t == EPISODE_STEPS - 1),
            )
    return buffer


def run_update_bench(
    config: UpdateBenchConfig, progress: Callable[[str, dict[str, Any]], None] | None = None
) -> list[dict[str, Any]]:
    """Time every row (see the module's docstring); ``progress`` receives each row as a
    line of text and as the row."""
    import torch

    from herkit.agents import make_agent
    from herkit.agents.updates import mode_available
    from herkit.config.train import TrainConfig
    from herkit.runtime.devices import resolved_device

    report = progress if progress is not None else (lambda line, row: None)
    torch.set_num_threads(config.threads)
    device = torch.device(resolved_device(config.device))
    on_device = config.buffer == "device" or (config.buffer == "auto" and device.type == "cuda")
    import gymnasium

    rows = []
    buffers: dict[tuple[bool, Any], HerReplayBuffer] = {}
    for algo in config.algos:
        entry = agent_entry(algo)
        discrete = entry.discrete
        # an offline agent's batches carry its value and actor goals (OGBench's), as in a run
        settings = TrainConfig(algo=algo).her_settings() if entry.offline else None
        key = (discrete, settings)
        if key not in buffers:
            buffers[key] = filled_buffer(
                config.fill,
                device if on_device else None,
                discrete,
                config.seed,
                config.prioritized,
                settings,
            )
        buffer = buffers[key]
        space = (
            gymnasium.spaces.Discrete(4)
            if discrete
            else gymnasium.spaces.Box(-1.0, 1.0, (ACTION_DIM,))
        )
        for size in config.parsed_sizes():
            for precision in config.precisions:
                for mode in config.modes:
                    if not mode_available(mode, device):
                        continue
                    agent = make_agent(
                        algo,
                        _agent_config(algo, size),
                        OBSERVATION_DIM,
                        GOAL_DIM,
                        space,
                        (-1.0, 0.0),
                        device=device,
                        seed=config.seed,
                        precision=precision,
                    )
                    row = {
                        "algo": algo,
                        "hidden": list(size.hidden),
                        "layer_norm": size.layer_norm,
                        "batch_size": size.batch_size,
                        "precision": precision,
                        "mode": mode,
                        "device": str(device),
                        "buffer": "device" if on_device else "host",
                        "prioritized": config.prioritized,
                    }
                    row |= _time_row(agent, buffer, size.batch_size, mode, config.seconds)
                    rows.append(row)
                    report(_row_text(row), row)
    return rows


def _agent_config(algo: str, size: NetworkSize) -> Any:
    """``algo``'s default settings at ``size`` (an offline agent keeps OGBench's LayerNorms:
    in its value networks, not its actor)."""
    from dataclasses import fields, replace

    entry = agent_entry(algo)
    config = entry.default_config()
    norms: dict[str, Any] = {"critic_layer_norm": size.layer_norm}
    if "actor_layer_norm" in {field.name for field in fields(config)}:  # an agent with an actor
        norms["actor_layer_norm"] = size.layer_norm
    return replace(
        config,
        hidden=size.hidden,
        batch_size=size.batch_size,
        **({} if entry.offline else norms),
    )


def _time_row(
    agent: Any, buffer: HerReplayBuffer, batch_size: int, mode: str, seconds: float
) -> dict[str, Any]:
    """``updates_per_s``, ``warmup_s``, ``busy`` (CUDA), ``error`` and ``sampled`` (where the
    batches were drawn: ``host`` bookkeeping, or ``device`` within the update, as the
    training loop does for captured updates on a buffer on the GPU) of one row."""
    import torch

    from herkit.training.learner import draws_on_device

    def step() -> None:
        batch = buffer.sample(batch_size)
        agent.update(batch, count_goals=True)
        if buffer.settings.prioritized:  # as the training loop does: a read per update
            buffer.update_priorities(batch.indices, agent.priorities)

    def synchronize() -> None:
        if agent.device.type == "cuda":
            torch.cuda.synchronize(agent.device)

    result: dict[str, Any] = dict.fromkeys(("updates_per_s", "warmup_s", "busy", "error"))
    result["sampled"] = "host"
    try:
        agent.set_update_mode(mode)
        if draws_on_device(agent, buffer):
            step = _drawn_step(agent, buffer, batch_size)
            result["sampled"] = "device"
        # 8 warm-up updates: compile, warm up, capture, replay
        timed = time_updates(step, seconds=seconds, warmup=8, synchronize=synchronize)
        result["warmup_s"] = round(timed.warmup_s, 3)
        result["updates_per_s"] = timed.updates_per_s
        if agent.device.type == "cuda":
            result["busy"] = _busy(step, synchronize, result["updates_per_s"])
    except Exception as error:
        result["error"] = f"{type(error).__name__}: {error}".splitlines()[0][:300]
    return result


def _drawn_step(agent: Any, buffer: HerReplayBuffer, batch_size: int) -> Callable[[], None]:
    """An update that draws its batch on the buffer's device, as the training loop runs
    a captured one."""
    from herkit.buffer.device_sampler import DeviceSampler

    sampler = DeviceSampler(buffer)
    agent.attach_sampler(sampler.draw, batch_size, sampler.reprioritize)

    def step() -> None:
        agent.update_drawn(sampler.prepare(), count_goals=True)

    return step


def _busy(step: Callable[[], None], synchronize: Callable[[], None], per_s: float) -> float | None:
    """The share of an update's wall time (at ``per_s`` updates per second) that the GPU
    spends in kernels, from torch.profiler over a few updates; None where it cannot say."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    synchronize()
    try:
        with profile(activities=[ProfilerActivity.CUDA]) as profiler:
            for _ in range(_PROFILED_UPDATES):
                step()
            synchronize()
        kernel_us = 0.0
        for event in profiler.events():
            if event.device_type == torch.autograd.DeviceType.CUDA:
                time_us: Any = getattr(event, "self_device_time_total", None)
                if time_us is None:  # torch before 2.4
                    time_us = getattr(event, "self_cuda_time_total", 0.0)
                kernel_us += float(time_us)
    except Exception:
        return None
    if kernel_us <= 0:
        return None
    return round(kernel_us / 1e6 / _PROFILED_UPDATES * per_s, 4)


def _row_text(row: dict[str, Any]) -> str:
    size = f"{len(row['hidden'])}x{row['hidden'][0]}{' LN' if row['layer_norm'] else ''}"
    head = (
        f"{row['algo']} {size} batch {row['batch_size']} {row['precision']} "
        f"{row['mode']} on {row['device']} ({row['buffer']} buffer)"
    )
    if row["updates_per_s"] is None:
        return f"{head}: failed: {row['error']}"
    busy = "" if row["busy"] is None else f", GPU busy {row['busy']:.0%}"
    drawn = ", drawn on the device" if row["sampled"] == "device" else ""
    return (
        f"{head}: {row['updates_per_s']:,.1f} updates/s (warm-up {row['warmup_s']:g} s"
        f"{busy}{drawn})"
    )


def print_update_table(rows: list[dict[str, Any]], console: Any = None) -> None:
    """The rows as a rich table: one line per network, algorithm and precision, one
    column per mode."""
    from rich.console import Console
    from rich.table import Table

    console = console if console is not None else Console()
    modes = list(dict.fromkeys(row["mode"] for row in rows))
    table = Table(title="Update speed: sample + update, updates/s (FetchPush shapes)")
    for name in ("algo", "network", "batch", "precision", "device"):
        table.add_column(name)
    for mode in modes:
        table.add_column(mode, justify="right")
    lines: dict[tuple[Any, ...], dict[str, str]] = {}
    for row in rows:
        size = f"{len(row['hidden'])}x{row['hidden'][0]}{' LN' if row['layer_norm'] else ''}"
        buffer = f"{row['buffer']} buffer{', prioritized' if row.get('prioritized') else ''}"
        key = (
            row["algo"],
            size,
            str(row["batch_size"]),
            row["precision"],
            f"{row['device']} ({buffer})",
        )
        if row["updates_per_s"] is None:
            cell = "failed"
        else:
            busy = "" if row["busy"] is None else f" ({row['busy']:.0%} busy)"
            drawn = "*" if row["sampled"] == "device" else ""
            cell = f"{row['updates_per_s']:,.1f}{drawn}{busy}"
        lines.setdefault(key, {})[row["mode"]] = cell
    for key, cells in lines.items():
        table.add_row(*key, *(cells.get(mode, "-") for mode in modes))
    console.print(table)
    if any(row["sampled"] == "device" for row in rows):
        console.print("* the batch drawn on the device within the captured update")


def bench_update(config: UpdateBenchConfig) -> list[dict[str, Any]]:
    """``herkit bench update``: log the machine, time the rows, print the table, and
    write ``config.json_out`` (``config``, ``machine``, ``rows``) if set."""
    import torch
    from rich.console import Console

    from herkit.bench.table import environment_info

    log = Console(stderr=True)
    info = environment_info()
    info["gpu"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    log.print(
        f"[dim]{info['processor']}, {info['cpus']} CPUs, GPU {info['gpu'] or 'none'}, "
        f"torch {info['versions'].get('torch')}"
    )
    done: list[dict[str, Any]] = []

    def write() -> None:  # after every row: a run stopped early keeps the rows it timed
        if config.json_out is not None:
            with open(config.json_out, "w") as file:
                json.dump({"config": asdict(config), "machine": info, "rows": done}, file, indent=1)
                file.write("\n")

    def timed(line: str, row: dict[str, Any]) -> None:
        log.print(f"[dim]{line}")
        done.append(row)
        write()

    rows = run_update_bench(config, timed)
    print_update_table(rows)
    write()
    if config.json_out is not None:
        log.print(f"[dim]wrote {config.json_out}")
    return rows
