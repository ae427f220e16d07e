"""Training a goal-conditioned agent with HER: the loop (:mod:`~herkit.training.loop`, one
file read top to bottom), what it sets up first (:mod:`~herkit.training.startup`), the run in
progress and its phases (:mod:`~herkit.training.run`), the learner
(:mod:`~herkit.training.learner`), the counters (:mod:`~herkit.training.state`), env
restarts and how a run stops (:mod:`~herkit.training.restarts`,
:mod:`~herkit.training.stopping`), how the update runs (:mod:`~herkit.training.update_plan`),
and what rebuilds a run from its directory for training, evaluation and a loaded policy
(:mod:`~herkit.training.build`, :mod:`~herkit.training.evaluation`,
:mod:`~herkit.training.policy`). The figures are drawn in another process
(:mod:`~herkit.presentation.presenter`); videos are written by :mod:`~herkit.presentation.video`.
"""
