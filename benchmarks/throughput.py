"""Where a training run's time goes: the envs alone, the learner alone, the whole loop.

    python benchmarks/throughput.py                      # FetchPush-v4, every recipe
    python benchmarks/throughput.py --recipes preset large --seconds 20
    python benchmarks/throughput.py --env FetchReach-v4 --device cuda

For each recipe (``herkit train`` flags on the env's preset), with the threads and workers
herkit chooses here: torch's matmul peak (fp32, bf16), the envs alone (random actions), the
learner alone (sample + update, GFLOP/s against the peak), and the loop (``herkit train``
for ``--loop-steps``) against the ideal min(envs, learner). Writes docs/throughput.json.
"""

from __future__ import annotations

import dataclasses
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import torch
from common import DOCS, add_run, code_version, machine, markdown, parser, read_json, train_here
from torch.nn import functional as F
from torch.utils.flop_counter import FlopCounterMode

from herkit.bench import time_updates
from herkit.config.resolve import preset_config
from herkit.config.train import TrainConfig
from herkit.runtime.precision import fast_bf16
from herkit.training.build import build, make_vector_env, plan_run_cores, resolve_conventions

RECORD = DOCS / "throughput.json"
RECIPES: dict[str, str] = {
    # the Fetch preset as a user launches it: 16 envs, batch 512 x 0.0625 updates per env
    # step (32 samples per env step), one update per loop iteration
    "preset": "",
    "preset-no-overlap": "--no-overlap",
    # the earlier preset: 8 envs, batch 512 x 0.125 (64 samples per env step)
    "push64-8": "--n-envs 8 --updates-per-step 0.125",
    "push64-8-no-overlap": "--n-envs 8 --updates-per-step 0.125 --no-overlap",
    # the same update with 4 envs: an update every other iteration
    "push64": "--n-envs 4 --updates-per-step 0.125",
    # the paper's per-worker update, the earlier preset: batch 256, half an update per env
    # step (128 samples per env step), 2 envs
    "paper-batch": "--n-envs 2 --ddpg.batch-size 256 --updates-per-step 0.5",
    # its 128 samples per env step as 4x fewer updates of 4x the batch, 8 envs
    "mid": "--n-envs 8 --ddpg.batch-size 1024 --updates-per-step 0.125",
    # 16x fewer updates of 16x the batch, 8 envs: one update every 4 iterations
    "large-8": "--n-envs 8 --ddpg.batch-size 4096 --updates-per-step 0.03125",
    "large-8-no-overlap": "--n-envs 8 --ddpg.batch-size 4096 --updates-per-step 0.03125"
    " --no-overlap",
    # the same with 32 envs (the paper ran 38 rollouts at once): one update per iteration
    "large": "--n-envs 32 --ddpg.batch-size 4096 --updates-per-step 0.03125",
    "large-no-overlap": "--n-envs 32 --ddpg.batch-size 4096 --updates-per-step 0.03125"
    " --no-overlap",
}
"""Each recipe's ``herkit train`` flags on top of the env's preset."""


def recipe_config(env_id: str, flags: list[str], device: str) -> TrainConfig:
    """The env's preset with ``flags`` applied, as ``herkit train`` parses them."""
    from herkit.flags.train import parse_train

    config = parse_train([env_id, *flags], default=preset_config(env_id))
    return dataclasses.replace(config, device=device, progress=False, tensorboard=False)


def matmul_peak(threads: int, device: str, seconds: float = 1.0) -> dict[str, float]:
    """Best GFLOP/s of ``F.linear`` over a few layer-sized shapes, fp32 and bf16 (autocast)."""
    torch.set_num_threads(threads)
    peak: dict[str, float] = {}
    for precision in ("fp32", "bf16"):
        best = 0.0
        for rows, width in ((4096, 256), (4096, 512), (2048, 1024)):
            x = torch.randn(rows, width, device=device)
            w = torch.randn(width, width, device=device)

            def run(
                x: torch.Tensor = x, w: torch.Tensor = w, bf16: bool = precision == "bf16"
            ) -> None:
                with torch.autocast(x.device.type, torch.bfloat16, enabled=bf16):
                    F.linear(x, w)

            rate = time_updates(
                run, seconds=seconds / 3, warmup=1, min_calls=2, synchronize=synchronizer(device)
            ).updates_per_s
            best = max(best, 2 * rows * width * width * rate / 1e9)
        peak[precision] = round(best, 1)
    return peak


def synchronizer(device: str) -> Any:
    """What waits for ``device``'s queued work before the clock is read (None on a CPU)."""
    return None if device == "cpu" else torch.cuda.synchronize


def envs_alone(config: TrainConfig, workers: int, seconds: float) -> tuple[float, list[Any]]:
    """Env steps/s of the recipe's training envs with random actions, and the transitions."""
    envs = make_vector_env(config, config.n_envs, seed_offset=0, workers=workers)
    transitions: list[Any] = []
    try:
        obs, _ = envs.reset(seed=config.seed)
        steps, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            action = envs.action_space.sample()
            next_obs, reward, terminated, truncated, info = envs.step(action)
            transitions.append((obs, action, next_obs, terminated, truncated, info, reward))
            done = terminated | truncated
            obs = envs.reset(options={"reset_mask": done})[0] if done.any() else next_obs
            steps += config.n_envs
        rate = steps / (time.perf_counter() - start)
    finally:
        envs.close()
    return rate, transitions


def learner_alone(config: TrainConfig, transitions: list[Any], seconds: float) -> dict[str, Any]:
    """Updates/s, samples/s and GFLOP/s of sample + update at the recipe's batch."""
    envs = make_vector_env(config, config.n_envs, seed_offset=0, workers=0)
    try:
        agent, buffer = build(config, envs)
    finally:
        envs.close()
    agent.set_precision(config.precision)
    for obs, action, next_obs, terminated, truncated, info, reward in transitions:
        buffer.add(obs, action, next_obs, terminated, truncated, info, reward=reward)
        agent.update_normalizer(obs["observation"], obs["desired_goal"])
    batch_size = config.agent_config().batch_size
    counter = FlopCounterMode(display=False)
    with counter:
        agent.update(buffer.sample(batch_size))
    flops = counter.get_total_flops()
    rate = time_updates(
        lambda: agent.update(buffer.sample(batch_size)),
        seconds=seconds,
        warmup=2,
        min_calls=3,
        synchronize=synchronizer(agent.device.type),
    ).updates_per_s
    return {
        "updates_per_s": round(rate, 2),
        "samples_per_s": round(rate * batch_size),
        "mflop_per_update": round(flops / 1e6, 1),
        "gflop_per_s": round(rate * flops / 1e9, 1),
        "stored": len(buffer),
    }


def loop(config: TrainConfig, steps: int) -> dict[str, Any]:
    """``herkit train`` for ``steps`` env steps: env steps/s after warm-up, evaluations out."""
    with tempfile.TemporaryDirectory() as tmp:
        budget = {"steps": steps, "eval_every": steps // 4, "eval_episodes": 2}
        run = Path(tmp) / "run"
        summary, found = train_here(config, run, checkpoint_every=10 * steps, **budget)
        saved = read_json(run / "config.json")
    rows = [{key: float(value) for key, value in row.items()} for row in found]
    rows = [row for row in rows if row["updates"] > 0]
    if len(rows) < 2:
        raise SystemExit(
            f"--loop-steps {steps} left fewer than two progress rows after the warm-up: "
            "give more env steps (the default: 8000)"
        )
    first, last = rows[0], rows[-1]
    seconds = (last["wall_s"] - first["wall_s"]) - (last["eval_s"] - first["eval_s"])
    return {
        "env_steps_per_s": round((last["env_steps"] - first["env_steps"]) / seconds, 1),
        "from_env_steps": int(first["env_steps"]),
        "to_env_steps": int(last["env_steps"]),
        "updates": summary["updates"],
        "machine": saved["machine"],
        "precision": saved["precision"],
    }


def measure(env_id: str, name: str, device: str, seconds: float, loop_steps: int) -> dict:
    """One recipe's record: the peak, the envs alone, the learner alone and the loop."""
    flags = RECIPES[name].split()
    config = recipe_config(env_id, flags, device)
    config, _ = resolve_conventions(config)
    plan = plan_run_cores(config, config.n_envs, config.env_workers)
    config = dataclasses.replace(
        config, torch_threads=plan.torch_threads, env_workers=plan.env_workers
    )
    print(f"{env_id} {name}: {plan.describe()}", flush=True)
    torch.set_num_threads(plan.torch_threads)
    looped = loop(config, loop_steps)
    precision = looped["precision"]  # as herkit decided it for the loop
    peak = matmul_peak(plan.torch_threads, device)
    env_rate, transitions = envs_alone(config, plan.env_workers, seconds)
    learner = learner_alone(dataclasses.replace(config, precision=precision), transitions, seconds)
    agent = config.agent_config()
    samples_per_step = agent.batch_size * config.updates_per_step
    learner_rate = learner["samples_per_s"] / samples_per_step
    ideal = min(env_rate, learner_rate)
    result = {
        "recipe": flags,
        "command": f"herkit train {env_id} {' '.join(flags)}".strip(),
        "device": device,
        "n_envs": config.n_envs,
        "env_workers": plan.env_workers,
        "torch_threads": plan.torch_threads,
        "overlap": config.overlap,
        "batch_size": agent.batch_size,
        "updates_per_step": config.updates_per_step,
        "samples_per_env_step": samples_per_step,
        "precision": precision,
        "bf16_native": fast_bf16(torch.device(device)),
        "matmul_peak_gflops": peak,
        "envs_alone_steps_per_s": round(env_rate, 1),
        "learner_alone": learner
        | {"peak_fraction": round(learner["gflop_per_s"] / peak[precision], 3)},
        "learner_alone_env_steps_per_s": round(learner_rate, 1),
        "loop": looped,
        "loop_vs_ideal": round(looped["env_steps_per_s"] / ideal, 3),
        "loop_vs_envs_alone": round(looped["env_steps_per_s"] / env_rate, 3),
        "seconds_per_measurement": seconds,
    }
    print(json.dumps(result, indent=1), flush=True)
    return result


def table(runs: dict[str, Any]) -> str:
    """The markdown table of docs/experiment-log.md."""
    rows = []
    for key, run in runs.items():
        learner = run["learner_alone"]
        rows.append(
            [
                key.rsplit("/", 1)[0],
                run["device"],
                f"{run['n_envs']} / {run['env_workers']} / {run['torch_threads']}",
                f"{run['batch_size']} x {run['updates_per_step']:g} = "
                f"{run['samples_per_env_step']:g}",
                run["precision"],
                f"{run['envs_alone_steps_per_s']:,.0f}",
                f"{learner['samples_per_s']:,} ({learner['gflop_per_s']:g}, "
                f"{learner['peak_fraction']:.0%})",
                f"{run['learner_alone_env_steps_per_s']:,.0f}",
                f"{run['loop']['env_steps_per_s']:,.0f}",
                f"{run['loop_vs_ideal']:.2f}",
                f"{run['loop_vs_envs_alone']:.2f}",
            ]
        )
    columns = ["env, recipe", "device", "envs / workers / threads", "batch x updates per env step"]
    columns += ["precision", "envs alone", "learner alone: samples/s (GFLOP/s, of peak)"]
    columns += ["learner alone, env steps/s", "loop", "loop / ideal", "loop / envs alone"]
    return markdown(columns, "lllll" + "r" * 6, rows)


def main() -> None:
    cli = parser(__doc__)
    cli.add_argument("--env", default="FetchPush-v4")
    cli.add_argument("--recipes", nargs="+", default=list(RECIPES), choices=list(RECIPES))
    cli.add_argument("--device", default="cpu")
    cli.add_argument("--seconds", type=float, default=15.0, help="per alone measurement")
    cli.add_argument("--loop-steps", type=int, default=8_000)
    cli.add_argument("--table", action="store_true", help="print the recorded table only")
    args = cli.parse_args()
    if not args.table:
        info = machine() | {"code": code_version()}
        for name in args.recipes:
            result = measure(args.env, name, args.device, args.seconds, args.loop_steps)
            add_run(RECORD, f"{args.env} {name}/{args.device}", result, info)
    print(table(read_json(RECORD)["runs"]))


if __name__ == "__main__":
    main()
