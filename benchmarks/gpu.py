"""The learner on a GPU: update speed, the GPU check, and its records in docs/gpu.json.

    python benchmarks/gpu.py speed            # herkit bench update on the devices here
    python benchmarks/gpu.py wheels           # the cp312 wheels a GPU machine lacks, into .whl/
    bash benchmarks/gpu_check.sh              # on the GPU machine: tests, bench, timed Fetch
    python benchmarks/gpu.py record check.tgz # the check's archive into docs/gpu.json

``speed`` records ``herkit bench update``'s rows under ``speed/<device>``. ``gpu_check.sh``
(a GPU machine without a package index, about 10 minutes: the carried wheels, the device
tests, the bench and timed Fetch runs) leaves ``$OUT/check.tgz``; ``record`` files it under
``check/<gpu>`` (``--note``: what differed from the script).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

from common import DOCS, ROOT, code_version, machine, parser, read_json

from herkit.rundir.logs import read_progress

RECORD = DOCS / "gpu.json"
WHEELS = ROOT / ".whl"
CARRIED = (
    "gymnasium==1.4.0",
    "farama-notifications==0.0.6",
    "gymnasium-robotics==1.4.2",
    "mujoco==3.3.7",
    "glfw==2.11.0",
    "pyopengl==3.1.10",
    "pettingzoo==1.27.0",
    "tyro==1.0.17",
    "docstring-parser==0.18.0",
    "typeguard==4.6.1",
)
"""What herkit, its train extra and Fetch need beyond the GPU image's packages."""
PLATFORMS = (
    "manylinux_2_28_x86_64",
    "manylinux_2_27_x86_64",
    "manylinux_2_17_x86_64",
    "manylinux2014_x86_64",
    "manylinux1_x86_64",
)


def speed(json_out: Path) -> dict[str, Any]:
    """``herkit bench update`` here (every device torch sees), its rows."""
    command = [sys.executable, "-m", "herkit", "bench", "update", "--json-out", str(json_out)]
    subprocess.run(command, check=True)
    return json.loads(json_out.read_text())


def wheels() -> None:
    """Download :data:`CARRIED` for CPython 3.12 on x86-64 Linux into ``.whl/``."""
    platforms = [arg for platform in (*PLATFORMS, "any") for arg in ("--platform", platform)]
    python = "--python-version 3.12 --implementation cp".split()
    download = ["download", "--no-deps", "--only-binary=:all:", *python, *platforms]
    command = [sys.executable, "-m", "pip", *download, "-d", str(WHEELS), *CARRIED]
    subprocess.run(command, check=True)


def read_run(directory: Path, name: str) -> dict[str, Any] | None:
    """A timed run's files in the check's output: its summary, config and curve."""
    summary = directory / f"{name}-summary.json"
    if not summary.exists():
        return None
    run: dict[str, Any] = {"summary": json.loads(summary.read_text())}
    config = directory / f"{name}-config.json"
    if config.exists():
        run["config"] = json.loads(config.read_text())
    if (directory / f"{name}-progress.csv").exists():
        keys = ("env_steps", "updates", "wall_s", "sps", "ups", "success_rate")
        rows = read_progress(directory / f"{name}-progress.csv")
        run["curve"] = [{key: float(row[key]) for key in keys if key in row} for row in rows]
    return run


def read_rows(path: Path) -> list[dict[str, Any]]:
    """The rows of a ``herkit bench update --json-out`` file (none where it is missing)."""
    return json.loads(path.read_text())["rows"] if path.exists() else []


def record(path: Path, notes: list[str] | None = None) -> str:
    """File the GPU check's ``check.tgz`` (or its folder) into :data:`RECORD` with ``notes``."""
    if path.is_file():
        with tempfile.TemporaryDirectory() as folder:
            with tarfile.open(path) as archive:
                archive.extractall(folder, filter="data")
            return record(Path(folder), notes)
    directory = path
    bench = json.loads((directory / "bench.json").read_text())
    gpu = bench["machine"].get("gpu") or "no GPU"
    entry: dict[str, Any] = {
        "machine": bench["machine"],
        "gpu": gpu,
        "code": json.loads((directory / "code.json").read_text()),
        "rows": bench["rows"],
        "prioritized_rows": read_rows(directory / "bench-prioritized.json"),
        "gcivl_rows": read_rows(directory / "bench-gcivl.json"),
        "tests": (directory / "tests.log").read_text().strip().splitlines()[-3:],
        "runs": {name: read_run(directory, name) for name in ("push", "slide")},
        "notes": list(notes or []),
    }
    key = f"check/{gpu}"
    store = read_json(RECORD) | {key: entry}
    RECORD.write_text(json.dumps(store, indent=1))
    return key


def main() -> None:
    cli = parser(__doc__)
    cli.add_argument("what", choices=["speed", "wheels", "record"])
    cli.add_argument(
        "path",
        nargs="?",
        type=Path,
        help="record: the check's check.tgz (or a folder of its files)",
    )
    cli.add_argument(
        "--note",
        action="append",
        default=[],
        help="record: how the check ran where it differed from the script",
    )
    args = cli.parse_args()
    if args.what == "wheels":
        wheels()
        return
    if args.what == "record":
        if args.path is None or not args.path.exists():
            cli.error(f"record needs the GPU check's check.tgz (or its folder), got {args.path}")
        print(f"recorded {record(args.path, args.note)} in {RECORD}")
        return
    result = speed(Path("/tmp/herkit-bench-update.json"))
    key = f"speed/{result['machine'].get('gpu') or 'cpu-only'}"
    store = read_json(RECORD)
    store[key] = {
        "machine": machine() | {"gpu": result["machine"].get("gpu")},
        "code": code_version(),
        "rows": result["rows"],
    }
    RECORD.write_text(json.dumps(store, indent=1))
    print(f"recorded {key} in {RECORD}")


if __name__ == "__main__":
    main()
