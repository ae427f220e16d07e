"""The vectorised sum tree against a naive cumulative-sum reference."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from herkit.buffer.priority import SumTree

leaf_values = st.lists(
    st.one_of(st.just(0.0), st.floats(1e-3, 1e3)), min_size=1, max_size=70
).filter(lambda values: sum(values) > 0)


@settings(max_examples=100, deadline=None)
@given(values=leaf_values, updates=st.lists(st.tuples(st.integers(0, 69), st.floats(0, 10))))
def test_tree_matches_naive_prefix_sums(
    values: list[float], updates: list[tuple[int, float]]
) -> None:
    tree = SumTree(len(values))
    reference = np.array(values)
    tree.set(np.arange(len(values)), reference)
    for index, value in updates:  # writes in several calls, read back once at the end
        index %= len(values)
        tree.set(np.array([index]), value)
        reference[index] = value
    if reference.sum() == 0:
        return
    assert tree.total == pytest.approx(reference.sum())
    np.testing.assert_array_equal(tree.leaves, reference)
    cum = np.cumsum(reference)
    masses = np.random.default_rng(0).random(500) * reference.sum()
    found = tree.find(masses)
    expected = np.searchsorted(cum, masses, side="right")
    # Away from the exact boundaries (float rounding) the leaf is the reference's.
    clear = np.min(np.abs(cum[None, :] - masses[:, None]), axis=1) > 1e-9 * reference.sum()
    np.testing.assert_array_equal(found[clear], expected[clear])
    assert np.all(reference[found] > 0), "a zero-priority leaf was returned"


def test_edges_never_return_a_zero_leaf() -> None:
    tree = SumTree(10)
    tree.set(np.arange(10), np.array([0, 0, 1.0, 0, 0, 2.0, 0, 0, 0, 0]))
    masses = np.array([0.0, 1.0 - 1e-12, 1.0, 3.0 - 1e-12, 3.0, 3.0 + 1e-9, 1e9, -5.0])
    assert set(tree.find(masses).tolist()) <= {2, 5}


def test_stratified_sample_is_proportional() -> None:
    tree = SumTree(4)
    tree.set(np.arange(4), np.array([1.0, 2.0, 3.0, 4.0]))
    rng = np.random.default_rng(0)
    counts = np.bincount(tree.sample(100_000, rng.random(100_000)), minlength=4)
    np.testing.assert_allclose(counts / counts.sum(), [0.1, 0.2, 0.3, 0.4], atol=0.005)


def test_empty_tree_refuses_to_sample() -> None:
    with pytest.raises(ValueError, match="all zero"):
        SumTree(8).sample(4, np.random.default_rng(0).random(4))
    with pytest.raises(ValueError, match="capacity"):
        SumTree(0)


def test_load_leaves_rebuilds_every_level() -> None:
    leaves = np.random.default_rng(1).random(37)
    tree = SumTree(37)
    tree.load_leaves(leaves)
    assert tree.total == pytest.approx(leaves.sum())
    fresh = SumTree(37)
    fresh.set(np.arange(37), leaves)
    masses = np.linspace(0, leaves.sum() * 0.999, 100)
    np.testing.assert_array_equal(tree.find(masses), fresh.find(masses))


def test_slice_writes_merge_and_mix_with_index_writes() -> None:
    tree = SumTree(10)
    reference = np.zeros(10)
    for index, value in [
        (slice(0, 3), 1.0),
        (slice(3, 5), 2.0),
        (np.array([1, 9]), 5.0),
        (slice(8, 10), 3.0),
        (slice(2, 4), 0.5),
    ]:
        tree.set(index, value)
        reference[index] = value
    assert tree.total == pytest.approx(reference.sum())
    masses = np.linspace(0, reference.sum() * 0.999, 50)
    np.testing.assert_array_equal(
        tree.find(masses), np.searchsorted(np.cumsum(reference), masses, side="right")
    )
