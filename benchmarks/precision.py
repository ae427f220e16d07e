"""bfloat16 autocast against float32: update speed, and whether learning holds up.

    python benchmarks/precision.py speed              # updates/s of DDPG, fp32 vs bf16
    python benchmarks/precision.py learn --seeds 0 1 2  # 15-bit flipping and FetchReach
    python benchmarks/precision.py compile            # updates/s, eager vs torch.compile

``speed`` times one DDPG update (one thread) at the Fetch recipes' sizes; ``learn`` trains
15-bit flipping and FetchReach-v4 with fp32 and bf16. Results go to docs/precision.json.
"""

from __future__ import annotations

import json
import time
from typing import Any

import common
import gymnasium
import numpy as np
import torch

from herkit import Batch
from herkit.agents import make_agent
from herkit.bench import UpdateTiming, time_updates
from herkit.config import DDPGConfig

RECORD = common.DOCS / "precision.json"
SIZES = [
    ((256, 256, 256), 256),
    ((256, 256, 256), 1024),
    ((512, 512, 512), 1024),
    ((512, 512, 512), 2048),
]
OBS_DIM, GOAL_DIM, ACT_DIM = 25, 3, 4  # FetchPush's sizes


def ddpg_timing(
    hidden: tuple[int, ...],
    batch_size: int,
    precision: str,
    layer_norm: bool,
    seconds: float = 6.0,
    compiled: bool = False,
) -> UpdateTiming:
    """DDPG updates (one thread) on one random FetchPush-sized batch, timed for ``seconds``
    after 20 (``compiled``: every network through ``torch.compile``)."""
    torch.set_num_threads(1)
    config = DDPGConfig(
        hidden=hidden,
        batch_size=batch_size,
        actor_layer_norm=layer_norm,
        critic_layer_norm=layer_norm,
    )
    box = gymnasium.spaces.Box(-1.0, 1.0, (ACT_DIM,))
    agent = make_agent(
        "ddpg", config, OBS_DIM, GOAL_DIM, box, (-1.0, 0.0), seed=0, precision=precision
    )
    if compiled:
        for network in agent._networks().values():
            network.compile(dynamic=False)
    rng = np.random.default_rng(0)

    def normal(*shape: int) -> np.ndarray:
        return rng.normal(size=shape).astype(np.float32)

    n = batch_size
    batch = Batch(
        normal(n, OBS_DIM),
        rng.uniform(-1, 1, (n, ACT_DIM)).astype(np.float32),
        -rng.integers(2, size=n).astype(np.float32),
        normal(n, OBS_DIM),
        normal(n, GOAL_DIM),
        normal(n, GOAL_DIM),
        normal(n, GOAL_DIM),
        np.zeros(n, np.float32),
    )
    agent.update_normalizer(batch.observation, batch.goal)
    return time_updates(lambda: agent.update(batch), seconds=seconds, warmup=20)


def speed() -> list[dict[str, Any]]:
    """fp32 against bf16 updates/s at each size, with and without LayerNorm."""
    rows = []
    print("| hidden | batch | LayerNorm | fp32 updates/s | bf16 updates/s | speed-up |")
    print("|---|---:|---|---:|---:|---:|")
    for hidden, batch_size in SIZES:
        for layer_norm in (False, True):
            fp32 = ddpg_timing(hidden, batch_size, "fp32", layer_norm).updates_per_s
            bf16 = ddpg_timing(hidden, batch_size, "bf16", layer_norm).updates_per_s
            row = {
                "hidden": list(hidden),
                "batch_size": batch_size,
                "layer_norm": layer_norm,
                "fp32_updates_per_s": fp32,
                "bf16_updates_per_s": bf16,
            }
            rows.append(row)
            size = "x".join(map(str, hidden))
            print(
                f"| {size} | {batch_size} | {layer_norm} | {fp32:.1f} | {bf16:.1f} | "
                f"{bf16 / fp32:.2f}x |",
                flush=True,
            )
    return rows


def compile_speed() -> list[dict[str, Any]]:
    """Eager against torch.compile'd networks, fp32, at the two Fetch recipe sizes."""
    rows = []
    for hidden, batch_size in (SIZES[0], SIZES[-1]):
        started = time.perf_counter()
        compiled = ddpg_timing(hidden, batch_size, "fp32", False, compiled=True)
        compile_s = time.perf_counter() - started - compiled.seconds  # all but the timed
        eager = ddpg_timing(hidden, batch_size, "fp32", False)
        row = {
            "hidden": list(hidden),
            "batch_size": batch_size,
            "eager_updates_per_s": eager.updates_per_s,
            "compiled_updates_per_s": compiled.updates_per_s,
            "warmup_and_compile_s": compile_s,
        }
        rows.append(row)
        print(row, flush=True)
    return rows


LEARN = {
    "herkit/BitFlip-v0": {"steps": 10_000, "eval_every": 1_000, "eval_episodes": 50},
    "FetchReach-v4": {"steps": 5_000, "eval_every": 500, "eval_episodes": 20},
}


def learn(seeds: list[int]) -> list[dict[str, Any]]:
    """Each preset of :data:`LEARN` trained with fp32 and with bf16 per seed; their curves."""
    rows = []
    for env_id, budget in LEARN.items():
        for seed in seeds:
            for precision in ("fp32", "bf16"):
                summary, found = common.train_here(env_id, seed=seed, precision=precision, **budget)
                points = common.curve(found)
                row = {
                    "env_id": env_id,
                    "seed": seed,
                    "precision": precision,
                    "success_rate": summary["success_rate"],
                    "first_0.9_at": common.first_steps(points),
                    "wall_s": summary["wall_s"],
                    "curve": points,
                }
                rows.append(row)
                print(
                    f"{env_id} seed {seed} {precision}: final {summary['success_rate']:.2f}, "
                    f"first >= 0.9 at {row['first_0.9_at']} env steps, {summary['wall_s']:.0f} s",
                    flush=True,
                )
    return rows


def main() -> None:
    """The command line (see the module's docstring)."""
    cli = common.parser(__doc__)
    cli.add_argument("what", choices=["speed", "learn", "compile"])
    cli.add_argument("--seeds", type=int, nargs="+", default=[0])
    args = cli.parse_args()
    record = common.read_json(RECORD) | {"machine": common.machine(), "code": common.code_version()}
    run = {"speed": speed, "compile": compile_speed, "learn": lambda: learn(args.seeds)}
    record[args.what] = run[args.what]()
    RECORD.write_text(json.dumps(record, indent=1))
    print(f"written {RECORD}")


if __name__ == "__main__":
    main()
