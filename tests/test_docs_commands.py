"""Every ``herkit`` and ``torchrun`` line of the README and the docs runs, as written.

Each page's lines run through bash, in the page's order, in one fresh folder (so that the
runs a later line reads are made by the earlier ones): loops, globs and ``&&`` as bash reads
them. ``herkit`` and ``torchrun`` on the PATH are tests/docs_shim.py: the real programs,
with a short budget appended to each ``train`` (about one step of the loop: the docs'
budgets are hours) and the runs a page reads without training them made first. The other
commands of a block (installs, benchmarks, other tools) are checked by
test_docs_examples.py, and so are the ``herkit bench`` lines, benchmarks whose time is
their point.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from readme_blocks import ROOT, Block, blocks, pages

HERE = Path(__file__).resolve().parent
RUNS = ("herkit", "torchrun")
"""The programs whose lines run here."""


def runnable(block: Block) -> list[str]:
    """The statements of a bash block that run here, one line each (continuations joined):
    the ``herkit`` and ``torchrun`` ones (a ``herkit`` after ``&&`` too), and ``for``
    loops over them; ``herkit bench`` left to the benchmarks."""
    lines = []
    for line in re.sub(r"\\\n\s*", " ", block.code).splitlines():
        line = line.split(" #")[0].strip()
        if line.startswith("for ") and "herkit" in line:
            lines.append(line)
            continue
        for statement in line.split("&&"):
            words = statement.split()
            if words and words[0] in RUNS and words[1:2] != ["bench"]:
                lines.append(statement.strip())
    return lines


def page_script(page: Path) -> list[str]:
    return [line for block in blocks(page) if block.language == "bash" for line in runnable(block)]


PAGES = [page for page in pages() if page_script(page)]


@pytest.mark.slow("runs every herkit command of the docs, each a short training or more")
@pytest.mark.parametrize("page", PAGES, ids=[page.name for page in PAGES])
def test_every_herkit_line_of_a_page_runs_in_order(page: Path, tmp_path: Path) -> None:
    from test_docs_examples import setup_for

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for program in RUNS:
        shim = bin_dir / program
        shim.write_text(
            f'#!/bin/sh\nexec "{sys.executable}" "{HERE / "docs_shim.py"}" {program} "$@"\n'
        )
        shim.chmod(0o755)
    work = tmp_path / "work"
    work.mkdir()
    setup_for(page, work, train=False)
    env = os.environ | {
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": os.pathsep.join([str(work), os.environ["PYTHONPATH"]]),
        "MPLBACKEND": "Agg",
    }
    for line in page_script(page):
        done = subprocess.run(
            ["bash", "-ec", line], cwd=work, env=env, capture_output=True, text=True, timeout=900
        )
        assert done.returncode == 0, f"{page.name}: {line}\n{done.stderr[-3000:]}"


def test_the_lines_that_run_are_found() -> None:
    """A guard against an extractor that silently finds nothing."""
    lines = [line for page in PAGES for line in page_script(page)]
    assert len(lines) > 30 and any(line.startswith("for seed") for line in lines)
    assert "herkit train" in runnable(blocks(ROOT / "README.md")[0])
