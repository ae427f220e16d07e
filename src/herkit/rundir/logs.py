"""Run logs: ``progress.csv`` (one row per evaluation) and TensorBoard scalars, and the
record files that :mod:`herkit.rundir.records` fills (:class:`RecordFile`: ``episodes.csv``,
``updates.csv``).

CSV columns use plain names (``env_steps``, ``updates``, ``wall_s``, ``success_rate``,
losses...); TensorBoard gets the same values under namespaced tags (``eval/success_rate``,
``train/critic_loss``, ``time/sps``). Plots read only the CSV.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from herkit.rundir.paths import RunPaths
from herkit.runtime.files import append_text, write_text

BASE_COLUMNS = ("env_steps", "updates", "episodes", "wall_s", "sps", "ups", "success_rate")
TIME_COLUMNS = ("wall_s", "eval_s", "sps", "ups")
"""The columns of progress.csv that measure time: the only ones two runs of the same command
on the same machine may differ in."""
_TAGS = {
    "success_rate": "eval/success_rate",
    "episodes": "train/episodes",
    "updates": "train/updates",
    "wall_s": "time/wall_s",
    "eval_s": "time/eval_s",
    "sps": "time/sps",
    "ups": "time/ups",
}


class RunLogger:
    """Appends rows to ``progress.csv`` and, optionally, TensorBoard event files (each
    column a scalar at the step :meth:`log` is given, by default the row's ``step_key``;
    the ``step_key`` column is left out where it holds that step itself, and kept where the
    step is another, as ``train/env_steps`` beside the gradient steps of a run that went
    online after its dataset).

    ``resume_from_step`` drops the CSV rows logged after that step of ``step_key`` (a run
    killed after its last checkpoint), so the file stays monotone in it, and the
    TensorBoard points after ``tensorboard_from`` (the checkpoint's TensorBoard step;
    ``resume_from_step`` where None), so that TensorBoard shows the same points as the file.
    TensorBoard drops the points after a step whatever their tag: its steps must rise
    over the whole run.
    """

    def __init__(
        self,
        run_dir: str | Path,
        tensorboard: bool = True,
        resume_from_step: int | None = None,
        step_key: str = "env_steps",
        tensorboard_from: int | None = None,
    ) -> None:
        self.path = RunPaths(run_dir).progress
        self.step_key = step_key
        """The column that counts progress: env steps, or gradient steps (offline runs)."""
        self.columns: list[str] = list(BASE_COLUMNS)
        self.rows: list[dict[str, str]] = []
        if resume_from_step is not None and self.path.exists():
            self.rows = [
                row for row in read_progress(self.path) if float(row[step_key]) <= resume_from_step
            ]
            keys = [key for row in self.rows for key in row]
            self.columns = list(dict.fromkeys([*self.columns, *keys]))
        self._rewrite()
        self._writer: Any = None
        if tensorboard:
            from torch.utils.tensorboard import SummaryWriter

            # TensorBoard drops the events at steps from purge_step on: those after the
            # checkpoint's step, as the CSV rows above (the checkpoint's own row is kept).
            last = resume_from_step if tensorboard_from is None else tensorboard_from
            purge = None if last is None else int(last) + 1
            self._writer = SummaryWriter(str(RunPaths(run_dir).tensorboard), purge_step=purge)

    def log(self, row: dict[str, float], tensorboard_step: int | None = None) -> None:
        """Write one row; new metric names extend the header (the file is rewritten once).
        TensorBoard gets its columns at ``tensorboard_step`` (None: the row's ``step_key``)."""
        text = {key: _format(value) for key, value in row.items()}
        self.rows.append(text)
        columns = list(dict.fromkeys([*self.columns, *row]))
        if columns != self.columns:
            self.columns = columns
            self._rewrite()
        else:
            append_text(self.path, _csv_text([[text.get(name, "") for name in self.columns]]))
        if self._writer is not None:
            step = int(row[self.step_key]) if tensorboard_step is None else tensorboard_step
            for key, value in row.items():
                if math.isfinite(value) and not (key == self.step_key and value == step):
                    self._writer.add_scalar(_TAGS.get(key, f"train/{key}"), value, step)
            self._writer.flush()

    def video(self, tag: str, frames: list[np.ndarray], step: int, fps: float) -> None:
        """Add ``frames`` to TensorBoard as an animated GIF (its Images tab plays it)."""
        if self._writer is None:
            return
        from PIL import Image
        from torch.utils.tensorboard.summary import Summary

        images = [Image.fromarray(frame) for frame in frames]
        gif = io.BytesIO()
        images[0].save(
            gif,
            format="GIF",
            save_all=True,
            append_images=images[1:],
            duration=int(1000 / fps),
            loop=0,
        )
        height, width = frames[0].shape[:2]
        image = Summary.Image(
            height=height, width=width, colorspace=3, encoded_image_string=gif.getvalue()
        )
        self._writer._get_file_writer().add_summary(
            Summary(value=[Summary.Value(tag=tag, image=image)]), step
        )
        self._writer.flush()

    def close(self) -> None:
        """Flush and close the TensorBoard writer."""
        if self._writer is not None:
            self._writer.close()

    def _rewrite(self) -> None:
        rows = [[row.get(name, "") for name in self.columns] for row in self.rows]
        write_text(self.path, _csv_text([self.columns, *rows]))


class RecordFile:
    """A CSV file that rows are appended to in batches, ordered by its ``key`` column.

    A new run starts the file (its header as soon as the columns are known: ``columns``,
    else the keys of the first row). ``resume_after`` (a resumed run) keeps the rows whose
    ``key`` is at most that value and drops the later ones (written by a run killed after
    its last checkpoint), so the resumed run appends without gaps or duplicates; the
    file's header stays.
    """

    def __init__(
        self,
        path: str | Path,
        key: str,
        columns: Sequence[str] | None = None,
        resume_after: float | None = None,
    ) -> None:
        self.path = Path(path)
        self.columns = list(columns) if columns is not None else None
        if resume_after is not None and self.path.exists():
            self.columns = _keep_rows(self.path, key, resume_after) or self.columns
        elif self.columns is not None:
            self._start()

    def append(self, rows: Sequence[Mapping[str, Any]]) -> None:
        """Append ``rows`` (dicts by column; a value missing, None or not finite is left
        empty, a column that the file lacks is left out)."""
        if not rows:
            return
        if self.columns is None:
            self.columns = list(rows[0])
            self._start()
        cells = [[_cell(row.get(name)) for name in self.columns] for row in rows]
        append_text(self.path, _csv_text(cells))

    def _start(self) -> None:
        assert self.columns is not None
        write_text(self.path, _csv_text([self.columns]))


def _keep_rows(path: Path, key: str, limit: float) -> list[str] | None:
    """Rewrite ``path`` keeping the rows whose ``key`` is at most ``limit`` (and no row cut
    short by a kill); returns its header."""
    with open(path, newline="") as source:
        reader = csv.reader(source)
        header = next(reader, None)
        kept: list[list[str]] = []
        if header is not None:
            index = header.index(key)
            kept = [header] + [
                row for row in reader if len(row) == len(header) and _number(row[index]) <= limit
            ]
    write_text(path, _csv_text(kept))
    return header


def _csv_text(rows: Sequence[Sequence[str]]) -> str:
    out = io.StringIO()
    csv.writer(out).writerows(rows)
    return out.getvalue()


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return math.inf


def _cell(value: Any) -> str:
    if value is None or isinstance(value, str):
        return value or ""
    if isinstance(value, float) and not math.isfinite(value):
        return ""
    return _format(value)


def read_progress(path: str | Path) -> list[dict[str, str]]:
    """Rows of a ``progress.csv`` (or of ``DIR/progress.csv``) as dicts of strings."""
    path = Path(path)
    if path.is_dir():
        path = RunPaths(path).progress
    with open(path, newline="") as file:
        return [
            {k: v for k, v in row.items() if v not in ("", None)} for row in csv.DictReader(file)
        ]


def _format(value: float) -> str:
    if isinstance(value, int) or (
        isinstance(value, float) and value.is_integer() and abs(value) < 1e15
    ):
        return str(int(value))
    return f"{value:.6g}"
