"""Do short seeded runs train exactly as they did at an earlier commit?

The same ``herkit train`` runs with the code of REV (a temporary git worktree) and the
working tree's, every column of progress.csv but the timings compared.

    python benchmarks/unchanged.py --against 3b03fe7
    python benchmarks/unchanged.py --against HEAD~1 --only bitflip fetchreach

Adds a record to docs/unchanged.json: per case, whether the rows are identical, else the
largest difference of each column.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from subprocess import DEVNULL

import common

from herkit.rundir.logs import TIME_COLUMNS, read_progress

CASES: dict[str, list[str]] = {
    "bitflip": ["herkit/BitFlip-v0", "--steps", "6000", "--eval-every", "2000"],
    "pointreach": ["herkit/PointReach-v0", "--algo", "td3", "--steps", "3000"],
    "gridworld": ["herkit/GridWorld-v0", "--steps", "3000"],
    "mountaincar": ["herkit/MountainCarGoal-v0", "--steps", "3000"],
    "fetchreach": ["FetchReach-v4", "--steps", "2000", "--eval-every", "1000"],
    "pointmaze": ["PointMaze_UMaze-v3", "--steps", "3000", "--eval-every", "1000"],
}

RECORD = common.DOCS / "unchanged.json"


def run(source: Path, args: list[str], out: Path) -> list[dict[str, str]]:
    """``herkit train ARGS`` with the package under ``source/src``; its progress rows."""
    # fp32: the earlier commit's auto timed updates on a CPU with bf16, and could choose either
    flags = "--seed 0 --torch-threads 1 --eval-episodes 10 --precision fp32".split()
    common.herkit_train(*args, *flags, out=out, **common.with_code(source), stdout=DEVNULL)
    return read_progress(out)


def compare(old: list[dict[str, str]], new: list[dict[str, str]]) -> dict[str, object]:
    """Identical rows (timings aside), or the columns that differ and by how much."""
    if len(old) != len(new):
        return {"identical": False, "rows": [len(old), len(new)]}
    largest: dict[str, float] = {}
    for row_old, row_new in zip(old, new, strict=True):
        for key in sorted(set(row_old) | set(row_new)):
            if key in TIME_COLUMNS or row_old.get(key) == row_new.get(key):
                continue
            try:
                gap = abs(float(row_old.get(key) or "nan") - float(row_new.get(key) or "nan"))
            except ValueError:
                gap = float("inf")
            largest[key] = max(largest.get(key, 0.0), gap)
    return {"identical": not largest, "differences": largest, "rows": len(new)}


def main() -> None:
    """The command line (see the module's docstring)."""
    cli = common.parser(__doc__)
    cli.add_argument("--against", required=True, help="the earlier commit (any git rev)")
    cli.add_argument("--only", nargs="+", choices=sorted(CASES), default=sorted(CASES))
    args = cli.parse_args()
    results: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as tmp, common.worktree(args.against) as old_tree:
        for name in args.only:
            old = run(old_tree, CASES[name], Path(tmp) / f"{name}-old")
            new = run(common.ROOT, CASES[name], Path(tmp) / f"{name}-new")
            results[name] = {"args": CASES[name], **compare(old, new)}
            print(f"{name}: {results[name]}", flush=True)
    against = common.commit_of(args.against)
    record = {
        "machine": common.machine(),
        "against": against,
        "code": common.code_version(),
        "cases": results,
    }
    common.add_record(RECORD, record)


if __name__ == "__main__":
    main()
