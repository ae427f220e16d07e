"""``herkit`` and ``torchrun`` as the docs' commands meet them in tests/test_docs_commands.py:
the real programs, with a short budget appended to every ``train`` (the line's own flags
first, so the budget's win), and the runs a line reads made first where its page has not
made them. Called as ``python docs_shim.py herkit|torchrun ARGS...``.

A line that cannot run on this machine says so and exits 0, its parser's check being
test_docs_examples.py's: training on a GPU where torch sees none, and torchrun across
machines (an ``--rdzv-endpoint`` of another host).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from herkit.agents.settings import ALGOS

WRITTEN_BY = ("--out", "--video", "-o", "--json")
"""Flags whose value is a path the command writes, never a run to make first."""

SHORT = ["--eval-every", "48", "--eval-episodes", "1", "--no-tensorboard"]
BUDGET = ["--steps", "48", *SHORT]
"""Appended to a new run: about one step of the loop, one evaluation episode."""


def env_of(run_name: str) -> str:
    """The env id of a default run name: ``herkit-BitFlip-v0-dqn-future-s0`` ->
    ``herkit/BitFlip-v0``."""
    for algo in ALGOS:
        if f"-{algo}-" in run_name:
            env = run_name.split(f"-{algo}-")[0]
            return "herkit/" + env.removeprefix("herkit-") if env.startswith("herkit-") else env
    raise ValueError(f"{run_name}: not a default run name")


def herkit(*args: str) -> int:
    """``python -m herkit ARGS`` in this interpreter."""
    return subprocess.run([sys.executable, "-m", "herkit", *args]).returncode


def make_missing_runs(args: list[str]) -> None:
    """Train, short, the default-named runs under ``runs/`` that ``args`` read but that do
    not exist (a page that resumes or evaluates a run it did not train)."""
    for i, arg in enumerate(args):
        written = i > 0 and args[i - 1] in WRITTEN_BY
        if arg.startswith("runs/") and "*" not in arg and not written and not Path(arg).exists():
            if herkit("train", env_of(Path(arg).name), "--out", arg, *BUDGET):
                sys.exit(f"docs_shim: could not make {arg}")


def main() -> int:
    program, args = sys.argv[1], sys.argv[2:]
    make_missing_runs(args)
    if "--rdzv-endpoint" in args and args[args.index("--rdzv-endpoint") + 1].startswith("HOST"):
        print(f"docs_shim: not run (another machine): {program} {' '.join(args)}")
        return 0
    if "--device" in args and args[args.index("--device") + 1].startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            print(f"docs_shim: not run (no GPU here): {program} {' '.join(args)}")
            return 0
    if "train" in args and "--dataset" in args:  # a few gradient steps on the dataset
        args += ["--offline-steps", "48", *SHORT]
        return herkit(*args)
    if "train" in args and "--resume" in args:  # a step of the loop more than it has done
        summary = Path(args[args.index("--resume") + 1]) / "summary.json"
        done = json.loads(summary.read_text())["env_steps"]
        args += ["--steps", str(done + 96), *SHORT]
    elif "train" in args:
        args += BUDGET
    if program == "torchrun":
        torchrun = [sys.executable, "-m", "torch.distributed.run"]
        return subprocess.run([*torchrun, *args], env=os.environ).returncode
    return herkit(*args)


if __name__ == "__main__":
    sys.exit(main())
