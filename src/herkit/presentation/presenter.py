"""Draws a run's ``curve.png`` and ``report.html`` in another process.

The training loop writes data (CSVs, TensorBoard events, checkpoints); the figures are
drawn from those files by ``python -m herkit.presentation.figures RUN``
(:mod:`herkit.presentation.figures`), so that a training process never imports Plotly or
matplotlib and a failing figure cannot stop training. :class:`Presenter` starts that
process: in the background at checkpoints (skipped while the previous one still runs),
and once more at the end, waited for (one still drawing then is stopped). A failure there
is one warning line naming the command that makes the figures again.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from herkit.rundir.paths import RunPaths
from herkit.runtime.console import say

__all__ = ["FINAL_TIMEOUT_S", "Presenter"]

FINAL_TIMEOUT_S = 300.0
"""How long the end of a run waits for its figures."""


class Presenter:
    """Makes a run's figures in a child process (see the module's docstring)."""

    def __init__(self, run_dir: Path, title: str) -> None:
        self.run_dir = run_dir
        self.title = title
        self._child: subprocess.Popen[bytes] | None = None

    def refresh(self) -> None:
        """Start drawing the figures in the background, unless the last start still runs."""
        if self._child is not None and self._child.poll() is None:
            return
        self._child = self._start(stderr=subprocess.DEVNULL)

    def final(self) -> None:
        """Draw the figures of the finished run and wait for them (warn on failure); a
        drawing still in progress is stopped first, as it would be drawn over."""
        self.close()
        child = self._start(stderr=subprocess.PIPE)
        try:
            _, stderr = child.communicate(timeout=FINAL_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            child.kill()
            child.communicate()
            stderr = f"no figures within {FINAL_TIMEOUT_S:.0f} s".encode()
        if child.returncode != 0:
            lines = (stderr or b"").decode(errors="replace").strip().splitlines() or ["no message"]
            say(
                f"warning: the figures of {self.run_dir} were not made ({lines[-1]}); "
                f"make them with: herkit report {self.run_dir} -o {RunPaths(self.run_dir).report}"
            )

    def close(self) -> None:
        """Stop a child still drawing (the run ends on a failure); it leaves no temporary file."""
        child, self._child = self._child, None
        if child is not None and child.poll() is None:
            child.terminate()
            try:
                child.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                child.kill()
                child.communicate()

    def _start(self, stderr: int) -> subprocess.Popen[bytes]:
        root = str(Path(__file__).resolve().parent.parent)  # where this herkit is imported from
        path = os.environ.get("PYTHONPATH")
        env = dict(os.environ, PYTHONPATH=root if not path else os.pathsep.join([root, path]))
        command = [
            sys.executable,
            "-m",
            "herkit.presentation.figures",
            str(self.run_dir),
            self.title,
        ]
        return subprocess.Popen(
            command,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
