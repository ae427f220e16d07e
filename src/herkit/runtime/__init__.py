"""What a run runs on: the CPU cores and how threads and env workers share them
(:mod:`~herkit.runtime.cores`), torchrun's ranks (:mod:`~herkit.runtime.distributed`), the
numeric precision (:mod:`~herkit.runtime.precision`), the terminal and its signals
(:mod:`~herkit.runtime.console`), files written whole (:mod:`~herkit.runtime.files`) and
the ways a run fails (:mod:`~herkit.runtime.failures`). Nothing here knows a run's shape.
"""
