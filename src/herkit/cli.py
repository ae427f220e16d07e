"""The ``herkit`` command, generated from the config dataclasses with tyro, and how it reads
its arguments.

Subcommands: ``train`` (flags from :class:`herkit.config.train.TrainConfig`, defaults from the
env's preset), ``eval``, ``plot``, ``report`` and ``bench`` (their words, which need no
tyro, are :mod:`herkit.commands`'). Invalid values raise ValueError (in the dataclasses'
``__post_init__``, when an env or checkpoint is opened, or when tyro refuses a flag: its
usage errors become one-line ValueErrors, with suggestions for mistyped or foreign flag
names, ``--learning-rate`` -> ``--dqn.lr``, and flags that moved elsewhere); they are
reported as one line on stderr with exit code 2, never as a traceback (how the flags are
read and worded: :mod:`herkit.flags`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import json
import os
import sys
import textwrap
from collections.abc import Callable, Sequence
from typing import Annotated, Any, Literal, Union

import tyro

from herkit import __version__
from herkit.bench import BufferBenchConfig, UpdateBenchConfig, bench_buffer
from herkit.buffer.datasets import goal_size_for, read_ahead
from herkit.commands import SUMMARIES, TAGLINE
from herkit.config.learning import RESUME_MAY_CHANGE
from herkit.envs.failures import EnvFailure
from herkit.extras import needs_extra
from herkit.flags import (
    auto_flags,
    given_algo,
    ogbench_flags,
    parse,
    speaking,
    split_agent_flags,
    unwrap_help,
    with_suggestions,
)
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
    from herkit.config.resolve import preset_config
    from herkit.config.run import config_for
    from herkit.config.train import TrainConfig
    from herkit.envs.imports import prepare_run_env
    from herkit.rundir.settings import load_run_config, saved_env_import

    args, named = split_agent_flags(auto_flags(args))  # OGBench's --agent.KEY: read below
    # First pass for the env id (and --resume), so that --help shows that env's preset.
    without_help = [arg for arg in args if arg not in ("-h", "--help")]
    try:
        first = _parse_train(without_help)
    except ValueError:  # report the error against the preset of the env named, if any
        ids = [arg for arg in args if not arg.startswith("-") and ("/" in arg or "-v" in arg)]
        _parse_train(args, default=preset_config(ids[0] if ids else TrainConfig.env_id))
        raise
    if named:  # OGBench's names of the run's agent's settings, as herkit's flags
        args = _ogbench_read(args, named, first)
        without_help = [arg for arg in args if arg not in ("-h", "--help")]
    recorded = None  # the dataset read ahead, handed to the run
    if first.dataset is not None and first.resume is None and without_help == args:
        recorded = read_ahead(first.dataset)  # a bad file is said at once
    if first.resume is not None:
        saved = dataclasses.replace(load_run_config(first.resume), out=first.resume)
        prepare_run_env(saved.env_id, saved_env_import(first.resume))  # from anywhere
        config = _parse_train(args, default=saved)
        changed = [
            saved.algo if field.name == "agent" else field.name
            for field in dataclasses.fields(TrainConfig)
            if field.name not in ("resume", "her", *RESUME_MAY_CHANGE)
            and getattr(config, field.name) != getattr(saved, field.name)
            and not (field.name == "agent" and config.algo != saved.algo)  # said by algo
        ]
        changed += [
            name for name, value in config.her.values().items() if value != getattr(saved.her, name)
        ]
        if changed:
            raise ValueError(
                f"--resume continues a run with its saved settings; {', '.join(changed)} "
                f"cannot change (only {', '.join(RESUME_MAY_CHANGE)} can)"
            )
        config, resume = dataclasses.replace(config, resume=None), True
    else:
        # the flags typed, read over the preset they would change (a GPU preset with
        # --device cuda; a recipe's settings over it with --recipe), as the top layer of
        # the run's settings (herkit.config.resolve)
        preset = preset_config(first.env_id, first.device, first.recipe)
        if len(without_help) < len(args):  # --help: of the algorithm the run would have
            algo = first.algo if any(arg.startswith("--algo") for arg in args) else None
            with contextlib.suppress(ValueError):
                algo = algo or config_for(first.env_id).algo
            preset = preset_config(first.env_id, first.device, first.recipe, algo=algo)
        parsed, flags = _parse_flags(args, default=preset)
        resolution = _resolved(parsed.env_id, flags)
        config, resume = resolution.config, False
        if recorded is not None:  # its shapes against the env's, before torch loads
            found = resolution.probe
            spaces = (found.observation_space, found.action_space)
            goal_size_for(recorded, config.dataset, config.env_id, *spaces)
        blocks = {path.split(".")[0] for path in flags if "." in path}
        others = sorted(blocks - {"her", config.algo})
        if others:  # the flags of an agent that does not train would be lost
            flags_named = ", ".join(f"--{name}.*" for name in others)
            raise ValueError(
                f"{flags_named} set the settings of --algo {' or '.join(others)}, but this run "
                f"trains {config.algo} (--{config.algo}.*): give --algo {others[0]} to train it"
            )
    config.check_data()  # an algorithm without its data, or data without an algorithm for it
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


def _ogbench_read(args: list[str], named: list[Any], first: Any) -> list[str]:
    """``args`` with herkit's flags for OGBench's ``--agent.KEY`` flags ``named``
    (:func:`herkit.flags.split_agent_flags`), read for the run's agent: the saved run's
    with ``--resume``, else ``--algo``'s or the env's preset's (``first``: the other flags
    read over TrainConfig's defaults); how they were read is said on stderr."""
    from herkit.config.resolve import preset_config
    from herkit.rundir.settings import load_run_config

    if first.resume is not None:
        run = load_run_config(first.resume)
    else:
        algo = first.algo if given_algo(args) else None
        run = preset_config(first.env_id, first.device, first.recipe, algo=algo)
    settings = run.her_settings()
    goals = {"value_goals": settings.value_goals, "actor_goals": settings.actor_goals}
    flags, said = ogbench_flags(named, run.algo, goals, args)
    print(said, file=sys.stderr)
    return [*args, *flags]


def _parse_train(args: list[str], default: Any = None) -> Any:
    """``herkit train ARGS`` read into a TrainConfig (over ``default``, by default
    TrainConfig's own defaults)."""
    return _parse_flags(args, default)[0]


def _parse_flags(args: list[str], default: Any = None) -> tuple[Any, dict[str, Any]]:
    """``herkit train ARGS`` read over the config ``default``: the TrainConfig, and the
    settings the flags typed set, by path (``steps``, ``her.k``, ``ddpg.lr``: what
    :func:`herkit.config.resolve.resolve` takes as its top layer).

    The flags are those of a view of TrainConfig with a block of settings per registered
    agent, named after it (``--gcivl.expectile``) where TrainConfig has its one slot
    ``agent``: the default of ``default``'s algorithm's block is ``default``'s agent
    settings, of another's its settings for the env (the preset's). The config takes the
    block of the algorithm it trains. With ``--help``, the view shows that block alone."""
    from herkit.config.train import TrainConfig

    _know_named_agent(args)
    unwrap_help(TrainConfig)
    default = TrainConfig() if default is None else default
    shown = "-h" in args or "--help" in args
    view, blocks = _flags_view(default, only=default.algo if shown else None)
    values = {field.name: getattr(default, field.name) for field in dataclasses.fields(default)}
    kwargs: dict[str, Any] = {"default": view(**(values | blocks))}
    if shown:
        kwargs["description"] = _help_description(default)
    try:
        parsed = parse(tyro.cli, view, args, "herkit train", **kwargs)
    except ValueError as error:
        algo = given_algo(args) or default.algo  # the run's agent: its flags suggested
        raise ValueError(with_suggestions(str(error), args, algo)) from None
    config = TrainConfig(
        **{field.name: getattr(parsed, field.name) for field in dataclasses.fields(TrainConfig)}
    )
    return config, typed_settings(args, parsed, tuple(blocks))


def typed_settings(args: list[str], parsed: Any, blocks: tuple[str, ...]) -> dict[str, Any]:
    """The settings that the flags in ``args`` set, by path (``steps``, ``her.k``, ``ddpg.lr``;
    ``--no-overlap``: ``overlap``), with their values in ``parsed`` (the view of
    :func:`_flags_view`, whose agent ``blocks`` are these); the env id, ``--resume`` and
    ``--help`` are not settings of a new run."""
    from herkit.buffer.settings import HerSettings
    from herkit.config.train import TrainConfig

    top = {field.name for field in dataclasses.fields(TrainConfig)} - {"her", "agent", "env_id"}
    her = set(HerSettings.names()) - top
    typed: dict[str, Any] = {}
    for arg in args:
        if not arg.startswith("--"):
            continue
        block, _, name = arg[2:].partition("=")[0].replace("-", "_").rpartition(".")
        if block in blocks:
            holder, prefix = getattr(parsed, block), f"{block}."
        elif block:
            continue
        elif name in her or name.removeprefix("no_") in her:
            holder, prefix = parsed.her, "her."
        else:
            holder, prefix = parsed, ""
        names = {field.name for field in dataclasses.fields(holder)}
        if name not in names and name.startswith("no_"):
            name = name[3:]  # --no-X: the setting X
        if name in names and (holder is not parsed or name in top) and name != "resume":
            typed[prefix + name] = getattr(holder, name)
    return typed


def _resolved(env_id: str, flags: dict[str, Any]) -> Any:
    """The run's settings resolved from ``flags`` (:func:`herkit.config.resolve.resolve`),
    an env that fails in its probe said as one that fails as the run starts."""
    from herkit.config.resolve import resolve

    try:
        return resolve(env_id, None, flags)
    except EnvFailure as failure:
        sys.stderr.write(failure.details + "\n")
        raise RunFailed(
            f"{failure} as the run started; traceback above; nothing was trained: fix the "
            "cause and start again",
            EXIT_CODES["env failed"],
        ) from failure


def _know_named_agent(args: list[str]) -> None:
    """Where ``--algo NAME`` names an agent whose entry is not registered yet, import the
    agents (:func:`herkit.agents.registry.agent_entry`: one written in a module that needs
    torch registers as it is imported); an unknown name is left to the parser to refuse."""
    from herkit.agents.registry import agent_entry, algo_names

    name = given_algo(args)
    if name is not None and name not in algo_names():
        with contextlib.suppress(ValueError):
            agent_entry(name)


def _flags_view(default: Any, only: str | None = None) -> tuple[type, dict[str, Any]]:
    """The dataclass ``herkit train`` parses for the config ``default``: TrainConfig with
    ``--algo``'s choices the registered agents and a block of settings per agent in place
    of the slot ``agent`` (``only``: that agent's block alone), and the blocks' defaults."""
    from herkit.agents.registry import agent_entry, algo_names
    from herkit.config.resolve import agent_preset
    from herkit.config.train import TrainConfig

    names = algo_names() if only is None else (only,)
    clash = set(algo_names()) & {field.name for field in dataclasses.fields(TrainConfig)}
    if clash:
        raise ValueError(f"agents named as settings of herkit train: {', '.join(sorted(clash))}")
    blocks = {
        name: default.agent
        if name == default.algo
        else agent_preset(default.env_id, name, default.device, default.recipe)
        for name in names
    }
    choices: Any = Literal[algo_names()]
    fields: list[Any] = [
        ("algo", choices, dataclasses.field(default="dqn", metadata={"help": algo_help()})),
        ("agent", Annotated[Any, tyro.conf.Suppress], dataclasses.field(default=None)),
    ]
    for name in names:
        entry = agent_entry(name)
        unwrap_help(entry.config)
        words = {"help": f"Settings of --algo {name}: {entry.help}."}
        fields.append((name, entry.config, dataclasses.field(default=None, metadata=words)))

    def __post_init__(self: Any) -> None:
        object.__setattr__(self, "agent", getattr(self, self.algo, None))
        TrainConfig.__post_init__(self)

    view = dataclasses.make_dataclass(
        "TrainConfig",
        fields,
        bases=(TrainConfig,),
        frozen=True,
        namespace={"__post_init__": __post_init__},
    )
    return view, blocks


def algo_help() -> str:
    """``--algo``'s help: the registered agents, by kind."""
    from herkit.agents.registry import agent_entries

    kinds = {
        "discrete actions": [e.name for e in agent_entries() if e.discrete and not e.offline],
        "continuous actions": [e.name for e in agent_entries() if not (e.discrete or e.offline)],
        "offline agents: they train on --dataset": [e.name for e in agent_entries() if e.offline],
    }
    listed = "; ".join(f"{', '.join(names)} ({kind})" for kind, names in kinds.items() if names)
    return f"Agent: {listed}."


def _help_description(default: Any) -> str:
    """What ``herkit train --help`` says first for the config ``default`` (the env's
    preset): whose defaults it shows, and that other algorithms' flags are not shown."""
    from herkit.agents.registry import algo_names
    from herkit.config.presets import preset_values

    others = [algo for algo in algo_names() if algo != default.algo]
    whose = (
        f"{default.env_id}'s preset"
        if preset_values(default.env_id)
        else f"the defaults of an env without a preset, such as {default.env_id}"
    )
    if default.recipe is not None:
        whose += f" with the settings of --recipe {default.recipe} over it"
    return textwrap.fill(
        "Train a goal-conditioned agent with HER. The defaults shown are "
        f"{whose}, for --algo {default.algo}; herkit train ENV_ID --help shows another env's, "
        f"herkit train ENV_ID --algo ALGO --help another algorithm's flags "
        f"(--{'.*, --'.join(others)}.* are not shown here).",
        width=88,
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
