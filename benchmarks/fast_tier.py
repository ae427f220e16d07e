"""How long the fast tier of the tests takes: ``python -m pytest`` timed on this machine,
with its slowest tests (run it alone; target: 180 s on the slowest 2-core CPU).

    python benchmarks/fast_tier.py --record          # then: docs/fast_tier.json
"""

from __future__ import annotations

import re
import subprocess
import sys
import time

import common

SLOWEST = 10


def main() -> None:
    """Run the fast tier once and add its wall time and slowest tests to the record."""
    args = common.parser(__doc__).parse_args()
    del args
    idle_before, total_before = common.cpu_ticks()
    started = time.perf_counter()
    done = subprocess.run(
        # no -q here: pyproject's addopts has one, and a second hides the summary line
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", f"--durations={SLOWEST}"],
        cwd=common.ROOT,
        capture_output=True,
        text=True,
    )
    wall_s = time.perf_counter() - started
    idle_after, total_after = common.cpu_ticks()
    idle, total = idle_after - idle_before, total_after - total_before
    if done.returncode != 0:
        sys.exit(f"the fast tier failed (exit {done.returncode}):\n{done.stdout[-3000:]}")
    counts = re.search(r"(\d+) passed(?:, (\d+) skipped)?(?:, (\d+) deselected)?", done.stdout)
    slowest = re.findall(r"^([\d.]+)s (call|setup|teardown)\s+(\S+)", done.stdout, re.M)
    run = {
        "wall_s": round(wall_s, 1),
        "passed": int(counts[1]) if counts else None,
        "skipped": int(counts[2] or 0) if counts else None,
        "slow_left_out": int(counts[3] or 0) if counts else None,
        "cpus_busy": round(1 - idle / total, 3) if total else None,
        "slowest": [[float(seconds), f"{what} {test}"] for seconds, what, test in slowest],
        **common.code_version(),
        "command": "python benchmarks/fast_tier.py",
    }
    machine = common.machine()
    common.add_run(common.DOCS / "fast_tier.json", machine["processor"], run, machine)
    print(f"fast tier: {wall_s:.0f} s on {machine['processor']} ({run['passed']} passed)")


if __name__ == "__main__":
    main()
