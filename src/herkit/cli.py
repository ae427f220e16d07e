"""The ``herkit`` command, generated from the config dataclasses with tyro.

Each subcommand is a function whose typed arguments (config dataclasses, flattened) are
its flags. Invalid values raise ValueError in the dataclasses' ``__post_init__``; they are
reported as one line on stderr with exit code 2, never as a traceback.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Annotated, Literal

import tyro

from herkit.bench import BufferBenchConfig, bench_buffer


def bench(
    what: tyro.conf.Positional[Literal["buffer"]],
    config: Annotated[BufferBenchConfig, tyro.conf.arg(name="")],
) -> None:
    """Speed benchmarks: `herkit bench buffer [--peers]` times adding and sampling."""
    if what == "buffer":
        bench_buffer(config)


COMMANDS = {"bench": bench}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``herkit`` command line; returns the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        tyro.extras.subcommand_cli_from_dict(COMMANDS, prog="herkit", args=args)
    except ValueError as error:
        print(f"herkit: error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
