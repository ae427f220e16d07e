"""The code blocks of the README and the docs, extracted (not copied) so that the tests
run them as written.

``python tests/readme_blocks.py "The buffer in your own loop"`` prints the first Python
block of that README section (CI runs it in a fresh virtual environment with only the
wheel installed, torch absent).
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"

RUN_LANGUAGES = ("python", "bash")
"""Fences whose blocks the tests run (python) or check command by command (bash)."""
EXCERPT = re.compile(r"<!-- excerpt of (\S+) -->\n$")
"""A comment right before a block that quotes source code: checked against that file."""


@dataclass(frozen=True)
class Block:
    """One fenced code block of a page."""

    page: Path
    line: int
    """1-based line of the opening fence."""
    language: str
    code: str
    excerpt_of: str | None
    """The source file a quoted block is an excerpt of (``<!-- excerpt of PATH -->``)."""

    @property
    def name(self) -> str:
        """``page:line``, for test ids and messages."""
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def pages() -> list[Path]:
    """README and every Markdown page of the docs."""
    return [README, *sorted(DOCS.glob("*.md"))]


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of ``page`` in order (MyST directives such as ``{toctree}`` are
    not code and are left out)."""
    found = []
    text = page.read_text()
    for match in re.finditer(r"^```([^\s`]*)[^\n]*\n(.*?)^```\s*$", text, re.S | re.M):
        language = match.group(1)
        if language.startswith("{"):
            continue
        before = text[: match.start()]
        quoted = EXCERPT.search(before)
        found.append(
            Block(
                page,
                before.count("\n") + 1,
                language,
                match.group(2),
                quoted.group(1) if quoted else None,
            )
        )
    return found


def section(page: Path, title: str) -> str:
    """The text of ``page``'s ``## title`` section (before its subsections)."""
    parts = page.read_text().split(f"\n## {title}\n", 1)
    if len(parts) != 2:
        raise ValueError(f"{page.name} has no section {title!r}")
    return re.split(r"\n##+ ", parts[1], maxsplit=1)[0]


def python_blocks(title: str, page: Path = README) -> list[str]:
    """The Python blocks of ``page``'s ``## title`` section, in order."""
    return re.findall(r"^```python\n(.*?)^```", section(page, title), re.S | re.M)


def python_block(title: str, page: Path = README) -> str:
    """The one Python block of ``page``'s ``## title`` section."""
    found = python_blocks(title, page)
    if len(found) != 1:
        raise ValueError(f"{page.name} section {title!r} should hold one Python example")
    return found[0]


def commands(block: Block) -> list[list[str]]:
    """The commands of a bash block, one word list each: continuation lines joined,
    comments and blank lines dropped."""
    import shlex

    joined = re.sub(r"\\\n\s*", " ", block.code)
    return [
        shlex.split(line, comments=True)
        for line in joined.splitlines()
        if shlex.split(line, comments=True)
    ]


if __name__ == "__main__":
    print(python_blocks(sys.argv[1])[0], end="")
