"""A light core: what needs an extra says which one, in one line."""

from __future__ import annotations

import subprocess
import sys

import pytest

from herkit.extras import extra_of, needs_extra


@pytest.mark.parametrize(
    ("module", "extra"),
    [("torch", "train"), ("tyro", "train"), ("torch.utils.tensorboard", "train"),
     ("matplotlib", "report"), ("plotly", "report"), ("PIL", "video"),
     ("imageio_ffmpeg", "video"), ("gymnasium_robotics", "robotics"), ("mujoco", "robotics"),
     ("stable_baselines3", "sb3"), ("numpy", None), ("no_such_module", None)],
)  # fmt: skip
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
