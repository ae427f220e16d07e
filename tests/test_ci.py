"""What CI runs is what a new user meets: README's install line and test command, the test
tools at the versions of constraints.txt, and each extra alone (.ci/extras.py)."""

from __future__ import annotations

import runpy
from pathlib import Path
from typing import Any

from readme_blocks import README, ROOT, blocks, commands

CI = ROOT / ".ci"


def ci_module(name: str) -> dict[str, Any]:
    return runpy.run_path(str(CI / f"{name}.py"), run_name=f"ci_{name}")


def test_every_test_and_docs_tool_is_pinned_and_only_those() -> None:
    tools = ci_module("tools")
    assert tools["problems"](installed=False) == []
    assert {"pytest", "hypothesis", "ruff", "mypy", "sphinx"} <= set(tools["pins"]())


def test_a_bad_constraints_line_is_named() -> None:
    tools = ci_module("tools")
    try:
        tools["pins"]("pytest>=9\n")
    except ValueError as error:
        assert "'pytest>=9' is not NAME==VERSION" in str(error)
    else:
        raise AssertionError("a range in constraints.txt was accepted")


def test_install_sh_installs_with_the_constraints() -> None:
    assert '-c constraints.txt -e ".[$extras]"' in (ROOT / "install.sh").read_text()


def test_ci_runs_readmes_install_and_test_lines_as_written() -> None:
    """The README's two first commands, word for word, are CI's (no extra extra)."""
    first = blocks(README)[0]
    install_and_run, install_and_test = (" ".join(words) for words in commands(first)[:2])
    script = (CI / "run").read_text()
    install, test = install_and_test.split(" && ")
    assert f"\n{install}\n" in script and f"\n{test}\n" in script
    venv = "python3 -m venv .venv && . .venv/bin/activate && "  # CI's clone is its own
    assert install_and_run.removeprefix(venv) == "bash install.sh && herkit train"
    assert "&& herkit train)" in script  # the main job, as written, in a fresh folder
    assert "\npython .ci/tools.py check\n" in script and "\npython .ci/extras.py\n" in script


def test_every_extra_has_its_own_check() -> None:
    extras = ci_module("extras")
    assert set(extras["CHECKS"]) == {"core", *extras["extras"]()}
    assert all(commands for _, commands in extras["CHECKS"].values())


def test_the_readme_examples_that_ci_runs_alone_are_the_readmes(tmp_path: Path) -> None:
    files = ci_module("extras")["FILES"]
    assert "HerReplayBuffer.from_env(env" in files["quickstart.py"]
    assert "replay_buffer_class=HerReplayBuffer" in files["sb3_example.py"]
