"""The schedule of a run: evaluations, checkpoints and videos are due at the multiples of
their intervals, whatever a loop iteration moves and whatever the run did before."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from herkit.config.presets import GPU_PRESETS, PRESETS
from herkit.config.recipes import RECIPES
from herkit.config.train import TrainConfig, preset_config
from herkit.runtime.console import StopOnSignal
from herkit.runtime.distributed import Context
from herkit.training.schedule import Due, Schedule, first_state
from herkit.training.state import LoopState

Steps = dict[str, list[int]]


def config(**changes: Any) -> TrainConfig:
    values: dict[str, Any] = dict(steps=400, n_envs=16, eval_every=10, checkpoint_every=10)
    return dataclasses.replace(TrainConfig(), **(values | changes))


def drive(schedule: Schedule, iterations: int, stride: int) -> Steps:
    """The loop's calls on ``schedule`` (loop.py) for ``iterations`` iterations that move the
    clock ``stride`` steps each (env steps stored, or gradient steps on a dataset alone):
    the steps at which each thing was done."""
    state, stop = schedule.state, StopOnSignal()
    done: Steps = {"evaluate": [], "checkpoint": [], "video": []}
    for _ in range(iterations):
        if state.phase == "offline":
            state.updates += stride
        else:
            state.env_steps += stride
        due = schedule.due(stop)
        now = schedule.planned()
        if due.evaluate:
            due = schedule.evaluated(due, target_reached=False)
            done["evaluate"].append(now)
        if schedule.video_due(due):
            schedule.recorded()
            done["video"].append(now)
        if due.checkpoint:
            schedule.checkpointed(due)
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
    schedule = Schedule(run, first_state(run), Context())
    done = drive(schedule, iterations=25, stride=16)
    state = schedule.state
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
    done = drive(Schedule(run, first_state(run), Context()), 100, stride)
    assert done["evaluate"] == [*crossed(stride, eval_every, end - stride), end]
    assert done["checkpoint"] == [*crossed(stride, checkpoint_every, end - stride), end]
    if video_every:
        assert done["video"] == [*crossed(stride, video_every, end - stride), end]
    lagging = LoopState(env_steps=40 * stride, next_eval=1, next_checkpoint=1, next_video=1)
    later = Schedule(run, lagging, Context())
    drive(later, 1, stride)  # what the lag owes is done once, at the first step
    rest = drive(later, 59, stride)
    assert rest == {name: [s for s in steps if s > 41 * stride] for name, steps in done.items()}


def test_the_offline_phase_and_going_online_keep_to_the_multiples() -> None:
    """Gradient steps on a dataset alone, then env steps: each phase's clock is due at the
    multiples of the intervals, from the phase's start."""
    run = config(offline_steps=45, steps=64, n_envs=16, eval_every=20, checkpoint_every=30)
    schedule = Schedule(run, first_state(run), Context())
    offline = drive(schedule, 45, 1)
    assert offline["evaluate"] == [20, 40, 45] and offline["checkpoint"] == [30, 45]
    schedule.go_online()
    state = schedule.state
    assert (state.next_eval, state.next_checkpoint) == (20, 30)
    online = drive(schedule, 4, 16)
    assert online["evaluate"] == [32, 48, 64] and online["checkpoint"] == [32, 64]


def test_an_interrupted_run_s_checkpoint_does_not_move_the_regular_ones() -> None:
    run = config(n_envs=4, checkpoint_every=100)
    state = first_state(run)
    state.env_steps = 124
    schedule = Schedule(run, state, Context())
    schedule.checkpointed(Due(interrupted=True, last=True, checkpoint=True))
    assert state.next_checkpoint == 100
    schedule.checkpointed(Due(checkpoint=True))
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
    for phase, stride, last in (
        ("offline", 1, run.offline_steps),
        ("online", run.n_envs, run.steps),
    ):
        if not last:
            continue
        end = min(last - 1, max(3 * run.eval_every, 2 * run.checkpoint_every))
        schedule = Schedule(run, first_state(run) if phase == "offline" else LoopState(), Context())
        if phase == "online":
            schedule.go_online()
        done = drive(schedule, end // stride, stride)
        assert done["evaluate"] == earlier_rule(stride, run.eval_every, end), phase
        assert done["checkpoint"] == earlier_rule(stride, run.checkpoint_every, end), phase
