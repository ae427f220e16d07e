"""Sphinx configuration of herkit's documentation site (furo theme, MyST Markdown pages).

Build: ``python -m sphinx -W -b html docs docs/_build/html`` (warnings are errors).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

import herkit  # noqa: E402

project = "herkit"
author = "the herkit authors"
copyright = "2026, the herkit authors"  # noqa: A001
release = version = herkit.__version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
]
source_suffix = {".md": "markdown"}
exclude_patterns = ["_build", "figures/*.json"]
myst_heading_anchors = 3
html_theme = "furo"
html_title = f"herkit {release}"
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "show-inheritance": True}
# The API pages import modules that need the train and sb3 extras; mocked, the site builds
# from `pip install -e '.[docs]'` alone, the same with the extras installed or not.
autodoc_mock_imports = ["torch", "tyro", "rich", "tensorboard", "stable_baselines3"]
