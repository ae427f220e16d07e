"""The phase of a run: its clock (gradient steps on a dataset alone, then env steps), and
the evaluations, checkpoints and videos due at the multiples of their intervals on it,
whatever a loop iteration moves and whatever the run did before."""

from __future__ import annotations

import dataclasses
import math
import re
from pathlib import Path
from typing import Any

import pytest

import herkit
from herkit.config.presets import GPU_PRESETS, PRESETS
from herkit.config.recipes import RECIPES
from herkit.config.resolve import preset_config
from herkit.config.run import config_for
from herkit.config.train import TrainConfig
from herkit.runtime.console import StopOnSignal
from herkit.runtime.distributed import Context
from herkit.training.phase import Due, Phase, check_steps_left, first_state
from herkit.training.state import LoopState

Steps = dict[str, list[int]]


def config(**changes: Any) -> TrainConfig:
    values: dict[str, Any] = dict(steps=400, n_envs=16, eval_every=10, checkpoint_every=10)
    return dataclasses.replace(TrainConfig(), **(values | changes))


def drive(phase: Phase, iterations: int, stride: int) -> Steps:
    """The loop's calls on ``phase`` (loop.py) for ``iterations`` iterations that move the
    clock ``stride`` steps each (env steps stored, or gradient steps on a dataset alone):
    the steps at which each thing was done."""
    state, stop = phase.state, StopOnSignal()
    done: Steps = {"evaluate": [], "checkpoint": [], "video": []}
    for _ in range(iterations):
        if phase.offline:
            state.updates += stride
        else:
            state.env_steps += stride
        due = phase.due(stop)
        now = phase.planned()
        if due.evaluate:
            due = phase.evaluated(due, target_reached=False)
            done["evaluate"].append(now)
        if phase.video_due(due):
            phase.recorded()
            done["video"].append(now)
        if due.checkpoint:
            phase.checkpointed(due)
            done["checkpoint"].append(now)
        if due.last:
            break
    return done


def crossed(stride: int, every: int, end: int) -> list[int]:
    """The steps (multiples of ``stride`` up to ``end``) at or past which a multiple of
    ``every`` was first reached: where a schedule that is a function of the step is due."""
    return [s for s in range(stride, end + 1, stride) if s // every > (s - stride) // every]


def test_an_iteration_past_several_intervals_leaves_the_schedule_at_the_next_multiple() -> None:
    """16 envs and an evaluation every 10 env steps: at env step 400 the next evaluation is
    due at 410, not 260 (the interval added to the last due step, once per evaluation)."""
    run = config(video_every=10)
    phase = Phase(run, first_state(run), Context())
    done = drive(phase, iterations=25, stride=16)
    state = phase.state
    assert state.env_steps == 400
    assert (state.next_eval, state.next_checkpoint, state.next_video) == (410, 410, 410)
    assert done["evaluate"] == done["checkpoint"] == done["video"] == crossed(16, 10, 400)


@pytest.mark.parametrize(
    ("stride", "eval_every", "checkpoint_every", "video_every"),
    [(16, 10, 25, 7), (16, 24, 100, 40), (3, 7, 10, 5), (48, 20_000, 100_000, 0), (1, 1, 2, 3)],
)
def test_what_is_due_is_a_function_of_the_step_alone(
    stride: int, eval_every: int, checkpoint_every: int, video_every: int
) -> None:
    """Each is due at the first step at or past each multiple of its interval; a schedule
    made afresh at any step (as the run resumed from there, or one whose counters lagged)
    is due at the same steps from there on."""
    run = config(
        steps=100 * stride,
        n_envs=stride,
        eval_every=eval_every,
        checkpoint_every=checkpoint_every,
        video_every=video_every,
    )
    end = 100 * stride
    done = drive(Phase(run, first_state(run), Context()), 100, stride)
    assert done["evaluate"] == [*crossed(stride, eval_every, end - stride), end]
    assert done["checkpoint"] == [*crossed(stride, checkpoint_every, end - stride), end]
    if video_every:
        assert done["video"] == [*crossed(stride, video_every, end - stride), end]
    lagging = LoopState(env_steps=40 * stride, next_eval=1, next_checkpoint=1, next_video=1)
    later = Phase(run, lagging, Context())
    drive(later, 1, stride)  # what the lag owes is done once, at the first step
    rest = drive(later, 59, stride)
    assert rest == {name: [s for s in steps if s > 41 * stride] for name, steps in done.items()}


def test_the_offline_phase_and_going_online_keep_to_the_multiples() -> None:
    """Gradient steps on a dataset alone, then env steps: each phase's clock is due at the
    multiples of the intervals, from the phase's start."""
    run = config(offline_steps=45, steps=64, n_envs=16, eval_every=20, checkpoint_every=30)
    phase = Phase(run, first_state(run), Context())
    offline = drive(phase, 45, 1)
    assert offline["evaluate"] == [20, 40, 45] and offline["checkpoint"] == [30, 45]
    phase.go_online()
    state = phase.state
    assert (state.next_eval, state.next_checkpoint) == (20, 30)
    online = drive(phase, 4, 16)
    assert online["evaluate"] == [32, 48, 64] and online["checkpoint"] == [32, 64]


def test_an_interrupted_run_s_checkpoint_does_not_move_the_regular_ones() -> None:
    run = config(n_envs=4, checkpoint_every=100)
    state = first_state(run)
    state.env_steps = 124
    phase = Phase(run, state, Context())
    phase.checkpointed(Due(interrupted=True, last=True, checkpoint=True))
    assert state.next_checkpoint == 100
    phase.checkpointed(Due(checkpoint=True))
    assert state.next_checkpoint == 200


def earlier_rule(stride: int, every: int, end: int) -> list[int]:
    """The due steps (multiples of ``stride`` up to ``end``) of the schedule before it kept
    to the multiples: due once the step reached the last due step plus the interval."""
    steps, next_due = [], every
    for step in range(stride, end + 1, stride):
        if step >= next_due:
            steps.append(step)
            next_due += every
    return steps


def presets() -> list[tuple[str, str, str | None]]:
    """Every preset of ``herkit train``, with and without each recipe."""
    names = {"Fetch": "FetchSlide-v4", "pointmaze-": "pointmaze-medium-navigate-v0"}
    names |= {"antmaze-": "antmaze-medium-navigate-v0", "PointMaze": "PointMaze_UMaze-v3"}
    names |= {"humanoidmaze-": "humanoidmaze-medium-navigate-v0"}
    cases: list[tuple[str, str, str | None]] = [
        (names.get(key, key), "cpu", None) for key in PRESETS
    ]
    cases += [(names.get(key, key), "cuda", None) for key in GPU_PRESETS]
    cases += [("FetchPush-v4", "cpu", recipe) for recipe in RECIPES]
    return cases


@pytest.mark.parametrize(("env_id", "device", "recipe"), presets())
def test_the_presets_evaluate_and_checkpoint_at_the_same_steps_as_before(
    env_id: str, device: str, recipe: str | None
) -> None:
    """Where an iteration moves fewer steps than the interval (every preset and recipe),
    a run evaluates and checkpoints where the earlier rule did, in each of its phases (here
    up to its second checkpoint, at least three evaluations)."""
    run = preset_config(env_id, device, recipe)
    for name, stride, last in (
        ("offline", 1, run.offline_steps),
        ("online", run.n_envs, run.steps),
    ):
        if not last:
            continue
        end = min(last - 1, max(3 * run.eval_every, 2 * run.checkpoint_every))
        phase = Phase(run, first_state(run) if name == "offline" else LoopState(), Context())
        if name == "online":
            phase.go_online()
        done = drive(phase, end // stride, stride)
        assert done["evaluate"] == earlier_rule(stride, run.eval_every, end), name
        assert done["checkpoint"] == earlier_rule(stride, run.checkpoint_every, end), name


def loop_events(phase: Phase, updates_per_step: int = 1) -> list[tuple[Any, ...]]:
    """The loop of loop.py on ``phase`` alone (updates owed run at once, nothing learns):
    what it did, where (:attr:`Phase.position`), and the keys of its evaluations (envs at
    offset 10,000) and videos (20,000)."""
    state, stop, due = phase.state, StopOnSignal(), Due()
    events: list[tuple[Any, ...]] = []
    while True:
        state.updates += math.floor(state.owed_updates)  # learn: every update owed
        state.owed_updates -= math.floor(state.owed_updates)
        if due.evaluate:
            due = phase.evaluated(due, target_reached=False)
            events.append(("evaluate", phase.position, phase.episode_key(10_000)))
        if phase.video_every and phase.video_due(due):  # a run with videos
            phase.recorded()
            events.append(("video", phase.position, phase.episode_key(20_000)))
        if due.checkpoint:
            phase.checkpointed(due)
            events.append(("checkpoint", phase.position))
        if due.last:
            return events
        due = Due()
        if not phase.offline_done:
            state.owed_updates += 1
            due = phase.due(stop)
            continue
        if phase.offline:
            events.append(("online", phase.steps_done, phase.unit, phase.length))
            phase.go_online()
        state.env_steps += phase.steps_per_iteration
        state.owed_updates += phase.steps_per_iteration * updates_per_step
        due = phase.due(stop)


def test_the_clock_what_is_due_and_the_seeds_across_the_move_online() -> None:
    """45 gradient steps on a dataset, then 64 env steps of 16 envs: each phase is due at
    the multiples of the intervals on its own clock, the phase's end evaluates and
    checkpoints (the run's end also records a video), and the evaluations and videos are
    keyed by the run's seed, their envs' offset, the phase and its clock: each plays
    episodes of its own."""
    run = config(
        seed=3, offline_steps=45, steps=64, eval_every=20, checkpoint_every=30, video_every=25
    )
    phase = Phase(run, first_state(run), Context())
    assert (phase.unit, phase.length, phase.step_key) == ("gradient steps", 45, "updates")
    gradient = [
        ("evaluate", "gradient step 20", (3, 10_000, 0, 20)),
        ("video", "gradient step 25", (3, 20_000, 0, 25)),
        ("checkpoint", "gradient step 30", None),
        ("evaluate", "gradient step 40", (3, 10_000, 0, 40)),
        ("evaluate", "gradient step 45", (3, 10_000, 0, 45)),
        ("checkpoint", "gradient step 45", None),
        ("online", "45 gradient steps", "gradient steps", 45),
    ]
    env = [
        ("evaluate", "env step 32", (3, 10_000, 1, 32)),
        ("video", "env step 32", (3, 20_000, 1, 32)),
        ("checkpoint", "env step 32", None),
        ("evaluate", "env step 48", (3, 10_000, 1, 48)),
        ("evaluate", "env step 64", (3, 10_000, 1, 64)),
        ("video", "env step 64", (3, 20_000, 1, 64)),
        ("checkpoint", "env step 64", None),
    ]
    expected = [event[:2] if event[2] is None else event for event in gradient + env]
    assert loop_events(phase) == expected
    assert (phase.unit, phase.length, phase.step_key) == ("env steps", 64, "env_steps")
    assert (phase.step, phase.state.updates, phase.steps_done) == (64, 45 + 64, "64 env steps")


def test_an_online_run_is_online_from_the_start_and_keyed_by_its_env_steps() -> None:
    """Without a dataset: the clock is env steps from the first, updates wait for the
    warm-up (a run that trained on a dataset first waits for none)."""
    run = config(steps=48, eval_every=32, checkpoint_every=48, warmup_steps=100)
    phase = Phase(run, first_state(run), Context())
    assert not phase.offline and phase.offline_done and phase.warmup_steps == 100
    assert loop_events(phase) == [
        ("evaluate", "env step 32", (0, 10_000, 1, 32)),
        ("evaluate", "env step 48", (0, 10_000, 1, 48)),
        ("checkpoint", "env step 48"),
    ]
    assert (
        Phase(config(offline_steps=5, warmup_steps=100), LoopState(), Context()).warmup_steps == 0
    )


def test_a_resume_needs_steps_left_in_its_phase(tmp_path: Path) -> None:
    """A checkpoint on the dataset alone resumes for more gradient steps or for env steps;
    one online for more env steps."""

    def on_dataset(offline_steps: int, steps: int) -> TrainConfig:
        return config_for(
            "herkit/PointReach-v0",
            dataset="data.npz",
            algo="gcivl",
            offline_steps=offline_steps,
            steps=steps,
        )

    offline = dataclasses.asdict(LoopState(phase="offline", updates=45))
    check_steps_left(tmp_path, offline, on_dataset(46, 0))
    check_steps_left(tmp_path, offline, on_dataset(45, 16))  # then online
    with pytest.raises(ValueError, match="already trained 45 gradient steps on its dataset"):
        check_steps_left(tmp_path, offline, on_dataset(45, 0))
    online = dataclasses.asdict(LoopState(env_steps=64, updates=45 + 64))
    check_steps_left(tmp_path, online, on_dataset(45, 80))
    with pytest.raises(ValueError, match="already trained 64 env steps"):
        check_steps_left(tmp_path, online, on_dataset(45, 64))
    with pytest.raises(ValueError, match="must be 'offline' or 'online'"):
        Phase(config(), LoopState(phase="dataset"), Context())


def test_only_the_phase_reads_or_writes_which_phase_a_run_is_in() -> None:
    """Every other module asks :class:`Phase` (state.py declares the field)."""
    package = Path(herkit.__file__).parent
    flag = re.compile(r"state\.phase\b|\[\"phase\"\]|\"(?:offline|online)\"|\bphase=")
    readers = {
        str(path.relative_to(package))
        for path in package.rglob("*.py")
        if flag.search(path.read_text())
    }
    assert readers == {"training/phase.py", "training/state.py"}
