"""The test and documentation tools at tested versions: constraints.txt, checked and refreshed.

    python .ci/tools.py check     # every dev/docs tool pinned, and installed at its pin
    python .ci/tools.py refresh   # write the newest releases into constraints.txt

``install.sh`` installs with ``-c constraints.txt``; CI runs ``check`` after it. ``refresh``
is the deliberate way to move the tools: it rewrites the pins from the package index and
prints what moved; the suite and the site's build are then run with them before the file is
committed (constraints.txt's header says how).
"""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parent.parent
CONSTRAINTS = ROOT / "constraints.txt"
PINNED_EXTRAS = ("dev", "docs")
"""The extras whose every package must be pinned (the tools, not the library's needs)."""
CI_TOOLS = ("build", "twine")
"""Tools CI installs itself, to build and check the wheel."""


def canonical(name: str) -> str:
    """A distribution name as pip compares it."""
    return re.sub(r"[-_.]+", "-", name).lower()


def pins(text: str | None = None) -> dict[str, str]:
    """The ``name==version`` lines of constraints.txt, by canonical name."""
    found = {}
    for line in (CONSTRAINTS.read_text() if text is None else text).splitlines():
        line = line.split("#")[0].strip()
        if not line:
            continue
        name, sep, version = line.partition("==")
        if not sep or not version.strip():
            raise ValueError(f"constraints.txt: {line!r} is not NAME==VERSION")
        found[canonical(name.strip())] = version.strip()
    return found


def tools() -> list[str]:
    """The packages that must be pinned: those of :data:`PINNED_EXTRAS` and :data:`CI_TOOLS`."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    names = [
        re.split(r"[\s;<>=!~\[]", item, maxsplit=1)[0]
        for extra in PINNED_EXTRAS
        for item in extras[extra]
    ]
    return sorted({canonical(name) for name in [*names, *CI_TOOLS]})


def problems(installed: bool = True) -> list[str]:
    """What is wrong: a tool not pinned, a pin of no tool, and (``installed``) a tool
    installed at another version than its pin."""
    pinned, wanted = pins(), tools()
    found = [f"{name} is not pinned in constraints.txt" for name in wanted if name not in pinned]
    found += [
        f"constraints.txt pins {name}, which no tool needs" for name in pinned if name not in wanted
    ]
    if installed:
        for name, version in pinned.items():
            try:
                have = importlib.metadata.version(name)
            except importlib.metadata.PackageNotFoundError:
                continue
            if have != version:
                found.append(f"{name} {have} is installed, constraints.txt pins {version}")
    return found


def newest(name: str) -> str:
    """The newest release of ``name`` on the package index (pip's own answer)."""
    done = subprocess.run(
        [sys.executable, "-m", "pip", "index", "versions", name],
        capture_output=True,
        text=True,
        check=True,
    )
    match = re.search(r"\(([^)]+)\)", done.stdout.splitlines()[0])
    if match is None:
        raise ValueError(f"pip index versions {name}: no version in {done.stdout!r}")
    return match.group(1)


def refresh() -> None:
    """Rewrite the pins of constraints.txt with the newest releases; say what moved."""
    text = CONSTRAINTS.read_text()
    for name, version in pins(text).items():
        latest = newest(name)
        if latest != version:
            print(f"{name}: {version} -> {latest}")
            text = re.sub(
                rf"(?im)^{re.escape(name).replace('-', '[-_.]')}==\S+", f"{name}=={latest}", text
            )
    CONSTRAINTS.write_text(text)


def main() -> int:
    command = sys.argv[1] if len(sys.argv) > 1 else "check"
    if command == "refresh":
        refresh()
        return 0
    if command != "check":
        print(f"usage: python .ci/tools.py check|refresh (got {command!r})", file=sys.stderr)
        return 2
    found = problems()
    for problem in found:
        print(f"tools: {problem}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
