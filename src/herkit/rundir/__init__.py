"""A run directory and what it holds: every file's path (:mod:`~herkit.rundir.paths`), one
owner per directory (:mod:`~herkit.rundir.directory`), ``progress.csv`` and TensorBoard
(:mod:`~herkit.rundir.logs`), ``episodes.csv`` and ``updates.csv``
(:mod:`~herkit.rundir.records`), the run's settings read back
(:mod:`~herkit.rundir.settings`) and the checkpoint (:mod:`~herkit.rundir.checkpoint`). The
training loop writes them; evaluation, a loaded policy and the figures read them.
"""
