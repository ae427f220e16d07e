"""Replay-buffer speed benchmark: ``python benchmarks/buffer.py [--peers]``.

The same as ``herkit bench buffer [--peers]``; see :mod:`herkit.bench` and
docs/benchmarks.md. ``--help`` lists every setting.
"""

from __future__ import annotations

import tyro

from herkit.bench import BufferBenchConfig, bench_buffer

if __name__ == "__main__":
    bench_buffer(tyro.cli(BufferBenchConfig))
