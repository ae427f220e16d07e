"""Tests of ``benchmarks/buffer.py``, herkit's buffer against SB3's and cpprb's: its
settings, and a tiny run with the peers (skipped without the ``bench`` extra).

The script is not part of the installed package; it is loaded from the checkout.
"""

from __future__ import annotations

import importlib.util
import math
from typing import Any

import pytest
from scripts import load_benchmark

from herkit.bench import BufferBenchConfig, print_buffer_table

"""The script under test."""
HAS_PEERS = all(importlib.util.find_spec(name) for name in ("stable_baselines3", "cpprb"))
"""Whether the bench extra (stable-baselines3, cpprb) is installed."""
TINY = {"capacity": 4_000, "stored": (1_000, 2_000), "seconds": 0.05}
"""Settings of a run that takes seconds."""


script = load_benchmark("buffer")
"""The loaded ``benchmarks/buffer.py``."""


def test_peer_config_is_herkit_bench_buffers_with_peers_on() -> None:
    config = script.PeerBenchConfig(peers=False)
    assert isinstance(config, BufferBenchConfig)
    assert {name: value for name, value in vars(config).items() if name != "peers"} == vars(
        BufferBenchConfig()
    )
    if HAS_PEERS:
        assert script.PeerBenchConfig().peers is True


@pytest.mark.parametrize(("field", "value"), [("peers", "yes"), ("capacity", 0), ("stored", ())])
def test_bad_config_values_raise_value_error_naming_the_field(field: str, value: Any) -> None:
    with pytest.raises(ValueError, match=field):
        script.PeerBenchConfig(**{field: value}, **({"peers": False} if field != "peers" else {}))


def test_peers_without_the_bench_extra_is_a_value_error_naming_peers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("importlib.util.find_spec", lambda name, *args: None)
    with pytest.raises(ValueError, match=r"peers.*pip install -e '\.\[bench\]'"):
        script.PeerBenchConfig(peers=True)


@pytest.mark.slow("times the buffer")
def test_without_peers_the_rows_are_herkit_bench_buffers() -> None:
    rows = script.run_with_peers(script.PeerBenchConfig(peers=False, **TINY))
    assert [row["buffer"] for row in rows] == ["herkit"] * 4
    assert all(row["add_vs_herkit"] is None for row in rows)


def test_a_bad_value_exits_with_code_2_naming_it(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit:
        script.main(["--no-peers", "--capacity", "0"])
    assert exit.value.code == 2 and "capacity must be an int >= 1" in capsys.readouterr().err


@pytest.mark.skipif(not HAS_PEERS, reason="needs the bench extra (stable-baselines3, cpprb)")
def test_tiny_run_with_peers_gives_their_rows_and_ratios(
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = script.PeerBenchConfig(**TINY)
    lines: list[str] = []
    rows = script.run_with_peers(config, progress=lines.append)

    assert [(row["buffer"], row["variant"]) for row in rows] == [
        ("herkit", "sample"),
        ("herkit", "sample + PER"),
        ("herkit", "store"),
        ("herkit", "OGBench goals"),
        ("sb3", "sample"),
        ("cpprb", "store x5"),
        ("cpprb", "store x5 + PER"),
    ]
    for row in rows:
        assert set(row["sample_ms"]) == {1_000, 2_000}
        assert math.isfinite(row["add_per_s"]) and row["add_per_s"] > 0
        if row["buffer"] == "herkit":
            assert row["add_vs_herkit"] is None and row["sample_vs_herkit"] is None
            continue
        assert row["add_16env_per_s"] is None
        assert row["add_vs_herkit"] > 0 and set(row["sample_vs_herkit"]) == {1_000, 2_000}
    herkit = {row["prioritized"]: row for row in rows[:2]}
    for row in rows[4:]:
        base = herkit[row["prioritized"]]
        assert row["add_vs_herkit"] == pytest.approx(row["add_per_s"] / base["add_per_s"])
    assert any(line.startswith("cpprb (store x5 + PER)") for line in lines)

    print_buffer_table(rows, config)
    printed = capsys.readouterr().out
    assert "(x) = peer / herkit" in printed and "herkit targets" in printed
