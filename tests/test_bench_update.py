"""Tests of ``herkit bench update``: its settings, a tiny timed run, its JSON and table,
and a mode that cannot run here."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
import pytest

from herkit import cli
from herkit.bench import UpdateBenchConfig
from herkit.bench.settings import NetworkSize
from herkit.bench.update import filled_buffer, run_update_bench

REQUIRED = {"algo", "hidden", "batch_size", "precision", "mode", "device", "updates_per_s"}


def test_sizes_parse_and_bad_ones_are_refused() -> None:
    assert NetworkSize.parse("3x256:256") == NetworkSize((256, 256, 256), False, 256)
    assert NetworkSize.parse("2x512ln:2048") == NetworkSize((512, 512), True, 2048)
    for text in ("256:256", "3x256", "0x256:256", "3x256LN:2", "3x256:0"):
        with pytest.raises(ValueError, match="sizes must look like LAYERSxWIDTH"):
            NetworkSize.parse(text)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("algos", ()),
        ("algos", ("ppo",)),
        ("precisions", ("fp16",)),
        ("modes", ("jit",)),
        ("sizes", ()),
        ("sizes", ("big",)),
        ("device", "tpu"),
        ("seconds", 0.0),
        ("threads", 0),
        ("fill", 10),
        ("json_out", ""),
    ],
)
def test_bad_settings_raise_value_error_naming_the_field(field: str, value: Any) -> None:
    with pytest.raises(ValueError, match=field):
        UpdateBenchConfig(**{field: value})


@pytest.mark.parametrize("device", [None, "cpu"])
@pytest.mark.parametrize("discrete", [False, True])
def test_the_filled_buffer_holds_whole_episodes_of_the_shapes(device: Any, discrete: bool) -> None:
    buffer = filled_buffer(2_000, device, discrete, seed=0)
    assert len(buffer) >= 2_000 and len(buffer) % 800 == 0  # 16 envs x 50 steps
    batch = buffer.sample(32)
    assert tuple(batch.observation.shape) == (32, 25) and tuple(batch.goal.shape) == (32, 3)
    assert tuple(batch.action.shape) == ((32,) if discrete else (32, 4))


def test_a_tiny_run_times_every_row_the_device_can_run() -> None:
    config = UpdateBenchConfig(
        algos=("td3", "dqn"),
        sizes=("2x32:64",),
        precisions=("fp32",),
        modes=("eager", "captured"),
        device="cpu",
        seconds=0.1,
        fill=800,
    )
    lines: list[str] = []
    rows = run_update_bench(config, lambda line, row: lines.append(line))
    assert [(row["algo"], row["mode"]) for row in rows] == [("td3", "eager"), ("dqn", "eager")]
    for row in rows:
        assert REQUIRED <= set(row)
        assert row["hidden"] == [32, 32] and row["batch_size"] == 64 and row["device"] == "cpu"
        assert math.isfinite(row["updates_per_s"]) and row["updates_per_s"] > 0
        assert row["busy"] is None and row["error"] is None and row["buffer"] == "host"
        assert row["sampled"] == "host"
    assert len(lines) == 2 and "updates/s" in lines[0]


@pytest.mark.parametrize("buffer", ["host", "device"])
def test_a_prioritized_row_sets_the_priorities_as_a_run_does(buffer: str) -> None:
    from herkit.agents import make_agent
    from herkit.bench.update import _agent_config, _time_row

    config = UpdateBenchConfig(
        algos=("ddpg",),
        sizes=("1x16:32",),
        precisions=("fp32",),
        modes=("eager",),
        device="cpu",
        seconds=0.05,
        fill=800,
        buffer=buffer,
        prioritized=True,
    )
    (row,) = run_update_bench(config)
    assert row["prioritized"] is True and row["updates_per_s"] > 0 and row["error"] is None
    sampled = filled_buffer(800, "cpu" if buffer == "device" else None, False, 0, True)
    (size,) = config.parsed_sizes()
    agent = make_agent(
        "ddpg",
        _agent_config("ddpg", size),
        25,
        3,
        gymnasium.spaces.Box(-1.0, 1.0, (4,)),
        (-1.0, 0.0),
    )
    _time_row(agent, sampled, 32, "eager", 0.05)
    assert sampled.sampler.tree is not None
    assert len(np.unique(sampled.sampler.tree.leaves)) > 50  # TD errors, not the first max


def test_a_mode_that_fails_gives_a_row_that_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    from herkit.agents.base import GoalAgent

    def refuse(self: Any, mode: str) -> None:
        raise RuntimeError("no compiler here")

    monkeypatch.setattr(GoalAgent, "set_update_mode", refuse)
    config = UpdateBenchConfig(
        sizes=("1x16:8",),
        precisions=("fp32",),
        modes=("compiled",),
        device="cpu",
        seconds=0.05,
        fill=800,
    )
    (row,) = run_update_bench(config)
    assert row["updates_per_s"] is None and row["error"] == "RuntimeError: no compiler here"


def test_the_command_writes_the_machine_and_the_rows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "update.json"
    code = cli.main(
        [
            "bench",
            "update",
            "--sizes",
            "1x16:8",
            "--precisions",
            "fp32",
            "--modes",
            "eager",
            "--seconds",
            "0.05",
            "--fill",
            "800",
            "--device",
            "cpu",
            "--json-out",
            str(out),
        ]
    )
    assert code == 0
    assert "Update speed" in capsys.readouterr().out
    result = json.loads(out.read_text())
    assert set(result) == {"config", "machine", "rows"}
    assert result["machine"]["gpu"] is None and result["machine"]["cpus"] >= 1
    (row,) = result["rows"]
    assert REQUIRED <= set(row) and row["mode"] == "eager" and row["updates_per_s"] > 0


def test_bench_update_flags_are_refused_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["bench", "update", "--sizes", "3x256"]) == 2
    assert "sizes must look like LAYERSxWIDTH" in capsys.readouterr().err


def test_a_row_draws_on_the_device_where_the_training_loop_would(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import herkit.training.learner
    from herkit.agents import make_agent
    from herkit.bench.update import _time_row

    monkeypatch.setattr(herkit.training.learner, "draws_on_device", lambda agent, buffer: True)
    import gymnasium

    buffer = filled_buffer(800, "cpu", False, seed=0)
    agent = make_agent("td3", None, 25, 3, gymnasium.spaces.Box(-1.0, 1.0, (4,)), (-1.0, 0.0))
    row = _time_row(agent, buffer, 32, "eager", seconds=0.05)
    assert row["sampled"] == "device" and row["error"] is None and row["updates_per_s"] > 0
    assert agent.updates > 8
