"""Tests of herkit.bench (``herkit bench buffer``): a tiny run, targets, config validation.

The peers' side (``benchmarks/buffer.py``) is tested in test_bench_peers.py.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from herkit.bench import BufferBenchConfig, bench_buffer, check_targets, run_buffer_bench

ROW_KEYS = {
    "buffer",
    "variant",
    "relabel",
    "prioritized",
    "add_per_s",
    "add_16env_per_s",
    "sample_ms",
    "sample_calls",
    "add_vs_herkit",
    "sample_vs_herkit",
}


def positive(value: Any) -> bool:
    return isinstance(value, float) and math.isfinite(value) and value > 0


@pytest.mark.slow("times the buffer")
def test_tiny_run_gives_positive_finite_numbers_for_every_herkit_variant() -> None:
    config = BufferBenchConfig(capacity=4_000, stored=(2_000,), seconds=0.05)
    lines: list[str] = []
    rows = run_buffer_bench(config, progress=lines.append)

    assert [(row["variant"], row["relabel"], row["prioritized"]) for row in rows] == [
        ("sample", "sample", False),
        ("sample + PER", "sample", True),
        ("store", "store", False),
        ("OGBench goals", "sample", False),
    ]
    for row in rows:
        assert set(row) == ROW_KEYS
        assert row["buffer"] == "herkit"
        assert positive(row["add_per_s"]) and positive(row["add_16env_per_s"])
        assert set(row["sample_ms"]) == set(row["sample_calls"]) == {2_000}
        assert positive(row["sample_ms"][2_000])
        assert row["sample_calls"][2_000] >= 5
        assert row["add_vs_herkit"] is None and row["sample_vs_herkit"] is None
    assert lines  # progress was reported


@pytest.mark.slow("times the buffer")
def test_targets_and_json_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "bench.json"
    config = BufferBenchConfig(
        capacity=4_000, stored=(1_000, 2_000), seconds=0.05, json_out=str(out)
    )
    bench_buffer(config)

    printed = capsys.readouterr().out
    assert "Replay buffer speed" in printed and "herkit targets" in printed
    result = json.loads(out.read_text())
    assert set(result) == {"config", "machine", "rows", "targets"}
    assert result["config"]["stored"] == [1_000, 2_000]
    assert all(set(row["sample_ms"]) == {"1000", "2000"} for row in result["rows"])
    # 2 sizes x (latency) + growth + 2 add rates, for each of the 4 herkit variants.
    assert len(result["targets"]) == 4 * 5
    assert all(isinstance(check["met"], bool) for check in result["targets"])


def test_check_targets_judges_each_threshold() -> None:
    row = {
        "buffer": "herkit",
        "variant": "sample",
        "prioritized": False,
        "add_per_s": 150_000.0,
        "add_16env_per_s": 900_000.0,
        "sample_ms": {10_000: 0.05, 500_000: 0.11},
    }
    met = {check["target"]: check["met"] for check in check_targets([row])}
    assert met == {
        "sample @10,000 < 0.1 ms": True,
        "sample @500,000 < 0.1 ms": False,
        "sample @500,000 <= 1.2x @10,000": False,
        "add >= 100,000/s from 1 env": True,
        "add >= 1,000,000/s from 16 envs": False,
    }


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("capacity", 0),
        ("capacity", 1.5e6),
        ("capacity", 500),  # below 16 envs x 50 steps
        ("batch_size", 0),
        ("episode_length", -1),
        ("k", -1),
        ("seed", -3),
        ("seconds", 0.0),
        ("seconds", float("nan")),
        ("seconds", True),
        ("stored", ()),
        ("stored", [10_000]),
        ("stored", (0,)),
        ("stored", (2_000, 2_000)),
        ("stored", (1_234,)),  # not whole episodes
        ("stored", (2_000_000,)),  # more than capacity
        ("json_out", ""),
    ],
)
def test_bad_config_values_raise_value_error_naming_the_field(field: str, value: Any) -> None:
    with pytest.raises(ValueError, match=field):
        BufferBenchConfig(**{field: value})


def test_defaults_are_the_issue_settings() -> None:
    config = BufferBenchConfig()
    assert config.stored == (10_000, 500_000)
    assert (config.capacity, config.batch_size, config.episode_length, config.k) == (
        1_000_000,
        256,
        50,
        4,
    )
    assert config.json_out is None
