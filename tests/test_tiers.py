"""The two tiers hold: a test of the fast tier that runs longer than a fast test may fails
the session by name; the same test marked slow runs in the full tier alone."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent

SLEEPER = """
import time
import pytest


def test_quick():
    pass


def test_sleeps():
    time.sleep(0.3)
"""


def session(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HERKIT_FAST_TEST_SECONDS": "0.2"}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args, str(folder)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        cwd=folder,
    )


@pytest.mark.slow("three pytest sessions in subprocesses")
def test_a_fast_test_over_its_time_fails_the_session_by_name(tmp_path: Path) -> None:
    shutil.copy(HERE / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "test_sleeper.py").write_text(SLEEPER)
    done = session(tmp_path)
    assert done.returncode == 1, done.stdout
    assert "2 passed" in done.stdout
    assert "test_sleeper.py::test_sleeps took 0.3 s, more than a fast test may (0.2 s)" in (
        done.stdout
    )
    assert "test_quick took" not in done.stdout

    marked = SLEEPER.replace("def test_sleeps", '@pytest.mark.slow("sleeps")\ndef test_sleeps')
    (tmp_path / "test_sleeper.py").write_text(marked)
    fast, full = session(tmp_path), session(tmp_path, "--full")
    assert fast.returncode == 0 and "1 passed, 1 deselected" in fast.stdout, fast.stdout
    assert full.returncode == 0 and "2 passed" in full.stdout, full.stdout
