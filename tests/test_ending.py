"""Whether an env's episodes end on success is decided in one place, herkit.buffer.ending:
the caller's setting, else the env's declaration, else its first success."""

from __future__ import annotations

import numpy as np
import pytest

from herkit.buffer.ending import UNKNOWN, Ending, declared_ending, first_success_ends, sb3_ending


def test_the_callers_setting_then_the_declaration_then_the_first_success() -> None:
    declared = Ending(False, "declared by Env.continuing_task")
    assert Ending.given(True).otherwise(declared) == Ending(True, "given")
    assert Ending.given(None).otherwise(declared) == declared
    unknown = Ending.given(None).otherwise(Ending(None))
    assert unknown == Ending(None, UNKNOWN)
    seen = unknown.after(np.array([False, True]), np.array([False, True]), "observed at step 9")
    assert seen == Ending(True, "observed at step 9, a success ended its episode")
    assert seen.after(np.array([True]), np.array([False]), "later") is seen  # decided once
    assert declared.after(np.array([True]), np.array([True]), "observed") is declared


@pytest.mark.parametrize(
    ("success", "terminated", "ends"),
    [
        (None, [True], None),
        ([False, False], [True, True], None),
        ([True, False], [True, False], True),
        ([True, True], [True, False], False),
    ],
)
def test_the_first_success_shows_whether_episodes_end_on_it(
    success: list[bool] | None, terminated: list[bool], ends: bool | None
) -> None:
    given = None if success is None else np.array(success)
    assert first_success_ends(given, np.array(terminated)) is ends


def test_the_declarations_are_read_in_order_and_only_as_bools() -> None:
    def reader(**attributes: object):  # type: ignore[no-untyped-def]
        return lambda name: attributes.get(name)

    assert declared_ending(reader(terminates_on_success=True), "Env") == Ending(
        True, "declared by Env.terminates_on_success"
    )
    assert declared_ending(reader(continuing_task=np.bool_(False)), "Maze").ends is True
    assert declared_ending(reader(continuing_task=True), "Maze").ends is False
    both = reader(terminates_on_success=False, continuing_task=False)
    assert declared_ending(both, "Env").ends is False  # the first one found decides
    assert declared_ending(reader(terminates_on_success="yes"), "Env") == Ending(None)


def test_sb3s_ending_of_an_undeclared_env_needs_a_success_end_and_reward_terms() -> None:
    ended = Ending(True, "observed at the first success, a success ended its episode")
    assert sb3_ending(ended, terms_differ=True).ends is True
    assert "terms beyond compute_reward" in sb3_ending(ended, terms_differ=True).source
    for seen, terms in ((ended, False), (Ending(None), True), (Ending(False, "went on"), True)):
        kept = sb3_ending(seen, terms_differ=terms)
        assert kept.ends is False and kept.source.startswith("SB3's flags")


def test_a_wrapper_that_changes_the_ending_is_read_above_the_env() -> None:
    """PointReach declares that its episodes go on; a wrapper that ends them on success
    says so, or says nothing, and is read first."""
    import gymnasium as gym

    import herkit  # noqa: F401  (registers the envs)
    from herkit.buffer.goal_env import env_ending

    class EndsOnSuccess(gym.Wrapper):  # type: ignore[type-arg]
        terminates_on_success = True

    class SaysNothing(gym.Wrapper):  # type: ignore[type-arg]
        terminates_on_success = None

    env = gym.make("herkit/PointReach-v0")
    assert env_ending(env).ends is False
    assert env_ending(EndsOnSuccess(env)).ends is True
    assert env_ending(SaysNothing(env)) == Ending(None)
