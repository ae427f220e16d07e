"""``python -m herkit`` runs the command line (also what ``torchrun -m herkit`` starts);
:func:`main` is the ``herkit`` script. ``--version`` and ``--help`` work on the core
install; a command that needs the ``train`` extra (the command line's own dependencies)
says what to install in one line."""

import sys

from herkit import __version__
from herkit.commands import short_help
from herkit.extras import needs_extra


def main() -> int:
    """Run the ``herkit`` command line; returns the exit code."""
    args = sys.argv[1:]
    if args[:1] in (["--version"], ["-V"]):
        print(f"herkit {__version__}")
        return 0
    try:
        from herkit.cli import main as command_line
    except ModuleNotFoundError as error:
        if args[:1] in ([], ["-h"], ["--help"]):
            print(f"{short_help()}\n\n{needs_extra(error, 'every command')}")
            return 0
        print(f"herkit: error: {needs_extra(error, 'the herkit command')}", file=sys.stderr)
        return 2
    return command_line()


if __name__ == "__main__":
    sys.exit(main())
