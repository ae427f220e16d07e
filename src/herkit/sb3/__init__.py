"""herkit's HER buffer for Stable-Baselines3: change one import, keep the training loop.

::

    from herkit.sb3 import HerReplayBuffer  # was: from stable_baselines3 import HerReplayBuffer

    model = SAC("MultiInputPolicy", env, replay_buffer_class=HerReplayBuffer,
                replay_buffer_kwargs={"n_sampled_goal": 4, "goal_selection_strategy": "future"})

The class takes SB3's keywords (``n_sampled_goal``, ``goal_selection_strategy`` as a string
or SB3's ``GoalSelectionStrategy``, ``copy_info_dict``, ``handle_timeout_termination``;
``optimize_memory_usage=True`` is refused) and herkit's own: ``"random"`` as a strategy,
``relabel="store"`` (the paper's relabelling at episode end), ``goal_mix``,
``terminal_on_success``, ``info_keys``, ``prioritized`` (with ``alpha``, ``beta``),
``seed``, and ``n_steps`` with ``gamma`` (n-step returns, which SB3's own HER buffer does
not offer). Storage, relabelling and sampling are :class:`herkit.HerReplayBuffer`'s; SB3 sees
a ``stable_baselines3.HerReplayBuffer`` subclass, so SB3's algorithms (SAC, TD3, DDPG, DQN,
sb3-contrib's TQC) pass it the env, and ``save_replay_buffer`` / ``load_replay_buffer``
pickle and restore it exactly (stored data, open episodes and random state).
stable-baselines3 is an optional extra: ``bash install.sh sb3``.

Kept from SB3, where SB3 is right:

- an episode cut by a time limit (``info["TimeLimit.truncated"]``) bootstraps, unless
  ``handle_timeout_termination=False``, which makes every ``done`` terminal;
- ``future`` goals come from the same episode, from the transition itself on (inclusive);
- a sample that keeps its own goal gets the reward the env gave; a relabelled one gets the
  env's ``compute_reward(achieved_goal, desired_goal, info)`` of the first env, computed for
  the next achieved goal; a VecNormalize env given to ``sample`` normalises the
  observations and rewards of the batch;
- ``load_replay_buffer(..., truncate_last_traj=True)`` ends the episodes that were open when
  the buffer was saved (they bootstrap), with SB3's warning; ``False`` continues them;
- SB3's storage attributes, with SB3's shapes ``(buffer_size, n_envs, ...)``, where
  ``buffer_size`` is, as in SB3, the rows per env: ``observations`` and
  ``next_observations`` (dicts of arrays), ``actions``, ``rewards``, ``dones``,
  ``timeouts``, ``ep_start``, ``ep_length``, ``_current_ep_start``, ``pos``, ``full``. The
  observations and actions are views of herkit's storage; ``rewards`` and
  ``next_observations["desired_goal"]`` (the step's own desired goal, which herkit stores
  once) are read-only views; the episode arrays are computed from herkit's episode table
  and read-only (:mod:`herkit.sb3.views`).

Different from SB3 (SB3's behaviour first):

- SB3 samples only finished episodes and raises before the first episode ends; herkit also
  samples the steps recorded so far of episodes in progress (their relabelled goals come
  from steps already recorded; ``final`` keeps their own goal until they end), so training
  can start before the first episode ends. ``relabel="store"`` samples finished episodes only.
- SB3 keeps the stored ``done`` flag for relabelled samples; herkit does too where episodes
  do not end on success. Where they do, a relabelled sample is terminal when its goal is
  reached (the env's success test: a threshold on ``compute_reward`` learned from
  ``info["is_success"]``, or ``success_threshold=``) or when the env ended the step for
  another reason (a crash), where SB3 keeps the flag of the original goal. Whether they do
  is what the env declares (``terminates_on_success``, or ``continuing_task=False``); an env
  that declares nothing keeps SB3's flags unless it is seen both to end an episode at a
  success and to give step rewards with a term ``compute_reward`` lacks, such as
  highway-env's parking, where reached goals made terminal learned far more
  (:func:`herkit.buffer.ending.sb3_ending`); ``terminal_on_success=True`` or ``False``
  decides instead.

Kept from SB3 by default, herkit's own buffer differing: a relabelled sample's reward is
``compute_reward`` alone, which drops the terms of the env's reward that ``compute_reward``
lacks (highway-env's parking: a -5 collision penalty). ``keep_env_terms=True`` adds them,
the env's reward minus ``compute_reward`` of the step's own goal, as
:class:`herkit.HerReplayBuffer` does (:mod:`herkit.buffer.env_terms`); with SB3's SAC on
parking it learned less (docs/guide-sb3.md has the figures of both envs measured).

- When an env is reset outside the buffer's sight (a second ``learn()`` with
  ``reset_num_timesteps=True`` resets the envs), SB3 glues the new episode onto the old one
  and draws ``future`` goals across the two; herkit ends the old episode when an env's
  observation is not the next observation it stored last.
- ``copy_info_dict=True`` deep-copies every info dict in SB3; herkit stores the fields that
  are numeric scalars in the first infos as columns and the rest per step where they occur
  (:mod:`herkit.sb3.infos`; a warning, :class:`InfoFieldsChosen`, says once which), and
  hands ``compute_reward`` an array of info dicts as SB3 does, rebuilt per sample (new
  dicts, the stored values not deep-copied again). With ``info_keys=(...)`` it stores only
  those fields and hands ``compute_reward`` one dict of arrays (``info["key"]`` is the
  batch's column): the fast form, for a ``compute_reward`` written for it.
- The relabelled share is drawn per sample (probability ``k / (k + 1)``), where SB3 relabels
  exactly ``int(k / (k + 1) * batch_size)`` samples, always the first ones of the batch.
- Random numbers come from the buffer's own generator, seeded by ``seed`` or, when it is
  None, from numpy's global generator (which SB3's ``seed=`` sets) at construction.
- ``dones`` reads 1 on the last stored step of an episode that herkit ended because the env
  was reset outside ``add``; SB3 has no such episode end.
- SB3's ``infos`` array is not offered. Observation keys beyond the GoalEnv's three (an
  image, a proprioception split) are stored and returned as in SB3.

n-step returns with HER: SB3 ignores an algorithm's ``n_steps`` with a custom buffer class
and its own HerReplayBuffer has none. Pass ``replay_buffer_kwargs={"n_steps": 3, "gamma":
0.98}`` (the algorithm's gamma): each sample sums the rewards of its own, possibly
relabelled, goal over up to ``n_steps`` steps of its episode, stopping at a terminal step
(a crash, or a relabelled goal reached where episodes end on success) and at the episode's
end, and the batch's ``discounts`` (``gamma ** m``, ``m`` the steps summed) are what SB3's
SAC, TD3, DDPG, DQN and sb3-contrib's TQC bootstrap with.

Prioritized replay: SB3's algorithms do not weight their losses, so ``prioritized=True`` is
a hook for a subclass of the algorithm. After each :meth:`HerReplayBuffer.sample`,
``buffer.last_weights`` holds the importance weights ``(B, 1)`` on the device and
``buffer.last_indices`` the keys to pass to :meth:`HerReplayBuffer.update_priorities` with
the new priorities (e.g. ``|TD error|``) from the subclass's ``train``.
"""

from herkit.extras import needs_extra

try:
    import stable_baselines3  # noqa: F401  (first: herkit.sb3.buffer may be imported already)

    from herkit.sb3.buffer import GOAL_KEYS, HerReplayBuffer, InfoFieldsChosen
except ModuleNotFoundError as error:  # Stable-Baselines3 (or torch) not installed
    raise ModuleNotFoundError(needs_extra(error, "herkit.sb3"), name=error.name) from None

__all__ = ["GOAL_KEYS", "HerReplayBuffer", "InfoFieldsChosen"]
