"""Stable-Baselines3's own HER tests, run through herkit.sb3 with only the import changed.

The test module is not part of this repository: it is taken, at test time, from the source
distribution on the package index of the stable-baselines3 release installed here
(``tests/test_her.py``, see :mod:`upstream`), its ``HerReplayBuffer`` import is pointed at
``herkit.sb3``, and it runs in a pytest of its own.
"""

from __future__ import annotations

import importlib.metadata
import re
from pathlib import Path

import pytest
from upstream import peer_source, run_pytest

pytest.importorskip("stable_baselines3", reason="install with: bash install.sh sb3")

SB3_IMPORT = re.compile(r"^from stable_baselines3 import (.*)\bHerReplayBuffer\b(.*)$", re.M)


def with_herkit_import(source: str) -> str:
    """SB3's test module with ``HerReplayBuffer`` imported from herkit.sb3 instead."""
    match = SB3_IMPORT.search(source)
    assert match, "SB3's test_her.py no longer imports HerReplayBuffer from stable_baselines3"
    names = [n.strip() for n in (match[1] + match[2]).split(",") if n.strip()]
    replacement = f"from stable_baselines3 import {', '.join(names)}\n" if names else ""
    replacement += "from herkit.sb3 import HerReplayBuffer"
    return source[: match.start()] + replacement + source[match.end() :]


@pytest.mark.slow("SB3's own HER test suite")
def test_sb3s_own_her_tests_pass_through_herkit(tmp_path: Path) -> None:
    version = importlib.metadata.version("stable-baselines3")
    source = peer_source("stable-baselines3", version, "tests/test_her.py")
    module = tmp_path / "test_her.py"
    module.write_text(with_herkit_import(source))
    assert "from herkit.sb3 import HerReplayBuffer" in module.read_text()
    run_pytest(module, f"SB3 {version}'s test_her.py")
