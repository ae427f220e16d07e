"""herkit against stable-baselines3 (SB3), side by side, same machine, same settings.

    python benchmarks/sb3_compare.py                          # everything (about an hour)
    python benchmarks/sb3_compare.py --only bitflip --seeds 0 1 2
    python benchmarks/sb3_compare.py --only fetchreach --seeds 0
    python benchmarks/sb3_compare.py --only updates
    python benchmarks/sb3_compare.py --only fetchpush-speed
    python benchmarks/sb3_compare.py --report-only            # docs from docs/sb3.json
    python benchmarks/sb3_compare.py --smoke --out /tmp/x     # tiny budgets: a test, no result

Each part is its own file beside this one: ``sb3_bitflip.py``, ``sb3_fetchreach.py``,
``sb3_updates.py`` and ``sb3_fetchpush_speed.py`` (the training runs the three training
parts share are ``sb3_training.py``; what all share, ``sb3_common.py``). This script runs
the parts, writes the report, and is the SB3 side's worker (hidden ``--sb3-run`` and
``--updates-run``).

Needs stable-baselines3 (``bash install.sh bench``) and, for the Fetch parts,
gymnasium-robotics (``bash install.sh robotics``); sb3-contrib adds TQC to ``updates``.

Parts (``--only``):

- ``bitflip``: ``herkit/BitFlip-v0`` (15 bits, random start and goal every episode).
  ``herkit train`` (DQN+HER preset) against SB3 ``DQN`` + ``HerReplayBuffer`` with the
  same network, batch, learning rate, discount, HER strategy and update schedule.
- ``fetchreach``: ``FetchReach-v4``. SB3 ``SAC`` and ``DDPG`` + ``HerReplayBuffer``
  against ``herkit train --algo sac`` and herkit's default (DDPG) preset: 2 envs, 0.5
  updates per env step on both sides.
- ``updates``: gradient updates per second on FetchPush-v4 shapes, 3x256 networks,
  batch 256, a HER buffer (capacity 1e6, future k=4) holding the same 20,000
  random-action FetchPush transitions: SB3 ``model.train(gradient_steps=500)`` against
  500 x (``buffer.sample(256)`` + ``agent.update(batch)``), torch on 1 and 2 threads.
- ``fetchpush-speed``: a short FetchPush-v4 training run (20,000 env steps, seed = the
  first of ``--seeds``) of herkit SAC and DDPG and SB3 SAC and DDPG, for env steps/s.

Every training run is a fresh process: herkit through its CLI, SB3 through this
script's ``--sb3-run`` worker, which writes the same ``progress.csv`` / ``summary.json``
columns. Both evaluate the same way: every ``eval_every`` env steps, 10 episodes of the
deterministic policy on one separate env, success = ``info["is_success"]`` at the end of
the episode; wall time counts from the start of the training loop and includes the
evaluations. Runs go to the full budget (no early stop), and the first evaluation with
success >= 0.9 gives "env steps / wall s to 0.9".

Before every timed measurement the script waits (polling once a minute) while a process
matching ``--quiet-pattern`` runs (default ``benchmarks/bitflip.py``; '' disables it) or
more than 10 % of the machine's CPU time is busy; a measurement after which the machine is
busy again is done again. Results: ``docs/sb3.json`` (parts not rerun are kept),
``docs/sb3.md`` and ``docs/figures/sb3_bitflip.png``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import sb3_bitflip
import sb3_fetchpush_speed
import sb3_fetchreach
import sb3_updates
from sb3_common import MAX_BUSY, ROOT
from sb3_training import TASKS, part_training, sb3_run

DOCS = ROOT / "docs"
"""Where the results and the report go."""
RESULTS = DOCS / "sb3.json"
"""Every part's record (parts not rerun are kept)."""
REPORT = DOCS / "sb3.md"
"""The report written from RESULTS."""
FIGURE = DOCS / "figures" / "sb3_bitflip.png"
"""The bit-flipping curves."""
PARTS = ("bitflip", "fetchreach", "updates", "fetchpush-speed")
"""The parts ``--only`` takes, in the order they run and the report shows them."""
SECTIONS = (
    ("bitflip", sb3_bitflip),
    ("fetchreach", sb3_fetchreach),
    ("updates", sb3_updates),
    ("fetchpush_speed", sb3_fetchpush_speed),
)
"""Each part's key in RESULTS and the module that writes its section of the report."""


def machine() -> dict[str, Any]:
    """lscpu's first lines, core count and library versions."""
    import gymnasium
    import stable_baselines3
    import torch

    info: dict[str, Any] = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "numpy": np.__version__,
        "stable_baselines3": stable_baselines3.__version__,
        "gymnasium": gymnasium.__version__,
        "cores": os.cpu_count(),
    }
    for module in ("sb3_contrib", "gymnasium_robotics", "mujoco"):
        try:
            info[module] = getattr(__import__(module), "__version__", "?")
        except ImportError:
            info[module] = None
    try:
        lscpu = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        info["lscpu"] = lscpu.splitlines()[:10]
    except (OSError, subprocess.CalledProcessError):
        info["lscpu"] = []
    try:
        git = ["git", "-C", str(ROOT)]
        run = {"capture_output": True, "text": True, "check": True}
        info["commit"] = subprocess.run([*git, "rev-parse", "HEAD"], **run).stdout.strip()
        status = subprocess.run([*git, "status", "--porcelain", "--", "src"], **run).stdout
        info["src_modified"] = bool(status.strip())
    except (OSError, subprocess.CalledProcessError):
        pass
    return info


SPEEDUPS = (
    "How many times faster herkit was, from the sections above: SB3's wall time over "
    "herkit's, or herkit's rate over SB3's (above 1: herkit faster)."
)
"""The sentence that opens the summary of speed-ups in docs/sb3.md."""


def reading_notes(results: dict[str, Any]) -> list[str]:
    """How to read "time to 0.9" next to "whole budget", from the numbers themselves."""
    notes = [
        'Reading these numbers: "time to 0.9" is read at the evaluations, so it moves in '
        "whole evaluation intervals. Where both libraries first reach 0.9 at the same "
        "evaluation, its ratio is the ratio of the wall time spent up to there; where they "
        "reach it at different evaluations, sample efficiency decides as well, and the "
        "ratio can fall below 1 although herkit is faster per step. The whole-budget ratio "
        "compares the same number of env steps and updates, i.e. throughput.",
    ]
    for name, module in (("bitflip", sb3_bitflip), ("fetchreach", sb3_fetchreach)):
        if name in results:
            notes[0] += module.note(results[name])
    return [*notes, ""]


def write_report(results: dict[str, Any], path: Path = REPORT) -> None:
    """docs/sb3.md (or ``path``) from the results of docs/sb3.json: the machine, each part's
    section, a summary of the speed-ups and what differs between the two sides."""
    m = results["machine"]
    part_minutes = {
        name: results[name]["part_wall_s"] / 60
        for name in ("bitflip", "fetchreach", "updates", "fetchpush_speed")
        if name in results
    }
    lines = [
        "# herkit vs stable-baselines3, side by side",
        "",
        "Written by `python benchmarks/sb3_compare.py` (parts: `--only "
        + "|".join(PARTS)
        + "`, seeds: `--seeds`). Everything below ran on this machine, one process at a "
        "time. Before each measurement the script waits until no `--quiet-pattern` process "
        f"runs and the machine is less than {MAX_BUSY:.0%} busy over 5 s; a measurement "
        "after which the machine is busy again (someone else's work probably overlapped it) "
        'is done again. "CPU busy before / after" is the share of all cores\' time busy '
        "in the 5 s before and the 3 s after it. Numbers are as measured.",
        "",
        "## Machine",
        "",
        "```text",
        *m.get("lscpu", []),
        "```",
        "",
        f"Python {m['python']}, torch {m['torch']}, numpy {m['numpy']}, stable-baselines3 "
        f"{m['stable_baselines3']}, sb3-contrib {m['sb3_contrib']}, gymnasium "
        f"{m['gymnasium']}, gymnasium-robotics {m['gymnasium_robotics']}, mujoco "
        f"{m['mujoco']}. herkit's commit when each part started: "
        + ", ".join(
            f"{name} `{part['code']['commit'][:12]}`"
            + (" (with uncommitted changes in src/)" if part["code"]["src_modified"] else "")
            for name, part in results.items()
            if name != "machine" and isinstance(part, dict)
        )
        + ".",
        "",
        "Wall time of each part (including process start-ups and any waiting): "
        + ", ".join(f"{name} {minutes:.1f} min" for name, minutes in part_minutes.items())
        + f"; total {sum(part_minutes.values()):.1f} min.",
        "",
        'Wall times: "loop wall s" runs from the start of the training loop to the '
        "evaluation in question and includes all evaluations so far (herkit: from "
        '`progress.csv`; SB3: from just before `model.learn`). "process wall s" is the '
        "whole process: interpreter start, imports, env and model construction, the final "
        "checkpoint (herkit) and exit.",
        "",
    ]
    verdicts: list[str] = []
    verdicts: list[str] = []
    for name, module in SECTIONS:
        if name in results:
            section, part_verdicts = module.section(results[name])
            lines += section
            verdicts += part_verdicts
    lines += ["## Speed-ups at a glance", "", SPEEDUPS, "", *verdicts, "", *reading_notes(results)]
    lines += [
        "## What is not the same on both sides",
        "",
        "- SB3's `MultiInputPolicy` feeds `observation || achieved_goal || desired_goal` to "
        "the networks; herkit feeds `observation || desired_goal` (achieved_goal is part of "
        "the observation in both envs, so no information differs; SB3's first layer is "
        "slightly wider: 45 vs 30 inputs for 15 bits, 16 vs 13 for FetchReach, 31 vs 28 "
        "for FetchPush).",
        "- SB3 DQN has no double-Q and clips gradients at norm 10 (its default); herkit's "
        "DQN is double-Q without clipping. herkit clips Q targets to the return range, SB3 "
        "does not. herkit's bit-flip preset makes relabelled successes terminal; SB3 keeps "
        "the stored `done` (no such option).",
        "- SB3's DQN takes uniformly random actions until `learning_starts` (256 steps); "
        "herkit's preset explores with epsilon 0.5 from the first step.",
        "- Bit flipping: herkit normalises its inputs (always), SB3 gets raw bits (its "
        "default, as in SB3's own HER tests). Fetch: both normalise (SB3 via VecNormalize).",
        "- Fetch envs: herkit's preset steps its 2 training envs in 2 worker processes "
        "(AsyncVectorEnv); SB3's `make_vec_env` steps them in one process (DummyVecEnv). "
        "Both evaluate on one env in the main process.",
        "- SB3's `HerReplayBuffer.sample` scans the validity mask of the whole capacity "
        "(1e6 x n_envs) on every call; the 3a rows with a buffer exactly as large as the "
        "stored data show SB3 without that cost. "
        "Building SB3's buffer (an array of 1e6 info dicts) also takes seconds, which shows "
        "in its process wall time but not in its loop wall time.",
        "- torch threads: 1 on both sides for the training runs (herkit's default; SB3 "
        "would otherwise use both cores). Section 3a shows both libraries at 1 and 2 "
        "threads.",
        "- herkit's loop time includes a checkpoint at 10,000 env steps in the bit-flip "
        "runs (its preset's `checkpoint_every`); SB3 writes none.",
        "- DDPG exploration differs: herkit adds Gaussian noise 0.2 and takes a random action "
        "30 % of the time and penalises large actions (baselines HER); SB3's DDPG only adds "
        "Gaussian noise 0.2. herkit DDPG vs SB3 SAC compares herkit's default preset with "
        "SB3's usual HER algorithm, not like with like: a SAC update costs more than a DDPG "
        "one in both libraries (section 3a).",
        "",
    ]
    path.write_text("\n".join(lines))


def main() -> None:
    """Run the parts asked for (or, with the hidden worker flags, one SB3 training run or
    one updates timing), then write docs/sb3.json, docs/sb3.md and the bit-flipping figure."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--only", nargs="*", choices=PARTS, help="parts to run (default all)")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--out", default="runs/sb3_compare", help="where run directories go")
    parser.add_argument("--quiet-pattern", default="benchmarks/bitflip.py")
    parser.add_argument("--report-only", action="store_true", help="rewrite docs from the json")
    parser.add_argument(
        "--smoke", action="store_true", help="tiny budgets to test the script (not a result)"
    )
    # internal workers
    parser.add_argument("--sb3-run", choices=sorted(TASKS), help=argparse.SUPPRESS)
    parser.add_argument("--updates-run", choices=("herkit", "sb3"), help=argparse.SUPPRESS)
    parser.add_argument("--algo", help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--threads", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--buffer-size", type=int, default=1_000_000, help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    parser.add_argument("--steps", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--eval-every", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--updates", type=int, default=sb3_updates.UPDATES, help=argparse.SUPPRESS)
    parser.add_argument("--repeats", type=int, default=sb3_updates.REPEATS, help=argparse.SUPPRESS)
    options = parser.parse_args()

    if options.sb3_run:
        sb3_run(
            options.sb3_run,
            options.algo,
            options.seed,
            Path(options.out),
            options.steps,
            options.eval_every,
        )
        return
    if options.updates_run:
        row = sb3_updates.updates_run(
            options.updates_run,
            options.algo,
            options.threads,
            Path(options.data),
            options.buffer_size,
            options.updates,
            options.repeats,
        )
        print(json.dumps(row))
        return

    os.chdir(ROOT)  # run directories and the commands shown are relative to the repository
    results_path, report_path, figure_path = RESULTS, REPORT, FIGURE
    results = json.loads(results_path.read_text()) if results_path.exists() else {}
    updates_budget = {}
    if options.smoke:  # tiny budgets; what it writes goes to OUT/docs, not to docs/
        smoke_docs = Path(options.out).resolve() / "docs"
        results_path, report_path = smoke_docs / "sb3.json", smoke_docs / "sb3.md"
        figure_path = smoke_docs / "figures" / "sb3_bitflip.png"
        figure_path.parent.mkdir(parents=True, exist_ok=True)
        updates_budget = {"fill": 2_000, "updates": 20, "repeats": 1}
        for spec in TASKS.values():
            spec["steps"] = 2 * spec["eval_every"] if spec["eval_every"] < 20_000 else 2_000
            spec["eval_every"] = min(spec["eval_every"], spec["steps"])
    if not options.report_only:
        results["machine"] = machine()
        out_root = Path(options.out)
        for name in options.only or PARTS:
            print(f"== {name}", flush=True)
            started = time.perf_counter()
            if name == "updates":
                quiet = options.quiet_pattern
                part = sb3_updates.part_updates(out_root / "updates", quiet, **updates_budget)
            else:
                task = "fetchpush" if name == "fetchpush-speed" else name
                seeds = options.seeds[:1] if name == "fetchpush-speed" else options.seeds
                part = part_training(task, seeds, out_root, options.quiet_pattern)
            part["part_wall_s"] = round(time.perf_counter() - started, 1)
            part["code"] = {key: results["machine"].get(key) for key in ("commit", "src_modified")}
            results[name.replace("-", "_")] = part
            results_path.write_text(json.dumps(results, indent=1))
    if "bitflip" in results:
        sb3_bitflip.plot(results["bitflip"], figure_path)
    write_report(results, report_path)
    print(f"wrote {results_path} and {report_path}")


if __name__ == "__main__":
    main()
