"""The SB3 guide's rl-zoo3 line against README's SB3 example: the same training's speed.

docs/guide-sb3.md's ``python -m rl_zoo3.train`` line (``-n STEPS --eval-freq -1`` added,
2,000 env steps by default) and README's SB3 example (timed around its ``model.learn``), each
in a fresh process, one after the other; their env steps per second go to sb3_zoo.json
(target: the example within 1.5x of the zoo line).

    python benchmarks/sb3_compare.py zoo --record
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import common


def run_zoo(options: argparse.Namespace) -> None:
    """The ``zoo`` subcommand: docs/guide-sb3.md's rl-zoo3 line against README's SB3
    example, env steps per second of ``learn()`` each (target: within 1.5x); sb3_zoo.json."""
    guide, readme = (common.ROOT / "docs" / "guide-sb3.md").read_text(), common.ROOT / "README.md"
    zoo_line = re.search(r"^python (-m rl_zoo3\.train .*)$", guide, re.M)
    example = re.search(r"sb3 example: start -->\n```python\n(.*?)```", readme.read_text(), re.S)
    assert zoo_line and example, "the zoo line or the SB3 example is gone from the docs"
    timed = re.sub(
        r"^(model\.learn\(.*)$",
        r"import time; _t = time.perf_counter()\n\1\n"
        r"print(f'fps {model.num_timesteps / (time.perf_counter() - _t):.1f}')",
        example.group(1),
        flags=re.M,
    )
    speeds, load_at_start = {}, os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "herkit_her.yml").write_text(guide.split("```yaml\n")[1].split("```")[0])
        zoo = [*zoo_line.group(1).split(), "-n", str(options.steps), "--eval-freq", "-1"]
        for name, command in (("zoo", ["-u", *zoo]), ("sb3", ["-c", timed])):
            started = time.perf_counter()
            done = subprocess.run([sys.executable, *command], cwd=folder, capture_output=True)
            assert done.returncode == 0, done.stderr.decode()[-3000:]
            fps = re.findall(r"fps\s*\|?\s*([\d.]+)", done.stdout.decode())[-1]
            speeds[name] = {
                "env_steps_per_s": float(fps),
                "process_s": round(time.perf_counter() - started, 1),
            }
            print(f"  {name}: {fps} env steps/s", flush=True)
    ratio = speeds["sb3"]["env_steps_per_s"] / speeds["zoo"]["env_steps_per_s"]
    print(f"the SB3 example / the zoo line, env steps per second: {ratio:.2f} (target <= 1.5)")
    record = {
        "command": " ".join(["python", *sys.argv]),
        "zoo_line": " ".join(zoo),
        **speeds,
        "sb3_over_zoo": round(ratio, 2),
        "load_average": [round(load_at_start, 1), round(os.getloadavg()[0], 1)],
        "machine": common.machine(),
        "code": common.code_version(),
    }
    (common.DOCS / "sb3_zoo.json").write_text(json.dumps(record, indent=1) + "\n")
