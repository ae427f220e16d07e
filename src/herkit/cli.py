"""The ``herkit`` command and its subcommands, generated from the config dataclasses with
tyro.

Subcommands: ``train`` (flags from :class:`herkit.config.train.TrainConfig`, defaults from the
env's preset, read by :func:`herkit.flags.train.train_command`), ``eval``, ``plot``, ``report``
and ``bench`` (their words, which need no tyro, are :mod:`herkit.commands`'). Invalid
values raise ValueError (in the dataclasses' ``__post_init__``, when an env or checkpoint is
opened, or when tyro refuses a flag: its usage errors become one-line ValueErrors, with
suggestions for mistyped or foreign flag names, ``--learning-rate`` -> ``--dqn.lr``, and
flags that moved elsewhere); they are reported as one line on stderr with exit code 2,
never as a traceback (how the flags are read and worded: :mod:`herkit.flags`).
"""

from __future__ import annotations

import difflib
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import Annotated, Any, Literal, Union

import tyro

from herkit import __version__
from herkit.bench import BufferBenchConfig, UpdateBenchConfig, bench_buffer
from herkit.commands import SUMMARIES, TAGLINE
from herkit.envs.failures import EnvFailure
from herkit.extras import needs_extra
from herkit.flags import parse, speaking
from herkit.flags.train import train_command
from herkit.rundir.paths import RunPaths
from herkit.runtime.failures import EXIT_CODES, DistributedError, RunFailed


def bench(
    config: Annotated[
        Annotated[BufferBenchConfig, tyro.conf.subcommand("buffer")]
        | Annotated[UpdateBenchConfig, tyro.conf.subcommand("update")],
        tyro.conf.arg(name=""),
    ],
) -> None:
    """Speed benchmarks: `herkit bench buffer` times adding to and sampling herkit's buffer,
    `herkit bench update` the learner's sample + update per algorithm, size, batch,
    precision and update mode."""
    if isinstance(config, BufferBenchConfig):
        bench_buffer(config)
    else:
        from herkit.bench.update import bench_update  # torch: the train extra

        bench_update(config)


def evaluate_run(
    run_dir: Annotated[tyro.conf.Positional[str], tyro.conf.arg(metavar="RUN_DIR")],
    episodes: int | None = None,
    json_out: Annotated[bool, tyro.conf.arg(name="json")] = False,
    seed: int = 12345,
    stochastic: bool = False,
    video: str | None = None,
    device: str = "cpu",
    env: str | None = None,
) -> None:
    """Success rate, mean return and episode length of a run's checkpointed policy.

    Args:
        run_dir: run directory written by `herkit train`.
        episodes: evaluation episodes (default 100; 5 with --video); of each of the env's
            evaluation tasks where it declares them (OGBench's five).
        json_out: print one JSON object instead of text.
        seed: seed of the evaluation's episodes (the same seed, the same episodes).
        stochastic: sample actions as in training (default: deterministic policy).
        video: also write the episodes, one after another, to this .mp4 or .gif file.
        device: torch device of the policy (cpu, cuda).
        env: the env to evaluate on, instead of the run's: an id, or MODULE:ID (MODULE is
            imported first, from here), e.g. where the run's id was registered by the script
            that trained it.
    """
    from herkit.training.evaluation import evaluate_run as run_evaluation

    if episodes is None:
        episodes = 5 if video is not None else 100
    result = run_evaluation(
        run_dir,
        episodes,
        seed,
        deterministic=not stochastic,
        video=video,
        device=device,
        env_id=env,
    )
    if json_out:
        print(json.dumps(result))
        return
    for line in eval_lines(result):
        print(line)
    if "video" in result:
        print(f"video: {result['video']} ({result['frames']} frames)")


def eval_lines(result: dict[str, Any]) -> list[str]:
    """The text of ``herkit eval``'s ``result``: which checkpoint, the success rate (the
    mean over the tasks, each task's on its own line where the env has several), mean
    return and length, and the episodes played."""
    mode = "deterministic" if result["deterministic"] else "stochastic"
    if result.get("dataset"):
        where = f"{result['updates']:,} gradient steps on the dataset"
        if result["env_steps"]:
            where += f" and {result['env_steps']:,} env steps"
    else:
        where = f"{result['env_steps']:,} env steps"
    tasks = result.get("tasks", [])
    each = result.get("episodes_per_task", result["episodes"])
    played = f"{each} episode{'s' * (each != 1)}"
    if tasks:
        played += f" of each of {len(tasks)} tasks ({result['episodes']})"
    rate = "success rate" + (" (mean over the tasks)" if tasks else "")
    lines = [
        f"{result['env_id']} {result['algo']} ({mode}, checkpoint at {where}): {rate} "
        f"{result['success_rate']:.3f}, mean return {result['mean_return']:.2f}, mean length "
        f"{result['mean_length']:.1f} over {played}"
    ]
    lines += [f"  task {i}: success rate {rate_i:.3f}" for i, rate_i in enumerate(tasks, 1)]
    return lines


def plot(
    run_dirs: Annotated[tyro.conf.Positional[tuple[str, ...]], tyro.conf.arg(metavar="RUN_DIR...")],
    output: Annotated[str, tyro.conf.arg(aliases=("-o",))] = "curves.png",
    x: Literal["env_steps", "wall_s", "updates"] = "env_steps",
    smooth: int = 1,
    band: Literal["minmax", "sem"] = "minmax",
    title: str | None = None,
    json_out: Annotated[str | None, tyro.conf.arg(name="json")] = None,
) -> None:
    """Plot success rate and losses from runs' progress.csv; seeds of a setting as one line.

    Runs whose config.json differ only in the seed (and in settings that do not change
    learning: out, steps, eval/checkpoint cadence, device...) are one group: the mean over
    its seeds with a shaded band, on the union of the seeds' x values where all have data.

    Args:
        run_dirs: one or more run directories.
        output: PNG file to write.
        x: x axis: env_steps, wall_s (wall-clock seconds of training), or updates
            (gradient steps: for runs trained offline).
        smooth: moving average over this many evaluation points per seed (1: none).
        band: shaded band: minmax (min to max over seeds) or sem (mean +- standard error).
        title: figure title; default: the env id(s).
        json_out: also write the aggregated numbers (per group and metric) to this file.
    """
    from herkit.presentation.plots import plot_runs

    if not run_dirs:
        raise ValueError("herkit plot needs at least one run directory: herkit plot RUN... -o FILE")
    if smooth < 1:
        raise ValueError(f"--smooth must be >= 1 (1: no smoothing), got {smooth}")
    print(plot_runs(run_dirs, output, title, x=x, smooth=smooth, band=band, json_out=json_out))
    if json_out is not None:
        print(json_out)


def report(
    run_dirs: Annotated[tyro.conf.Positional[tuple[str, ...]], tyro.conf.arg(metavar="RUN_DIR...")],
    output: Annotated[str, tyro.conf.arg(aliases=("-o",))] = "report.html",
) -> None:
    """Write an interactive HTML report of runs: one file that opens offline in a browser.

    It shows the evaluation success rate against env steps and wall-clock time (seeds of a
    setting as one line, as herkit plot groups them), each run's training episodes (return,
    success, distance to the goal), its learner's losses and Q values, and its settings.

    Args:
        run_dirs: one or more run directories.
        output: HTML file to write.
    """
    from herkit.presentation.report import write_report

    if not run_dirs:
        raise ValueError(
            "herkit report needs at least one run directory: herkit report RUN... -o FILE"
        )
    print(write_report(run_dirs, output))


def _train_main(args: list[str]) -> None:
    config, resume = train_command(args)
    from herkit.training.loop import train  # torch: only once the flags are read and checked

    summary = train(config, resume=resume)
    if os.environ.get("RANK", "0") == "0":  # torchrun: one summary, from rank 0
        print(json.dumps(summary), flush=True)
        offline = summary.get("dataset") is not None and not summary["env_steps"]
        at = (
            f"{summary['updates']:,} gradient steps"
            if offline
            else f"{summary['env_steps']:,} env steps"
        )
        run = RunPaths(summary["run_dir"])
        if offline:
            on = (
                f"herkit train --resume {run.root} --offline-steps {2 * summary['updates']} "
                "(train twice as long on the dataset) or --steps 100000 (go on online in the env)"
            )
        else:
            steps = 2 * summary["env_steps"]
            on = f"herkit train --resume {run.root} --steps {steps} (train twice as long)"
        last = len(summary.get("success_rate_last3_at", ()))
        if last > 1:  # OGBench's figure
            at += f" (the last {last} evaluations' mean: {summary['success_rate_last3']:.2f})"
        print(
            f"herkit: done: success rate {summary['success_rate']:.2f} at {at}; run "
            f"directory {run.root}\n"
            f"herkit: report: {run.report} (open it in a browser); curve: {run.curve}\n"
            f"herkit: next: herkit eval {run.root} --video {run.root / 'policy.mp4'} (watch "
            f"the policy), or {on}",
            file=sys.stderr,
        )


def _train_main_safe(args: list[str]) -> int:
    """``herkit train``: exit code 130 with the resume command after a Ctrl-C."""
    from herkit.runtime.failures import Interrupted

    try:
        _train_main(args)
    except Interrupted as stop:
        if os.environ.get("RANK", "0") == "0":
            world = int(os.environ.get("WORLD_SIZE", "1"))
            launch = f"torchrun --nproc-per-node {world} -m herkit" if world > 1 else "herkit"
            print(
                f"herkit: interrupted at {stop.at}, checkpoint written; "
                f"continue with: {launch} train --resume {stop.run_dir}",
                file=sys.stderr,
            )
        return EXIT_CODES["interrupted"]
    return 0


COMMANDS: dict[str, Callable[..., None]] = {
    "eval": evaluate_run,
    "plot": plot,
    "report": report,
    "bench": bench,
}
"""The subcommands besides ``train`` (which has its own parser), by name."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``herkit`` command line; returns the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # as `python -m` does: `module:Env-v0` from here
    try:
        if args[:1] in (["--version"], ["-V"]):
            print(f"herkit {__version__}")
        elif args[:1] == ["train"]:
            return _train_main_safe(args[1:])
        elif args and not args[0].startswith("-") and args[0] not in SUMMARIES:
            close = difflib.get_close_matches(args[0], list(SUMMARIES), n=1, cutoff=0.6)
            hint = f" (did you mean herkit {close[0]}?)" if close else ""
            raise ValueError(
                f"unknown command {args[0]!r}{hint}; the commands are {', '.join(SUMMARIES)}"
            )
        else:
            commands: dict[str, Callable[..., Any]] = {"train": _train_help, **COMMANDS}
            parse(
                tyro.cli,
                _top_level(commands),
                args=args,
                prog="herkit",
                description=f"herkit {__version__}: {TAGLINE}",
            )
    except (ValueError, RunFailed) as error:
        print(f"herkit: error: {error}", file=sys.stderr)
        return error.exit_code if isinstance(error, RunFailed) else 2
    except EnvFailure as error:  # herkit eval's envs: the env's traceback, then one line
        print(f"{error.details}\nherkit: error: {error}", file=sys.stderr)
        return EXIT_CODES["env failed"]
    except OSError as error:  # e.g. herkit plot -o on a full disk: the file and the cause
        print(
            f"herkit: error: {error.filename or 'a file'}: {error.strerror or error}",
            file=sys.stderr,
        )
        return EXIT_CODES["write failed"]
    except DistributedError as error:
        print(f"herkit: error: {error}", file=sys.stderr)
        if "RANK" in os.environ:  # a launched rank: skip the interpreter's teardown, where
            sys.stdout.flush()  # gloo's threads of a broken connection can abort (SIGABRT)
            sys.stderr.flush()
            os._exit(1)
        return 1
    except ModuleNotFoundError as error:  # an extra not installed: what to install
        print(f"herkit: error: {needs_extra(error, f'herkit {args[0]}')}", file=sys.stderr)
        return EXIT_CODES["bad input"]
    except KeyboardInterrupt:
        print("herkit: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `herkit train --help | head`: the reader left early
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no error at exit
        return 1
    return 0


def _top_level(commands: dict[str, Callable[..., Any]]) -> Callable[..., None]:
    """What tyro parses as ``herkit ...``: one of ``commands`` and ``-V/--version``
    (which :func:`main` answers before any parsing; here so that ``--help`` lists it)."""
    chosen = Union[  # type: ignore[valid-type]  # noqa: UP007 (a Union built at run time)
        tuple(
            Annotated[Any, tyro.conf.subcommand(name, constructor=speaking(command))]
            for name, command in commands.items()
        )
    ]

    def herkit(command: Any, version: bool = False) -> None:
        """The ``herkit`` command line."""

    herkit.__annotations__ = {
        "command": Annotated[chosen, tyro.conf.arg(name="")],
        "version": Annotated[
            bool,
            tyro.conf.FlagCreatePairsOff,
            tyro.conf.arg(
                aliases=("-V",), help="print herkit's version and exit", help_behavior_hint=""
            ),
        ],
        "return": None,
    }
    return herkit


def _train_help() -> None:
    """Train an agent with HER on a goal env (`herkit train --help` lists the flags)."""


if __name__ == "__main__":
    sys.exit(main())
