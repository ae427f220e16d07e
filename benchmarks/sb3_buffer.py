"""SB3's own algorithms with herkit's buffer (herkit.sb3) against SB3's HerReplayBuffer.

Everything but the ``replay_buffer_class`` is the same on both sides:

- ``bitflip``: SB3 ``DQN`` on ``herkit/BitFlip-v0`` (15 bits), 20,000 env steps: net
  [256], batch 256, Adam 1e-3, gamma 0.98, tau 0.01 every 4 steps, epsilon 0.5, one update
  per 4 env steps after 256 steps, future k = 4.
- ``fetchreach``: SB3 ``SAC`` on ``FetchReach-v4`` with 2 envs (DummyVecEnv), 10,000 env
  steps: 3x256, batch 256, Adam 1e-3, gamma 0.98, tau 0.05, entropy from 0.1, one update
  per step of the 2 envs after 1,000 env steps, future k = 4.

Every run is its own process on one torch thread; runs of the two buffers alternate, so
both meet the same machine load. Evaluation: every ``eval_every`` env steps, 10 episodes
of the deterministic policy on a separate env (success from ``info["is_success"]``), in
the wall time. The time spent inside ``replay_buffer.sample`` is measured separately.

    python benchmarks/sb3_buffer.py                           # both tasks, 3 seeds
    python benchmarks/sb3_buffer.py --tasks bitflip --seeds 0

Needs stable-baselines3 (``bash install.sh sb3``) and, for FetchReach, gymnasium-robotics
(``bash install.sh robotics``). Writes docs/sb3_buffer.json (merged by task, buffer, seed).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DOCS, code_version, machine, sb3_success_rate

RECORD = DOCS / "sb3_buffer.json"
TASKS: dict[str, dict[str, Any]] = {
    "bitflip": {"env_id": "herkit/BitFlip-v0", "kwargs": {"n_bits": 15}, "n_envs": 1,
                "steps": 20_000, "eval_every": 1_000},
    "fetchreach": {"env_id": "FetchReach-v4", "kwargs": {}, "n_envs": 2, "steps": 10_000,
                   "eval_every": 500},
}  # fmt: skip
BUFFERS = ("sb3", "herkit")
EVAL_EPISODES = 10


def model_for(task: str, buffer: str, env: Any, seed: int) -> Any:
    """The SB3 model of ``task`` with SB3's or herkit's HER buffer."""
    import stable_baselines3
    from stable_baselines3 import DQN, SAC

    from herkit import sb3

    buffer_class = sb3.HerReplayBuffer if buffer == "herkit" else stable_baselines3.HerReplayBuffer
    common: dict[str, Any] = {
        "learning_rate": 1e-3, "gamma": 0.98, "buffer_size": 1_000_000, "batch_size": 256,
        "replay_buffer_class": buffer_class, "seed": seed, "device": "cpu", "verbose": 0,
        "replay_buffer_kwargs": {"n_sampled_goal": 4, "goal_selection_strategy": "future"},
    }  # fmt: skip
    if task == "bitflip":
        return DQN(
            "MultiInputPolicy", env, tau=0.01, train_freq=4, gradient_steps=1,
            learning_starts=256, target_update_interval=4, exploration_initial_eps=0.5,
            exploration_final_eps=0.5, policy_kwargs={"net_arch": [256]}, **common,
        )  # fmt: skip
    return SAC(
        "MultiInputPolicy", env, tau=0.05, train_freq=1, gradient_steps=1, learning_starts=1_000,
        ent_coef="auto_0.1", policy_kwargs={"net_arch": [256, 256, 256]}, **common,
    )  # fmt: skip


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
                success = sb3_success_rate(model, eval_env, EVAL_EPISODES, eval_seed)
                rows.append({"env_steps": self.num_timesteps,
                             "wall_s": round(time.perf_counter() - started, 2),
                             "success_rate": success})  # fmt: skip
            return True

    model.learn(total_timesteps=spec["steps"], callback=Evaluate())
    return {"rows": rows, "wall_s": round(time.perf_counter() - started, 1),
            "sample_s": round(sampling[0], 2), "updates": int(model._n_updates)}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", choices=tuple(TASKS), default=list(TASKS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--worker", nargs=3, metavar=("TASK", "BUFFER", "SEED"), help="internal")
    args = parser.parse_args()
    if args.worker:
        task, buffer, seed = args.worker
        print(json.dumps(worker(task, buffer, int(seed))))
        return
    records: dict[str, Any] = json.loads(RECORD.read_text())["runs"] if RECORD.exists() else {}
    for task in args.tasks:
        for seed in args.seeds:
            for buffer in BUFFERS:
                command = [sys.executable, __file__, "--worker", task, buffer, str(seed)]
                output = subprocess.run(command, check=True, capture_output=True, text=True)
                result = json.loads(output.stdout.strip().splitlines()[-1])
                rows = result["rows"]
                solved = next((row for row in rows if row["success_rate"] >= 0.9), None)
                records[f"{task}/{buffer}/seed{seed}"] = {
                    "task": task, "buffer": buffer, "seed": seed, **result,
                    "first_0.9": solved, "final_success": rows[-1]["success_rate"],
                    "code": code_version(),
                }  # fmt: skip
                print(f"{task} {buffer} seed {seed}: first 0.9 {solved}, final "
                      f"{rows[-1]['success_rate']:.2f}, {result['wall_s']} s "
                      f"({result['sample_s']} s sampling)", flush=True)  # fmt: skip
                RECORD.write_text(json.dumps({"machine": machine(), "runs": records}, indent=1))


if __name__ == "__main__":
    main()
