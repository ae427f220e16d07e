"""herkit against SB3 on bit flipping (15 bits): DQN+HER, same settings, time to 0.9.

``python benchmarks/sb3_compare.py --only bitflip --seeds 0 1 2`` runs it (part ``bitflip``):
``herkit train herkit/BitFlip-v0`` (the DQN+HER preset) against SB3 ``DQN`` +
``HerReplayBuffer`` with the same network, batch, learning rate, discount, HER strategy and
update schedule (:data:`SETTINGS`), each run a fresh process (``sb3_training.py``). Here:
what each side is set to, the report's section 1 and docs/figures/sb3_bitflip.png.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sb3_common import fmt, run_label
from sb3_training import (
    TARGET,
    budget_ratios,
    first_differences,
    ratios_text,
    settings_table,
    speedup_text,
    speedups,
    training_table,
)

SETTINGS: list[tuple[str, str, str]] = [
    (
        "env",
        "herkit/BitFlip-v0, 15 bits, 15-step episodes that end on success",
        "the same env (SB3's make_vec_env: DummyVecEnv + Monitor, 1 env)",
    ),
    ("algorithm", "DQN, double-Q, Huber loss", "DQN (SB3 has no double-Q), Huber loss"),
    (
        "network",
        "observation || desired_goal (30) -> 256 -> 15, ReLU",
        "MultiInputPolicy, net_arch=[256]: observation || achieved_goal || "
        "desired_goal (45) -> 256 -> 15, ReLU",
    ),
    ("input normalisation", "running mean/std, clip 5 (always on)", "none (SB3 default)"),
    (
        "optimiser",
        "Adam 1e-3 (fused), no gradient clipping",
        "Adam 1e-3, max_grad_norm=10 (SB3 default)",
    ),
    ("batch / gamma", "256 / 0.98", "256 / 0.98"),
    (
        "target network",
        "polyak 0.99 after every update",
        "tau=0.01, target_update_interval=4 (every 4 env steps = every update, also "
        "before learning starts)",
    ),
    (
        "exploration",
        "epsilon-greedy 0.5 from the first step",
        "exploration_initial_eps = exploration_final_eps = 0.5; uniformly random "
        "actions for the first 256 steps (SB3 does that before learning_starts)",
    ),
    (
        "updates",
        "1 per 4 env steps after 256 warm-up steps (updates_per_step=0.25, warmup_steps=256)",
        "train_freq=4, gradient_steps=1, learning_starts=256",
    ),
    (
        "HER",
        "future, k=4, relabelled at sample time; relabelled successes are terminal "
        "(terminal_on_success)",
        "future, n_sampled_goal=4; the stored done flag is kept (no equivalent of "
        "terminal_on_success)",
    ),
    ("Q-target clipping", "to the return range [-1/(1-gamma), 0]", "none"),
    ("buffer", "capacity 1e6", "buffer_size=1e6"),
    ("torch threads", "1 (herkit's default)", "1 (torch.set_num_threads(1))"),
]
"""What each side is set to; written into docs/sb3.md as "setting | herkit | SB3" rows."""


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def section(part: dict[str, Any]) -> tuple[list[str], list[str]]:
    """Section 1 of docs/sb3.md, and its lines of the summary of speed-ups."""
    lines: list[str] = []
    verdicts: list[str] = []
    sp = speedups(part, "dqn", "dqn")
    budget = budget_ratios(part, "dqn", "dqn")
    ratio_text = ", ".join(f"seed {e['seed']}: {speedup_text(e)}" for e in sp["per_seed"])
    h, s = (
        [
            r["first_0.9_wall_s"]
            for r in part["runs"]
            if r["lib"] == lib and r["first_0.9_wall_s"] is not None
        ]
        for lib in ("herkit", "sb3")
    )
    lines += [
        "## 1. Bit flipping, 15 bits: DQN+HER",
        "",
        f"Budget {part['steps']:,} env steps, evaluation every {part['eval_every']:,} "
        f"env steps ({part['eval_episodes']} deterministic episodes on a separate env), "
        f"seeds {', '.join(map(str, part['seeds']))}.",
        "",
        *training_table(part),
        "",
        f"Medians over the seeds that reached 0.9: herkit {fmt(_median(h))} s, "
        f"SB3 {fmt(_median(s))} s of loop wall time. Wall time to 0.9, SB3 / herkit: "
        f"{ratio_text}. Loop wall time of the whole budget (same env steps, same number "
        f"of updates), SB3 / herkit, seeds in order: {ratios_text(budget)}.",
        "",
        "![success vs env steps and wall time](figures/sb3_bitflip.png)",
        "",
        "Commands (seed 0; other seeds change `--seed`):",
        "",
        "```bash",
        *sorted({r["command"] for r in part["runs"] if r["seed"] == part["seeds"][0]}),
        "```",
        "",
        *settings_table(SETTINGS),
        "",
    ]
    verdicts.append(
        f"- Bit flipping, DQN+HER: wall time to 0.9, SB3 / herkit: {ratio_text}; loop wall "
        f"time of the whole budget, SB3 / herkit: {ratios_text(budget)}."
    )
    return lines, verdicts


def note(part: dict[str, Any]) -> str:
    """What the report's reading notes say about these runs (may be empty)."""
    return first_differences(part, "Bit flipping")


def plot(part: dict[str, Any], path: Path) -> None:
    """Success against env steps and against loop wall time, one line per run, to ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    colors = {"herkit": "tab:blue", "sb3": "tab:orange"}
    labelled: set[str] = set()
    for run in part["runs"]:
        curve = np.asarray(run["curve"], float)
        label = None if run["lib"] in labelled else run_label(run) + "+HER"
        labelled.add(run["lib"])
        for ax, column in ((axes[0], 0), (axes[1], 1)):
            ax.plot(
                curve[:, column],
                curve[:, 2],
                color=colors[run["lib"]],
                alpha=0.8,
                marker=".",
                label=label,
            )
    axes[0].set_xlabel("env steps")
    axes[1].set_xlabel("wall time of the training loop (s)")
    for ax in axes:
        ax.set_ylabel("success rate (10 episodes)")
        ax.axhline(TARGET, color="grey", linestyle=":", linewidth=1)
        ax.set_ylim(-0.05, 1.05)
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right")
    seeds = ", ".join(str(s) for s in part["seeds"])
    fig.suptitle(f"BitFlip 15 bits, herkit vs SB3, one line per seed ({seeds})")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
