"""``python -m herkit`` runs the command line (also what ``torchrun -m herkit`` starts)."""

import sys

from herkit.cli import main

sys.exit(main())
