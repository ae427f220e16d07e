"""Do the documented commands take the time their pages say?

    python benchmarks/docs_times.py                         # every stated time up to 3 min
    python benchmarks/docs_times.py --pages README.md guide-offline.md --max-minutes 2

A bash line of README.md or docs/*.md whose comment states a time (``~2 min``, ``about
16 s``, ``<1 min``) runs in its page's order in one fresh folder and is timed (installs,
lines stated above ``--max-minutes`` and GPU lines without a GPU left out); it is within
its class at up to twice the time stated. Record: docs/docs_times.json.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
import time
from pathlib import Path

import common
from common import DOCS, ROOT, add_record, code_version, machine

RECORD = DOCS / "docs_times.json"
STATED = re.compile(r"(?:~|about |<\s*)(\d+(?:\.\d+)?)\s*(s|min)\b")
"""A stated time in a line's comment: ``~2 min``, ``about 16 s``, ``<1 min``."""
SKIPPED = ("bash install.sh", "pip ", "python3 -m venv", "python -m venv")


def page_lines(page: Path) -> list[tuple[str, float | None]]:
    """A page's bash lines in order, each with its stated seconds (or None)."""
    lines: list[tuple[str, float | None]] = []
    for block in re.findall(r"```bash\n(.*?)```", page.read_text(), re.S):
        for line in re.sub(r"\\\n\s*", " ", block).splitlines():
            code, _, comment = line.partition(" #")
            if not code.strip() or code.lstrip().startswith("#"):
                continue
            found = STATED.search(comment)
            seconds = None
            if found is not None:
                seconds = float(found[1]) * (60 if found[2] == "min" else 1)
            lines.append((code.strip(), seconds))
    return lines


def time_page(page: Path, max_s: float) -> list[dict[str, object]]:
    """Run ``page``'s lines in order in a fresh folder; the timed ones' rows."""
    rows: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory() as tmp:
        os.symlink(ROOT / "benchmarks", Path(tmp) / "benchmarks")
        for code, stated in page_lines(page):
            if code.startswith(SKIPPED):
                continue
            if code.split(" && ")[-1].startswith(SKIPPED):
                continue
            if stated is None or stated > max_s or ("--device cuda" in code and not cuda()):
                continue
            load = os.getloadavg()[0]
            started = time.perf_counter()
            done = subprocess.run(["bash", "-c", code], cwd=tmp, capture_output=True, text=True)
            took = time.perf_counter() - started
            row = {
                "page": page.name,
                "command": code,
                "stated_s": stated,
                "took_s": round(took, 1),
                "within_2x": done.returncode == 0 and took <= 2 * stated,
                "exit_code": done.returncode,
                "load_before": round(load, 2),
                "load_after": round(os.getloadavg()[0], 2),
            }
            rows.append(row)
            print(f"{page.name}: {took:.0f} s (stated {stated:.0f} s): {code[:90]}", flush=True)
            if done.returncode != 0:  # e.g. a run it reads that an untimed line makes
                print(f"  exit code {done.returncode}: {done.stderr.strip()[-300:]}")
    return rows


def cuda() -> bool:
    """Whether this machine has a CUDA device (torch's answer; False without torch)."""
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def main() -> None:
    """The command line (see the module's docstring)."""
    cli = common.parser(__doc__)
    cli.add_argument("--pages", nargs="+", default=None, help="README.md or docs/ page names")
    cli.add_argument("--max-minutes", type=float, default=3.0)
    args = cli.parse_args()
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    if args.pages:
        pages = [page for page in pages if page.name in args.pages]
    rows = [row for page in pages for row in time_page(page, 60 * args.max_minutes)]
    within = sum(bool(row["within_2x"]) for row in rows)
    print(f"{within} of {len(rows)} lines within twice their stated time")
    add_record(
        RECORD,
        {
            "machine": machine(),
            "rows": rows,
            **code_version(),
            "command": "python benchmarks/docs_times.py --max-minutes "
            f"{args.max_minutes:g}" + (f" --pages {' '.join(args.pages)}" if args.pages else ""),
        },
    )


if __name__ == "__main__":
    main()
