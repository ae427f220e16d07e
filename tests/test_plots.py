"""Grouping runs by setting and aggregating their seeds (herkit.presentation.plots), and
`herkit plot`."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from herkit.buffer.settings import HerSettings
from herkit.cli import main
from herkit.config import DQNConfig, TrainConfig
from herkit.presentation.groups import aggregate_runs, moving_average
from herkit.presentation.plots import figure, plot_runs
from herkit.rundir.logs import RunLogger, read_progress
from herkit.rundir.paths import RunPaths

PNG = b"\x89PNG\r\n\x1a\n"
DEFAULT = TrainConfig()


def write_run(
    run_dir: Path,
    x: list[float],
    success: list[float],
    losses: dict[str, list[float]] | None = None,
    config: TrainConfig | None = DEFAULT,
    wall: list[float] | None = None,
) -> Path:
    """A run directory as `herkit train` leaves it: progress.csv and config.json."""
    run_dir.mkdir(parents=True)
    logger = RunLogger(run_dir, tensorboard=False)
    for i, step in enumerate(x):
        row = {
            "env_steps": step,
            "updates": step // 2,
            "wall_s": wall[i] if wall else step / 100,
            "success_rate": 0.0,
        }
        row["success_rate"] = success[i]
        row.update({name: values[i] for name, values in (losses or {}).items()})
        logger.log(row)
    logger.close()
    if config is not None:
        values: dict[str, Any] = dataclasses.replace(config, out=str(run_dir)).to_dict()
        values["conventions"] = {"probed_with_seed": config.seed}  # differs per run: ignored
        RunPaths(run_dir).config.write_text(json.dumps(values))
    return run_dir


SUCCESS = np.array([[0.0, 0.2, 0.5, 0.9], [0.1, 0.1, 0.7, 1.0], [0.0, 0.4, 0.6, 0.8]])
LOSS = np.array([[1.0, 0.5, 0.2, 0.1], [2.0, 0.4, 0.3, 0.05], [1.5, 0.6, 0.1, 0.02]])
STEPS = [1000.0, 2000.0, 3000.0, 4000.0]


def three_seeds(root: Path, **changes: Any) -> list[Path]:
    return [
        write_run(
            root / f"s{seed}",
            STEPS,
            list(SUCCESS[seed]),
            {"critic_loss": list(LOSS[seed])},
            TrainConfig(seed=seed, **changes),
        )
        for seed in range(3)
    ]


def test_three_seeds_are_one_line_with_numpys_statistics(tmp_path: Path) -> None:
    runs = three_seeds(tmp_path)
    (group,) = aggregate_runs(runs)
    assert group.label == "herkit/BitFlip-v0 dqn (3 seeds)"
    assert group.seeds == (0, 1, 2) and group.runs == tuple(runs) and group.x == "env_steps"
    assert list(group.curves) == ["success_rate", "critic_loss"]
    for name, data in (("success_rate", SUCCESS), ("critic_loss", LOSS)):
        curve = group.curves[name]
        assert curve.n == 3
        np.testing.assert_array_equal(curve.x, STEPS)
        np.testing.assert_allclose(curve.mean, data.mean(axis=0))
        np.testing.assert_allclose(curve.min, data.min(axis=0))
        np.testing.assert_allclose(curve.max, data.max(axis=0))
        np.testing.assert_allclose(curve.sem, data.std(axis=0, ddof=1) / math.sqrt(3))


def test_settings_that_do_not_change_learning_do_not_split_groups(tmp_path: Path) -> None:
    runs = [
        write_run(tmp_path / "a", STEPS, list(SUCCESS[0]), config=TrainConfig(seed=0)),
        write_run(
            tmp_path / "b",
            STEPS,
            list(SUCCESS[1]),
            config=TrainConfig(
                seed=1,
                device="auto",
                eval_every=500,
                steps=7,
                tensorboard=False,
                video_every=5,
            ),
        ),
    ]
    (group,) = aggregate_runs([*runs, runs[0]])  # a directory given twice counts once
    assert group.seeds == (0, 1) and group.label.endswith("(2 seeds)")


def test_strategies_are_groups_labelled_by_what_differs(tmp_path: Path) -> None:
    future = three_seeds(tmp_path / "future")
    none = write_run(
        tmp_path / "none",
        STEPS,
        [0.0] * 4,
        {"critic_loss": [1.0] * 4},
        TrainConfig(her=HerSettings(strategy="none")),
    )
    groups = aggregate_runs([*future, none])
    assert [g.label for g in groups] == ["strategy=future (3 seeds)", "strategy=none (seed 0)"]
    assert [g.settings for g in groups] == [{"strategy": "future"}, {"strategy": "none"}]
    np.testing.assert_array_equal(groups[1].curves["success_rate"].mean, 0.0)

    dqn = write_run(tmp_path / "lr", STEPS, [0.0] * 4, config=TrainConfig(agent=DQNConfig(lr=3e-4)))
    labels = [g.label for g in aggregate_runs([future[0], dqn])]
    assert labels == ["dqn.lr=0.001 (seed 0)", "dqn.lr=0.0003 (seed 0)"]


def test_runs_without_config_are_their_own_groups(tmp_path: Path) -> None:
    a = write_run(tmp_path / "alpha", STEPS, list(SUCCESS[0]), config=None)
    b = write_run(tmp_path / "beta", STEPS, list(SUCCESS[1]), config=None)
    RunPaths(b).config.write_text("{not json")
    groups = aggregate_runs([a, b])
    assert [g.label for g in groups] == ["alpha", "beta"] and groups[0].seeds == (None,)


def test_seeds_on_different_grids_are_interpolated_where_all_have_data(tmp_path: Path) -> None:
    xa, ya = [0.0, 100.0, 200.0, 300.0], [0.0, 0.4, 0.2, 1.0]
    xb, yb = [50.0, 150.0, 250.0], [0.5, 0.3, 0.9]
    a = write_run(tmp_path / "a", xa, ya, config=TrainConfig(seed=0))
    b = write_run(tmp_path / "b", xb, yb, config=TrainConfig(seed=1))
    curve = aggregate_runs([a, b])[0].curves["success_rate"]
    grid = np.array([50.0, 100.0, 150.0, 200.0, 250.0])
    np.testing.assert_array_equal(curve.x, grid)
    both = np.stack([np.interp(grid, xa, ya), np.interp(grid, xb, yb)])
    np.testing.assert_allclose(curve.mean, both.mean(axis=0))
    np.testing.assert_allclose(curve.min, both.min(axis=0))
    np.testing.assert_allclose(curve.max, both.max(axis=0))


def test_smoothing_is_a_trailing_moving_average_per_seed(tmp_path: Path) -> None:
    values = np.array([0.0, 1.0, 0.0, 1.0, 1.0])
    np.testing.assert_allclose(moving_average(values, 1), values)
    np.testing.assert_allclose(moving_average(values, 2), [0.0, 0.5, 0.5, 0.5, 1.0])
    np.testing.assert_allclose(moving_average(values, 3), [0.0, 0.5, 1 / 3, 2 / 3, 2 / 3])
    np.testing.assert_allclose(moving_average(values, 99), np.cumsum(values) / np.arange(1, 6))

    runs = three_seeds(tmp_path)
    curve = aggregate_runs(runs, smooth=2)[0].curves["success_rate"]
    smoothed = np.stack([moving_average(row, 2) for row in SUCCESS])
    np.testing.assert_allclose(curve.mean, smoothed.mean(axis=0))
    np.testing.assert_allclose(curve.max, smoothed.max(axis=0))


def test_wall_seconds_as_x(tmp_path: Path) -> None:
    a = write_run(tmp_path / "a", STEPS, [0.0, 0.5, 1.0, 1.0], wall=[1.0, 2.0, 3.0, 4.0])
    b = write_run(
        tmp_path / "b", STEPS, [0.0, 1.0, 1.0, 1.0], config=TrainConfig(seed=1), wall=[2, 4, 6, 8]
    )
    (group,) = aggregate_runs([a, b], x="wall_s")
    curve = group.curves["success_rate"]
    assert group.x == "wall_s"
    np.testing.assert_array_equal(curve.x, [2.0, 3.0, 4.0])
    np.testing.assert_allclose(curve.mean, [(0.5 + 0.0) / 2, (1.0 + 0.5) / 2, (1.0 + 1.0) / 2])


def test_plot_runs_keeps_its_old_call_and_writes_a_png(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run", STEPS, list(SUCCESS[0]), {"actor_loss": [-1.0, -2, -3, -4]})
    out = plot_runs([run], RunPaths(run).curve, title="herkit/BitFlip-v0 dqn+HER")
    assert out == RunPaths(run).curve and out.read_bytes()[:8] == PNG
    many = {f"{name}_loss": [10.0**-i for i in range(4)] for name in ("a", "b", "c", "d")}
    wide = write_run(
        tmp_path / "wide", STEPS, list(SUCCESS[1]), many, TrainConfig(her=HerSettings(k=8))
    )
    out = plot_runs([run, wide], tmp_path / "new" / "both.png", x="wall_s", smooth=2, band="sem")
    assert out.read_bytes()[:8] == PNG


def test_cli_writes_png_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = three_seeds(tmp_path / "future")
    none = write_run(
        tmp_path / "none", STEPS, [0.0] * 4, config=TrainConfig(her=HerSettings(strategy="none"))
    )
    png, numbers = tmp_path / "out" / "curves.png", tmp_path / "out" / "curves.json"
    args = ["plot", *map(str, [*runs, none]), "-o", str(png), "--json", str(numbers)]
    assert main([*args, "--smooth", "2", "--band", "sem"]) == 0
    assert capsys.readouterr().out.split() == [str(png), str(numbers)]
    assert png.read_bytes()[:8] == PNG
    data = json.loads(numbers.read_text())
    assert data["x"] == "env_steps" and data["smooth"] == 2
    first, second = data["groups"]
    assert first["label"] == "strategy=future (3 seeds)" and first["seeds"] == [0, 1, 2]
    assert first["runs"] == [str(run) for run in runs] and second["runs"] == [str(none)]
    assert set(first["metrics"]) == {"success_rate", "critic_loss"}
    assert set(second["metrics"]) == {"success_rate"}
    success = first["metrics"]["success_rate"]
    assert success["n"] == 3 and success["x"] == STEPS
    smoothed = np.stack([moving_average(row, 2) for row in SUCCESS])
    np.testing.assert_allclose(success["mean"], smoothed.mean(axis=0))
    np.testing.assert_allclose(success["sem"], smoothed.std(axis=0, ddof=1) / math.sqrt(3))
    assert main(["plot", str(runs[0]), "-o", str(png), "--x", "wall_s"]) == 0
    assert capsys.readouterr().out.strip() == str(png)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--x", "episodes"], "--x"),
        (["--smooth", "0"], "--smooth must be >= 1"),
        (["-o", "{tmp}"], "output '{tmp}' is a directory"),
        (["--json", "{tmp}"], "json '{tmp}' is a directory"),
        (["--band", "std"], "--band"),
        (["-o", "{tmp}/afile/c.png"], "'{tmp}/afile' is a file, not a directory"),
    ],
)
def test_cli_errors_are_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    run = write_run(tmp_path / "run", STEPS, list(SUCCESS[0]))
    (tmp_path / "afile").write_text("a file")
    extra = [arg.format(tmp=tmp_path) for arg in extra]
    assert main(["plot", str(run), "-o", str(tmp_path / "c.png"), *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith("herkit: error: ") and err.count("\n") == 1
    assert message.format(tmp=tmp_path) in err
    assert not (tmp_path / "c.png").exists()


def test_cli_errors_for_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plot"]) == 2
    assert "at least one run directory" in capsys.readouterr().err
    assert main(["plot", str(tmp_path), "-o", str(tmp_path / "c.png")]) == 2
    err = capsys.readouterr().err
    label = f"run directory {str(tmp_path)!r}"
    assert err == f"herkit: error: {label} has no evaluation yet (no progress.csv)\n"


def test_pure_function_errors_name_the_argument(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run", STEPS, list(SUCCESS[0]))
    with pytest.raises(ValueError, match="run_dirs"):
        aggregate_runs([])
    with pytest.raises(ValueError, match="x must be one of env_steps, wall_s, updates"):
        aggregate_runs([run], x="episodes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="smooth must be an int >= 1"):
        aggregate_runs([run], smooth=0)
    with pytest.raises(ValueError, match="band must be one of minmax, sem"):
        plot_runs([run], tmp_path / "c.png", band="std")  # type: ignore[arg-type]
    assert read_progress(run)[0]["env_steps"] == "1000"  # the synthetic runs are real logs


def test_the_legend_of_many_long_labels_stays_inside_the_picture(tmp_path: Path) -> None:
    runs = [
        write_run(
            tmp_path / f"r{i}",
            STEPS,
            list(SUCCESS[i % 3]),
            {"critic_loss": list(LOSS[i % 3])},
            TrainConfig(
                her=HerSettings(goal_mix=(1.0, 2.0, float(i))),
                agent=DQNConfig(lr=1e-3 / (i + 1)),
            ),
        )
        for i in range(7)
    ]
    groups = aggregate_runs(runs)
    assert all("goal_mix=" in g.label and "dqn.lr=" in g.label for g in groups)
    fig = figure(groups)
    try:
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        (legend,) = fig.legends
        box, page = legend.get_window_extent(renderer), fig.bbox
        assert page.x0 <= box.x0 and box.x1 <= page.x1 and page.y0 <= box.y0
        panels = min(ax.get_tightbbox(renderer).y0 for ax in fig.axes if ax.get_visible())
        assert box.y1 <= panels + 1  # below the panels, not over them
    finally:
        import matplotlib.pyplot as plt

        plt.close(fig)


X_AXES = [
    ("env_steps", "env steps"),
    ("wall_s", "wall-clock seconds of training"),
    ("updates", "gradient steps"),
]


@pytest.mark.parametrize(("x", "x_title"), X_AXES)
def test_every_panel_names_its_axes(tmp_path: Path, x: str, x_title: str) -> None:
    runs = three_seeds(tmp_path / "dqn")
    losses = {"critic_loss": list(LOSS[0]), "actor_loss": list(LOSS[1])}
    runs.append(write_run(tmp_path / "other", STEPS, list(SUCCESS[0]), losses, config=None))
    fig = figure(aggregate_runs(runs, x=x))
    try:
        shown = [ax for ax in fig.axes if ax.get_visible()]
        assert [ax.get_ylabel() for ax in shown] == ["success rate", "actor loss", "critic loss"]
        assert {ax.get_xlabel() for ax in shown} == {x_title}
    finally:
        import matplotlib.pyplot as plt

        plt.close(fig)
