"""The SB3 ``replay_buffer_class`` over :class:`herkit.HerReplayBuffer` (see :mod:`herkit.sb3`).

:class:`HerReplayBuffer` speaks SB3's buffer protocol (``add``, ``sample``, ``reset``,
pickling, ``truncate_last_trajectory``) and hands storage, relabelling and sampling to the
core buffer in its ``buffer`` attribute. SB3's storage attributes (``observations`` ...
``_current_ep_start``) are properties computed in :mod:`herkit.sb3.views`; SB3's arguments
and VecEnv are read, and samples given, through :mod:`herkit.sb3.translate`, info dicts kept by
:mod:`herkit.sb3.infos`.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from stable_baselines3 import HerReplayBuffer as _SB3HerReplayBuffer
from stable_baselines3.common.preprocessing import get_action_dim, get_obs_shape
from stable_baselines3.common.type_aliases import DictReplayBufferSamples
from stable_baselines3.common.utils import get_device
from stable_baselines3.common.vec_env import VecEnv, VecNormalize

from herkit.buffer.ending import Ending, sb3_ending
from herkit.buffer.her import HerReplayBuffer as _Buffer
from herkit.buffer.settings import HerSettings
from herkit.sb3 import views
from herkit.sb3.infos import SLOT_KEY, InfoStore, info_value
from herkit.sb3.translate import (
    action_dtype,
    check_arguments,
    check_n_steps,
    declared_ending_of,
    host_array,
    reward_function,
    same_observations,
    sb3_samples,
    strategy_name,
    warn_if_not_the_algorithms,
)
from herkit.sb3.views import GOAL_KEYS

__all__ = ["GOAL_KEYS", "HerReplayBuffer", "InfoFieldsChosen"]

TRUNCATION_WARNING = (
    "The last trajectory in the replay buffer will be truncated.\n"
    "If you are in the same episode as when the replay buffer was saved,\n"
    "you should use `truncate_last_trajectory=False` to avoid that issue."
)
"""SB3's warning when ``truncate_last_trajectory`` ends episodes in progress."""


FACADE_SETTINGS = HerSettings(keep_env_terms=False)
"""The settings of a buffer given no ``settings``, before SB3's arguments and herkit's
keywords change them: herkit's, but a relabelled sample's reward is ``compute_reward``
alone, as SB3 gives it (see :mod:`herkit.sb3`)."""


class InfoFieldsChosen(UserWarning):
    """Says once which info fields ``copy_info_dict=True`` stores as columns."""


class HerReplayBuffer(_SB3HerReplayBuffer):
    """Stable-Baselines3's ``replay_buffer_class`` backed by :class:`herkit.HerReplayBuffer`.

    The arguments are SB3's, in SB3's order (the algorithm passes the first six), then
    herkit's, keyword only (from ``n_steps`` on).

    Args:
        buffer_size: transitions held, all envs together; the oldest whole episodes go first
            (the attribute ``buffer_size`` is then, as in SB3, the rows: this // ``n_envs``).
        observation_space: the env's Dict space with :data:`GOAL_KEYS` and any other keys
            (stored and returned as they are; relabelling touches only the goals).
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
        copy_info_dict: pass ``compute_reward`` the info dicts of the samples, as SB3 does
            (see :mod:`herkit.sb3.infos`); with ``info_keys``, one dict of those columns.
        seed: seed of the buffer's generator (None: drawn from numpy's global generator).
        settings: herkit's settings (:class:`~herkit.buffer.settings.HerSettings`; None:
            :data:`FACADE_SETTINGS`), or any of its fields as a keyword but the strategy,
            ``k`` and ``n_step``, which are SB3's arguments here. Unset,
            ``terminal_on_success`` is what the env declares, else SB3's flags unless the
            env ends an episode at a success and its rewards hold a term ``compute_reward``
            lacks (:func:`herkit.buffer.ending.sb3_ending`), and ``keep_env_terms`` is False
            (``compute_reward`` alone, as in SB3); :mod:`herkit.sb3` says what each does.
        n_steps, gamma: n-step returns, as SB3's ``NStepReplayBuffer`` takes them
            (``replay_buffer_kwargs={"n_steps": 3, "gamma": model_gamma}``): every reward
            of a sample's ``n_steps`` is its (relabelled) goal's, the sum is cut at a
            terminal step and at its episode's end, and the batch's ``discounts`` (``gamma
            ** m`` for the ``m`` steps summed) replace the algorithm's ``gamma`` in SAC's,
            TD3's, DDPG's, DQN's and TQC's targets. ``gamma`` must be the algorithm's: it is
            required with ``n_steps > 1``, and a warning says so where it differs from the
            algorithm's that builds this buffer.
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
        n_steps: int = 1,
        seed: int | None = None,
        settings: HerSettings | None = None,
        **changes: Any,
    ) -> None:
        sb3_named = sorted({"strategy", "k", "n_step"} & set(changes))
        if sb3_named:
            raise TypeError(
                f"{sb3_named}: herkit.sb3 takes SB3's names for these "
                "(goal_selection_strategy, n_sampled_goal, n_steps)"
            )
        gamma = changes.get("gamma", None if settings is None else settings.gamma)
        check_arguments(buffer_size, observation_space, n_envs, optimize_memory_usage)
        check_n_steps(n_steps, gamma)
        self.buffer_size = max(int(buffer_size) // int(n_envs), 1)  # rows, as in SB3
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
        self.goal_selection_strategy = strategy_name(goal_selection_strategy)  # type: ignore[assignment]
        self.n_sampled_goal = int(n_sampled_goal)
        self.env = env
        self._reward_of_env: Any = None
        her = HerSettings.of(
            settings or FACADE_SETTINGS,
            changes
            | {
                "strategy": str(self.goal_selection_strategy),
                "k": self.n_sampled_goal,
                "n_step": n_steps,
            },
        )
        ending = Ending.given(her.terminal_on_success).otherwise(declared_ending_of(env))
        # what the first success showed, for an env that declares no ending (else None)
        self._seen = Ending(None) if ending.ends is None else None
        if self._seen is not None:
            ending = sb3_ending(self._seen, terms_differ=False)
        her = HerSettings.of(her, {"terminal_on_success": ending.ends})
        self._info_keys = her.info_keys
        self._infos: InfoStore | None = None  # copy_info_dict without info_keys: first add
        if seed is None:  # numpy's global generator is what SB3's seed= sets
            seed = int(np.random.randint(2**31 - 1))  # noqa: NPY002
        space = observation_space.spaces
        extra = {
            key: (self.obs_shape[key], space[key].dtype) for key in space if key not in GOAL_KEYS
        }
        self.buffer = _Buffer(
            buffer_size,
            observation_shape=tuple(space["observation"].shape or ()),
            goal_shape=tuple(space["desired_goal"].shape or ()),
            action_shape=(self.action_dim,),
            observation_dtype=space["observation"].dtype,
            goal_dtype=space["desired_goal"].dtype,
            action_dtype=action_dtype(action_space),
            reward_fn=self._compute_reward,
            n_envs=self.n_envs,
            extra_keys=extra,
            seed=seed,
            settings=her,
        )
        self.buffer.sources["terminal_on_success"] = ending.source
        if n_steps > 1:
            warn_if_not_the_algorithms(gamma)
        self.her_ratio = self.buffer.settings.relabel_probability
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
        """Store one step of every env (SB3 calls this from ``collect_rollouts``); end first
        the episodes of envs that were reset outside ``add``."""
        n_envs = self.n_envs
        if len(infos) != n_envs:
            raise ValueError(f"infos must hold one dict per env ({n_envs}), got {len(infos)}")
        action = np.asarray(action)
        if action.size != n_envs * self.action_dim:
            raise ValueError(
                f"action must hold n_envs x action_dim = {n_envs} x {self.action_dim} values, "
                f"got shape {action.shape}"
            )
        done = np.asarray(done, dtype=bool).reshape(n_envs)
        if self.handle_timeout_termination:
            timeout = np.array([bool(info.get("TimeLimit.truncated", False)) for info in infos])
        else:
            timeout = np.zeros(n_envs, dtype=bool)
        terminated = done & ~timeout
        info: dict[str, np.ndarray] | None = None
        staged = None
        if self.copy_info_dict and not self._info_keys:
            info, staged = self._stage_infos(infos)
        elif self.buffer.settings.info_keys:
            info = {
                key: np.array([info_value(item, key) for item in infos])
                for key in self.buffer.settings.info_keys
            }
        moved = self._continuing & ~same_observations(obs, self._last_next, n_envs)
        if moved.any():  # reset outside add: that episode is over
            self.buffer.end_episodes(moved)
        success = None
        if infos and all("is_success" in item for item in infos):
            success = np.array([bool(item["is_success"]) for item in infos])
        if self._seen is not None:
            self._seen = self._seen.after(success, terminated, "observed at the first success")
        try:
            self.buffer.add(
                obs,
                action.reshape(n_envs, self.action_dim),
                next_obs,
                terminated,
                done & ~terminated,
                info,
                reward=np.asarray(reward, dtype=np.float64).reshape(n_envs),
                success=success,
            )
        except Exception:
            if staged is not None and self._infos is not None:
                slots, before = staged
                self._infos.extras[slots] = before
            raise
        self._last_next = {key: np.array(next_obs[key], copy=True) for key in GOAL_KEYS}
        self._continuing = ~done

    def _stage_infos(
        self, infos: list[dict[str, Any]]
    ) -> tuple[dict[str, np.ndarray], tuple[np.ndarray, np.ndarray]]:
        """The info columns of one step (``copy_info_dict`` without ``info_keys``), its
        per-step parts written ahead (``compute_reward`` may read them during ``add``), and
        what they replaced, to put back if ``add`` fails. The first call chooses the columns
        and rebuilds the (still empty) buffer with them, and says once what it chose."""
        if self._infos is None:
            store = InfoStore(self.buffer.capacity, infos)
            self._rebuild(info_keys=(*store.keys, SLOT_KEY))
            self._infos = store
            warnings.warn(store.describe(infos), InfoFieldsChosen, stacklevel=3)
        storage = self.buffer.storage
        slots = storage.rows_written % storage.rows * self.n_envs + np.arange(self.n_envs)
        return self._infos.stage(infos, slots)

    def sample(  # type: ignore[override]
        self, batch_size: int, env: VecNormalize | None = None
    ) -> DictReplayBufferSamples:
        """A batch of SB3 samples with relabelled goals and recomputed rewards
        (:func:`herkit.sb3.translate.sb3_samples`)."""
        if self._seen is not None:  # the ending of an env that declares none, as seen so far
            self.buffer.flush()
            ending = sb3_ending(self._seen, self.buffer.audit.differing > 0)
            if ending != self.buffer.ending:
                self.buffer.set_ending(ending)
            if ending.ends:  # final: a success seen to end its episode stays so
                self._seen = None
        batch = self.buffer.sample(batch_size)
        self.last_indices = None if batch.indices is None else host_array(batch.indices)
        self.last_weights = (
            None
            if batch.weights is None
            else self.to_torch(host_array(batch.weights).reshape(-1, 1))
        )
        return sb3_samples(
            batch,
            lambda obs: self._normalize_obs(obs, env),
            lambda reward: self._normalize_reward(reward, env),
            self.to_torch,
        )

    def update_priorities(self, indices: Any, priorities: Any) -> None:
        """New priorities for sampled keys (``last_indices``); prioritized replay only."""
        if isinstance(priorities, torch.Tensor):
            priorities = priorities.detach().cpu().numpy()
        self.buffer.update_priorities(indices, np.asarray(priorities).reshape(-1))

    def reset(self) -> None:
        """Empty the buffer (same settings, same generator)."""
        self._rebuild(info_keys=self._info_keys)
        self._infos = None
        self._reset_tracking()

    def _rebuild(self, info_keys: tuple[str, ...]) -> None:
        """A new, empty core buffer with the same settings and generator."""
        old = self.buffer
        config = old._config() | {"info_keys": info_keys}
        self.buffer = _Buffer(reward_fn=self._compute_reward, **config)
        self.buffer.rng, self.buffer.sources = old.rng, old.sources

    def truncate_last_trajectory(self) -> None:
        """End the episodes in progress as if cut by a time limit (they bootstrap), with
        SB3's warning when there are any: ``load_replay_buffer(truncate_last_traj=True)``
        calls this, as a freshly reset env cannot continue them. Their last steps then read
        as ``dones`` (and ``timeouts``, where handled); the next step starts at ``pos``."""
        if self.buffer.storage.open_lengths().any():
            warnings.warn(TRUNCATION_WARNING, UserWarning, stacklevel=2)
        self.buffer.end_episodes()
        self._reset_tracking()

    # -- SB3's storage attributes (views of herkit's storage, :mod:`herkit.sb3.views`) --------

    observations = property(views.observations)
    next_observations = property(views.next_observations)
    actions = property(views.actions)
    rewards = property(views.rewards)
    dones = property(views.dones)
    timeouts = property(views.timeouts)
    ep_start = property(views.ep_start)
    ep_length = property(views.ep_length)
    _current_ep_start = property(views.current_ep_start)

    def set_env(self, env: VecEnv) -> None:
        """Give the env whose ``compute_reward`` scores samples (after unpickling)."""
        self.env = env
        self._reward_of_env = None

    def __getstate__(self) -> dict[str, Any]:
        """Pickle everything but the env (envs are in general not picklable); the steps not
        yet scored are scored first, so that the copy can be read without an env."""
        if self.env is not None:
            self.buffer.flush()
        state = self.__dict__.copy()
        state["env"] = None
        state["_reward_of_env"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Restore a pickled buffer; call :meth:`set_env` before sampling."""
        state.setdefault("_infos", None)
        state.setdefault("_seen", None)  # pickled before: its ending as it was
        state.setdefault("_info_keys", tuple(state["buffer"].settings.info_keys))
        self.__dict__.update(state)

    # -- internals -------------------------------------------------------------------------

    def _compute_reward(
        self, achieved_goal: np.ndarray, desired_goal: np.ndarray, info: Mapping[str, Any]
    ) -> np.ndarray:
        if self._reward_of_env is None:
            self._reward_of_env = reward_function(self.env)
        passed: Any
        if self._infos is not None:
            passed = self._infos.dicts(info)
        elif self.buffer.settings.info_keys:
            passed = dict(info)
        else:
            passed = [{} for _ in achieved_goal]
        return np.asarray(self._reward_of_env(achieved_goal, desired_goal, passed))

    def _reset_tracking(self) -> None:
        self._continuing = np.zeros(self.n_envs, dtype=bool)
        self._last_next = None
