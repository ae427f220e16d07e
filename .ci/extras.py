"""Each extra of herkit alone, as a new user installs it: the wheel built from this
checkout, and for the core and for every extra of pyproject.toml a fresh virtual
environment with only that extra, in which what the extra is for runs.

    python .ci/extras.py            # every extra (CI)
    python .ci/extras.py sb3 zoo    # some of them

An extra that leans on another's packages fails here, whatever the machine has installed
besides. The checks are :data:`CHECKS` (one per extra; a new extra without one fails);
torch is installed first (``torch==2.13.0``: the local CPU wheel where pip's find-links has
one) for the extras that bring it, as install.sh does. The documentation site is built by
the docs extra's check, warnings as errors.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from readme_blocks import python_blocks  # noqa: E402  (the README's blocks, as written)

TORCH = "torch==2.13.0"
"""The torch that install.sh installs where none is importable."""

QUICK_TRAIN = "--steps 600 --eval-every 300 --eval-episodes 3 --no-progress --no-tensorboard"

SYNTHETIC_RUN = """
import json, sys
from pathlib import Path
from herkit.config import TrainConfig
run = Path(sys.argv[1]); run.mkdir()
(run / "config.json").write_text(json.dumps(TrainConfig(out=str(run)).to_dict()))
rows = ["env_steps,wall_s,success_rate,critic_loss"]
rows += [f"{1000 * i},{2.0 * i},{0.2 * i},{1.0 / i}" for i in range(1, 5)]
(run / "progress.csv").write_text("\\n".join(rows) + "\\n")
"""
"""Writes a run directory as ``herkit train`` leaves it (config.json, progress.csv)."""

VIDEO = """
import gymnasium as gym
import herkit
from herkit.presentation.video import render_frame, write_video
env = gym.make("herkit/PointReach-v0", render_mode="rgb_array")
env.reset(seed=0)
frames = [render_frame(env)]
for _ in range(10):
    env.step(env.action_space.sample())
    frames.append(render_frame(env))
print(write_video("point.mp4", frames, fps=10), write_video("point.gif", frames, fps=10))
"""

ROBOTICS = """
import numpy as np
import herkit
from herkit import HerReplayBuffer
from herkit.envs import make_goal_env
env = make_goal_env("FetchReach-v4")
buffer = HerReplayBuffer.from_env(env, 10_000, seed=0)
obs, _ = env.reset(seed=0)
for _ in range(120):
    action = env.action_space.sample()
    next_obs, reward, terminated, truncated, info = env.step(action)
    buffer.add(obs, action, next_obs, terminated, truncated, info, reward=reward,
               success=info["is_success"])
    obs = env.reset()[0] if terminated or truncated else next_obs
print(buffer, buffer.sample(64).reward.mean())
"""

OFFLINE = """
import numpy as np
import herkit
from herkit.envs import make_goal_env
env = make_goal_env("pointmaze-medium-navigate-v0")
obs, info = env.reset(seed=0, options=env.evaluation_tasks[0])
for _ in range(20):
    obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
assert reward == env.compute_reward(obs["achieved_goal"], obs["desired_goal"], info)
print(env, obs["desired_goal"], reward, info["is_success"])
"""

PEERS = """
import importlib.metadata
import gymnasium as gym, highway_env, sb3_contrib, stable_baselines3
from cpprb import HindsightReplayBuffer
env = gym.make("parking-v0")
env.reset(seed=0)
print("peers:", *(importlib.metadata.version(name) for name in
                  ("cpprb", "stable-baselines3", "sb3-contrib", "highway-env")))
"""

ZOO_CONFIG = """\
herkit/PointReach-v0:
  n_timesteps: 600
  policy: 'MultiInputPolicy'
  learning_starts: 100
  replay_buffer_class: "importlib.import_module('herkit.sb3').HerReplayBuffer"
  replay_buffer_kwargs: "dict(goal_selection_strategy='future', n_sampled_goal=4)"
"""
"""A zoo hyperparameter file for the zoo extra's own check (the guide's FetchReach one
needs the robotics extra too, and runs in the test suite)."""

ZOO = [
    "python -m rl_zoo3.train --algo sac --env herkit/PointReach-v0 --gym-packages herkit "
    "--conf-file herkit_her.yml --eval-freq -1",
    "python -m rl_zoo3.enjoy --algo sac --env herkit/PointReach-v0 --gym-packages herkit "
    "-f logs --no-render -n 100",
]

CHECKS: dict[str, tuple[bool, list[str]]] = {
    "core": (False, ["python no_torch.py", "python quickstart.py"]),
    "train": (True, [f"herkit train {QUICK_TRAIN} --out run", "herkit eval run --episodes 3"]),
    "report": (
        False,
        [
            "python synthetic_run.py run",
            "herkit plot run -o curves.png",
            "herkit report run -o report.html",
            "python no_torch.py",
        ],
    ),
    "video": (False, ["python video.py", "python no_torch.py"]),
    "robotics": (False, ["python robotics.py", "python no_torch.py"]),
    "offline": (False, ["python offline.py", "python no_torch.py"]),
    "sb3": (True, ["python sb3_example.py"]),
    "zoo": (True, ZOO),
    "bench": (True, ["python peers.py"]),
    "docs": (False, [f"python -m sphinx -W -q -b html {ROOT / 'docs'} site"]),
    "dev": (
        False,
        [
            "python -m pytest --version",
            "python -m ruff --version",
            "python -m mypy --version",
            f"python {ROOT / '.ci' / 'tools.py'} check",
        ],
    ),
    "all": (
        True,
        [
            f"herkit train FetchReach-v4 {QUICK_TRAIN} --out run",
            "herkit report run -o report.html",
            "herkit eval run --episodes 2 --video run.gif",
            "python -c 'import herkit.sb3'",
        ],
    ),
}
"""For each extra (and the core, with none): whether torch comes first, and the commands
that show it does what it is for, run in a fresh directory of the extra's environment."""

FILES = {
    "no_torch.py": "import importlib.util, sys\n"
    "sys.exit(importlib.util.find_spec('torch') is not None)  # torch is not installed\n",
    "quickstart.py": python_blocks("The buffer in your own loop")[0]
    + 'import sys; assert "torch" not in sys.modules; print(repr(buf))\n',
    "sb3_example.py": python_blocks("Stable-Baselines3 and cpprb by one import")[0],
    "synthetic_run.py": SYNTHETIC_RUN,
    "video.py": VIDEO,
    "robotics.py": ROBOTICS,
    "offline.py": OFFLINE,
    "peers.py": PEERS,
    "herkit_her.yml": ZOO_CONFIG,
}
"""The files the checks run, written into each fresh directory (the README's examples as
written)."""


def extras() -> list[str]:
    """The extras of pyproject.toml, in its order."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return list(project["optional-dependencies"])


def run(command: list[str] | str, cwd: Path, env: dict[str, str] | None = None) -> None:
    """``command`` (a shell line when a string), its output shown; raises if it fails."""
    print(f"+ {command if isinstance(command, str) else ' '.join(command)}", flush=True)
    subprocess.run(command, cwd=cwd, env=env, shell=isinstance(command, str), check=True)


def build(work: Path) -> Path:
    """The wheel and sdist of this checkout, checked by twine; returns the wheel."""
    python = sys.executable
    run(
        [
            python,
            "-m",
            "pip",
            "install",
            "-q",
            "-c",
            str(ROOT / "constraints.txt"),
            "build",
            "twine",
        ],
        ROOT,
    )
    run([python, "-m", "build", "--outdir", str(work / "dist"), str(ROOT)], ROOT)
    run([python, "-m", "twine", "check", "--strict", *map(str, (work / "dist").iterdir())], ROOT)
    return next((work / "dist").glob("herkit-*.whl"))


def check(extra: str, wheel: Path, work: Path) -> float:
    """The extra alone in a fresh environment, and its check; returns the seconds taken."""
    started = time.monotonic()
    torch_first, commands = CHECKS[extra]
    venv = work / f"venv-{extra}"
    run([sys.executable, "-m", "venv", str(venv)], work)
    bin_dir = venv / "bin"
    env = os.environ | {
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "VIRTUAL_ENV": str(venv),
        "MPLBACKEND": "Agg",
    }
    env.pop("PYTHONPATH", None)
    pip = [str(bin_dir / "python"), "-m", "pip", "install", "-q"]
    if torch_first:
        run([*pip, TORCH], work, env)
    target = str(wheel) if extra == "core" else f"{wheel}[{extra}]"
    run([*pip, "-c", str(ROOT / "constraints.txt"), target], work, env)
    here = work / f"check-{extra}"
    here.mkdir()
    for name, text in FILES.items():
        (here / name).write_text(text)
    for command in commands:
        run(command, here, env)
    shutil.rmtree(venv)  # the disk, for the next one
    return time.monotonic() - started


def main() -> int:
    known = ["core", *extras()]
    missing = [extra for extra in known if extra not in CHECKS]
    unknown = [extra for extra in CHECKS if extra not in known]
    if missing or unknown:
        print(f"extras: no check for {missing}; checks of no extra {unknown}", file=sys.stderr)
        return 1
    chosen = sys.argv[1:] or known
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        wheel = build(work)
        times = {extra: check(extra, wheel, work) for extra in chosen}
    print(
        "extras: each alone in a fresh environment: "
        + ", ".join(f"{extra} {seconds:.0f} s" for extra, seconds in times.items())
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
