"""A peer library's own test module, taken at test time from its source distribution on the
package index and run in a pytest of its own with one import pointed at herkit's facade.

No peer's code is part of this repository. Archives are kept in ``~/.cache/herkit`` (or
``$XDG_CACHE_HOME/herkit``) for the next run; the package index is needed the first time.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest


def sdist(project: str, version: str) -> Path:
    """The source archive of ``project==version``, downloaded once."""
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "herkit"
    cache.mkdir(parents=True, exist_ok=True)
    name = f"{re.sub(r'[-.]+', '_', project)}-{version}.tar.gz"
    if (cache / name).is_file():
        return cache / name
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--no-binary",
        ":all:",
        "--no-build-isolation",
        "--dest",
        str(cache),
        f"{project}=={version}",
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if done.returncode or not (cache / name).is_file():
        pytest.fail(
            f"could not download the source of {project}=={version} from the package index "
            f"(needed once, for its own tests):\n{done.stdout}\n{done.stderr}"
        )
    return cache / name


def peer_source(project: str, version: str, member: str) -> str:
    """The text of ``member`` (a path inside the archive's top folder) of the sdist."""
    archive_path = sdist(project, version)
    with tarfile.open(archive_path) as archive:
        top = archive_path.name.removesuffix(".tar.gz")
        file = archive.extractfile(archive.getmember(f"{top}/{member}"))
        assert file is not None
        return file.read().decode()


def run_pytest(module: Path, what: str) -> None:
    """Run ``module`` in a pytest of its own; fails with its summary and output tail."""
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-W",
        "ignore::DeprecationWarning",
        str(module),
    ]
    done = subprocess.run(command, cwd=module.parent, capture_output=True, text=True, timeout=1800)
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    assert done.returncode == 0, f"{what}: {summary}\n{done.stdout[-6000:]}"
    assert " passed" in summary and "failed" not in summary
