"""Run logs: ``progress.csv`` (one row per evaluation) and TensorBoard scalars.

CSV columns use plain names (``env_steps``, ``updates``, ``wall_s``, ``success_rate``,
losses...); TensorBoard gets the same values under namespaced tags (``eval/success_rate``,
``train/critic_loss``, ``time/sps``). Plots read only the CSV.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any

import numpy as np

PROGRESS_FILE = "progress.csv"
BASE_COLUMNS = ("env_steps", "updates", "episodes", "wall_s", "sps", "success_rate")
_TAGS = {
    "success_rate": "eval/success_rate",
    "episodes": "train/episodes",
    "updates": "train/updates",
    "wall_s": "time/wall_s",
    "eval_s": "time/eval_s",
    "sps": "time/sps",
}


class RunLogger:
    """Appends rows to ``progress.csv`` and, optionally, TensorBoard event files.

    ``resume_from_step`` drops CSV rows logged after that many env steps (a run killed
    after its last checkpoint), so the file stays monotone in ``env_steps``.
    """

    def __init__(
        self, run_dir: str | Path, tensorboard: bool = True, resume_from_step: int | None = None
    ) -> None:
        self.path = Path(run_dir) / PROGRESS_FILE
        self.columns: list[str] = list(BASE_COLUMNS)
        self.rows: list[dict[str, str]] = []
        if resume_from_step is not None and self.path.exists():
            self.rows = [
                row
                for row in read_progress(self.path)
                if float(row["env_steps"]) <= resume_from_step
            ]
            self.columns = _merge(self.columns, [key for row in self.rows for key in row])
        self._rewrite()
        self._writer: Any = None
        if tensorboard:
            from torch.utils.tensorboard import SummaryWriter

            self._writer = SummaryWriter(str(Path(run_dir) / "tb"), purge_step=resume_from_step)

    def log(self, row: dict[str, float]) -> None:
        """Write one row; new metric names extend the header (the file is rewritten once)."""
        text = {key: _format(value) for key, value in row.items()}
        self.rows.append(text)
        columns = _merge(self.columns, list(row))
        if columns != self.columns:
            self.columns = columns
            self._rewrite()
        else:
            with open(self.path, "a", newline="") as file:
                csv.DictWriter(file, self.columns).writerow(text)
        if self._writer is not None:
            step = int(row["env_steps"])
            for key, value in row.items():
                if key != "env_steps" and math.isfinite(value):
                    self._writer.add_scalar(_TAGS.get(key, f"train/{key}"), value, step)
            self._writer.flush()

    def video(self, tag: str, frames: list[np.ndarray], step: int, fps: float) -> None:
        """Add ``frames`` to TensorBoard as an animated GIF (its Images tab plays it)."""
        if self._writer is None:
            return
        import io

        from PIL import Image
        from torch.utils.tensorboard.summary import Summary

        images = [Image.fromarray(frame) for frame in frames]
        gif = io.BytesIO()
        images[0].save(gif, format="GIF", save_all=True, append_images=images[1:],
                       duration=int(1000 / fps), loop=0)  # fmt: skip
        height, width = frames[0].shape[:2]
        image = Summary.Image(height=height, width=width, colorspace=3,
                              encoded_image_string=gif.getvalue())  # fmt: skip
        self._writer._get_file_writer().add_summary(
            Summary(value=[Summary.Value(tag=tag, image=image)]), step
        )
        self._writer.flush()

    def close(self) -> None:
        """Flush and close the TensorBoard writer."""
        if self._writer is not None:
            self._writer.close()

    def _rewrite(self) -> None:
        tmp = self.path.with_suffix(".csv.tmp")
        with open(tmp, "w", newline="") as file:
            writer = csv.DictWriter(file, self.columns)
            writer.writeheader()
            writer.writerows(self.rows)
        tmp.replace(self.path)


def read_progress(path: str | Path) -> list[dict[str, str]]:
    """Rows of a ``progress.csv`` (or of ``DIR/progress.csv``) as dicts of strings."""
    path = Path(path)
    if path.is_dir():
        path = path / PROGRESS_FILE
    with open(path, newline="") as file:
        return [
            {k: v for k, v in row.items() if v not in ("", None)} for row in csv.DictReader(file)
        ]


def _merge(columns: list[str], keys: list[str]) -> list[str]:
    merged = list(columns)
    for key in keys:
        if key not in merged:
            merged.append(key)
    return merged


def _format(value: float) -> str:
    if isinstance(value, int) or (
        isinstance(value, float) and value.is_integer() and abs(value) < 1e15
    ):
        return str(int(value))
    return f"{value:.6g}"
