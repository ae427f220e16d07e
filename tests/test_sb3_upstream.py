"""Stable-Baselines3's own HER tests, run through herkit.sb3 with only the import changed.

The test module is not part of this repository: it is taken, at test time, from the source
distribution on the package index of the stable-baselines3 release installed here
(``tests/test_her.py``), its ``HerReplayBuffer`` import is pointed at ``herkit.sb3``, and it
runs in a pytest of its own. The archive is kept in ``~/.cache/herkit`` (or
``$XDG_CACHE_HOME/herkit``) for the next run. Needs the package index the first time.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

pytest.importorskip("stable_baselines3", reason="install with: bash install.sh sb3")

SB3_IMPORT = re.compile(r"^from stable_baselines3 import (.*)\bHerReplayBuffer\b(.*)$", re.M)


def sb3_sdist(version: str) -> Path:
    """The source archive of stable-baselines3 ``version``, downloaded once."""
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "herkit"
    cache.mkdir(parents=True, exist_ok=True)
    found = sorted(cache.glob(f"stable_baselines3-{version}.tar.gz"))
    if found:
        return found[0]
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
               "--dest", str(cache), f"stable-baselines3=={version}"]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    found = sorted(cache.glob(f"stable_baselines3-{version}.tar.gz"))
    if done.returncode or not found:
        pytest.fail(
            f"could not download the source of stable-baselines3=={version} from the package "
            f"index (needed once, for SB3's own HER tests):\n{done.stdout}\n{done.stderr}"
        )
    return found[0]


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
    with tarfile.open(sb3_sdist(version)) as archive:
        member = archive.getmember(f"stable_baselines3-{version}/tests/test_her.py")
        file = archive.extractfile(member)
        assert file is not None
        source = file.read().decode()
    module = tmp_path / "test_her.py"
    module.write_text(with_herkit_import(source))
    assert "from herkit.sb3 import HerReplayBuffer" in module.read_text()
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-W",
               "ignore::DeprecationWarning", str(module)]  # fmt: skip
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=1800)
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    assert done.returncode == 0, f"SB3 {version}'s test_her.py: {summary}\n{done.stdout[-6000:]}"
    assert " passed" in summary and "failed" not in summary
