"""herkit against stable-baselines3 (SB3): the same algorithms and settings, one machine.

    python benchmarks/sb3_compare.py                          # every part below (about an hour)
    python benchmarks/sb3_compare.py --only bitflip --seeds 0 1 2
    python benchmarks/sb3_compare.py --only fetchreach --seeds 0
    python benchmarks/sb3_compare.py --only updates
    python benchmarks/sb3_compare.py --only fetchpush-speed
    python benchmarks/sb3_compare.py --report-only            # docs/sb3.md from docs/sb3.json
    python benchmarks/sb3_compare.py buffer --tasks bitflip --seeds 0   # SB3 on herkit's buffer
    python benchmarks/sb3_compare.py tqc --minutes 20         # SB3 TQC with rl-zoo's FetchPush
    python benchmarks/sb3_compare.py zoo --record             # the SB3 guide's zoo line: speed
    python benchmarks/sb3_compare.py pointmaze                # PointMaze SAC+HER, both libraries
    python benchmarks/sb3_compare.py parking --seeds 0 1 2    # highway-env's parking-v0, both

Without a subcommand, the parts of docs/sb3.md (``--only``; method: that page), each run
in a fresh process (SB3's through the hidden ``--sb3-run`` and ``--updates-run`` workers)
on a quiet machine; writes sb3.json, sb3.md and figures/sb3_bitflip.png. Needs
stable-baselines3, gymnasium-robotics, sb3-contrib (TQC) and highway-env (parking).
"""

from __future__ import annotations

import argparse
from typing import Any

import common
import sb3_buffer
import sb3_one_env
import sb3_tqc
from sb3_buffer import BUFFER_TASKS, BUFFERS, DEFAULT_TASKS, VARIANTS, run_buffer
from sb3_one_env import ONE_ENV, run_one_env
from sb3_report import PARTS, run_compare
from sb3_tqc import run_tqc
from sb3_training import TASKS
from sb3_updates import REPEATS, UPDATES
from sb3_zoo import run_zoo

# The command line of every comparison with SB3; each comparison is a module of its own:
# sb3_report.py (the parts of docs/sb3.md: sb3_training.py and sb3_updates.py), sb3_buffer.py,
# sb3_tqc.py, sb3_zoo.py and sb3_one_env.py (pointmaze, parking); sb3_common.py their SB3 side.


def described(documented: Any) -> dict[str, Any]:
    """A subcommand's help: the docstring of ``documented`` (its module or function), laid
    out as written, its first line the summary."""
    doc = str(documented.__doc__)
    return {
        "help": doc.split("\n")[0],
        "description": doc,
        "formatter_class": argparse.RawDescriptionHelpFormatter,
    }


def main() -> None:
    """The command line (see the module's and the subcommands' docstrings)."""
    cli = common.parser(__doc__)
    cli.add_argument("--only", nargs="*", choices=PARTS, help="parts to run (default all)")
    cli.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    cli.add_argument("--out", default="runs/sb3_compare", help="where run directories go")
    cli.add_argument("--quiet-pattern", default="benchmarks/bitflip.py")
    cli.add_argument("--report-only", action="store_true", help="rewrite sb3.md from sb3.json")
    # the workers of the parts
    cli.add_argument("--sb3-run", choices=sorted(TASKS), help=argparse.SUPPRESS)
    cli.add_argument("--updates-run", choices=("herkit", "sb3"), help=argparse.SUPPRESS)
    cli.add_argument("--algo", help=argparse.SUPPRESS)
    cli.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    cli.add_argument("--threads", type=int, default=1, help=argparse.SUPPRESS)
    cli.add_argument("--buffer-size", type=int, default=1_000_000, help=argparse.SUPPRESS)
    cli.add_argument("--data", help=argparse.SUPPRESS)
    cli.add_argument("--steps", type=int, default=0, help=argparse.SUPPRESS)
    cli.add_argument("--eval-every", type=int, default=0, help=argparse.SUPPRESS)
    cli.add_argument("--updates", type=int, default=UPDATES, help=argparse.SUPPRESS)
    cli.add_argument("--repeats", type=int, default=REPEATS, help=argparse.SUPPRESS)
    cli.set_defaults(run=run_compare)
    commands = cli.add_subparsers(dest="command", metavar="{buffer,tqc,zoo,pointmaze,parking}")

    sub = commands.add_parser("buffer", **described(sb3_buffer))
    names = [*BUFFERS, *VARIANTS]
    sub.add_argument("--tasks", nargs="+", choices=tuple(BUFFER_TASKS), default=list(DEFAULT_TASKS))
    sub.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    sub.add_argument(
        "--buffers", nargs="+", default=list(BUFFERS), choices=names, help="run at once"
    )
    sub.add_argument("--table", action="store_true", help="print the tables, run nothing")
    sub.add_argument(
        "--paired",
        nargs=2,
        metavar=("FIRST", "SECOND"),
        choices=names,
        help="print two buffers' paired differences, run nothing",
    )
    sub.add_argument(
        "--rules",
        nargs="+",
        metavar="TASK",
        choices=tuple(BUFFER_TASKS),
        help="print each rule's paired difference against SB3's buffer on these tasks, run nothing",
    )
    sub.add_argument(
        "--same-data",
        action="store_true",
        help="feed both buffers the same random steps of each task's env and "
        "compare what they sample (sb3_buffer.json, same_data)",
    )
    sub.add_argument(
        "--worker", nargs=3, metavar=("TASK", "BUFFER", "SEED"), help=argparse.SUPPRESS
    )
    sub.set_defaults(run=run_buffer)

    sub = commands.add_parser("tqc", **described(sb3_tqc))
    sub.add_argument("--minutes", type=float, default=20.0, help="wall time of the SB3 run")
    sub.add_argument("--eval-every", type=int, default=250, help="env steps between evals")
    sub.add_argument("--seed", type=int, default=0, help="training seed")
    sub.add_argument("--table", action="store_true", help="only print the table")
    sub.set_defaults(run=run_tqc)

    sub = commands.add_parser("zoo", **described(run_zoo))
    sub.add_argument("--steps", type=int, default=2_000, help="env steps of the zoo line")
    sub.set_defaults(run=run_zoo)

    for name in ONE_ENV:
        sub = commands.add_parser(name, **described(sb3_one_env) | {"help": ONE_ENV[name].title})
        sub.add_argument("--seeds", type=int, nargs="+", default=[0])
        sub.add_argument("--steps", type=int, default=None, help="env steps of each run")
        sub.add_argument("--only", choices=("herkit", "sb3"), default=None)
        sub.add_argument("--algo", choices=("sac", "td3"), default="sac", help="herkit's")
        sub.add_argument("--table", action="store_true", help="print the budget table, run none")
        sub.set_defaults(run=run_one_env)
    options = cli.parse_args()
    options.run(options)


if __name__ == "__main__":
    main()
