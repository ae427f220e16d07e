"""Speed benchmark of :class:`herkit.HerReplayBuffer` alone: ``herkit bench buffer``.

It times the two operations an off-policy HER agent does all the time, with FetchPush's
shapes (observation 25, goals 3, action 4, float32), episodes of 50 steps ended by
``truncated``, a 1M-transition buffer, the ``future`` strategy with ``k = 4``, Fetch's
sparse reward ``-(||achieved - desired|| > 0.05)`` and batches of 256: **add**
(transitions per second, from 1 env and from 16) and **sample** (median milliseconds per
``sample(batch_size)`` call at each ``stored`` size). herkit is timed with
``relabel="sample"`` (plain and ``prioritized=True``) and with ``relabel="store"``;
:func:`check_targets` compares the numbers with :data:`TARGETS`.

The modules, in the order they build on each other:

- :mod:`herkit.bench.data`: FetchPush's shapes, :func:`fetch_reward` and
  :class:`Episodes`, the random data every buffer is filled with.
- :mod:`herkit.bench.settings`: :class:`BufferBenchConfig`, the command's settings.
- :mod:`herkit.bench.timing`: :func:`fill`, :func:`measure`, :func:`run_buffer_bench`
  (herkit's rows), :data:`TARGETS` and :func:`check_targets`.
- :mod:`herkit.bench.table`: :func:`environment_info`, :func:`print_buffer_table` and
  :func:`bench_buffer`, the command itself.

:mod:`herkit.bench.clock` holds :func:`time_updates`, the one clock of every update timing
(here and in ``benchmarks/``): updates per second over a wall-clock window after a
warm-up, or the median time of one call.

``herkit bench update`` times the learner (sample + update per algorithm, size, batch,
precision and update mode): :mod:`herkit.bench.settings` holds its settings,
:mod:`herkit.bench.update` the measurement (it imports torch when it runs).

The same data against stable-baselines3's and cpprb's HER buffers is
``python benchmarks/buffer.py`` in a source checkout: it builds on :class:`Episodes`,
:func:`fill` and :func:`measure` here and prints its rows with :func:`print_buffer_table`.
"""

from herkit.bench.clock import UpdateTiming, time_updates
from herkit.bench.data import (
    ACTION_DIM,
    DISTANCE_THRESHOLD,
    GOAL_DIM,
    MANY_ENVS,
    OBSERVATION_DIM,
    POOL_EPISODES,
    Episodes,
    fetch_reward,
)
from herkit.bench.settings import BufferBenchConfig, UpdateBenchConfig
from herkit.bench.table import bench_buffer, environment_info, print_buffer_table
from herkit.bench.timing import TARGETS, check_targets, fill, measure, run_buffer_bench

__all__ = [
    "ACTION_DIM",
    "DISTANCE_THRESHOLD",
    "GOAL_DIM",
    "MANY_ENVS",
    "OBSERVATION_DIM",
    "POOL_EPISODES",
    "TARGETS",
    "BufferBenchConfig",
    "Episodes",
    "UpdateBenchConfig",
    "UpdateTiming",
    "bench_buffer",
    "check_targets",
    "environment_info",
    "fetch_reward",
    "fill",
    "measure",
    "print_buffer_table",
    "run_buffer_bench",
    "time_updates",
]
