"""Training on a GPU: update and sampling throughput on CPU and GPU, and FetchPush end to end.

    python benchmarks/gpu.py speed                 # every device torch sees here
    python benchmarks/gpu.py fetchpush --seeds 0   # needs CUDA: the large-batch recipe

``speed`` measures, for each device (the CPU, and ``cuda`` when there is one):

- sampling: batches per second of 256 and 2048 transitions from a buffer holding 200,000
  FetchPush-shaped transitions (future, k = 4), with the data in numpy on the host (the
  batch then copied to the device, as the training loop does) or in torch tensors on the
  device (``HerReplayBuffer(device=...)``, rewards in torch);
- updates: DDPG updates per second (sample + update, fp32 and bf16 autocast) at 3x256 /
  batch 256 and 3x512 / batch 2048, with the buffer on the host and on the device.

``fetchpush`` trains FetchPush-v4 with the large-batch recipe on the GPU: DDPG 3x512 with
LayerNorm, batch 2048, bf16, goal mix 1 2 2, action L2 0.01, 20 % random actions, 0.5
updates per env step, as many envs as the host has cores, the buffer on the GPU; it
records success against env steps and wall time (target: 0.9 in under 10 minutes).

Results go to docs/gpu.json with the device named.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
import torch

from herkit import HerReplayBuffer
from herkit.agents import make_agent
from herkit.bench import fetch_reward
from herkit.config import DDPGConfig
from herkit.envs.torch_rewards import GoalDistanceReward
from herkit.run_logs import read_progress

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DOCS, code_version, machine

RECORD = DOCS / "gpu.json"
OBS_DIM, GOAL_DIM, ACT_DIM = 25, 3, 4  # FetchPush's sizes
FILL, EPISODE = 200_000, 50
SIZES = [((256, 256, 256), 256), ((512, 512, 512), 2048)]


def devices() -> list[str]:
    """The CPU, and the first GPU when torch sees one."""
    return ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def filled_buffer(device: str | None) -> HerReplayBuffer:
    """FILL random FetchPush-shaped transitions in episodes of EPISODE steps."""
    buffer = HerReplayBuffer(
        FILL, observation_shape=OBS_DIM, goal_shape=GOAL_DIM, action_shape=ACT_DIM,
        reward_fn=fetch_reward, strategy="future", k=4, seed=0, device=device,
        torch_reward_fn=GoalDistanceReward(0.05) if device is not None else None,
    )  # fmt: skip
    rng = np.random.default_rng(0)
    for _ in range(FILL // EPISODE):
        obs = rng.normal(size=(EPISODE + 1, OBS_DIM)).astype(np.float32)
        achieved = rng.uniform(0, 0.2, size=(EPISODE + 1, GOAL_DIM)).astype(np.float32)
        desired = np.repeat(rng.uniform(0, 0.2, size=(1, GOAL_DIM)), EPISODE + 1, 0)
        actions = rng.uniform(-1, 1, size=(EPISODE, ACT_DIM)).astype(np.float32)
        for t in range(EPISODE):
            buffer.add(
                {"observation": obs[t], "achieved_goal": achieved[t], "desired_goal": desired[t]},
                actions[t],
                {
                    "observation": obs[t + 1],
                    "achieved_goal": achieved[t + 1],
                    "desired_goal": desired[t + 1],
                },
                False,
                t == EPISODE - 1,
            )
    return buffer


def synchronize(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def rate(step: Any, device: str, seconds: float = 5.0) -> float:
    """Calls of ``step`` per second (after 5 warm-up calls)."""
    for _ in range(5):
        step()
    synchronize(device)
    done, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        step()
        done += 1
    synchronize(device)
    return done / (time.perf_counter() - start)


def speed() -> list[dict[str, Any]]:
    """Sampling and update throughput on every device, buffer on the host and on it."""
    torch.set_num_threads(1)
    rows = []
    for device in devices():
        buffers = {"host": filled_buffer(None), "device": filled_buffer(device)}
        for placement, buffer in buffers.items():
            for batch_size in (256, 2048):

                def sample(buffer: Any = buffer, n: int = batch_size, to: str = device) -> None:
                    batch = buffer.sample(n)
                    if buffer.device is None:
                        batch.to_torch(to)

                row = {"what": "sample", "device": device, "buffer": placement,
                       "batch_size": batch_size, "per_s": rate(sample, device)}  # fmt: skip
                rows.append(row)
                print(row, flush=True)
            for hidden, batch_size in SIZES:
                for precision in ("fp32", "bf16"):
                    config = DDPGConfig(hidden=hidden, batch_size=batch_size,
                                        actor_layer_norm=True, critic_layer_norm=True)  # fmt: skip
                    box = gymnasium.spaces.Box(-1.0, 1.0, (ACT_DIM,))
                    agent = make_agent("ddpg", config, OBS_DIM, GOAL_DIM, box, (-1.0, 0.0),
                                       seed=0, device=device, precision=precision)  # fmt: skip

                    def update(
                        agent: Any = agent, buffer: Any = buffer, n: int = batch_size
                    ) -> None:
                        agent.update(buffer.sample(n))

                    row = {"what": "update", "device": device, "buffer": placement,
                           "hidden": list(hidden), "batch_size": batch_size,
                           "precision": precision, "per_s": rate(update, device)}  # fmt: skip
                    rows.append(row)
                    print(row, flush=True)
    return rows


def fetchpush(seeds: list[int], steps: int) -> list[dict[str, Any]]:
    """The large-batch recipe on FetchPush-v4 on the GPU; success against wall time."""
    if not torch.cuda.is_available():
        raise SystemExit("fetchpush needs a CUDA device (torch.cuda.is_available() is False)")
    n_envs = os.cpu_count() or 1
    rows = []
    for seed in seeds:
        with tempfile.TemporaryDirectory() as tmp:
            command = [
                sys.executable, "-m", "herkit", "train", "FetchPush-v4", "--device", "cuda",
                "--buffer-device", "device", "--n-envs", str(n_envs), "--steps", str(steps),
                "--updates-per-step", "0.5", "--ddpg.hidden", "512", "512", "512",
                "--ddpg.batch-size", "2048", "--ddpg.critic-layer-norm",
                "--ddpg.actor-layer-norm", "--precision", "bf16", "--goal-mix", "1", "2", "2",
                "--ddpg.action-l2", "0.01", "--ddpg.random-eps", "0.2", "--eval-every", "10000",
                "--eval-episodes", "20", "--target-success", "0.9", "--seed", str(seed),
                "--out", str(Path(tmp) / "run"), "--no-progress",
            ]  # fmt: skip
            subprocess.run(command, check=True)
            progress = read_progress(Path(tmp) / "run" / "progress.csv")
        curve = [{"env_steps": int(r["env_steps"]), "wall_s": float(r["wall_s"]),
                  "success_rate": float(r["success_rate"])} for r in progress]  # fmt: skip
        solved = next((point for point in curve if point["success_rate"] >= 0.9), None)
        rows.append({"seed": seed, "n_envs": n_envs, "command": " ".join(command[1:]),
                     "first_0.9": solved, "curve": curve})  # fmt: skip
        print(f"seed {seed}: first >= 0.9 at {solved}", flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["speed", "fetchpush"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--steps", type=int, default=500_000)
    args = parser.parse_args()
    record = json.loads(RECORD.read_text()) if RECORD.exists() else {}
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    entry = {"machine": machine(), "gpu": gpu, "code": code_version()}
    if args.what == "speed":
        entry["rows"] = speed()
    else:
        entry["runs"] = fetchpush(args.seeds, args.steps)
    record[f"{args.what}/{gpu or 'cpu-only'}"] = entry
    RECORD.write_text(json.dumps(record, indent=1))
    print(f"written {RECORD}")


if __name__ == "__main__":
    main()
