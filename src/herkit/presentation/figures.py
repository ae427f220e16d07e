"""A run's figures from its files: ``curve.png`` (:mod:`herkit.presentation.plots`) and
``report.html`` (:mod:`herkit.presentation.report`).

``python -m herkit.presentation.figures RUN [TITLE]`` draws both;
:class:`~herkit.presentation.presenter.Presenter` runs it beside training, which never
imports this module.
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

from herkit.extras import needs_extra
from herkit.rundir.paths import RunPaths

__all__ = ["present"]


def present(run_dir: str | Path, title: str | None = None) -> None:
    """Write ``RUN/curve.png`` and ``RUN/report.html`` from the files of ``run_dir`` (against
    gradient steps for a run trained offline only)."""
    from herkit.presentation.groups import progress_axis
    from herkit.presentation.plots import plot_runs  # matplotlib and plotly: herkit's report extra
    from herkit.presentation.report import write_report

    paths = RunPaths(run_dir)
    plot_runs([paths.root], paths.curve, title=title, x=progress_axis([paths.root]))
    write_report([paths.root], paths.report)


def _main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m herkit.presentation.figures", description=__doc__
    )
    parser.add_argument("run_dir")
    parser.add_argument("title", nargs="?")
    args = parser.parse_args()
    # stopped by a failing run: unwind, so that no temporary file stays
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    try:
        present(args.run_dir, args.title)
    except ModuleNotFoundError as error:
        sys.exit(needs_extra(error, "drawing curve.png and report.html"))


if __name__ == "__main__":
    _main()
