"""A light core: what needs an extra says which one, in one line."""

from __future__ import annotations

import subprocess
import sys

import pytest

from herkit.buffer.batch import TORCH_MISSING
from herkit.extras import extra_of, needs_extra


@pytest.mark.parametrize(
    ("module", "extra"),
    [
        ("torch", "train"),
        ("tyro", "train"),
        ("torch.utils.tensorboard", "train"),
        ("matplotlib", "report"),
        ("plotly", "report"),
        ("PIL", "video"),
        ("imageio_ffmpeg", "video"),
        ("gymnasium_robotics", "robotics"),
        ("mujoco", "robotics"),
        ("stable_baselines3", "sb3"),
        ("ogbench", "offline"),
        ("numpy", None),
        ("no_such_module", None),
    ],
)
def test_each_optional_module_is_found_in_its_extra(module: str, extra: str | None) -> None:
    assert extra_of(module) == extra


def test_the_line_names_the_extra_or_the_package() -> None:
    missing = ModuleNotFoundError("No module named 'plotly'", name="plotly")
    assert needs_extra(missing, "herkit report") == (
        "herkit report needs plotly, from herkit's report extra: pip install 'herkit[report]'"
    )
    other = ModuleNotFoundError("No module named 'foo'", name="foo")
    assert needs_extra(other, "x") == "x needs the Python package 'foo', which is not installed"


def run_without(module: str, code: str) -> subprocess.CompletedProcess[str]:
    """``code`` in a fresh interpreter where ``module`` cannot be imported."""
    block = f"import sys\nsys.modules[{module!r}] = None\n"
    return subprocess.run([sys.executable, "-c", block + code], capture_output=True, text=True)


def test_the_command_without_the_train_extra_is_one_line() -> None:
    done = run_without(
        "tyro",
        "sys.argv = ['herkit', 'train']\nfrom herkit.__main__ import main\nsys.exit(main())",
    )
    assert done.returncode == 2
    assert done.stderr == (
        "herkit: error: the herkit command needs tyro, from herkit's train extra: "
        "pip install 'herkit[train]'\n"
    )


def test_a_report_without_the_report_extra_is_one_line(tmp_path: object) -> None:
    done = run_without(
        "plotly",
        "from herkit.cli import main\nsys.exit(main(['report', '.', '-o', 'x.html']))",
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "herkit: error: herkit report needs plotly, from herkit's report extra: "
        "pip install 'herkit[report]'"
    ]


def test_imports_that_need_an_extra_say_which() -> None:
    done = run_without("torch", "import herkit\nherkit.load_policy")
    assert "herkit.load_policy needs torch, from herkit's train extra" in done.stderr
    done = run_without("stable_baselines3", "import herkit.sb3")
    assert "herkit.sb3 needs stable_baselines3, from herkit's sb3 extra" in done.stderr
    done = run_without("torch", "import herkit\nfrom herkit import HerReplayBuffer\nprint('ok')")
    assert done.stdout == "ok\n", done.stderr  # the buffer itself needs no extra


@pytest.mark.parametrize(
    ("name", "missing"), [("train", "torch"), ("TrainConfig", "tyro"), ("config_for", "tyro")]
)
def test_the_training_api_is_imported_on_first_use(name: str, missing: str) -> None:
    done = run_without(missing, f"import herkit\nfrom herkit import {name}")
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == (
        f"ModuleNotFoundError: herkit.{name} needs {missing}, from herkit's train extra: "
        "pip install 'herkit[train]'"
    )
    light = run_without("torch", "import herkit\nprint(sorted(herkit.__all__))")
    assert light.returncode == 0 and "'train'" in light.stdout  # listed, not yet imported


def test_the_training_api_from_the_package_is_the_training_api() -> None:
    import herkit
    from herkit.config.run import config_for
    from herkit.config.train import TrainConfig
    from herkit.training.loop import train

    assert (herkit.train, herkit.TrainConfig, herkit.config_for) == (train, TrainConfig, config_for)
    assert set(herkit.__all__) >= {"train", "TrainConfig", "config_for", "load_policy"}
    with pytest.raises(AttributeError, match="module 'herkit' has no attribute 'trian'"):
        herkit.trian  # noqa: B018


def test_version_and_help_work_on_the_core_install() -> None:
    start = "sys.argv = ['herkit', {!r}]\nfrom herkit.__main__ import main\nsys.exit(main())"
    version = run_without("tyro", start.format("--version"))
    assert version.returncode == 0 and version.stdout.startswith("herkit ")
    shown = run_without("tyro", start.format("--help"))
    assert shown.returncode == 0, shown.stderr
    from herkit.commands import SUMMARIES

    assert all(f"  {name} " in shown.stdout for name in SUMMARIES)
    assert "herkit --version (or -V) prints the version." in shown.stdout
    assert shown.stdout.rstrip().endswith(
        "every command needs tyro, from herkit's train extra: pip install 'herkit[train]'"
    )
    assert len(shown.stdout.splitlines()) <= 24  # one screen


def test_the_commands_in_words_are_the_commands() -> None:
    from herkit.cli import COMMANDS
    from herkit.commands import SUMMARIES

    assert list(SUMMARIES) == ["train", *COMMANDS]


def test_batch_to_torch_without_torch_names_the_extra() -> None:
    done = run_without(
        "torch",
        "import numpy as np\nfrom herkit import Batch\n"
        "try:\n    Batch(*[np.zeros((2, 1))] * 8).to_torch()\n"
        "except ModuleNotFoundError as error:\n    print(error, error.name)",
    )
    assert done.stdout.strip() == (
        "Batch.to_torch needs torch, from herkit's train extra: pip install 'herkit[train]' torch"
    ), done.stderr
    missing = ModuleNotFoundError("No module named 'torch'", name="torch")
    assert TORCH_MISSING == needs_extra(missing, "Batch.to_torch")  # the buffer's own words


def test_a_mistyped_fetch_id_without_the_robotics_extra_says_it_is_unknown() -> None:
    done = run_without(
        "gymnasium_robotics",
        "from herkit.envs import make_goal_env\n"
        "for env_id in ('FetchPsh-v4', 'FetchPush-v4'):\n"
        "    try:\n        make_goal_env(env_id)\n"
        "    except ValueError as error:\n        print(error)",
    )
    mistyped, real = done.stdout.strip().splitlines()
    assert mistyped.startswith("unknown env id 'FetchPsh-v4' (did you mean FetchPush-v4?)")
    assert mistyped.endswith("need pip install 'herkit[robotics]'")
    assert real == (
        "'FetchPush-v4' needs gymnasium-robotics (and mujoco); install it with "
        "pip install 'herkit[robotics]'"
    )
