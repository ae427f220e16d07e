"""Two tiers: ``python -m pytest`` runs the fast one (unit, property and quick CLI tests);
``python -m pytest --full`` runs every test, the slow ones too.

A slow test says why with ``@pytest.mark.slow("reason")``: a learning run, whole training
runs in subprocesses, torchrun, a browser, SB3's own test suite. A ``slow`` marker with no
reason is an error, so that the reason stays next to the test.

Fixtures shared by the test files are here too; plain helpers are in ``runs.py``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

# The tests run this checkout's source, also where herkit is installed from another one (a
# second worktree beside an editable install): first on this process's path and on the path
# of every herkit the tests start.
SOURCE = str(Path(__file__).resolve().parents[1] / "src")
sys.path.insert(0, SOURCE)
os.environ["PYTHONPATH"] = os.pathsep.join(
    [SOURCE, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--full",
        action="store_true",
        help="run the slow tier too (learning runs, training subprocesses, torchrun, browser)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "slow(reason): in the full tier only (python -m pytest --full); says why"
    )
    # The tests' networks are small: one thread is faster than torch's default of one per
    # core, several times so on a busy machine (a training run sets its own threads).
    try:
        import torch
    except ModuleNotFoundError:
        return
    torch.set_num_threads(1)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    slow = []
    for item in items:
        marker = item.get_closest_marker("slow")
        if marker is None:
            continue
        if not (marker.args and isinstance(marker.args[0], str) and marker.args[0]):
            raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.slow needs a reason")
        slow.append(item)
    if config.getoption("--full") or not slow:
        return
    config.hook.pytest_deselected(items=slow)
    items[:] = [item for item in items if item.get_closest_marker("slow") is None]


FAST_TEST_SECONDS = float(os.environ.get("HERKIT_FAST_TEST_SECONDS", "15"))
"""The longest a test of the fast tier may run (its call, on a slow machine that is busy;
``HERKIT_FAST_TEST_SECONDS`` sets another): one that runs longer fails the session, to be
marked slow or made smaller. The fast tier's whole time is measured by
``benchmarks/fast_tier.py``, not here."""

_TOO_SLOW: list[tuple[str, float]] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call" and "slow" not in report.keywords:
        if report.duration > FAST_TEST_SECONDS:
            _TOO_SLOW.append((report.nodeid, report.duration))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _TOO_SLOW and exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, config: pytest.Config
) -> None:
    deselected = terminalreporter.stats.get("deselected", [])
    slow = [item for item in deselected if item.get_closest_marker("slow") is not None]
    if slow and not config.getoption("--full"):
        terminalreporter.write_line(
            f"fast tier: {len(slow)} slow tests left out; python -m pytest --full runs them"
        )
    for nodeid, seconds in _TOO_SLOW:
        terminalreporter.write_line(
            f"fast tier: {nodeid} took {seconds:.1f} s, more than a fast test may "
            f"({FAST_TEST_SECONDS:g} s): mark it @pytest.mark.slow(reason) or make it smaller"
        )


@pytest.fixture(scope="session", autouse=True)
def sb3_logs_in_the_session_folder(tmp_path_factory: pytest.TempPathFactory) -> None:
    """SB3 makes a folder ``SB3-<time>`` in the system's temp directory for every model
    without a log folder; ``SB3_LOGDIR`` (read by SB3, inherited by subprocesses) puts
    them all in one folder of this session's, removed with it."""
    import os

    os.environ.setdefault("SB3_LOGDIR", str(tmp_path_factory.mktemp("sb3-logs")))


@pytest.fixture(scope="session")
def train_once(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Path]:
    """``train_once(**changes)``: the directory of a real, tiny `herkit train` run of
    ``runs.quiet(**changes)``, trained the first time these changes are asked for and the
    same directory after that (tests that change its files work on a copy)."""
    from herkit.training.loop import train
    from runs import quiet

    trained: dict[str, Path] = {}

    def run_of(**changes: Any) -> Path:
        key = repr(sorted(changes.items()))
        if key not in trained:
            run = tmp_path_factory.mktemp("trained") / "run"
            train(quiet(out=str(run), **changes))
            trained[key] = run
        return trained[key]

    return run_of
