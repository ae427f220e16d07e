"""herkit against SB3 on FetchPush-v4: a short training run, env steps per second.

``python benchmarks/sb3_compare.py --only fetchpush-speed`` runs it (part
``fetchpush-speed``; needs gymnasium-robotics): 20,000 env steps (seed = the first of
``--seeds``) of herkit SAC and DDPG and SB3 SAC and DDPG with FetchReach's settings, each run
a fresh process (``sb3_training.py``); far too few steps to learn FetchPush, so success is
only reported. Here: the report's section 3b.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sb3_common import run_label


def speed_table(part: dict[str, Any]) -> list[str]:
    """The table of the runs: env steps, updates and their rates, success, wall times."""
    lines = [
        "| library | env steps | updates | loop wall s | env steps/s | updates/s in the loop "
        "| success at the end | process wall s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for run in part["runs"]:
        lines.append(
            f"| {run_label(run)} | {run['env_steps']:,} | {run['updates']:,} | "
            f"{run['wall_s']:.1f} | {run['env_steps'] / run['wall_s']:,.0f} | "
            f"{run['updates'] / run['wall_s']:,.1f} | {run['final_success']:.2f} | "
            f"{run['process_wall_s']:.1f} |"
        )
    return lines


def section(part: dict[str, Any]) -> tuple[list[str], list[str]]:
    """Section 3b of docs/sb3.md, and its lines of the summary of speed-ups."""
    lines: list[str] = []
    verdicts: list[str] = []
    runs = {(r["lib"], r["algo"]): r for r in part["runs"]}
    lines += [
        "## 3b. FetchPush-v4: a short training run, env steps per second",
        "",
        f"{part['steps']:,} env steps, seed {part['seeds'][0]}, settings as in "
        "FetchReach (2 envs, 0.5 updates per env step after 1,000 random steps, 3x256, "
        "batch 256); one evaluation (10 episodes) at the end, inside the loop time. "
        f"{part['steps']:,} env steps are far too few to learn FetchPush; the success "
        "column is only reported, not compared.",
        "",
        *speed_table(part),
        "",
        "```bash",
        *sorted({r["command"] for r in part["runs"]}),
        "```",
        "",
    ]
    for h_algo, s_algo in (("sac", "sac"), ("ddpg", "ddpg"), ("ddpg", "sac")):
        h, s = runs.get(("herkit", h_algo)), runs.get(("sb3", s_algo))
        if h and s:
            ratio = (h["env_steps"] / h["wall_s"]) / (s["env_steps"] / s["wall_s"])
            verdicts.append(
                f"- FetchPush {part['steps']:,}-step training, herkit {h_algo.upper()} vs "
                f"SB3 {s_algo.upper()}: env steps/s, herkit / SB3: {ratio:.2f}x."
            )
    return lines, verdicts
