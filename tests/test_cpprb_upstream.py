"""cpprb's own HER tests, run through herkit.cpprb with only the import changed.

The test module (``test/test_HER.py`` of cpprb's source distribution) is not part of this
repository: it is taken from the package index at test time (see :mod:`upstream`); cpprb
itself need not be installed.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from upstream import peer_source, run_pytest

CPPRB_VERSION = "11.0.0"
"""The cpprb release whose HER tests herkit.cpprb passes (its API is cpprb 10.x / 11.x)."""
CPPRB_IMPORT = "from cpprb import HindsightReplayBuffer\n"


@pytest.mark.slow("cpprb's own HER test suite, from the package index")
def test_cpprbs_own_her_tests_pass_through_herkit(tmp_path: Path) -> None:
    source = peer_source("cpprb", CPPRB_VERSION, "test/test_HER.py")
    assert source.count(CPPRB_IMPORT) == 1, "cpprb's test_HER.py imports its buffer otherwise"
    module = tmp_path / "test_HER.py"
    herkit_import = "from herkit.cpprb import HindsightReplayBuffer\n"
    module.write_text(source.replace(CPPRB_IMPORT, herkit_import))
    assert "import cpprb" not in module.read_text() and "from cpprb" not in module.read_text()
    run_pytest(module, f"cpprb {CPPRB_VERSION}'s test_HER.py")
