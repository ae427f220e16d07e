"""What is shown of runs, made from their files: curves (:mod:`~herkit.presentation.plots`,
runs grouped by setting in :mod:`~herkit.presentation.groups`), the interactive HTML report
(:mod:`~herkit.presentation.report`, the page around its figures included), a run's
figures drawn in a child process (:mod:`~herkit.presentation.figures`, started by
:mod:`~herkit.presentation.presenter`) and videos (:mod:`~herkit.presentation.video`).

The training loop imports the presenter and the video writer, never the plotting modules:
a training process never imports matplotlib or Plotly, and a figure that fails cannot stop
a run.
"""
