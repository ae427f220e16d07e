"""herkit against SB3 on FetchReach-v4: SAC+HER and DDPG+HER, same settings, time to 0.9.

``python benchmarks/sb3_compare.py --only fetchreach --seeds 0`` runs it (part
``fetchreach``; needs gymnasium-robotics): SB3 ``SAC`` and ``DDPG`` + ``HerReplayBuffer``
against ``herkit train --algo sac`` and herkit's default (DDPG) preset, 2 envs and 0.5
updates per env step on both sides (:data:`SETTINGS`), each run a fresh process
(``sb3_training.py``). Here: what each side is set to and the report's section 2.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import sb3_training as runs

SETTINGS: list[tuple[str, str, str]] = [
    (
        "env",
        "FetchReach-v4, 2 envs in 2 worker processes (preset, AsyncVectorEnv)",
        "FetchReach-v4, 2 envs in one process (make_vec_env: DummyVecEnv + Monitor)",
    ),
    (
        "algorithm",
        "SAC: twin critics, automatic entropy (initial alpha 0.1, target -act_dim). "
        "DDPG (the preset): action L2 1.0, Gaussian noise 0.2, random actions 30 %",
        "SAC: n_critics=2, ent_coef='auto_0.1', target_entropy='auto' (-act_dim). "
        "DDPG: NormalActionNoise(0, 0.2) (SB3 has no action L2 penalty nor random-action "
        "share)",
    ),
    (
        "network",
        "3x256 ReLU, actor and critics; input observation || desired_goal (13)",
        "net_arch=[256, 256, 256]; input observation || achieved_goal || desired_goal (16)",
    ),
    (
        "input normalisation",
        "running mean/std, clip 5",
        "VecNormalize(norm_obs=True, norm_reward=False, clip_obs=5)",
    ),
    ("optimiser", "Adam 1e-3 for actor, critic and alpha", "learning_rate=1e-3 (all three)"),
    ("batch / gamma / target", "256 / 0.98 / polyak 0.95 per update", "256 / 0.98 / tau=0.05"),
    (
        "updates",
        "0.5 per env step (1 per step of the 2 envs) after 1,000 env steps",
        "train_freq=1, gradient_steps=1 with 2 envs = 0.5 per env step, learning_starts=1000",
    ),
    ("random actions", "first 1,000 env steps", "first 1,000 env steps (learning_starts)"),
    ("HER", "future, k=4", "future, n_sampled_goal=4"),
    ("Q-target clipping", "to the return range", "none"),
    ("buffer", "capacity 1e6", "buffer_size=1e6"),
    (
        "evaluation",
        "--n-eval-envs 1 (the preset would use 2)",
        "one separate env, VecNormalize statistics applied",
    ),
    ("torch threads", "1", "1"),
]
"""What each side is set to; written into docs/sb3.md as "setting | herkit | SB3" rows."""


def section(part: dict[str, Any]) -> tuple[list[str], list[str]]:
    """Section 2 of docs/sb3.md, and its lines of the summary of speed-ups."""
    lines: list[str] = []
    verdicts: list[str] = []
    lines += [
        "## 2. FetchReach-v4: SAC+HER (and herkit's DDPG preset)",
        "",
        f"Budget {part['steps']:,} env steps, evaluation every {part['eval_every']:,} "
        f"env steps ({part['eval_episodes']} deterministic episodes on one separate env), "
        f"seeds {', '.join(map(str, part['seeds']))}.",
        "",
        *runs.training_table(part),
        "",
    ]
    for h_algo, s_algo in (("sac", "sac"), ("ddpg", "ddpg"), ("ddpg", "sac")):
        sp = runs.speedups(part, h_algo, s_algo)
        if not sp["per_seed"]:
            continue
        ratio_text = ", ".join(f"seed {e['seed']}: {runs.speedup_text(e)}" for e in sp["per_seed"])
        pair = f"herkit {h_algo.upper()} vs SB3 {s_algo.upper()}" + (
            "" if h_algo == s_algo else " (herkit's default preset; different algorithms)"
        )
        budget = runs.budget_ratios(part, h_algo, s_algo)
        lines.append(
            f"- {pair}: wall time to 0.9, SB3 / herkit: {ratio_text}; loop wall time of "
            f"the whole budget, SB3 / herkit: {runs.ratios_text(budget)}."
        )
        verdicts.append(
            f"- FetchReach, {pair}: wall time to 0.9, SB3 / herkit: {ratio_text}; whole "
            f"budget: {runs.ratios_text(budget)}."
        )
    lines += [
        "",
        "Commands (seed 0):",
        "",
        "```bash",
        *sorted({r["command"] for r in part["runs"] if r["seed"] == part["seeds"][0]}),
        "```",
        "",
        *runs.settings_table(SETTINGS),
        "",
    ]
    return lines, verdicts


def note(part: dict[str, Any]) -> str:
    """What the report's reading notes say about these runs (may be empty): where the
    libraries first reached 0.9 at different env steps, and what one shared first means."""
    text = runs.first_differences(part, "FetchReach")
    firsts = {r["first_0.9_env_steps"] for r in part["runs"]}
    if len(firsts) == 1 and None not in firsts:
        (first,) = firsts
        text += (
            f" On FetchReach every run first reached 0.9 at {first:,} env steps, after "
            f"1,000 random-action steps and only about {(first - 1000) // 2:,} updates, "
            "so its time to 0.9 mostly measures env stepping, action selection and the "
            "evaluations, not update speed."
        )
    return text
