"""The ``herkit`` command, generated from the config dataclasses with tyro.

Subcommands: ``train`` (flags from :class:`herkit.config.TrainConfig`, defaults from the
env's preset), ``eval``, ``plot`` and ``bench``. Invalid values raise ValueError (in the
dataclasses' ``__post_init__`` or when an env or checkpoint is opened); they are reported
as one line on stderr with exit code 2, never as a traceback.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import Annotated, Any, Literal

import tyro

from herkit.bench import BufferBenchConfig, bench_buffer
from herkit.distributed import DistributedError


def bench(
    what: tyro.conf.Positional[Literal["buffer"]],
    config: Annotated[BufferBenchConfig, tyro.conf.arg(name="")],
) -> None:
    """Speed benchmarks: `herkit bench buffer [--peers]` times adding and sampling."""
    if what == "buffer":
        bench_buffer(config)


def evaluate_run(
    run_dir: tyro.conf.Positional[str],
    episodes: int = 100,
    json_out: Annotated[bool, tyro.conf.arg(name="json")] = False,
    seed: int = 12345,
) -> None:
    """Success rate of a run's checkpointed policy, acting deterministically.

    Args:
        run_dir: run directory written by `herkit train`.
        episodes: evaluation episodes.
        json_out: print one JSON object instead of text.
        seed: seed of the evaluation envs.
    """
    from herkit.train import evaluate_checkpoint

    if episodes < 1:
        raise ValueError(f"--episodes must be >= 1, got {episodes}")
    result = evaluate_checkpoint(run_dir, episodes, seed)
    if json_out:
        print(json.dumps(result))
    else:
        print(
            f"{result['env_id']} {result['algo']}: success rate {result['success_rate']:.3f} "
            f"over {episodes} episodes (checkpoint at {result['env_steps']} env steps)"
        )


def plot(
    run_dirs: tyro.conf.Positional[tuple[str, ...]],
    output: Annotated[str, tyro.conf.arg(aliases=("-o",))] = "curves.png",
) -> None:
    """Plot success rate and losses against env steps from runs' progress.csv.

    Args:
        run_dirs: one or more run directories.
        output: PNG file to write.
    """
    from herkit.plots import plot_runs

    print(plot_runs(run_dirs, output))


RESUME_MAY_CHANGE = (
    "steps", "eval_every", "eval_episodes", "checkpoint_every", "target_success", "device",
    "torch_threads", "dist_timeout_s", "tensorboard", "progress",
)  # fmt: skip
"""Settings that ``herkit train --resume RUN`` accepts as flags (e.g. a larger ``--steps``
to extend a finished run); the rest would not fit the checkpointed agent or buffer."""


def _train_main(args: list[str]) -> None:
    from herkit.config import TrainConfig, preset_config
    from herkit.train import load_run_config, train

    # First pass for the env id (and --resume), so that --help shows that env's preset.
    without_help = [arg for arg in args if arg not in ("-h", "--help")]
    first = tyro.cli(TrainConfig, args=without_help, prog="herkit train")
    if first.resume is not None:
        saved = dataclasses.replace(load_run_config(first.resume), out=first.resume)
        config = tyro.cli(TrainConfig, args=args, default=saved, prog="herkit train")
        changed = [
            field.name
            for field in dataclasses.fields(TrainConfig)
            if field.name not in ("resume", *RESUME_MAY_CHANGE)
            and getattr(config, field.name) != getattr(saved, field.name)
        ]
        if changed:
            raise ValueError(
                f"--resume continues a run with its saved settings; {', '.join(changed)} "
                f"cannot change (only {', '.join(RESUME_MAY_CHANGE)} can)"
            )
        summary = train(dataclasses.replace(config, resume=None), resume=True)
    else:
        preset = preset_config(first.env_id)
        config = tyro.cli(TrainConfig, args=args, default=preset, prog="herkit train")
        summary = train(config)
    if os.environ.get("RANK", "0") == "0":  # torchrun: one summary, from rank 0
        print(json.dumps(summary))


COMMANDS: dict[str, Callable[..., None]] = {"eval": evaluate_run, "plot": plot, "bench": bench}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``herkit`` command line; returns the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        if args[:1] == ["train"]:
            _train_main(args[1:])
        else:
            commands: dict[str, Callable[..., Any]] = {"train": _train_help, **COMMANDS}
            tyro.extras.subcommand_cli_from_dict(commands, prog="herkit", args=args)
    except ValueError as error:
        print(f"herkit: error: {error}", file=sys.stderr)
        return 2
    except DistributedError as error:
        print(f"herkit: error: {error}", file=sys.stderr)
        if "RANK" in os.environ:  # a launched rank: skip the interpreter's teardown, where
            sys.stdout.flush()  # gloo's threads of a broken connection can abort (SIGABRT)
            sys.stderr.flush()
            os._exit(1)
        return 1
    except KeyboardInterrupt:
        print("herkit: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `herkit train --help | head`: the reader left early
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no error at exit
        return 1
    return 0


def _train_help() -> None:
    """Train an agent with HER on a goal env (`herkit train --help` lists the flags)."""


if __name__ == "__main__":
    sys.exit(main())
