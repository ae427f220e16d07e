"""Your own env everywhere: a run records how to import its env, and ``herkit eval``,
``plot``, ``report``, ``--resume`` and ``load_policy`` make it from any folder, or say in
one line how to name it (``herkit eval --env``)."""

from __future__ import annotations

import json
import shutil
import sys
import textwrap
import types
from collections.abc import Iterator
from pathlib import Path

import gymnasium as gym
import pytest

import herkit
from herkit.cli import main
from herkit.rundir.paths import RunPaths
from herkit.training.loop import train
from runs import QUICK, quiet
from runs import herkit as herkit_cli

POINT_ENV = textwrap.dedent(
    '''
    """A point on a line steps left or right to a goal: reward 0 within 0.15 of it."""

    import gymnasium as gym
    import numpy as np
    from gymnasium import spaces


    class Point1D(gym.Env):
        def __init__(self):
            box = spaces.Box(-1.0, 1.0, (1,), np.float32)
            self.observation_space = spaces.Dict(
                {"observation": box, "achieved_goal": box, "desired_goal": box}
            )
            self.action_space = spaces.Discrete(2)

        def compute_reward(self, achieved_goal, desired_goal, info):
            distance = np.abs(achieved_goal - desired_goal).sum(axis=-1)
            return -(distance > 0.15).astype(np.float32)

        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            self.position = self.np_random.uniform(-1, 1, 1).astype(np.float32)
            self.goal = self.np_random.uniform(-1, 1, 1).astype(np.float32)
            return self._obs(), {}

        def step(self, action):
            move = 0.2 if action == 1 else -0.2
            self.position = np.clip(self.position + move, -1, 1).astype(np.float32)
            reward = float(self.compute_reward(self.position, self.goal, {}))
            return self._obs(), reward, False, False, {"is_success": reward == 0.0}

        def _obs(self):
            return {"observation": self.position.copy(),
                    "achieved_goal": self.position.copy(), "desired_goal": self.goal.copy()}


    gym.register("Point1D-v0", entry_point=Point1D, max_episode_steps=10)
    '''
)
"""A tiny GoalEnv module that registers ``Point1D-v0`` when imported."""

SHORT = dict(
    algo="dqn", steps=64, warmup_steps=32, eval_every=64, eval_episodes=1, n_envs=1, env_workers=0
)
"""A run of a few steps: enough for a checkpoint."""


def write_env_module(folder: Path, name: str) -> Path:
    """``folder/name.py``: :data:`POINT_ENV`."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.py"
    path.write_text(POINT_ENV)
    return path


def forget(name: str, folder: Path) -> None:
    """This process as one that never imported the module ``name`` from ``folder``."""
    sys.modules.pop(name, None)
    while str(folder) in sys.path:
        sys.path.remove(str(folder))
    gym.registry.pop("Point1D-v0", None)


@pytest.fixture(autouse=True)
def no_point_env_left() -> Iterator[None]:
    """Each test starts and ends with no ``Point1D-v0`` registered."""
    gym.registry.pop("Point1D-v0", None)
    yield
    gym.registry.pop("Point1D-v0", None)


@pytest.fixture(scope="module")
def module_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run of ``point_anywhere:Point1D-v0``, trained with the module's folder on
    ``sys.path``; this process then forgets the module and the folder."""
    envs = tmp_path_factory.mktemp("envs")
    run = tmp_path_factory.mktemp("runs") / "run"
    write_env_module(envs, "point_anywhere")
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(envs))
        train(quiet(env_id="point_anywhere:Point1D-v0", out=str(run), **SHORT))
    forget("point_anywhere", envs)
    return run


def test_a_run_records_the_folder_of_its_env_module(module_run: Path) -> None:
    recorded = json.loads(RunPaths(module_run).config.read_text())["env_import"]
    assert recorded["module"] == "point_anywhere"
    assert (Path(recorded["path"]) / "point_anywhere.py").is_file()


def test_a_run_of_a_module_env_is_loaded_and_evaluated_from_another_folder(
    module_run: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    folder = Path(json.loads(RunPaths(module_run).config.read_text())["env_import"]["path"])
    try:
        policy = herkit.load_policy(module_run)
        assert policy.env_id == "point_anywhere:Point1D-v0"
        forget("point_anywhere", folder)
        assert main(["eval", str(module_run), "--episodes", "2", "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["episodes"] == 2
    finally:
        forget("point_anywhere", folder)


def test_a_run_of_a_module_env_is_plotted_and_reported_from_another_folder(
    module_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["plot", str(module_run), "-o", "curves.png"]) == 0
    assert main(["report", str(module_run), "-o", "report.html"]) == 0
    assert (tmp_path / "curves.png").stat().st_size and (tmp_path / "report.html").stat().st_size


def test_a_module_that_moved_is_said_in_one_line_with_where_it_was(
    module_run: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    run = tmp_path / "run"
    shutil.copytree(module_run, run)
    values = json.loads(RunPaths(run).config.read_text())
    moved = tmp_path / "moved"  # the folder the module was imported from, gone since
    values["env_import"]["path"] = str(moved)
    RunPaths(run).config.write_text(json.dumps(values))
    monkeypatch.chdir(tmp_path)
    assert main(["eval", str(run), "--episodes", "1"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "importing module 'point_anywhere' failed" in lines[0], lines
    assert str(moved) in lines[0] and "PYTHONPATH" in lines[0] and "--env" in lines[0]


def test_an_id_registered_by_the_training_script_gets_advice_and_env_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    envs, elsewhere, run = tmp_path / "envs", tmp_path / "elsewhere", tmp_path / "run"
    write_env_module(envs, "point_script")
    elsewhere.mkdir()
    script = envs / "train_fixed.py"  # the script that trains: it registers the id itself
    monkeypatch.setitem(sys.modules, "__main__", types.ModuleType("__main__"))
    monkeypatch.setattr(sys.modules["__main__"], "__file__", str(script), raising=False)
    monkeypatch.syspath_prepend(str(envs))
    import point_script  # type: ignore[import-not-found]

    gym.register("Point1DFixed-v0", entry_point=point_script.Point1D, max_episode_steps=10)
    try:
        train(quiet(env_id="Point1DFixed-v0", out=str(run), **SHORT))
    finally:
        gym.registry.pop("Point1DFixed-v0", None)
        forget("point_script", envs)
    assert json.loads(RunPaths(run).config.read_text())["env_import"] == {"script": str(script)}
    monkeypatch.chdir(elsewhere)
    capsys.readouterr()  # the training's lines
    assert main(["eval", str(run), "--episodes", "1"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "'Point1DFixed-v0' is not registered here" in lines[0], lines
    assert str(script) in lines[0] and "--env MODULE:ID" in lines[0]
    with pytest.raises(ValueError, match="env_id='MODULE:ID'"):
        herkit.load_policy(run)
    # the module beside the training script is found from here too
    assert main(["eval", str(run), "--episodes", "2", "--env", "point_script:Point1D-v0"]) == 0
    assert "point_script:Point1D-v0 dqn" in capsys.readouterr().out
    forget("point_script", envs)
    assert main(["eval", str(run), "--episodes", "1", "--env", "nowhere_module:Point1D-v0"]) == 2
    assert "importing module 'nowhere_module' failed" in capsys.readouterr().err
    assert main(["eval", str(run), "--episodes", "1", "--env", "herkit/GridWorld-v0"]) == 2
    assert "does not fit 'herkit/GridWorld-v0'" in capsys.readouterr().err  # other sizes


@pytest.mark.slow("training runs and evaluations in subprocesses")
def test_the_commands_find_a_module_env_trained_from_the_command_line(tmp_path: Path) -> None:
    """As a user types them: ``herkit train module:Id`` in the env's folder, then ``herkit
    eval`` and ``herkit train --resume`` from another folder."""
    envs, elsewhere, run = tmp_path / "envs", tmp_path / "elsewhere", tmp_path / "run"
    write_env_module(envs, "point_cli")
    elsewhere.mkdir()
    short = ["--steps", "64", "--warmup-steps", "32", "--eval-every", "64", "--n-envs", "1"]
    trained = herkit_cli(
        "train", "point_cli:Point1D-v0", *short, *QUICK, "--out", str(run), cwd=envs
    )
    assert trained.returncode == 0, trained.stderr
    evaluated = herkit_cli("eval", str(run), "--episodes", "2", cwd=elsewhere)
    assert evaluated.returncode == 0, evaluated.stderr
    resumed = herkit_cli("train", "--resume", str(run), "--steps", "96", *QUICK, cwd=elsewhere)
    assert resumed.returncode == 0, resumed.stderr
