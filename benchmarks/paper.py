"""The HER paper's Fetch experiments (Andrychowicz et al., 2017), one command per figure.

    python benchmarks/paper.py fig4 --tasks FetchPush-v4 --seeds 0 1   # multi-goal
    python benchmarks/paper.py fig5 --tasks FetchPush-v4 --seeds 0 1   # one fixed goal
    python benchmarks/paper.py fig6 --tasks FetchPush-v4 --seeds 0 1   # shaped rewards
    python benchmarks/paper.py fig7 --seeds 0 1                        # strategies x k
    python benchmarks/paper.py fig7 --plan    # the grid, each run's state, nothing run
    python benchmarks/paper.py fig7 --draw    # the figure and table from the records only

fig4 to fig7 are the paper's Figures 3 to 6 (multi-goal, one goal, shaped rewards,
strategies and k; the claims: docs/paper.md). Each run is ``herkit train TASK`` with the
task's preset and the setting's flags, one budget per task (:data:`BUDGETS`, or
``--steps``), in ``RUNS/FIGURE/TASK/SETTING/sSEED``: a finished run is skipped, a stopped
one resumed; a setting with an earlier figure's flags uses that figure's runs. ``--jobs N``
runs N at once. Records go to docs/paper.json, figures to docs/figures/paper_FIGURE.png,
and docs/paper.md's tables are made again from the records.
"""

from __future__ import annotations

import statistics
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import common
from common import run_state as progress_of

RECORD = common.DOCS / "paper.json"
PAGE = common.DOCS / "paper.md"
"""The docs page of these figures: its marked tables are made from the records."""
FIGURES = common.FIGURES
MARKED = common.marked("paper")
TASKS = ("FetchPush-v4", "FetchSlide-v4", "FetchPickAndPlace-v4")
BUDGETS = {"FetchPush-v4": 700_000, "FetchSlide-v4": 1_000_000, "FetchPickAndPlace-v4": 1_000_000}
"""Env steps of every run of a task: what herkit's preset needs to solve it on 2 cores."""
STRATEGIES = ("future", "final", "episode", "random")
KS = (1, 4, 8, 16)
SHAPINGS = ((0.0, 1.0), (0.0, 2.0), (1.0, 1.0), (1.0, 2.0))
"""(lambda, p) of the paper's shaped rewards."""
GOALS_WITHOUT_FREE_SUCCESS: tuple[int, ...] = (17, 33)
"""fig5's goal seeds on which a still policy succeeds in none of 1,000 FetchPush episodes
(``fig5 --tasks FetchPush-v4 --find-goals 4 --chance 1000``)."""
CHECKPOINT_EVERY = 50_000


@dataclass(frozen=True)
class Setting:
    """One line of a figure: its name and the flags of ``herkit train`` that make it."""

    name: str
    flags: tuple[str, ...]


def settings_of(figure: str) -> list[Setting]:
    """The settings of a figure's grid, in the order drawn."""
    her, plain = ("--strategy", "future", "--k", "4"), ("--strategy", "none")
    if figure == "fig4":
        return [Setting("ddpg", plain), Setting("ddpg+her", her)]
    if figure == "fig5":
        one = ("--fixed-goal",)
        apart = [
            Setting(f"{name}, goal of seed {goal}", (*flags, *one, "--goal-seed", str(goal)))
            for goal in GOALS_WITHOUT_FREE_SUCCESS
            for name, flags in (("ddpg", plain), ("ddpg+her", her))
        ]
        seeds_goal = [
            Setting("ddpg, one goal", plain + one),
            Setting("ddpg+her, one goal", her + one),
        ]
        return [*seeds_goal, *apart]
    if figure == "fig6":
        return [
            Setting(
                f"{name}, shaped lambda={lam:g} p={p:g}",
                (*flags, "--shaped-reward", f"{lam:g}", f"{p:g}"),
            )
            for lam, p in SHAPINGS
            for name, flags in (("ddpg", plain), ("ddpg+her", her))
        ]
    if figure == "fig7":
        grid = [
            Setting(f"{strategy} k={k}", ("--strategy", strategy, "--k", str(k)))
            for strategy in STRATEGIES
            for k in KS
        ]
        return [*grid, Setting("none", plain)]
    raise ValueError(f"figure must be fig4, fig5, fig6 or fig7, got {figure!r}")


REFERENCE = {"fig5": ("fig4", "ddpg+her"), "fig6": ("fig4", "ddpg+her")}
"""The run of another figure drawn beside a figure's (the paper compares them so)."""
FIGURE_NAMES = ("fig4", "fig5", "fig6", "fig7")


def home_of(figure: str, setting: Setting) -> tuple[str, Setting]:
    """The figure and setting whose runs a setting uses: the first with the same flags."""
    for other in FIGURE_NAMES:
        for candidate in settings_of(other):
            if candidate.flags == setting.flags:
                return other, candidate
    return figure, setting


def slug(text: str) -> str:
    """A directory name for a setting."""
    return "".join(c if c.isalnum() or c in ".-+" else "_" for c in text)


def run_dir(runs: Path, figure: str, task: str, setting: Setting, seed: int) -> Path:
    """Where a run of the grid lives."""
    return runs / figure / task / slug(setting.name) / f"s{seed}"


def state_of(out: Path, steps: int) -> str:
    """``done``, ``stopped at N`` or ``new`` (:func:`common.run_state`)."""
    return progress_of(out, steps)[0]


def train(figure: str, task: str, setting: Setting, seed: int, steps: int, out: Path) -> None:
    """Run (or continue) one run to ``steps`` env steps and record it."""
    state = state_of(out, steps)
    if state == "done":
        return
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.parent / f"{out.name}.log", "a") as log:
        print(f"{figure} {task} {setting.name} seed {seed}: {state}", flush=True)
        started = time.time()
        new = [task, *setting.flags, "--seed", seed, "--checkpoint-every", CHECKPOINT_EVERY]
        into = {"stdout": log, "stderr": subprocess.STDOUT, "cwd": common.ROOT}
        done = common.train_or_resume(out, state, new, ["--steps", steps], **into)
    if done.returncode != 0:
        print(f"  exit code {done.returncode}: see {out.parent / out.name}.log", flush=True)
        return
    here = common.machine()
    record = {
        "figure": figure,
        "task": task,
        "setting": setting.name,
        "flags": list(setting.flags),
        "seed": seed,
        "steps": steps,
        "curve": curve_of(out),
        "wall_s": common.read_json(out / "summary.json").get("wall_s"),
        "this_session_s": round(time.time() - started, 1),
        "resumed": state != "new",
        "code": common.code_version(),
        "cpu": f"{here['processor']}, {here['cpus']} cores",
        **common.run_choices(out),
    }
    common.add_run(RECORD, f"{figure}/{task}/{setting.name}/seed{seed}", record, here)
    refresh_page()
    print(f"  highest {highest(record):.2f}, average {average(record):.2f}", flush=True)


def curve_of(out: Path) -> list[dict[str, float]]:
    """The evaluations of a run: env steps, success rate, wall seconds."""
    rows = common.progress(out, "env_steps", "success_rate", "wall_s")
    return [row | {"env_steps": int(row["env_steps"])} for row in rows]


def highest(record: dict[str, Any]) -> float:
    """The highest success over a run's evaluations (the paper's top row of its Figure 6)."""
    return max(point["success_rate"] for point in record["curve"])


def average(record: dict[str, Any]) -> float:
    """The mean success over a run's evaluations (the paper's bottom row)."""
    return statistics.fmean(point["success_rate"] for point in record["curve"])


def recorded_runs() -> list[dict[str, Any]]:
    """Every run of :data:`RECORD` (none before the first)."""
    return list(common.read_json(RECORD, {"runs": {}})["runs"].values())


def records_of(figure: str) -> dict[str, list[dict[str, Any]]]:
    """The recorded runs of a figure (and its reference runs) by ``task/setting``."""
    groups: dict[str, list[dict[str, Any]]] = {}
    names = {}
    for setting in settings_of(figure):
        home, shared = home_of(figure, setting)
        names[home, shared.name] = setting.name
    if reference := REFERENCE.get(figure):
        names[reference] = f"{reference[1]} ({reference[0]}, many goals)"
    for record in recorded_runs():
        if name := names.get((record["figure"], record["setting"])):
            groups.setdefault(f"{record['task']}/{name}", []).append(record)
    return groups


def table(figure: str) -> str:
    """A markdown table of a figure's runs: per task and setting, the seeds, the highest and
    the average success (mean over seeds, with each seed's), and the last evaluation."""
    rows = []
    for key, records in records_of(figure).items():
        task, name = key.split("/", 1)
        records = sorted(records, key=lambda r: r["seed"])

        def cell(measure: Any, records: list[dict[str, Any]] = records) -> str:
            values = [measure(r) for r in records]
            each = " / ".join(f"{v:.2f}" for v in values)
            return f"{statistics.fmean(values):.2f} ({each})" if len(values) > 1 else each

        seeds = ", ".join(str(r["seed"]) for r in records)
        last = cell(lambda r: r["curve"][-1]["success_rate"])
        rows.append([task, name, seeds, cell(highest), cell(average), last])
    columns = ["task", "setting", "seeds", "highest success", "average success"]
    return common.markdown([*columns, "last evaluation"], "llllll", rows)


def compute() -> str:
    """The compute behind every recorded run: how many, their summed wall time and CPUs."""
    runs = recorded_runs()
    hours = sum(run["wall_s"] for run in runs) / 3600
    steps = sum(run["steps"] for run in runs)
    cpus = ", ".join(sorted({run.get("cpu", "CPU not recorded") for run in runs}))
    return f"{len(runs)} runs, {steps:,} env steps, {hours:.1f} h of wall time ({cpus})"


def chance_level(task: str, episodes: int, goal_seed: int | None = None) -> float:
    """The success of a still policy over ``episodes`` episodes (on the one goal of
    ``goal_seed`` where given): where a run that learned nothing sits."""
    import numpy as np

    from herkit.envs.task_variants import FixedGoal

    env = fetch_env(task)
    if goal_seed is not None:
        env = FixedGoal(env, goal_seed)
    return success_of(env, lambda observation: np.zeros(env.action_space.shape), episodes)


def policy_success(run: Path, episodes: int, own_goal: bool, goal_seed: int | None = None) -> float:
    """The success of ``run``'s last policy over ``episodes`` episodes: on its own env
    (``own_goal``) or the task's, on the one goal of ``goal_seed`` where given."""
    import torch

    from herkit.training.policy import load_policy

    torch.set_num_threads(1)  # one observation at a time: threads only wait on each other
    from herkit.envs.task_variants import FixedGoal

    policy = load_policy(run)
    env = policy.make_env() if own_goal else fetch_env(policy.env_id)
    if goal_seed is not None:
        env = FixedGoal(env, goal_seed)
    return success_of(env, policy.act, episodes)


def goals_without_free_success(task: str, count: int, episodes: int) -> list[int]:
    """The first ``count`` goal seeds on which a still policy never succeeds over
    ``episodes`` resets (each checked with :func:`chance_level`)."""
    import numpy as np

    env = fetch_env(task)
    starts = np.stack([env.reset(seed=seed)[0]["achieved_goal"] for seed in range(episodes)])
    reach = env.unwrapped.distance_threshold
    found: list[int] = []
    goal_seed = 0
    while len(found) < count:
        goal = env.reset(seed=goal_seed)[0]["desired_goal"]
        if np.linalg.norm(starts - goal, axis=-1).min() >= reach:
            level = chance_level(task, episodes, goal_seed)
            print(f"{task}, the goal of seed {goal_seed}: a still policy succeeds in {level:.3f}")
            if level == 0:
                found.append(goal_seed)
        goal_seed += 1
    env.close()
    return found


def fetch_env(task: str) -> Any:
    """The Fetch task's env, as gymnasium-robotics makes it."""
    import gymnasium as gym
    import gymnasium_robotics

    gym.register_envs(gymnasium_robotics)
    return gym.make(task)


def success_of(env: Any, act: Any, episodes: int) -> float:
    """The share of ``episodes`` episodes of ``env`` (reset seeds 0, 1, ...; actions
    ``act(observation)``) that end in success; closes ``env``."""
    successes = 0.0
    for seed in range(episodes):
        observation, _ = env.reset(seed=seed)
        done, info = False, {}
        while not done:
            observation, _, terminated, truncated, info = env.step(act(observation))
            done = terminated or truncated
        successes += float(info["is_success"])
    env.close()
    return successes / episodes


def pace_of(steps: int) -> str:
    """How long ``steps`` env steps take at the recorded runs' pace, one run at a time."""
    runs = recorded_runs()
    seconds = sum(run["wall_s"] for run in runs)
    if not seconds:
        return ""
    pace = sum(run["steps"] for run in runs) / seconds
    return f": about {steps / pace / 3600:.1f} h at the recorded runs' {pace:,.0f} env steps/s"


def fill_page(text: str) -> str:
    """``text`` with every marked part made again from the records."""
    return common.fill_marked(
        text, MARKED, lambda what: compute() if what == "compute" else table(what)
    )


def refresh_page() -> bool:
    """Make :data:`PAGE`'s tables again from the records (False where there is no page)."""
    page = common.source(PAGE)  # a trial's own page, else the record's
    if not page.exists():
        return False
    with common.record_lock(RECORD):  # two jobs ending at once: the later one's tables
        PAGE.write_text(fill_page(page.read_text()))
    return True


def draw(figure: str) -> Path:
    """The figure in the paper's layout (fig7: the highest and average success against k)."""
    groups = records_of(figure)
    tasks = sorted({key.split("/")[0] for key in groups}, key=TASKS.index)
    path = FIGURES / f"paper_{figure}.png"
    n = len(tasks)
    grid = (2, n, (5 * n, 7)) if figure == "fig7" else (1, n, (5.5 * n, 4.2))
    with common.figure(path, *grid[:2], figsize=grid[2], squeeze=False) as (_, axes):
        if figure == "fig7":
            draw_strategies(axes, tasks, groups)
        else:
            draw_curves(axes[0], tasks, groups, {setting.name for setting in settings_of(figure)})
    return path


def draw_strategies(axes: Any, tasks: list[str], groups: dict[str, list[dict[str, Any]]]) -> None:
    """fig7: per task, the highest and the average success against k, a line per strategy
    and seed (other seeds than the first dashed), and no HER's level per seed."""
    for column, task in enumerate(tasks):
        for row, (measure, title) in enumerate(((highest, "highest"), (average, "average"))):
            axis = axes[row][column]
            for index, strategy in enumerate(STRATEGIES):
                by_seed: dict[int, list[tuple[int, float]]] = {}
                for k in KS:
                    for record in groups.get(f"{task}/{strategy} k={k}", []):
                        by_seed.setdefault(record["seed"], []).append((k, measure(record)))
                for seed, points in sorted(by_seed.items()):
                    ks, values = zip(*points, strict=True)
                    first = seed == min(by_seed)
                    style = {
                        "marker": "o",
                        "color": f"C{index}",
                        "linestyle": "-" if first else "--",
                        "markerfacecolor": f"C{index}" if first else "none",
                        "label": f"{strategy}, seed {seed}",
                    }
                    axis.plot(ks, values, **style)
            for record in groups.get(f"{task}/none", []):
                seed = record["seed"]
                axis.axhline(
                    measure(record),
                    color="grey",
                    linestyle="--" if seed else ":",
                    label=f"none (no HER), seed {seed}",
                )
            axis.set(xscale="log", xticks=KS, xticklabels=[str(k) for k in KS], xlabel="k")
            axis.set(ylabel=f"{title} success rate", ylim=(-0.02, 1.02), title=task)
            axis.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7, ncol=2)


def draw_curves(
    axes: Any, tasks: list[str], groups: dict[str, list[dict[str, Any]]], own: set[str]
) -> None:
    """fig4 to fig6: per task, success against env steps, a setting's median and band;
    dashed, another figure's runs (not among ``own``)."""
    for axis, task in zip(axes, tasks, strict=True):
        keys = [key for key in groups if key.startswith(f"{task}/")]
        for index, key in enumerate(keys):
            records = groups[key]
            steps, _, median, low, high = common.median_band([r["curve"] for r in records])
            name = key.split("/", 1)[1]
            seeds = f"{len(records)} seed{'s' * (len(records) > 1)}"
            style = {"color": f"C{index}", "linestyle": "-" if name in own else "--"}
            axis.plot(steps, median, label=f"{name}, {seeds}", **style)
            axis.fill_between(steps, low, high, color=f"C{index}", alpha=0.15, linewidth=0)
        axis.set(xlabel="env steps", ylabel="success rate", ylim=(-0.02, 1.02), title=task)
        axis.grid(alpha=0.3)
        axis.legend(fontsize=7)


def main() -> None:
    """The command line (see the module's docstring)."""
    cli = common.parser(__doc__)
    cli.add_argument("figure", choices=FIGURE_NAMES)
    cli.add_argument(
        "--tasks", nargs="+", choices=TASKS, help="default: FetchPush-v4 for fig7, all three else"
    )
    cli.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    cli.add_argument("--settings", nargs="+", default=None, help="names of settings to run")
    cli.add_argument("--steps", type=int, default=None, help="env steps of every run")
    cli.add_argument("--runs", type=Path, default=common.ROOT / "runs" / "paper")
    cli.add_argument("--jobs", type=int, default=1, help="runs at once")
    cli.add_argument("--plan", action="store_true", help="show the grid's runs, run none")
    cli.add_argument("--draw", action="store_true", help="draw from the records, run none")
    episodes = {"type": int, "metavar": "EPISODES"}
    cli.add_argument(
        "--chance", **episodes, help="the success of a policy that never moves; run none"
    )
    cli.add_argument(
        "--many-goals",
        **episodes,
        help="fig5: each run's last policy on its goal and on the task's goals, and the "
        "many-goal policy of its seed on its goal; run none",
    )
    cli.add_argument(
        "--find-goals",
        type=int,
        metavar="COUNT",
        help="fig5: the first COUNT goal seeds without free success over --chance episodes "
        "(default 500); run none",
    )
    args = cli.parse_args()
    tasks = args.tasks or (["FetchPush-v4"] if args.figure == "fig7" else list(TASKS))
    settings = [s for s in settings_of(args.figure) if not args.settings or s.name in args.settings]
    if args.settings and len(settings) != len(args.settings):
        known = ", ".join(repr(s.name) for s in settings_of(args.figure))
        cli.error(f"--settings: {args.figure}'s settings are {known}")
    budget = {task: args.steps or BUDGETS[task] for task in tasks}
    grid = [  # each run: its task, setting, the figure and setting it lives under, seed, folder
        (task, setting, figure, home, seed, run_dir(args.runs, figure, task, home, seed))
        for task in tasks
        for setting in settings
        for figure, home in [home_of(args.figure, setting)]
        for seed in args.seeds
    ]
    if args.find_goals:
        for task in tasks:
            found = goals_without_free_success(task, args.find_goals, args.chance or 500)
            print(f"{task}: goal seeds without free success: {found}")
        return
    if args.chance:  # fig5's goals are the seeds'
        goals = [(f"the goal of seed {s}", s) for s in args.seeds] if args.figure == "fig5" else []
        for task in tasks:
            for name, goal_seed in goals or [("its goals", None)]:
                level = chance_level(task, args.chance, goal_seed)
                print(
                    f"{task}, {name}: a policy that never moves succeeds in {level:.3f} of "
                    f"{args.chance:,} episodes"
                )
        return
    if args.many_goals:
        if args.figure != "fig5":
            cli.error("--many-goals: only fig5's runs have one goal")
        many_goal_policy: dict[tuple[str, int, int], str] = {}
        for task, setting, _, _, seed, run in grid:
            state = state_of(run, budget[task])
            if state != "done":
                print(f"{task} | {setting.name} | seed {seed} | {state}: not judged")
                continue
            own, many = (policy_success(run, args.many_goals, own) for own in (True, False))
            flags = setting.flags
            goal = int(flags[flags.index("--goal-seed") + 1]) if "--goal-seed" in flags else seed
            if (task, seed, goal) not in many_goal_policy:
                figure_of, name = REFERENCE["fig5"]  # fig4's DDPG+HER, many goals
                setting_of = next(s for s in settings_of(figure_of) if s.name == name)
                reference = run_dir(args.runs, figure_of, task, setting_of, seed)
                known = state_of(reference, budget[task]) == "done"
                level = policy_success(reference, args.many_goals, False, goal) if known else None
                many_goal_policy[task, seed, goal] = "not run" if level is None else f"{level:.3f}"
            print(
                f"{task} | {setting.name} | seed {seed} | its goal {own:.3f} | the task's "
                f"goals {many:.3f} | the many-goal policy on its goal "
                f"{many_goal_policy[task, seed, goal]} | {args.many_goals:,} episodes each"
            )
        return
    if args.plan:
        total = 0
        for task, setting, figure, home, seed, run in grid:
            state, made = progress_of(run, budget[task])
            total += budget[task] - made
            shared = f" ({figure}'s {home.name})" if figure != args.figure else ""
            steps = f"{budget[task]:,} env steps"
            print(f"{task} | {setting.name}{shared} | seed {seed} | {steps} | {state}")
        runs = f"{len(grid)} run" + ("" if len(grid) == 1 else "s")
        print(f"{runs}, {total:,} env steps left{pace_of(total)}")
        return
    if not args.draw:
        with ThreadPoolExecutor(args.jobs) as pool:
            futures = [
                pool.submit(train, figure, task, home, seed, budget[task], run)
                for task, _, figure, home, seed, run in grid
            ]
            for future in futures:
                future.result()  # a failure of the script itself is raised, not lost
    print(table(args.figure))
    print(f"figure: {draw(args.figure)}")
    print(f"all records: {compute()}")
    if refresh_page():
        print(f"tables of {PAGE.relative_to(common.ROOT)} made from the records")


if __name__ == "__main__":
    main()
