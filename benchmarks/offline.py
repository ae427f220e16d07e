"""Offline goal-conditioned RL against OGBench's table: make the data, train, evaluate.

    python benchmarks/offline.py data                       # pointmaze-medium-navigate, 1M steps
    python benchmarks/offline.py data pointmaze-giant-stitch-v0   # any of OGBench's pointmaze 8
    python benchmarks/offline.py train --algos gcbc gcivl gciql --seeds 0 1 --steps 100000
    python benchmarks/offline.py table                      # the records beside OGBench's
    python benchmarks/offline.py speed --ogbench IMPLS --jax-python PY   # updates vs JAX

``data [NAME]`` makes one of OGBench's pointmaze datasets as OGBench's script makes it
(:mod:`offline_data`; pointmaze-medium-navigate-v0 by default) into ``data/NAME.npz`` and its
``-val`` file; ``--record`` keeps its time in datasets.json. ``train`` runs ``herkit train
ENV --dataset PATH --algo ALGO --offline-steps N`` per algorithm and seed into
``runs/offline/`` (a finished run is skipped, a stopped one resumed) and records each in
offline.json with the success averaged over the last three evaluations, as OGBench reports
it. ``--hidden`` and ``--batch`` shrink OGBench's 3 x 512 and 1,024; ``--inputs`` feeds the
states ``raw`` (OGBench's) or ``standardised``. ``speed`` times each agent's update beside
OGBench's own JAX agent, each side in a process pinned to one core, the update alone and
draw + update (:mod:`offline_speed`) into offline_speed.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import common
import numpy as np
import offline_goals
import offline_speed
from common import DOCS, ROOT, add_run, code_version, machine
from offline_data import DATASETS

from herkit.agents.registry import algo_names
from herkit.rundir.logs import read_progress
from herkit.training.state import last_evaluations

RECORD = DOCS / "offline.json"
DATASETS_RECORD = DOCS / "datasets.json"
SPEED_RECORD = DOCS / "offline_speed.json"
ENV = "pointmaze-medium-navigate-v0"
DATA = ROOT / "data" / f"{ENV}.npz"
OGBENCH = {
    "gcbc": (9.0, 6.0),
    "gcivl": (63.0, 6.0),
    "gciql": (53.0, 8.0),
    "qrl": (82.0, 5.0),
    "crl": (29.0, 7.0),
    "hiql": (79.0, 5.0),
}
"""OGBench's success (%, mean and deviation over 8 seeds) on pointmaze-medium-navigate-v0
(Park et al. 2024, arXiv:2410.20092, its state-based table)."""
ALGOS = (*OGBENCH, *(algo for algo in algo_names(offline=True) if algo not in OGBENCH))
"""The offline agents: OGBench's in its table's order, then the registry's others."""


def make_data(args: argparse.Namespace) -> None:
    """Write the dataset ``args.name`` (and its -val file) with :func:`offline_data.make_named`,
    the recipe's settings changed by the flags given; with ``--record``, its time into
    datasets.json."""
    from offline_data import make_named

    out = Path(args.out or ROOT / "data" / f"{args.name}.npz")
    changes = {"env": args.env, "episodes": args.episodes, "steps": args.steps}
    changes |= {"noise": args.noise, "kind": args.kind}
    code = code_version()  # the code that makes it, as it starts
    load, started = os.getloadavg()[0], time.perf_counter()
    made = make_named(args.name, args.seed, out, **changes)
    wall_s = time.perf_counter() - started  # the episodes and the files
    recipe = DATASETS[args.name]
    episodes = args.episodes or recipe.episodes
    steps = args.steps or recipe.steps
    print(
        f"{out}: {episodes:,} episodes x {steps:,} states (+{episodes // 10:,} in its -val "
        f"file) in {wall_s:.0f} s ({made['steps_per_s']:,.0f} env steps/s), "
        f"{made['goals_reached']:,} goals reached, {made['episodes_at_a_goal']:,} episodes "
        "at a goal"
    )
    given = {key: value for key, value in changes.items() if value is not None}
    command = f"python benchmarks/offline.py data {args.name}" + "".join(
        f" --{key} {value}" for key, value in given.items()
    )
    run = {
        "dataset": args.name,
        "recipe": {key: value for key, value in vars(recipe).items() if key != "line"} | given,
        "seed": args.seed,
        "rows": made["rows"],
        "goals_reached": made["goals_reached"],
        "episodes_at_a_goal": made["episodes_at_a_goal"],
        "wall_s": round(wall_s, 1),
        "episodes_s": round(made["seconds"], 1),
        "steps_per_s": round(made["steps_per_s"], 1),
        "load_average_at_start": round(load, 2),
        "load_average_at_end": round(os.getloadavg()[0], 2),
        **code,
        "command": f"{command} --seed {args.seed} --record",
    }
    changed = ", ".join(f"{key} {value}" for key, value in given.items())
    key = f"made/{args.name}" + (f" ({changed})" if changed else "")
    add_run(DATASETS_RECORD, key, run, machine())


def run_dir(runs: Path, algo: str, seed: int, tag: str) -> Path:
    """Where one run lives."""
    return runs / tag / algo / f"s{seed}"


def train(args: argparse.Namespace) -> None:
    """Every (algo, seed) run of the grid, each recorded when done."""
    data = dataset(args.data)
    tag = f"steps{args.steps}-h{'x'.join(map(str, args.hidden))}-b{args.batch}-{args.inputs}"
    tag += f"-{args.label}" if args.label else ""
    for algo in args.algos:
        for seed in args.seeds:
            out = run_dir(Path(args.runs), algo, seed, tag)
            state = common.run_state(out, args.steps, "updates")[0]
            print(f"{algo} seed {seed}: {state}", flush=True)
            if state == "done":
                continue
            inputs = "" if args.inputs == "standardised" else "no-"
            new = [ENV, "--dataset", data, "--algo", algo, "--seed", seed]
            new += ["--eval-every", args.eval_every, "--checkpoint-every", args.eval_every]
            new += [f"--{algo}.hidden", *args.hidden, f"--{algo}.batch-size", args.batch]
            new += [f"--{algo}.{inputs}normalize-inputs"]
            flags = ["--offline-steps", args.steps]
            if args.torch_threads:
                flags += ["--torch-threads", args.torch_threads]
            if args.eval_episodes:
                flags += ["--eval-episodes", args.eval_episodes]
            started = time.perf_counter()
            done = common.train_or_resume(out, state, new, flags, cwd=ROOT)
            if done.returncode != 0:
                print(f"  exit code {done.returncode}")
                continue
            record(out, algo, seed, tag, time.perf_counter() - started, args)


def dataset(path: str) -> Path:
    """The dataset at ``path``; the run stops before anything runs where there is none."""
    if not Path(path).is_file():
        raise SystemExit(f"no dataset at {path}: make it first (python benchmarks/offline.py data)")
    return Path(path)


def run_figures(out: Path) -> dict[str, Any]:
    """A finished run's last evaluations' mean success (overall and per task, as its
    summary.json gives them: :func:`herkit.training.state.last_evaluations`) and curve."""
    rows = read_progress(out)
    last = last_evaluations(rows)
    tasks = last.get("success_rate_last3_by_task", [])
    return {
        "success": last["success_rate_last3"],
        "tasks": {f"success_task_{k}": rate for k, rate in enumerate(tasks, 1)},
        "curve": [[int(float(row["updates"])), float(row["success_rate"])] for row in rows],
        "evaluations_averaged": len(last["success_rate_last3_at"]),
    }


def record(
    out: Path, algo: str, seed: int, tag: str, this_session_s: float, args: argparse.Namespace
) -> None:
    """Write one finished run into offline.json, with the run's own wall time."""
    wall_s = common.read_json(out / "summary.json", {}).get("wall_s", this_session_s)
    run = {
        "env": ENV,
        "algo": algo,
        "seed": seed,
        "steps": args.steps,
        "hidden": list(args.hidden),
        "batch": args.batch,
        "inputs": args.inputs,
        "goal_rules": "OGBench's GCDataset, index for index",
        **({"label": args.label} if args.label else {}),
        "wall_s": round(wall_s, 1),
        "this_session_s": round(this_session_s, 1),
        **common.run_choices(out),
        **run_figures(out),
        **code_version(),
        "command": f"python benchmarks/offline.py train --algos {algo} --seeds {seed} "
        f"--steps {args.steps} --hidden {' '.join(map(str, args.hidden))} "
        f"--batch {args.batch} --eval-every {args.eval_every} --inputs {args.inputs}"
        + (f" --label {args.label}" if args.label else "")
        + " --record",
    }
    add_run(RECORD, f"{tag}/{algo}/s{seed}", run, machine())
    print(f"  {algo} seed {seed}: success {run['success']:.2f} in {wall_s / 60:.1f} min")


def budget_words(tag: str, run: dict[str, Any]) -> str:
    """A record's budget in words, e.g. ``100k steps, 3x256, batch 256, raw inputs`` (its
    ``tag`` where it lacks its sizes)."""
    if not {"steps", "hidden", "batch"} <= run.keys():
        return tag
    hidden = run["hidden"]
    size = f"{len(hidden)}x{hidden[0]}" if len(set(hidden)) == 1 else "x".join(map(str, hidden))
    words = f"{run['steps'] // 1000}k steps, {size}, batch {run['batch']}"
    inputs = run.get("inputs")
    words += f", {inputs} inputs" if inputs else ", earlier loop (standardised)"
    return f"{words}, {run['label']}" if "label" in run else words


def table(_: argparse.Namespace) -> None:
    """The recorded runs per budget and algorithm beside OGBench's figure."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    record = common.read_json(RECORD, {"runs": {}})
    for key, run in record["runs"].items():
        groups.setdefault((key.rsplit("/", 2)[0], run["algo"]), []).append(run)
    rows = []
    for (tag, algo), group in sorted(groups.items(), key=lambda item: ALGOS.index(item[0][1])):
        values = [100 * run["success"] for run in group]
        spread = f" ± {statistics.stdev(values):.0f}" if len(values) > 1 else ""
        per_task = " / ".join(
            f"{100 * statistics.fmean(run['tasks'][task] for run in group):.0f}"
            for task in sorted(group[0]["tasks"])
        )
        rows.append(
            [
                budget_words(tag, group[0]),
                algo,
                ", ".join(str(run["seed"]) for run in group),
                f"{statistics.fmean(values):.0f}{spread}",
                per_task,
                "{:.0f} ± {:.0f}".format(*OGBENCH[algo]) if algo in OGBENCH else "not in OGBench",
                " / ".join(f"{run['wall_s'] / 60:.0f}" for run in group),
                " / ".join(
                    sorted({processor(run.get("machine", record["machine"])) for run in group})
                ),
            ]
        )
    columns = ["budget", "algo", "seeds", "herkit success %", "tasks 1-5 %"]
    columns += ["OGBench % (8 seeds)", "wall min", "machine (2 cores)"]
    print(common.markdown(columns, "llllllll", rows))


def processor(machine: dict[str, Any]) -> str:
    """A record's machine in a word or two: its processor's name without trademarks."""
    return machine["processor"].replace("(R)", "").removesuffix(" Processor")


MEMORY_CASES = {
    "1M x 29, 2-wide goals": (1_000_000, 29, 8, 2),
    "1M x 29, whole-state goals": (1_000_000, 29, 8, None),
    "4M x 69, 2-wide goals": (4_000_000, 69, 21, 2),
}
"""Datasets of OGBench's sizes: transitions, state and action widths, goal size."""

HOLD = """
import json, sys, time
import numpy as np
from herkit import HerReplayBuffer

def rss():
    fields = dict(line.split(":", 1) for line in open("/proc/self/status"))
    return int(fields["VmRSS"].split()[0]) * 1024, int(fields["VmHWM"].split()[0]) * 1024

def reward(achieved, desired, info):
    return -(np.linalg.norm(achieved - desired, axis=-1) > 0.5).astype(np.float32)

path, goal_size = sys.argv[1], None if sys.argv[2] == "None" else int(sys.argv[2])
before, _ = rss()
started = time.perf_counter()
buffer = HerReplayBuffer.from_dataset(path, reward, goal_size=goal_size,
    value_goals=(0.2, 0.5, 0.3), actor_goals=(0, 1, 0), gamma=0.99, seed=0)
load_s = time.perf_counter() - started
after, peak = rss()
buffer.sample(1024)
held = getattr(buffer, "recorded", None)
print(json.dumps({"load_s": load_s, "rss_held": after - before, "rss_peak": peak - before,
                  "counted": None if held is None else held.nbytes, "transitions": len(buffer)}))
"""
"""A fresh process that holds a dataset and says what it cost."""


def measure_memory(args: argparse.Namespace) -> None:
    """A buffer's resident memory holding each of :data:`MEMORY_CASES` against its arrays'
    bytes, and its read time (another code's with ``PYTHONPATH`` and ``--label``)."""
    rng = np.random.default_rng(0)
    for name, (transitions, width, actions, goal_size) in MEMORY_CASES.items():
        if args.cases and not any(case in name for case in args.cases):
            continue
        episodes = transitions // 1000
        rows = transitions + episodes  # episodes of 1,001 states
        with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
            path = Path(tmp) / "data.npz"
            arrays = {
                "observations": rng.standard_normal((rows, width), np.float32),
                "actions": rng.uniform(-1, 1, (rows, actions)).astype(np.float32),
                "terminals": np.zeros(rows, bool),
            }
            arrays["terminals"][1000::1001] = True
            np.savez(path, **arrays)
            array_bytes = sum(value.nbytes for value in arrays.values())
            del arrays
            done = subprocess.run(
                [sys.executable, "-c", HOLD, str(path), str(goal_size)],
                capture_output=True,
                text=True,
                check=True,
            )
        held = json.loads(done.stdout.strip().splitlines()[-1])
        run = {
            "transitions": transitions,
            "state_width": width,
            "action_width": actions,
            "goal_size": goal_size,
            "array_bytes": array_bytes,
            **held,
            "held_per_array_byte": held["rss_held"] / array_bytes,
            "label": args.label,
            **code_version(),
            "command": f"python benchmarks/offline.py memory --cases '{name}' --label "
            f"{args.label} --record",
        }
        print(
            f"{args.label}: {name}: {held['rss_held'] / 2**20:,.0f} MiB held for "
            f"{array_bytes / 2**20:,.0f} MiB of arrays ({run['held_per_array_byte']:.2f}x; "
            f"peak {held['rss_peak'] / 2**20:,.0f} MiB), read in {held['load_s']:.2f} s"
        )
        add_run(DATASETS_RECORD, f"memory/{args.label}/{name}", run, machine())


def bad_datasets(folder: Path) -> dict[str, tuple[Path, str]]:
    """Bad datasets for pointmaze, written into ``folder``."""
    good = {
        "observations": np.zeros((30, 2), np.float32),
        "actions": np.zeros((30, 2), np.float32),
        "terminals": np.eye(30)[-1] > 0,
    }
    objects = np.empty(30, object)
    objects[:] = [{"a": 1}] * 30
    variants = {
        "not an npz": None,
        "pickled arrays": good | {"observations": objects},
        "NaN": good | {"observations": np.where(np.eye(30, 2) > 0, np.nan, 0).astype(np.float32)},
        "7-wide states": good | {"observations": np.zeros((30, 7), np.float32)},
        "rows that differ": good | {"actions": np.zeros((29, 2), np.float32)},
        "missing": None,
    }
    made = {}
    for name, arrays in variants.items():
        path = folder / f"{name.replace(' ', '-')}.npz"
        if name == "not an npz":
            path.write_text("observations,actions,terminals\n")
        elif arrays is not None:
            np.savez(path, **arrays)
        made[name] = (path, name)
    return made


def time_bad_datasets(args: argparse.Namespace) -> None:
    """``herkit train ENV --dataset BAD`` per bad dataset: its last line, exit code, time."""
    with tempfile.TemporaryDirectory() as tmp:
        for name, (path, _) in bad_datasets(Path(tmp)).items():
            times, done = [], None
            for _ in range(args.repeats):
                started = time.perf_counter()
                command = [ENV, "--dataset", path, "--out", Path(tmp) / "run"]
                done = common.herkit_train(*command, capture_output=True, cwd=tmp, check=False)
                times.append(time.perf_counter() - started)
            assert done is not None
            line = done.stderr.strip().splitlines()[-1].replace(tmp, "TMP")
            run = {
                "exit_code": done.returncode,
                "line": line,
                "lines": len(done.stderr.splitlines()),
                "wall_s": statistics.median(times),
                "repeats": args.repeats,
                **code_version(),
                "command": f"python benchmarks/offline.py bad --repeats {args.repeats} --record",
            }
            print(f"{name}: exit {done.returncode} in {run['wall_s']:.2f} s: {line}")
            add_run(DATASETS_RECORD, f"bad/{name}", run, machine())


def time_threads(args: argparse.Namespace) -> None:
    """Gradient steps/s of the guide's offline command by ``--threads`` (and its default),
    beside ``--beside`` busy processes."""
    data = dataset(args.data)
    busy = [f"{sys.executable}", "-c", "while True: pass"]
    guide = "--gcivl.hidden 256 256 256 --gcivl.batch-size 256 --eval-episodes 1".split()
    for round_ in range(args.rounds):
        for threads in (None, *args.threads):
            others = [subprocess.Popen(busy) for _ in range(args.beside)]
            with tempfile.TemporaryDirectory() as tmp:
                command = [ENV, "--dataset", data, "--offline-steps", args.updates, *guide]
                if threads is not None:
                    command += ["--torch-threads", threads]
                try:
                    done = common.herkit_train(*command, out=Path(tmp) / "run", capture_output=True)
                finally:
                    for other in others:
                        other.kill()
                row = common.progress(Path(tmp) / "run", "updates", "wall_s", "eval_s")[-1]
                config = common.read_json(Path(tmp) / "run" / "config.json")
            said = [line for line in done.stderr.splitlines() if "machine:" in line]
            rate = row["updates"] / (row["wall_s"] - row["eval_s"])
            name = "default" if threads is None else f"{threads} thread{'s' * (threads > 1)}"
            run = {
                "torch_threads": config["torch_threads"],
                "given": threads is not None,
                "beside": args.beside,
                "machine_lines": said,
                "gradient_steps_per_s": rate,
                "updates": args.updates,
                "round": round_,
                "precision": config["machine"].get("precision"),
                "update_mode": config["machine"].get("update_mode"),
                **code_version(),
                "command": f"python benchmarks/offline.py threads --updates {args.updates} "
                f"--rounds {args.rounds} --beside {args.beside} --record",
            }
            print(
                f"beside {args.beside}, round {round_}: {name} ({config['torch_threads']} "
                f"threads): {rate:.1f} gradient steps/s; {' '.join(said[1:])}"
            )
            add_run(SPEED_RECORD, f"beside{args.beside}/{name}/round{round_}", run, machine())


def main(argv: list[str] | None = None) -> None:
    """The command line (see the module's docstring)."""
    cli = common.parser(__doc__)
    commands = cli.add_subparsers(dest="command", required=True)
    data = commands.add_parser("data", help="make one of OGBench's pointmaze datasets")
    data.add_argument(
        "name",
        nargs="?",
        default=ENV,
        choices=tuple(DATASETS),
        metavar="NAME",
        help=f"the dataset: {', '.join(DATASETS)} (default: {ENV})",
    )
    data.add_argument("--env", default=None, help="another maze (the name's by default)")
    data.add_argument("--kind", choices=("navigate", "stitch"), default=None)
    data.add_argument("--episodes", type=int, default=None, help="(the name's by default)")
    data.add_argument("--steps", type=int, default=None, help="states per episode")
    data.add_argument("--noise", type=float, default=None)
    data.add_argument("--seed", type=int, default=0)
    data.add_argument("--out", default=None, help="the .npz file (default: data/NAME.npz)")
    data.set_defaults(run=make_data)
    runs = commands.add_parser("train", help="train and record the grid")
    runs.add_argument("--algos", nargs="+", choices=ALGOS, default=list(ALGOS))
    runs.add_argument("--seeds", nargs="+", type=int, default=[0])
    runs.add_argument("--steps", type=int, default=1_000_000, help="gradient steps")
    runs.add_argument("--hidden", nargs="+", type=int, default=[512, 512, 512])
    runs.add_argument("--batch", type=int, default=1024)
    runs.add_argument("--eval-every", type=int, default=100_000)
    runs.add_argument("--torch-threads", type=int, default=None, help="torch's CPU threads")
    runs.add_argument(
        "--inputs",
        choices=("raw", "standardised"),
        default="raw",
        help="the networks' inputs: as they are (OGBench's) or standardised",
    )
    runs.add_argument(
        "--eval-episodes",
        type=int,
        default=None,
        help="episodes of each task per evaluation (default: the preset's, 50)",
    )
    runs.add_argument("--data", default=str(DATA))
    runs.add_argument("--runs", default=str(ROOT / "runs" / "offline"))
    runs.add_argument(
        "--label", default="", help="a name for the code, added to the runs' folder and record"
    )
    runs.set_defaults(run=train)
    shown = commands.add_parser("table", help="the records beside OGBench's table")
    shown.set_defaults(run=table)
    goals = commands.add_parser("goals", help="herkit's goal draws against OGBench's GCDataset")
    goals.add_argument("--ogbench", required=True, help="the impls/ folder of OGBench's code")
    goals.add_argument("--samples", type=int, default=200_000)
    goals.add_argument("--episodes", type=int, default=3000)
    goals.add_argument("--seed", type=int, default=0)
    goals.add_argument("--alpha", type=float, default=1e-3, help="significance of each test")
    goals.add_argument("--label", default="herkit", help="the record's name for this code")
    goals.set_defaults(run=offline_goals.compare_goals)
    memory = commands.add_parser("memory", help="what a buffer holding a dataset costs")
    memory.add_argument("--cases", nargs="*", default=[], help="parts of the cases' names")
    memory.add_argument("--label", default="herkit", help="the record's name for this code")
    memory.add_argument("--tmp", default=None, help="where the dataset files are written")
    memory.set_defaults(run=measure_memory)
    bad = commands.add_parser("bad", help="how fast a bad dataset is refused, and in what words")
    bad.add_argument("--repeats", type=int, default=3)
    bad.set_defaults(run=time_bad_datasets)
    threads = commands.add_parser("threads", help="the guide's command's speed by threads")
    threads.add_argument("--updates", type=int, default=3000)
    threads.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    threads.add_argument("--rounds", type=int, default=2)
    threads.add_argument("--beside", type=int, default=0, help="busy processes beside the run")
    threads.add_argument("--data", default=str(DATA))
    threads.set_defaults(run=time_threads)
    speed = commands.add_parser(
        "speed", help="each agent's update beside OGBench's JAX, each on one pinned core"
    )
    speed.add_argument("--algos", nargs="+", choices=ALGOS, default=list(ALGOS))
    speed.add_argument(
        "--sizes",
        nargs="+",
        type=offline_speed.checked_size,
        default=list(offline_speed.SIZES),
        help="LAYERSxWIDTH:BATCH each (default: 3x256:256, herkit's table; 3x512:1024, OGBench's)",
    )
    speed.add_argument(
        "--ways",
        nargs="+",
        choices=offline_speed.WAYS,
        default=list(offline_speed.WAYS),
        help="update: the update alone on batches drawn in advance; draw: draw + update",
    )
    speed.add_argument(
        "--core", type=int, default=min(1, (os.cpu_count() or 1) - 1), help="the core both use"
    )
    speed.add_argument(
        "--mode",
        choices=offline_speed.MODES,
        default="compiled",
        help="herkit's update mode (default: compiled, a long run's; GCBC's runs eager)",
    )
    speed.add_argument("--seconds", type=float, default=5.0, help="each way's timed window")
    speed.add_argument("--repeats", type=int, default=3, help="processes per side, alternating")
    speed.add_argument("--ogbench", required=True, help="the impls/ folder of OGBench's code")
    speed.add_argument("--jax-python", required=True, help="a Python with jax, flax, optax...")
    speed.add_argument("--data", default=str(DATA), help="the dataset both sides draw from")
    speed.set_defaults(run=lambda args: offline_speed.speed(args, SPEED_RECORD))
    args = cli.parse_args(argv)
    args.run(args)


if __name__ == "__main__":
    main()
