"""Tests of ``benchmarks/paper.py``, the HER paper's figures: the grids, which runs are done,
stopped or new, and the tables and figures drawn from records."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from scripts import load_benchmark

from runs import herkit

paper = load_benchmark("paper")


def test_the_grids_are_the_papers() -> None:
    fig7 = [setting.name for setting in paper.settings_of("fig7")]
    assert len(fig7) == 4 * 4 + 1 and "final k=16" in fig7 and fig7[-1] == "none"
    shaped = paper.settings_of("fig6")
    assert len(shaped) == 8
    assert ("--shaped-reward", "1", "2") == shaped[-1].flags[-3:]
    assert all("--fixed-goal" in setting.flags for setting in paper.settings_of("fig5"))
    assert [s.flags[:2] for s in paper.settings_of("fig4")] == [
        ("--strategy", "none"),
        ("--strategy", "future"),
    ]
    with pytest.raises(ValueError, match="figure must be"):
        paper.settings_of("fig8")


def test_a_run_is_new_stopped_or_done(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert paper.state_of(out, 1000) == "new"
    (out / "checkpoint").mkdir(parents=True)
    (out / "checkpoint" / "state.json").write_text(json.dumps({"state": {"env_steps": 400}}))
    assert paper.state_of(out, 1000) == "stopped at 400"
    assert paper.progress_of(out, 1000) == ("stopped at 400", 400)
    (out / "summary.json").write_text(json.dumps({"env_steps": 400, "interrupted": True}))
    assert paper.state_of(out, 1000) == "stopped at 400"
    (out / "summary.json").write_text(json.dumps({"env_steps": 1000}))
    assert paper.state_of(out, 1000) == "done"
    assert paper.state_of(out, 2000) == "stopped at 400"  # a larger budget continues it


def test_a_run_is_made_once_for_the_figures_that_share_it(tmp_path: Path) -> None:
    homes = {s.name: paper.home_of("fig7", s) for s in paper.settings_of("fig7")}
    assert (homes["future k=4"][0], homes["future k=4"][1].name) == ("fig4", "ddpg+her")
    assert (homes["none"][0], homes["none"][1].name) == ("fig4", "ddpg")
    assert homes["future k=8"][0] == "fig7"
    assert all(
        paper.home_of(f, s)[0] == f for f in ("fig4", "fig5", "fig6") for s in paper.settings_of(f)
    )


def record(figure: str, setting: str, seed: int, rates: list[float]) -> dict[str, Any]:
    curve = [
        {"env_steps": 1000 * (i + 1), "success_rate": r, "wall_s": 10.0 * (i + 1)}
        for i, r in enumerate(rates)
    ]
    return {
        "figure": figure,
        "task": "FetchPush-v4",
        "setting": setting,
        "seed": seed,
        "curve": curve,
        "steps": 2000,
        "wall_s": 20.0,
    }


@pytest.mark.parametrize("figure", ["fig5", "fig7"])
def test_tables_and_figures_come_from_the_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, figure: str
) -> None:
    records = [
        record("fig4", "ddpg+her", 0, [0.2, 0.9]),
        record("fig4", "ddpg", 0, [0.0, 0.0]),
        record("fig5", "ddpg+her, one goal", 0, [0.1, 0.5]),
        record("fig5", "ddpg+her, one goal", 1, [0.3, 0.7]),
        record("fig7", "future k=8", 0, [0.5, 1.0]),
        record("fig7", "final k=1", 0, [0.0, 0.4]),
    ]
    path = tmp_path / "paper.json"
    path.write_text(json.dumps({"runs": {str(i): r for i, r in enumerate(records)}}))
    monkeypatch.setattr(paper, "RECORD", path)
    monkeypatch.setattr(paper, "FIGURES", tmp_path)
    table = paper.table(figure)
    if figure == "fig5":  # its own runs, and fig4's DDPG+HER beside them (not fig4's DDPG)
        assert "| FetchPush-v4 | ddpg+her, one goal | 0, 1 | 0.60 (0.50 / 0.70) |" in table
        assert "| ddpg+her (fig4, many goals) | 0 | 0.90 | 0.55 | 0.90 |" in table
        assert "| ddpg |" not in table
    else:  # fig4's two runs are its future k=4 and none
        assert "| future k=8 | 0 | 1.00 | 0.75 | 1.00 |" in table and "ddpg" not in table
        assert "| future k=4 | 0 | 0.90 | 0.55 | 0.90 |" in table
        assert "| none | 0 | 0.00 | 0.00 | 0.00 |" in table
    assert paper.draw(figure).stat().st_size > 10_000
    page = (
        f"a\n<!-- paper compute -->\n<!-- /paper -->\nb\n"
        f"<!-- paper {figure} -->\nold\n<!-- /paper -->\nc"
    )
    filled = paper.fill_page(page)  # an empty part and a stale one, each filled in place
    assert filled == (
        f"a\n<!-- paper compute -->\n{paper.compute()}\n<!-- /paper -->\nb\n"
        f"<!-- paper {figure} -->\n{table}\n<!-- /paper -->\nc"
    )
    assert paper.compute().startswith("6 runs, 12,000 env steps, 0.0 h of wall time")
    assert paper.pace_of(360_000) == ": about 1.0 h at the recorded runs' 100 env steps/s"


def test_the_docs_page_holds_the_tables_of_the_records() -> None:
    """docs/paper.md's tables and compute line are what the records make (``--draw``
    writes them), so that the page cannot drift from the runs."""
    page = paper.common.source(paper.PAGE).read_text()  # a trial's copy or the record
    marked = paper.MARKED.findall(page)
    assert {what for _, what, _, _ in marked} == {"compute", "fig4", "fig5", "fig6", "fig7"}
    assert paper.fill_page(page) == page


@pytest.mark.slow("FetchPush episodes")
def test_the_chance_level_is_where_the_object_starts_at_its_goal() -> None:
    """A policy that never moves succeeds exactly where the object starts within the goal's
    threshold (the level of a run that learned nothing)."""
    gym = pytest.importorskip("gymnasium")
    pytest.importorskip("gymnasium_robotics")
    import numpy as np

    env = gym.make("FetchPush-v4")
    starts = [env.reset(seed=seed)[0] for seed in range(40)]
    at_goal = [np.linalg.norm(o["achieved_goal"] - o["desired_goal"]) < 0.05 for o in starts]
    assert paper.chance_level("FetchPush-v4", 40) == pytest.approx(np.mean(at_goal))
    goal = env.reset(seed=3)[0]["desired_goal"]  # --fixed-goal --seed 3
    at_goal = [np.linalg.norm(o["achieved_goal"] - goal) < 0.05 for o in starts]
    assert paper.chance_level("FetchPush-v4", 40, goal_seed=3) == pytest.approx(np.mean(at_goal))


@pytest.mark.slow("a FetchPush training run")
def test_a_one_goal_policy_is_judged_on_its_goal_and_on_the_tasks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--many-goals``: a one-goal run's policy in its own env (every episode the run's
    goal) and in the task's env (goals drawn afresh)."""
    pytest.importorskip("gymnasium_robotics")
    import numpy as np

    run = tmp_path / "one-goal"
    args = ["train", "FetchReach-v4", "--fixed-goal", "--steps", "100", "--n-envs", "1"]
    trained = herkit(*args, "--warmup-steps", "50", "--eval-every", "100", "--out", str(run))
    assert trained.returncode == 0, trained.stderr
    goals: dict[bool, list[np.ndarray]] = {}
    for own in (True, False):

        def first_goals(env: Any, act: Any, episodes: int, own: bool = own) -> float:
            goals[own] = [env.reset(seed=seed)[0]["desired_goal"] for seed in range(episodes)]
            act(env.reset(seed=0)[0])  # the policy acts on the env's observations
            return 0.5

        monkeypatch.setattr(paper, "success_of", first_goals)
        assert paper.policy_success(run, 4, own_goal=own) == 0.5
    assert all(np.array_equal(goal, goals[True][0]) for goal in goals[True])
    assert len({tuple(goal) for goal in goals[False]}) == 4
    seen: list[np.ndarray] = []

    def goals_of(env: Any, act: Any, episodes: int) -> float:
        seen.extend(env.reset(seed=seed)[0]["desired_goal"] for seed in range(episodes))
        return 0.25

    monkeypatch.setattr(paper, "success_of", goals_of)
    assert paper.policy_success(run, 3, own_goal=False, goal_seed=5) == 0.25
    goal_of_seed_5 = paper.fetch_env("FetchReach-v4").reset(seed=5)[0]["desired_goal"]
    assert all(np.array_equal(goal, goal_of_seed_5) for goal in seen) and len(seen) == 3


def test_goals_without_free_success_are_the_first_no_object_start_reaches(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Goals within the success distance of an object start are passed over unplayed; the
    others are played still, and kept where no episode succeeds."""
    import numpy as np

    goals = {0: (0.0, 0.0), 1: (1.0, 1.0), 2: (0.03, 0.0), 3: (2.0, 2.0), 4: (3.0, 3.0)}

    class Push:
        """Object starts at (0.01 * seed, 0); the goal of seed g is goals[g]."""

        unwrapped = type("Unwrapped", (), {"distance_threshold": 0.05})

        def reset(self, seed: int) -> tuple[dict[str, Any], dict[str, Any]]:
            start = np.array([0.01 * seed, 0.0])
            return {"achieved_goal": start, "desired_goal": np.array(goals[seed])}, {}

        def close(self) -> None:
            pass

    levels = {1: 0.0, 3: 0.01, 4: 0.0}  # seed 3's goal: the still episodes say otherwise
    asked: list[tuple[str, int, int | None]] = []

    def level_of(task: str, episodes: int, goal_seed: int | None = None) -> float:
        asked.append((task, episodes, goal_seed))
        return levels[goal_seed]

    monkeypatch.setattr(paper, "fetch_env", lambda task: Push())
    monkeypatch.setattr(paper, "chance_level", level_of)
    assert paper.goals_without_free_success("FetchPush-v4", 2, 3) == [1, 4]
    assert asked == [("FetchPush-v4", 3, goal) for goal in (1, 3, 4)]
    assert "the goal of seed 3: a still policy succeeds in 0.010" in capsys.readouterr().out
    fig5 = paper.settings_of("fig5")
    apart = [s for s in fig5 if "--goal-seed" in s.flags]
    assert len(apart) == 2 * len(paper.GOALS_WITHOUT_FREE_SUCCESS)
    for setting in apart:
        goal = setting.flags[setting.flags.index("--goal-seed") + 1]
        assert int(goal) in paper.GOALS_WITHOUT_FREE_SUCCESS and goal in setting.name


def test_success_is_the_share_of_episodes_that_end_in_success() -> None:
    class Coin:
        """Succeeds on even reset seeds, after 3 steps."""

        def reset(self, seed: int) -> tuple[dict, dict]:
            self.seed, self.t = seed, 0
            return {}, {}

        def step(self, action: Any) -> tuple[dict, float, bool, bool, dict]:
            self.t += 1
            return {}, 0.0, False, self.t == 3, {"is_success": self.seed % 2 == 0}

        def close(self) -> None:
            self.closed = True

    env = Coin()
    assert paper.success_of(env, lambda observation: 0, 5) == pytest.approx(3 / 5)
    assert env.closed
