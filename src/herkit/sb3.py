"""herkit's HER buffer for Stable-Baselines3: change one import, keep the training loop.

::

    from herkit.sb3 import HerReplayBuffer  # was: from stable_baselines3 import HerReplayBuffer

    model = SAC("MultiInputPolicy", env, replay_buffer_class=HerReplayBuffer,
                replay_buffer_kwargs={"n_sampled_goal": 4, "goal_selection_strategy": "future"})

The class takes SB3's keywords (``n_sampled_goal``, ``goal_selection_strategy`` as a string
or SB3's ``GoalSelectionStrategy``, ``copy_info_dict``, ``handle_timeout_termination``;
``optimize_memory_usage=True`` is refused) and herkit's own: ``"random"`` as a strategy,
``relabel="store"`` (the paper's relabelling at episode end), ``goal_mix``,
``terminal_on_success``, ``info_keys``, ``prioritized`` (with ``alpha``, ``beta``) and
``seed``. Storage, relabelling and sampling are :class:`herkit.HerReplayBuffer`'s; SB3 sees
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
  the buffer was saved (they bootstrap); ``False`` continues them.

Different from SB3 (SB3's behaviour first):

- SB3 samples only finished episodes and raises before the first episode ends; herkit also
  samples the steps recorded so far of episodes in progress (their relabelled goals come
  from steps already recorded; ``final`` keeps their own goal until they end), so training
  can start before the first episode ends. ``relabel="store"`` samples finished episodes only.
- SB3 gives a relabelled sample ``compute_reward`` alone, which drops the terms of the
  env's reward that ``compute_reward`` lacks (highway-env's parking: a -5 collision
  penalty; SAC then learns to crash); herkit adds them: the env's reward minus
  ``compute_reward`` of the step's own goal (see :mod:`herkit.buffer.env_terms`).
- SB3 keeps the stored ``done`` flag for relabelled samples; herkit does too where episodes
  do not end on success. With ``terminal_on_success`` (default: what the env declares as
  ``terminates_on_success``, e.g. herkit's BitFlip) a relabelled sample is terminal when its
  goal is reached (the env's success test: a threshold on ``compute_reward`` learned from
  ``info["is_success"]``, or ``success_threshold=``) or when the env ended the step for
  another reason (a crash), where SB3 keeps the flag of the original goal.
- When an env is reset outside the buffer's sight (a second ``learn()`` with
  ``reset_num_timesteps=True`` resets the envs), SB3 glues the new episode onto the old one
  and draws ``future`` goals across the two; herkit ends the old episode when an env's
  observation is not the next observation it stored last.
- ``copy_info_dict=True`` deep-copies every info dict in SB3 and hands ``compute_reward`` an
  array of dicts; herkit stores the numeric fields named by ``info_keys`` as columns and
  hands ``compute_reward`` one dict of arrays (``info["key"]`` is the batch's column).
- The relabelled share is drawn per sample (probability ``k / (k + 1)``), where SB3 relabels
  exactly ``int(k / (k + 1) * batch_size)`` samples, always the first ones of the batch.
- Random numbers come from the buffer's own generator, seeded by ``seed`` or, when it is
  None, from numpy's global generator (which SB3's ``seed=`` sets) at construction.
- Observation dicts must hold exactly ``observation``, ``achieved_goal`` and
  ``desired_goal``; other keys are refused at construction (SB3 stores them). n-step
  returns (SB3's ``n_steps``) are not offered through this class.

Prioritized replay: SB3's algorithms do not weight their losses, so ``prioritized=True`` is
a hook for a subclass of the algorithm. After each :meth:`HerReplayBuffer.sample`,
``buffer.last_weights`` holds the importance weights ``(B, 1)`` on the device and
``buffer.last_indices`` the keys to pass to :meth:`HerReplayBuffer.update_priorities` with
the new priorities (e.g. ``|TD error|``) from the subclass's ``train``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

try:
    import torch
    from gymnasium import spaces
    from stable_baselines3 import HerReplayBuffer as _SB3HerReplayBuffer
    from stable_baselines3.common.preprocessing import get_action_dim, get_obs_shape
    from stable_baselines3.common.type_aliases import DictReplayBufferSamples
    from stable_baselines3.common.utils import get_device
    from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv, VecNormalize
except ImportError as error:  # pragma: no cover - depends on the installed extras
    raise ImportError(
        "herkit.sb3 needs stable-baselines3: install it with `bash install.sh sb3` "
        "(or `pip install 'herkit[sb3]'`)"
    ) from error

from herkit.buffer.her import HerReplayBuffer as _Buffer
from herkit.buffer.strategies import Strategy

__all__ = ["GOAL_KEYS", "HerReplayBuffer"]

GOAL_KEYS = ("observation", "achieved_goal", "desired_goal")
"""The keys an observation dict must have (and may not go beyond)."""


class HerReplayBuffer(_SB3HerReplayBuffer):
    """Stable-Baselines3's ``replay_buffer_class`` backed by :class:`herkit.HerReplayBuffer`.

    Args (SB3's, in SB3's order; the algorithm passes the first six):
        buffer_size: transitions held, all envs together; the oldest whole episodes go first.
        observation_space: the env's Dict space with exactly :data:`GOAL_KEYS`.
        action_space: the env's action space (actions are stored as SB3 hands them over).
        env: the training VecEnv (its first env's ``compute_reward`` gives the rewards).
        device: where sampled tensors go.
        n_envs: envs stepping together.
        optimize_memory_usage: must be False (herkit stores each next observation once per
            transition; SB3's memory trick does not apply to HER).
        handle_timeout_termination: time-limit ends bootstrap (True) or are terminal.
        n_sampled_goal: relabelled goals per real transition (herkit's ``k``).
        goal_selection_strategy: ``future``, ``final``, ``episode``, ``random`` (herkit's
            addition) or an SB3 ``GoalSelectionStrategy``.
        copy_info_dict: pass info to ``compute_reward``; needs ``info_keys``.

    Args (herkit's, keyword only):
        relabel: ``"sample"`` (default, relabel a copy at sample time) or ``"store"``.
        goal_mix: ``(real, future, desired)`` weights in place of the strategy (sample mode).
        terminal_on_success: a relabelled sample is terminal when its goal is reached, or
            when the env ended for another reason; None (default) takes the env's
            ``terminates_on_success`` (else False: the stored flag is kept).
        success_threshold: a goal counts as reached where ``compute_reward`` gives at least
            this; None: learned from ``info["is_success"]`` (see
            :mod:`herkit.buffer.env_terms`).
        info_keys: numeric info fields stored per transition and passed to
            ``compute_reward`` as one dict of arrays.
        prioritized, alpha, beta: proportional prioritized replay (see the module docstring).
        seed: seed of the buffer's generator (None: drawn from numpy's global generator).
    """

    _continuing: np.ndarray
    _last_next: dict[str, np.ndarray] | None

    def __init__(
        self,
        buffer_size: int,
        observation_space: spaces.Dict,
        action_space: spaces.Space,
        env: VecEnv | None = None,
        device: torch.device | str = "auto",
        n_envs: int = 1,
        optimize_memory_usage: bool = False,
        handle_timeout_termination: bool = True,
        n_sampled_goal: int = 4,
        goal_selection_strategy: Any = "future",
        copy_info_dict: bool = False,
        *,
        relabel: str = "sample",
        goal_mix: Sequence[float] | None = None,
        terminal_on_success: bool | None = None,
        success_threshold: float | None = None,
        info_keys: Sequence[str] = (),
        prioritized: bool = False,
        alpha: float = 0.6,
        beta: float = 0.4,
        seed: int | None = None,
    ) -> None:
        if optimize_memory_usage:
            raise ValueError(
                "optimize_memory_usage=True is not supported by herkit.sb3.HerReplayBuffer "
                "(nor by SB3's HerReplayBuffer): pass optimize_memory_usage=False"
            )
        if copy_info_dict and not info_keys:
            raise ValueError(
                "copy_info_dict=True: name the numeric info fields that compute_reward reads "
                "with info_keys=(...); herkit stores them as columns and passes compute_reward "
                "one dict of arrays"
            )
        keys = set(getattr(observation_space, "spaces", {}))
        if keys != set(GOAL_KEYS):
            raise ValueError(
                f"observation_space must be a Dict with exactly the keys {GOAL_KEYS}, got "
                f"{sorted(keys) if keys else observation_space}"
            )
        self.buffer_size = int(buffer_size)
        self.observation_space = observation_space
        self.action_space = action_space
        self.obs_shape = get_obs_shape(observation_space)  # type: ignore[assignment]
        self.action_dim = get_action_dim(action_space)
        self.device = get_device(device)
        self.n_envs = int(n_envs)
        self.optimize_memory_usage = False
        self.handle_timeout_termination = bool(handle_timeout_termination)
        self.copy_info_dict = bool(copy_info_dict)
        # A name, not SB3's enum, which has no "random".
        self.goal_selection_strategy = _strategy_name(goal_selection_strategy)  # type: ignore[assignment]
        self.n_sampled_goal = int(n_sampled_goal)
        self.env = env
        self._reward_of_env: Any = None
        if terminal_on_success is None:
            terminal_on_success = _declared_terminal(env)
        if seed is None:  # numpy's global generator is what SB3's seed= sets
            seed = int(np.random.randint(2**31 - 1))  # noqa: NPY002
        space = observation_space.spaces
        self.buffer = _Buffer(
            buffer_size,
            observation_shape=tuple(space["observation"].shape or ()),
            goal_shape=tuple(space["desired_goal"].shape or ()),
            action_shape=(self.action_dim,),
            observation_dtype=space["observation"].dtype,
            goal_dtype=space["desired_goal"].dtype,
            action_dtype=_action_dtype(action_space),
            reward_fn=self._compute_reward,
            strategy=str(self.goal_selection_strategy),
            k=self.n_sampled_goal,
            n_envs=self.n_envs,
            relabel=relabel,  # type: ignore[arg-type]
            goal_mix=goal_mix,
            terminal_on_success=bool(terminal_on_success),
            success_threshold=success_threshold,
            info_keys=info_keys,
            prioritized=prioritized,
            alpha=alpha,
            beta=beta,
            seed=seed,
        )
        self.her_ratio = self.buffer.relabel_probability
        self.last_indices: np.ndarray | None = None
        self.last_weights: torch.Tensor | None = None
        self._reset_tracking()

    # -- SB3's buffer protocol -------------------------------------------------------------

    @property
    def pos(self) -> int:  # type: ignore[override]
        """Next row to write (SB3's meaning: one row holds a step of every env)."""
        storage = self.buffer.storage
        return int(storage.rows_written % storage.rows)

    @property
    def full(self) -> bool:  # type: ignore[override]
        """Whether every row has been written at least once."""
        storage = self.buffer.storage
        return bool(storage.rows_written >= storage.rows)

    def size(self) -> int:
        """Rows stored (SB3's meaning: transitions per env)."""
        storage = self.buffer.storage
        return int(min(storage.rows_written, storage.rows))

    def add(  # type: ignore[override]
        self,
        obs: dict[str, np.ndarray],
        next_obs: dict[str, np.ndarray],
        action: np.ndarray,
        reward: np.ndarray,
        done: np.ndarray,
        infos: list[dict[str, Any]],
    ) -> None:
        """Store one step of every env (SB3 calls this from ``collect_rollouts``)."""
        n_envs = self.n_envs
        done = np.asarray(done, dtype=bool).reshape(n_envs)
        if self.handle_timeout_termination:
            timeout = np.array([bool(info.get("TimeLimit.truncated", False)) for info in infos])
        else:
            timeout = np.zeros(n_envs, dtype=bool)
        terminated = done & ~timeout
        info = None
        if self.buffer.info_keys:
            info = {
                key: np.array([_info_value(item, key) for item in infos])
                for key in self.buffer.info_keys
            }
        moved = self._continuing & ~self._matches_last(obs)
        if moved.any():  # reset outside add: that episode is over
            self.buffer.end_episodes(moved)
        success = None
        if infos and all("is_success" in item for item in infos):
            success = np.array([bool(item["is_success"]) for item in infos])
        self.buffer.add(
            obs,
            np.asarray(action).reshape(n_envs, self.action_dim),
            next_obs,
            terminated,
            done & ~terminated,
            info,
            reward=np.asarray(reward, dtype=np.float64).reshape(n_envs),
            success=success,
        )
        self._last_next = {key: np.array(next_obs[key], copy=True) for key in GOAL_KEYS}
        self._continuing = ~done

    def sample(  # type: ignore[override]
        self, batch_size: int, env: VecNormalize | None = None
    ) -> DictReplayBufferSamples:
        """A batch of SB3 samples with relabelled goals and recomputed rewards."""
        batch = self.buffer.sample(batch_size)
        raw = {
            "observation": batch.observation,
            "achieved_goal": batch.achieved_goal,
            "desired_goal": batch.goal,
        }
        raw_next = {
            "observation": batch.next_observation,
            "achieved_goal": batch.next_achieved_goal,
            "desired_goal": batch.goal,
        }
        observations: Any = self._normalize_obs(raw, env)
        next_observations: Any = self._normalize_obs(raw_next, env)
        reward = self._normalize_reward(batch.reward.reshape(-1, 1), env)
        self.last_indices = batch.indices
        self.last_weights = (
            None if batch.weights is None else self.to_torch(batch.weights.reshape(-1, 1))
        )
        return DictReplayBufferSamples(
            observations={key: self.to_torch(value) for key, value in observations.items()},
            actions=self.to_torch(batch.action),
            next_observations={
                key: self.to_torch(value) for key, value in next_observations.items()
            },
            dones=self.to_torch(batch.terminated.reshape(-1, 1)),
            rewards=self.to_torch(np.asarray(reward, dtype=np.float32)),
        )

    def update_priorities(self, indices: Any, priorities: Any) -> None:
        """New priorities for sampled keys (``last_indices``); prioritized replay only."""
        if isinstance(priorities, torch.Tensor):
            priorities = priorities.detach().cpu().numpy()
        self.buffer.update_priorities(indices, np.asarray(priorities).reshape(-1))

    def reset(self) -> None:
        """Empty the buffer (same settings, same generator)."""
        old = self.buffer
        config = old._config()
        self.buffer = _Buffer(reward_fn=self._compute_reward, **config)
        self.buffer.rng = old.rng
        self._reset_tracking()

    def truncate_last_trajectory(self) -> None:
        """End the episodes in progress as if cut by a time limit (they bootstrap).

        SB3's ``load_replay_buffer(truncate_last_traj=True)`` calls this: the loaded buffer's
        open episodes cannot continue in a freshly reset env.
        """
        self.buffer.end_episodes()
        self._reset_tracking()

    def set_env(self, env: VecEnv) -> None:
        """Give the env whose ``compute_reward`` scores samples (after unpickling)."""
        self.env = env
        self._reward_of_env = None

    def __getstate__(self) -> dict[str, Any]:
        """Pickle everything but the env (envs are in general not picklable)."""
        state = self.__dict__.copy()
        state["env"] = None
        state["_reward_of_env"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Restore a pickled buffer; call :meth:`set_env` before sampling."""
        self.__dict__.update(state)

    # -- internals -------------------------------------------------------------------------

    def _compute_reward(
        self, achieved_goal: np.ndarray, desired_goal: np.ndarray, info: Mapping[str, Any]
    ) -> np.ndarray:
        if self._reward_of_env is None:
            self._reward_of_env = _reward_function(self.env)
        passed: Any = dict(info) if self.buffer.info_keys else [{} for _ in achieved_goal]
        return np.asarray(self._reward_of_env(achieved_goal, desired_goal, passed))

    def _reset_tracking(self) -> None:
        self._continuing = np.zeros(self.n_envs, dtype=bool)
        self._last_next = None

    def _matches_last(self, obs: Mapping[str, Any]) -> np.ndarray:
        """Per env: is ``obs`` the next observation stored last?"""
        if self._last_next is None:
            return np.zeros(self.n_envs, dtype=bool)
        same = np.ones(self.n_envs, dtype=bool)
        for key, last in self._last_next.items():
            value = np.asarray(obs[key]).reshape(last.shape)
            same &= (value == last).reshape(self.n_envs, -1).all(axis=1)
        return same


def _strategy_name(strategy: Any) -> str:
    """herkit's strategy name for a string or an SB3 ``GoalSelectionStrategy``."""
    name = getattr(strategy, "name", strategy)
    try:
        return Strategy.parse(str(name).lower()).value
    except ValueError:
        raise ValueError(
            "goal_selection_strategy must be 'future', 'final', 'episode', 'random' or an SB3 "
            f"GoalSelectionStrategy, got {strategy!r}"
        ) from None


def _action_dtype(action_space: spaces.Space) -> np.dtype:
    """SB3's storage dtype for actions: float64 becomes float32, others stay."""
    dtype = np.dtype(action_space.dtype or np.float32)
    return np.dtype(np.float32) if dtype == np.float64 else np.dtype(dtype)


def _declared_terminal(env: VecEnv | None) -> bool:
    """The env's ``terminates_on_success`` declaration (False when it makes none)."""
    if env is None:
        return False
    if not env.has_attr("terminates_on_success"):
        return False
    return bool(env.get_attr("terminates_on_success", indices=[0])[0])


def _reward_function(env: VecEnv | None) -> Any:
    """The first env's ``compute_reward``: called directly in a DummyVecEnv, else through
    ``env_method`` (one round trip to the worker per batch)."""
    if env is None:
        raise ValueError(
            "HerReplayBuffer has no env to compute rewards with: after unpickling, call "
            "set_env(env) (SB3's load_replay_buffer does)"
        )
    inner: Any = env
    while isinstance(getattr(inner, "venv", None), VecEnv):
        inner = inner.venv
    if isinstance(inner, DummyVecEnv):
        return inner.envs[0].unwrapped.compute_reward  # type: ignore[attr-defined]

    def remote(achieved: np.ndarray, desired: np.ndarray, info: Any) -> Any:
        return env.env_method("compute_reward", achieved, desired, info, indices=[0])[0]

    return remote


def _info_value(info: Mapping[str, Any], key: str) -> Any:
    """``info[key]``, with an error that names the key when it is missing."""
    if key not in info:
        raise ValueError(f"info_keys: the env's info has no {key!r} (it has {sorted(info)})")
    return info[key]
