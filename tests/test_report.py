"""`herkit report`: one self-contained HTML file, checked as text and rendered in a real
headless browser (Chromium), whose DOM must show every figure drawn and no script error.

Without a browser the rendering tests are skipped, unless HERKIT_REQUIRE_BROWSER=1 (as in
CI), where they fail instead.
"""

from __future__ import annotations

import csv
import json
import math
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from herkit.cli import main
from herkit.presentation.report import episode_window, read_table, write_report
from herkit.rundir.logs import RunLogger
from herkit.rundir.paths import RunPaths

EPISODE_COLUMNS = ["env_steps", "rank", "env", "return", "length", "success", "final_distance"]
ESCAPED = "<probe> & 'x'"  # a config value that must reach the page escaped


@pytest.fixture
def trained(train_once: Callable[..., Path]) -> Path:
    """A real, tiny `herkit train` run (a few seconds), trained once."""
    return train_once(steps=600, eval_every=200, eval_episodes=2)


def copy_run(source: Path, target: Path, **config: Any) -> Path:
    """A copy of ``source`` without per-episode or per-update records (an older run), with
    ``config`` changed in its config.json."""
    shutil.copytree(source, target)
    paths = RunPaths(target)
    paths.episodes.unlink(missing_ok=True)
    paths.updates.unlink(missing_ok=True)
    values = json.loads(paths.config.read_text()) | config
    paths.config.write_text(json.dumps(values))
    return target


def write_episodes(run: Path, n: int, distance: bool = True) -> None:
    """``n`` synthetic training episodes in the format of episodes.csv, learning as they go."""
    with open(RunPaths(run).episodes, "w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(EPISODE_COLUMNS)
        steps = 0
        for i in range(n):
            success = (i * 7919) % n < i  # more often later
            length = 3 + i % 13 if success else 16
            steps += length
            final = f"{(i * 31 % 17) / 8:.3f}" if distance and not success else "0"
            writer.writerow(
                [
                    steps,
                    i % 2,
                    i % 4,
                    -length + success,
                    length,
                    int(success),
                    final if distance else "",
                ]
            )


def write_updates(run: Path, rows: int, sac: bool) -> None:
    """Synthetic learner records in the format of updates.csv (``q_high`` unbounded)."""
    columns = [
        "updates",
        "env_steps",
        "critic_loss",
        *(["actor_loss"] if sac else []),
        "q_mean",
        "target_q_mean",
        "td_abs_mean",
        *(["alpha", "entropy"] if sac else []),
        "q_min",
        "q_max",
        "q_low",
        "q_high",
    ]
    with open(RunPaths(run).updates, "w", newline="") as file:
        writer = csv.DictWriter(file, columns)
        writer.writeheader()
        for i in range(1, rows + 1):
            q = -5 * (1 - math.exp(-i / 30))
            values = {
                "updates": 50 * i,
                "env_steps": 200 * i,
                "critic_loss": math.exp(-i / 9),
                "actor_loss": -q,
                "q_mean": q,
                "target_q_mean": q - 0.1,
                "td_abs_mean": 0.3 / i,
                "alpha": 0.2 / i,
                "entropy": -1 - i % 3 / 3,
                "q_min": q - 2,
                "q_max": min(q + 2, 0),
                "q_low": -50,
                "q_high": "",
            }
            writer.writerow({name: values[name] for name in columns})


@pytest.fixture
def runs(trained: Path, tmp_path: Path) -> list[Path]:
    """Two seeds of HER (with episode and update records, one SAC-like, one DQN-like) and
    an older run of another setting without them."""
    her0 = copy_run(trained, tmp_path / "her-s0")
    her1 = copy_run(trained, tmp_path / "her-s1", seed=1)
    config = json.loads(RunPaths(trained).config.read_text())
    conventions = config["conventions"] | {"sources": {"reward_range": ESCAPED}}
    plain = copy_run(trained, tmp_path / "plain-s0", strategy="none", conventions=conventions)
    write_episodes(her0, 300)
    write_episodes(her1, 40, distance=False)
    write_updates(her0, 120, sac=True)
    write_updates(her1, 120, sac=False)
    return [her0, her1, plain]


def find_browser() -> str:
    """A Chromium-like browser's path; skips (or fails when it is required) without one."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    if os.environ.get("HERKIT_REQUIRE_BROWSER") == "1":
        pytest.fail("HERKIT_REQUIRE_BROWSER=1 but no chromium, chromium-browser or google-chrome")
    pytest.skip("no chromium, chromium-browser or google-chrome on PATH to render the report")


def browse(page: Path, profile: Path, *args: str) -> str:
    """Open ``page`` in headless Chromium with ``args``; returns its stdout."""
    command = [
        find_browser(),
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        f"--user-data-dir={profile}",
        "--virtual-time-budget=10000",
        *args,
        page.resolve().as_uri(),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def errors_shown(dom: str) -> str:
    match = re.search(r'<div id="report-errors"[^>]*>(.*?)</div>', dom, re.S)
    assert match is not None, "the page has no #report-errors element"
    return match.group(1)


def traces_per_figure(dom: str) -> list[int]:
    """Scatter traces drawn in each rendered Plotly figure, in page order."""
    starts = [m.start() for m in re.finditer(r'class="[^"]*\bjs-plotly-plot\b', dom)]
    chunks = [dom[a:b] for a, b in zip(starts, [*starts[1:], len(dom)], strict=True)]
    return [len(re.findall(r'<g class="trace scatter', chunk)) for chunk in chunks]


@pytest.mark.slow("renders the report in headless Chromium")
def test_report_is_self_contained_and_renders_in_a_browser(
    runs: list[Path], tmp_path: Path
) -> None:
    out = write_report(runs, tmp_path / "out" / "report.html")
    text = out.read_text()
    assert not re.search(r"<script[^>]+src=", text)  # no script fetched from anywhere
    assert text.count('id="plotly-gzip"') == 1  # Plotly's JavaScript, once, compressed
    assert len(text) < 2_300_000  # Plotly's 4.8 MB unpack in the browser
    for name in ("her-s0", "her-s1", "plain-s0", "herkit/BitFlip-v0", "dqn.epsilon"):
        assert name in text
    assert "&lt;probe&gt; &amp; &#x27;x&#x27;" in text and ESCAPED not in text
    assert "has no episodes.csv" in text and "has no updates.csv" in text
    assert "strategy=future (2 seeds)" in text and "strategy=none (seed 0)" in text
    figures = text.count('class="plotly-graph-div"')
    # success x2; her-s0: return, success, distance, Q, critic, actor, TD, alpha, entropy;
    # her-s1: return, success (no distances), Q, critic, TD; plain-s0: progress.csv's Q,
    # critic, TD
    assert figures >= 19

    dom = browse(out, tmp_path / "profile", "--dump-dom")
    assert errors_shown(dom) == ""
    traces = traces_per_figure(dom)
    assert len(traces) == figures and min(traces) >= 1, traces
    assert traces[0] == 4  # two seeds: band (2 traces) and mean; the other group: mean
    assert 'class="scatterlayer' in dom and "mean of the last 60 episodes" in dom
    assert "min-max of Q" in dom and "lowest TD target allowed" in dom
    assert "highest allowed" not in dom  # q_high unbounded: no line
    assert min(dom.count('class="xtitle"'), dom.count('class="ytitle"')) >= figures  # named

    shot = tmp_path / "report.png"
    browse(out, tmp_path / "profile", f"--screenshot={shot}", "--window-size=1400,4000")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 50_000


@pytest.mark.slow("renders the report in headless Chromium")
def test_the_error_banner_shows_script_errors(trained: Path, tmp_path: Path) -> None:
    out = write_report([trained], tmp_path / "report.html")
    broken = tmp_path / "broken.html"
    broken.write_text(out.read_text().replace("</body>", "<script>nosuch.thing()</script></body>"))
    dom = browse(broken, tmp_path / "profile", "--dump-dom")
    assert "JavaScript error: " in errors_shown(dom) and "nosuch" in errors_shown(dom)


def figure_layouts(page: str) -> list[dict[str, Any]]:
    """The layout of every Plotly figure of a report, as the page hands it to Plotly."""
    decoder, layouts = json.JSONDecoder(), []
    for call in re.finditer(r"Plotly\.newPlot\(\s*", page):
        at = call.end()
        for _ in range(3):  # the div's id, the traces, the layout
            value, at = decoder.raw_decode(page, at)
            at = re.compile(r"\s*,\s*").match(page, at).end()  # type: ignore[union-attr]
        layouts.append(value)
    return layouts


@pytest.mark.slow("a training run and its report")
def test_every_figure_names_its_axes(runs: list[Path], tmp_path: Path) -> None:
    """Plotly.js 3 and later show an axis title given as {"text": ...} and ignore a bare
    string, so each axis of each figure must carry one that way."""
    page = write_report(runs, tmp_path / "report.html").read_text()
    layouts = figure_layouts(page)
    assert len(layouts) == page.count('class="plotly-graph-div"') >= 19
    titles = [
        (layout["xaxis"]["title"]["text"], layout["yaxis"]["title"]["text"]) for layout in layouts
    ]
    assert all(x and y for x, y in titles), titles
    success = "success rate of evaluation episodes"
    assert titles[:2] == [("env steps", success), ("wall-clock seconds of training", success)]
    assert ("env steps", "return (sum of rewards)") in titles
    assert ("updates (gradient steps)", "critic loss") in titles
    assert ("updates (gradient steps)", "Q value") in titles


def test_an_old_run_without_records_and_one_without_config(trained: Path, tmp_path: Path) -> None:
    old = copy_run(trained, tmp_path / "old")
    bare = tmp_path / "bare"  # progress.csv alone: no config, summary, losses or episodes
    bare.mkdir()
    logger = RunLogger(bare, tensorboard=False)
    logger.log({"env_steps": 100, "updates": 0, "wall_s": 1.0, "success_rate": 0.5})
    logger.close()
    text = write_report([old, bare], tmp_path / "report.html").read_text()
    assert text.count("has no episodes.csv") == 2 and text.count("has no updates.csv") == 2
    assert "There are no learner statistics" in text and "bare" in text
    assert "herkit/BitFlip-v0" in text


def test_long_runs_are_thinned_and_short_runs_averaged_over_fewer_episodes(
    trained: Path, tmp_path: Path
) -> None:
    assert [episode_window(n) for n in (0, 4, 40, 500, 10_000)] == [1, 1, 8, 100, 100]
    run = copy_run(trained, tmp_path / "long")
    write_episodes(run, 10_000)
    table = read_table(RunPaths(run).episodes)
    assert list(table) == EPISODE_COLUMNS and table["return"].size == 10_000
    text = write_report([run], tmp_path / "report.html").read_text()
    assert "each episode (4000 of 10000)" in text


def test_cli_writes_the_report(
    trained: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "new" / "report.html"
    assert main(["report", str(trained), "-o", str(out)]) == 0
    assert capsys.readouterr().out.strip() == str(out) and out.stat().st_size > 1_000_000


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "herkit report needs at least one run directory"),
        (["{tmp}/missing"], "run directory '{tmp}/missing' does not exist"),
        (["{tmp}/afile"], "run directory '{tmp}/afile' is a file, not a directory"),
        (["{tmp}"], "run directory '{tmp}' has no evaluation yet (no progress.csv)"),
        (["{run}", "-o", "{tmp}"], "output '{tmp}' is a directory; give a file name such as"),
        (["{run}", "-o", "{tmp}/afile/r.html"], "'{tmp}/afile' is a file, not a directory"),
        (["{run}", "--smooth", "2"], "--smooth"),
    ],
)
def test_cli_errors_are_one_line_and_exit_2(
    trained: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    message: str,
) -> None:
    (tmp_path / "afile").write_text("a file")
    args = [arg.format(tmp=tmp_path, run=trained) for arg in args]
    assert main(["report", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("herkit: error: ") and err.count("\n") == 1, err
    assert message.format(tmp=tmp_path) in err
    assert not (tmp_path / "report.html").exists()
