"""The Python examples of the README and the docs' guides, extracted (not copied) so that
they run as written.

``python tests/readme_blocks.py "The buffer"`` prints the Python block of that README
section (CI runs it in a fresh virtual environment with only the wheel installed).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"


def python_block(section: str, page: Path = README) -> str:
    """The one Python block of ``page``'s ``## section`` (before its subsections)."""
    text = page.read_text().split(f"\n## {section}\n", 1)[1]
    text = re.split(r"\n##+ ", text, maxsplit=1)[0]
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    if len(blocks) != 1:
        raise ValueError(f"{page.name} section {section!r} should hold one Python example")
    return blocks[0]


if __name__ == "__main__":
    print(python_block(sys.argv[1]), end="")
