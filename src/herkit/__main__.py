"""``python -m herkit`` runs the command line (also what ``torchrun -m herkit`` starts);
:func:`main` is the ``herkit`` script. Without the ``train`` extra (the command line's
own dependencies) it says what to install in one line."""

import sys

from herkit.extras import needs_extra


def main() -> int:
    """Run the ``herkit`` command line; returns the exit code."""
    try:
        from herkit.cli import main as command_line
    except ModuleNotFoundError as error:
        print(f"herkit: error: {needs_extra(error, 'the herkit command')}", file=sys.stderr)
        return 2
    return command_line()


if __name__ == "__main__":
    sys.exit(main())
