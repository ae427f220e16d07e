"""Learning curves drawn from run logs (``progress.csv``) alone, never from live objects."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from herkit.logging import read_progress


def plot_runs(run_dirs: Sequence[str | Path], out: str | Path, title: str | None = None) -> Path:
    """Success rate and training losses against env steps for each run, as one PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = []
    for run_dir in run_dirs:
        progress = Path(run_dir) / "progress.csv"
        if not progress.exists():
            raise ValueError(f"run directory {str(run_dir)!r} has no progress.csv")
        runs.append((Path(run_dir).name, read_progress(progress)))
    losses = sorted(
        {key for _, rows in runs for row in rows for key in row if key.endswith("_loss")}
    )
    fig, axes = plt.subplots(1, 2 if losses else 1, figsize=(11 if losses else 6, 4), squeeze=False)
    success_ax = axes[0][0]
    for name, rows in runs:
        steps = [float(row["env_steps"]) for row in rows if "success_rate" in row]
        success = [float(row["success_rate"]) for row in rows if "success_rate" in row]
        success_ax.plot(steps, success, marker=".", label=name)
    success_ax.set(xlabel="env steps", ylabel="success rate", ylim=(-0.02, 1.02))
    success_ax.grid(alpha=0.3)
    if len(runs) > 1:
        success_ax.legend(fontsize=8)
    if losses:
        loss_ax = axes[0][1]
        for name, rows in runs:
            for loss in losses:
                points = [(float(r["env_steps"]), float(r[loss])) for r in rows if loss in r]
                if points:
                    xs, ys = zip(*points, strict=True)
                    label = loss if len(runs) == 1 else f"{name}: {loss}"
                    loss_ax.plot(xs, ys, label=label)
        loss_ax.set(xlabel="env steps", ylabel="loss")
        loss_ax.grid(alpha=0.3)
        loss_ax.legend(fontsize=8)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    out = Path(out)
    if out.is_dir():
        raise ValueError(f"output {str(out)!r} is a directory; give a file name such as curves.png")
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


__all__ = ["plot_runs"]
