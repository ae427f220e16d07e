"""HerReplayBuffer: episodic storage + a goal strategy + an injected reward function.

Two relabelling modes give the same distribution of goals (seed 004):

- ``relabel="sample"`` (default): transitions are stored as collected; at sample time
  each one is relabelled with probability ``k / (k + 1)`` in a copy of the batch. The
  stored data never changes, and the steps of open episodes can be sampled at once.
  Their goals follow one rule: a relabelled goal is an achieved goal that the episode
  has already recorded. ``future`` draws from the recorded steps t.. so far, ``episode``
  from all recorded steps, ``random`` from any stored step; ``final`` does not relabel a
  transition of an open episode at all (its last step does not exist yet), so it keeps
  its original goal until the episode ends.
- ``relabel="store"``: the paper's form. When an episode ends, ``k`` goals per
  transition are drawn and written beside it; a sample is then one of the ``k + 1``
  (transition, goal) pairs, uniformly. Only finished episodes are sampled. The goals
  are stored as values, not as indices, so dropping an old episode cannot redirect them.

A **goal mix** (``goal_mix=(real, future, desired)``, sample mode) replaces the strategy:
each sample keeps its own goal, takes a future achieved goal of its episode (the
``future`` rule above), or takes the desired goal of a stored transition drawn uniformly
from the whole buffer (mrl's "futureactual": goals the env really asks for, which the
agent mostly fails), with probabilities proportional to the three weights. ``future``
with ``k`` is the mix ``(1, k, 0)``; mrl's Fetch recipe ``futureactual_2_2`` is
``(1, 2, 2)``. With ``goal_mix_warmup=N`` every sample takes a future goal until ``N``
transitions have been added (mrl's ``future_warm_up``), and the mix applies from then on.

**What the env said is kept** (:mod:`herkit.buffer.env_terms`): a sample with its own goal
gets the env's step reward and ``terminated`` flag as stored; a relabelled one gets
``reward_fn(achieved_goal, desired_goal, info)`` (the GoalEnv signature, vectorised over the
leading axis) for its goal plus the part of the env's reward that does not depend on the
goal, and is terminal when the env ended for another reason than reaching the step's own
goal, or (with ``terminal_on_success``) when its goal is reached.

**n-step returns** (``n_step > 1``): the reward of a sample is
``sum_{j<m} gamma^j r_{t+j}``, every ``r_{t+j}`` taken for the sample's (possibly
relabelled) goal as above, over the ``m <= n`` steps of its episode from ``t`` on that are recorded
and come no later than the first terminal step (the env's flag, or with
``terminal_on_success`` a relabelled goal reached). ``next_observation`` is then the
observation after step ``t + m - 1``, ``terminated`` that step's flag, and the batch's
``discount`` is ``gamma ** m``. An episode cut by a time limit, or still open, ends the
window without ending the return: it bootstraps.

This module holds the buffer and its hot path, :meth:`~HerReplayBuffer.add` and
:meth:`~HerReplayBuffer.sample`. Its parts live beside it: :mod:`~herkit.buffer.inputs`
(checks of settings and of what ``add`` takes), :mod:`~herkit.buffer.storage` (episodes in a
ring), :mod:`~herkit.buffer.strategies` (goal steps and the goal mix),
:mod:`~herkit.buffer.env_terms` (rewards, success and the scoring of added steps),
:mod:`~herkit.buffer.returns` (n-step sums), :mod:`~herkit.buffer.priority` (sum tree and
weights), :mod:`~herkit.buffer.persistence` (save and load) and
:mod:`~herkit.buffer.goal_env` (what ``from_env`` reads of an env).

One piece: what remains (about 580 lines, a quarter of them this docstring and the
class's) is the buffer's state and the helpers of ``sample`` that read it (goal slots,
the goal mix, n-step windows); split further, they would take the buffer as an argument
and the hot path would no longer read top to bottom in one file.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from herkit.buffer.backend import array_ops
from herkit.buffer.batch import Batch
from herkit.buffer.env_terms import (
    PendingStep,
    RewardAudit,
    backend_rewards,
    host_rewards,
    reached,
    reached_threshold,
    score_steps,
    success_rule,
)
from herkit.buffer.goal_env import (
    RewardFn,
    TorchRewardFn,
    compute_reward_of,
    fresh_copy,
    settings_of,
)
from herkit.buffer.inputs import (
    OBS_FIELDS,
    all_finite,
    as_column,
    as_flags,
    as_rewards,
    check_finite,
    check_settings,
    extra_key_specs,
    get_key,
    require_int,
    transition_fields,
)
from herkit.buffer.persistence import load_buffer, save_buffer
from herkit.buffer.priority import SumTree, checked_priorities, importance_weights
from herkit.buffer.returns import n_step_sums, step_window
from herkit.buffer.storage import EpisodeStorage, FieldSpec
from herkit.buffer.strategies import (
    GOAL_STEPS,
    Strategy,
    check_goal_mix_warmup,
    goal_sources,
    parse_goal_mix,
)

if TYPE_CHECKING:
    from herkit.buffer.conventions import GoalConventions

# RewardFn, TorchRewardFn and compute_reward_of live in herkit.buffer.goal_env; they are
# re-exported here, where they have always been imported from.
__all__ = ["HerReplayBuffer", "RewardFn", "TorchRewardFn", "compute_reward_of"]


class HerReplayBuffer:
    """Hindsight Experience Replay buffer for ``n_envs`` envs stepping together.

    Args:
        capacity: transitions held (rounded down to a multiple of ``n_envs``); the
            oldest whole episodes are dropped when full.
        observation_shape, goal_shape, action_shape: shapes of one transition's
            ``observation``, goals (achieved and desired) and action (``()`` for a
            discrete action).
        reward_fn: vectorised ``reward_fn(achieved_goal, desired_goal, info)``; ``info``
            is a dict of the stored ``info_keys`` columns for the batch.
        observation_dtype, goal_dtype, action_dtype: storage dtypes (uint8 stays uint8).
        strategy: ``future``, ``final``, ``episode``, ``random`` or ``none``.
        k: relabelled goals per real transition (final uses 1, none 0).
        n_envs: envs whose transitions arrive together in every ``add``.
        relabel: ``"sample"`` or ``"store"`` (see the module docstring).
        prioritized: proportional prioritized replay (Schaul et al. 2016).
        alpha, beta, eps: priority exponent, importance-sampling exponent (default for
            ``sample``), and the constant added to every priority.
        info_keys: numeric scalar info fields stored with each transition and handed to
            ``reward_fn``, so that info-dependent rewards stay vectorised.
        extra_keys: observation keys beyond the GoalEnv's three, ``{key: (shape, dtype)}``
            (an image, a proprioception split): stored for both observations of every
            transition and returned in ``Batch.extras`` and ``Batch.next_extras``;
            relabelling touches only the goals.
        terminal_on_success: the env ends episodes on success (bit flipping, parking): a
            relabelled sample is terminal when its goal is reached, or when the env ended
            its step for another reason (a crash). Otherwise the env's flag is kept.
            None: not known yet; the first :meth:`add` with a ``success`` decides it
            (whether that step ended its episode).
        success_threshold: a goal counts as reached when ``reward_fn`` gives at least this
            (for dense rewards, e.g. parking's ``-0.12``). None: learned from the
            ``success`` flags given to :meth:`add`, else ``reward_fn(goal, goal, info)``
            (see :mod:`herkit.buffer.env_terms`).
        goal_mix: ``(real, future, desired)`` weights of a goal mix (see the module
            docstring), in place of ``strategy`` and ``k``; sample mode only.
        goal_mix_warmup: transitions added before the goal mix applies; until then every
            sample takes a future goal. Needs ``goal_mix``.
        n_step: steps summed per sample (n-step returns, see the module docstring).
        gamma: discount of the n-step sums; needed when ``n_step > 1``.
        seed: seed of the buffer's own ``np.random.Generator``.
        device: None (default) keeps the data in numpy arrays; a torch device (``"cuda"``,
            or ``"cpu"`` for torch tensors in host memory) keeps it in tensors there, so
            that relabelled batches are gathered on the device and returned as tensors
            (``Batch.indices`` stays numpy). Bookkeeping and random draws stay on the host,
            so a buffer on a device samples exactly what a numpy buffer with the same seed
            samples.
        torch_reward_fn: ``reward_fn`` in torch form for a buffer on a device (rewards are
            then computed there); without it ``reward_fn`` gets host copies.
    """

    def __init__(
        self,
        capacity: int,
        *,
        observation_shape: int | tuple[int, ...],
        goal_shape: int | tuple[int, ...],
        reward_fn: RewardFn,
        action_shape: int | tuple[int, ...] = (),
        observation_dtype: Any = np.float32,
        goal_dtype: Any = np.float32,
        action_dtype: Any = np.float32,
        strategy: str | Strategy = "future",
        k: int = 4,
        n_envs: int = 1,
        relabel: Literal["sample", "store"] = "sample",
        prioritized: bool = False,
        alpha: float = 0.6,
        beta: float = 0.4,
        eps: float = 1e-6,
        info_keys: Sequence[str] = (),
        extra_keys: Mapping[str, tuple[Any, Any]] | None = None,
        terminal_on_success: bool | None = False,
        success_threshold: float | None = None,
        goal_mix: Sequence[float] | None = None,
        goal_mix_warmup: int = 0,
        n_step: int = 1,
        gamma: float | None = None,
        seed: int | None = None,
        device: Any = None,
        torch_reward_fn: TorchRewardFn | None = None,
    ) -> None:
        check_settings(
            capacity=capacity, n_step=n_step, gamma=gamma, n_envs=n_envs, k=k, relabel=relabel,
            reward_fn=reward_fn, torch_reward_fn=torch_reward_fn,
            success_threshold=success_threshold, alpha=alpha, beta=beta, eps=eps,
        )  # fmt: skip
        self.strategy = Strategy.parse(strategy)
        self.goal_mix = parse_goal_mix(goal_mix, relabel)
        self.goal_mix_warmup = check_goal_mix_warmup(goal_mix_warmup, self.goal_mix)
        if self.goal_mix is not None:  # its future share follows the future rule
            self.strategy, k = Strategy.FUTURE, 1
        self.k = int(k)
        self.relabel = relabel
        self.reward_fn = reward_fn
        self.torch_reward_fn = torch_reward_fn
        self.ops = array_ops(device)
        self.device = self.ops.device
        self.prioritized = bool(prioritized)
        self.alpha, self.beta, self.eps = float(alpha), float(beta), float(eps)
        self.info_keys = tuple(info_keys)
        self.terminal_on_success: bool | None = (
            None if terminal_on_success is None else bool(terminal_on_success)
        )
        self.sources: dict[str, str] = {}
        """Where :meth:`from_env` took settings from, by name (empty when built directly)."""
        self.conventions: GoalConventions | None = None
        """The env's conventions that :meth:`from_env` found (None when built directly)."""
        self.success_threshold = None if success_threshold is None else float(success_threshold)
        self.audit = RewardAudit()
        """The env's rewards against ``reward_fn``, as of the last sample, save or
        :meth:`flush` (or every few hundred adds)."""
        self._reward_fn_checked = False
        self.n_step = int(n_step)
        self.gamma = None if gamma is None else float(gamma)
        self.goals_per_transition = self.strategy.goals_per_transition(self.k)
        self.relabel_probability = self.goals_per_transition / (self.goals_per_transition + 1)
        self._seed = seed
        self.rng = np.random.default_rng(seed)

        obs = FieldSpec.of(observation_shape, observation_dtype)
        goal = FieldSpec.of(goal_shape, goal_dtype)
        action = FieldSpec.of(action_shape, action_dtype)
        self.extra_keys = extra_key_specs(extra_keys or {})
        self._specs = transition_fields(obs, goal, action, info_keys, self.extra_keys)
        self._labels = {field: label for field, (_, _, label) in OBS_FIELDS.items()}
        """What errors call each field ``add`` reads from its arguments."""
        for key in self.extra_keys:
            self._labels |= {f"{side}.{key}": f"{side}[{key!r}]" for side in ("obs", "next_obs")}
        self._labels["action"] = "action"
        self._float_fields = [f for f in self._labels if self._specs[f].dtype.kind == "f"]
        """The fields of :attr:`_labels` that can hold NaN or infinity."""
        stored = dict(self._specs)
        if relabel == "store" and self.goals_per_transition:
            stored["relabel_goal"] = FieldSpec((self.goals_per_transition, *goal.shape), goal.dtype)
        self.storage = EpisodeStorage(capacity, n_envs, stored, self.ops)
        self.n_envs = n_envs
        self._closed_only = relabel == "store"
        # Prioritized leaves: one per slot, or one per (slot, goal) pair in store mode.
        self._copies = self.goals_per_transition + 1 if self._closed_only else 1
        self.tree = SumTree(self.storage.capacity * self._copies) if prioritized else None
        if "relabel_goal" in stored:  # a (capacity * k, *goal_shape) view for one gather
            self._stored_goals_flat = self.storage.data["relabel_goal"].reshape(-1, *goal.shape)
        self.max_priority = 1.0
        # Steps added but not yet scored (:meth:`_score`), scored before the ring could
        # overwrite them.
        self._pending: list[PendingStep] = []
        self._score_every = max(1, min(256, self.storage.rows // 2))

    # -- construction from an env --------------------------------------------------------

    @classmethod
    def from_env(
        cls,
        env: Any,
        capacity: int,
        *,
        n_envs: int | None = None,
        reward_fn: RewardFn | None = None,
        conventions: GoalConventions | None = None,
        probe: bool = True,
        **kwargs: Any,
    ) -> HerReplayBuffer:
        """Build a buffer from a GoalEnv (or a gymnasium vector env of them).

        Shapes and dtypes come from the observation and action spaces (observation keys
        beyond the GoalEnv's three become ``extra_keys``), ``reward_fn`` from the env's
        ``compute_reward`` unless given, ``n_envs`` from a vector env's ``num_envs`` unless
        given. The env's conventions are found as ``herkit train``
        finds them (:func:`~herkit.buffer.conventions.probe_conventions`, one function for
        both): what it declares (``terminates_on_success``, ``continuing_task``) and what
        200 random steps of a fresh copy show (``gym.make`` of the env's spec, or a vector
        env's ``env_fns``): the reward range, the success key and whether episodes end on
        success. The env given is never stepped, reset or rendered: where no fresh copy can
        be made, or the copy fails to step, only the declarations are read, and
        :attr:`sources` says why. ``conventions`` passes ones already found instead;
        ``probe=False`` reads the declarations alone.

        ``terminal_on_success`` comes from the conventions unless given; where they leave
        it unknown it is None, and the first ``add`` with a success decides it (as in
        ``herkit train``). :attr:`conventions` holds what was found (the reward range,
        for clipping Q targets, is the agent's to use), :attr:`sources` where each setting
        came from, and the repr both. Other keyword arguments go to the constructor.
        """
        from herkit.buffer.conventions import declared_conventions, probe_conventions

        settings = settings_of(env)
        sources = {"reward_fn": "given" if reward_fn is not None else "the env's compute_reward"}
        if n_envs is not None:
            settings["n_envs"] = n_envs
        if reward_fn is None:
            reward_fn = compute_reward_of(env)
        if conventions is None and probe:
            copy, how = fresh_copy(env)
            if copy is None:
                conventions = declared_conventions(env, f"not probed: {how}")
            else:
                try:
                    keys = kwargs.get("info_keys", ())
                    conventions = probe_conventions(copy, reward_fn, info_keys=keys)
                except ValueError:  # herkit's own finding (compute_reward, info_keys)
                    raise
                except Exception as error:  # the copy's own failure: the declarations alone
                    why = f"not probed: {how} raised {type(error).__name__}: {error}"
                    conventions = declared_conventions(env, why)
                finally:
                    copy.close()
        elif conventions is None:
            conventions = declared_conventions(env)
        sources.update(conventions.sources)
        if "terminal_on_success" in kwargs:
            sources["terminal_on_success"] = "given"
        else:
            kwargs["terminal_on_success"] = conventions.terminal_on_success
        buffer = cls(capacity, reward_fn=reward_fn, **(settings | kwargs))
        buffer.sources = sources
        buffer.conventions = conventions
        return buffer

    def __repr__(self) -> str:
        """The settings that decide what a batch holds, and where ``from_env`` took them."""
        found = [f"terminal_on_success={self.terminal_on_success}"]
        if self.conventions is not None:
            low_high = self.conventions.reward_range
            found += [
                f"reward_range={None if low_high is None else tuple(low_high)}",
                f"success_key={self.conventions.success_key!r}",
            ]
        names = ("terminal_on_success", "reward_range", "success_key")
        said = [
            f"{text} ({self.sources[name]})" if name in self.sources else text
            for name, text in zip(names, found, strict=False)
        ]
        return (
            f"HerReplayBuffer(capacity={self.capacity:,}, n_envs={self.n_envs}, "
            f"strategy={self.strategy.value!r}, k={self.k}, relabel={self.relabel!r}, "
            f"prioritized={self.prioritized}, n_step={self.n_step}, {', '.join(said)}, "
            f"stored={len(self):,})"
        )

    # -- adding ----------------------------------------------------------------------------

    def __len__(self) -> int:
        """Real transitions that can be sampled (finished episodes only in store mode)."""
        return self.storage.count(self._closed_only)

    @property
    def capacity(self) -> int:
        """Transitions held at most."""
        return self.storage.capacity

    def add(
        self,
        obs: Mapping[str, Any],
        action: Any,
        next_obs: Mapping[str, Any],
        terminated: Any,
        truncated: Any,
        info: Mapping[str, Any] | None = None,
        *,
        reward: Any = None,
        success: Any = None,
    ) -> None:
        """Store one step of every env; an env whose episode ended starts a new one.

        Arrays carry a leading ``n_envs`` axis (with ``n_envs=1`` it may be left out).
        ``reward`` is the env's step reward (None: ``reward_fn`` of the step's own goal,
        i.e. an env whose reward is its ``compute_reward``); ``success`` whether the step
        reached its own goal by the env's account (``info["is_success"]``; None: by the
        rule of ``success_threshold``). Everything is checked before anything is written
        (:mod:`herkit.buffer.inputs`): a wrong shape or dtype, or a NaN or infinity in an
        observation, goal, action or reward (named with its env and how many values) is
        a ValueError that leaves the buffer as it was.
        """
        n_envs, specs = self.n_envs, self._specs
        sources = {"obs": obs, "next_obs": next_obs}
        values = {
            field: as_column(label, get_key(sources[source], source, key), specs[field], n_envs)
            for field, (source, key, label) in OBS_FIELDS.items()
        }
        for key in self.extra_keys:
            for side, given in sources.items():
                field = f"{side}.{key}"
                values[field] = as_column(self._labels[field], get_key(given, side, key),
                                          specs[field], n_envs)  # fmt: skip
        values["action"] = as_column("action", action, specs["action"], n_envs)
        if not all_finite([values[field] for field in self._float_fields]):
            for field in self._float_fields:  # name the field, env and count
                check_finite(self._labels[field], values[field])
        values["terminated"] = as_flags("terminated", terminated, n_envs)
        done = values["terminated"] | as_flags("truncated", truncated, n_envs)
        for key in self.info_keys:
            if info is None or key not in info:
                raise ValueError(f"info must hold the stored key {key!r} (info_keys)")
            name = f"info.{key}"
            values[name] = as_column(f"info[{key!r}]", info[key], specs[name], n_envs)
        env_reward = None if reward is None else as_rewards(reward, n_envs)
        given_success = None if success is None else as_flags("success", success, n_envs)
        self.storage.check_room()
        if not self._reward_fn_checked:
            self._check_reward_fn(values)

        if self.terminal_on_success is None and given_success is not None and given_success.any():
            self._learn_terminal_on_success(bool(values["terminated"][given_success].all()))
        base, invalidated = self.storage.write(values)
        outcome = None if given_success is None else given_success.astype(np.int8)
        kept = None
        if self.device is not None:  # scoring then reads nothing back from the device
            names = ("next_achieved_goal", "desired_goal", *(f"info.{k}" for k in self.info_keys))
            kept = {name: np.array(values[name]) for name in names}
        self._pending.append((int(base), env_reward, outcome, done, kept))
        if len(self._pending) >= self._score_every:
            self._score()
        if self.tree is not None:
            block = slice(base * self._copies, (base + self.n_envs) * self._copies)
            self.tree.set(block, 0.0 if self._closed_only else self.max_priority)
            if len(invalidated):
                self.tree.set(self._leaves_of(invalidated), 0.0)
        if done.any():
            ids, envs = self.storage.close_episodes(done)
            if self._closed_only and len(ids):
                self._store_goals(ids, envs)

    def _learn_terminal_on_success(self, ended: bool) -> None:
        """The first success added shows whether the env's episodes end on success."""
        self.terminal_on_success = ended
        self.sources["terminal_on_success"] = "observed at the first success added: it " + (
            "ended its episode" if ended else "did not end its episode"
        )

    def _check_reward_fn(self, values: dict[str, np.ndarray]) -> None:
        """Call ``reward_fn`` on the first step added, so that one of the wrong shape is
        refused by that ``add`` (later steps are scored in batches, :meth:`_score`)."""
        info = {key: values[f"info.{key}"].astype(np.float64) for key in self.info_keys}
        host_rewards(self.reward_fn, values["next_achieved_goal"], values["desired_goal"], info)
        self._reward_fn_checked = True

    def flush(self) -> None:
        """Score the steps added since the last sample, so that :attr:`audit` counts every
        step stored (sampling and saving do this by themselves)."""
        self._score()

    def _score(self) -> None:
        """Fill the ``reward``, ``reward_extra`` and ``success`` columns of the steps added
        since the last call, and account for them in :attr:`audit`
        (:func:`~herkit.buffer.env_terms.score_steps`). Runs before every sample and save,
        and every few hundred adds."""
        if self._pending:
            score_steps(
                self._pending, self.storage, self.reward_fn, self.info_keys, self.audit,
                self.success_threshold,
            )  # fmt: skip
            self._pending = []

    def reached_threshold(self) -> float | None:
        """The ``reward_fn`` value from which a goal counts as reached: the declared
        ``success_threshold``, else the one learned from ``success`` flags, else None
        (reached means ``reward_fn(g, g)``)."""
        return reached_threshold(self.success_threshold, self.audit)

    def success_rule(self) -> str:
        """In words, how a relabelled goal counts as reached now (for logs and configs)."""
        return success_rule(self.success_threshold, self.audit)

    def end_episodes(self, mask: Any = None) -> None:
        """End the open episodes of all envs (or where ``mask`` is true) as if truncated.

        For envs reset outside ``add``, e.g. when a run resumes from a checkpoint: their
        next steps must not extend the episodes recorded before.
        """
        done = np.ones(self.n_envs, bool) if mask is None else as_flags("mask", mask, self.n_envs)
        ids, envs = self.storage.close_episodes(done)
        if self._closed_only and len(ids):
            self._store_goals(ids, envs)

    def _store_goals(self, ids: np.ndarray, envs: np.ndarray) -> None:
        """Draw and write the goals of just-finished episodes (store mode)."""
        storage, n_goals = self.storage, self.goals_per_transition
        start, length, step, env = storage.steps_of(ids, envs)
        slots = storage.slot_of(start + step, env)
        if n_goals:
            goal_slots = self._goal_slots(
                *(np.repeat(a, n_goals) for a in (start, length, step, env))
            )
            goals = self.ops.take(storage.data["next_achieved_goal"], goal_slots)
            goals = goals.reshape(len(slots), n_goals, *goals.shape[1:])
            self.ops.assign(storage.data["relabel_goal"], slots, goals)
        if self.tree is not None:
            self.tree.set(self._leaves_of(slots), self.max_priority)

    def _goal_slots(
        self, start: np.ndarray, length: np.ndarray, step: np.ndarray, env: np.ndarray
    ) -> np.ndarray:
        """Slots whose ``next_achieved_goal`` relabels the given transitions."""
        if self.strategy is Strategy.RANDOM:
            return self.storage.sample_slots(len(step), self.rng, self._closed_only)
        goal_step = GOAL_STEPS[self.strategy](step, length, self.rng)
        return self.storage.slot_of(start + goal_step, env)

    def _leaves_of(self, slots: np.ndarray) -> np.ndarray:
        """The priority leaves of ``slots``: one per slot, or ``_copies`` per slot."""
        if self._copies == 1:
            return slots
        return (slots[:, None] * self._copies + np.arange(self._copies)).ravel()

    # -- sampling --------------------------------------------------------------------------

    def sample(self, batch_size: int, beta: float | None = None) -> Batch:
        """Draw ``batch_size`` transitions with replacement, goals relabelled as configured."""
        require_int("batch_size", batch_size, minimum=1)
        self._score()
        if len(self) == 0:
            raise ValueError(
                "cannot sample from an empty buffer: add transitions first"
                + (" and finish an episode (relabel='store')" if self._closed_only else "")
            )
        weights = indices = None
        copy = None
        if self.tree is not None:
            indices = self.tree.sample(batch_size, self.rng)
            beta = self.beta if beta is None else beta
            weights = importance_weights(self.tree, indices, beta, len(self) * self._copies)
            slots = indices // self._copies
            if self._copies > 1:
                copy = indices % self._copies
        else:
            slots = self.storage.sample_slots(batch_size, self.rng, self._closed_only)
            if self._closed_only and self.goals_per_transition:
                copy = self.rng.integers(0, self._copies, size=batch_size)

        data, ops = self.storage.data, self.ops
        goal = ops.take(data["desired_goal"], slots)
        next_achieved = ops.take(data["next_achieved_goal"], slots)
        if copy is not None:  # store mode: copy j > 0 is the j-th stored goal
            relabel = copy > 0
            stored = self._stored_goals_flat
            chosen = ops.take(stored, slots * (self._copies - 1) + np.maximum(copy - 1, 0))
            goal = ops.where(self._per_sample(relabel), chosen, goal)
        elif self.goal_mix is not None:
            goal, relabel = self._mixed_goals(slots, goal)
        elif not self._closed_only and self.goals_per_transition:
            relabel = self.rng.random(batch_size) < self.relabel_probability
            if self.strategy is Strategy.FINAL:  # an open episode has no final goal yet
                relabel &= self.storage.is_closed(slots)
            start, length, step = self.storage.positions(slots)
            goal_slots = self._goal_slots(start, length, step, slots % self.n_envs)
            chosen = ops.take(data["next_achieved_goal"], goal_slots)
            goal = ops.where(self._per_sample(relabel), chosen, goal)
        else:
            relabel = None

        reward, terminated, last, discount = self._returns(slots, goal, relabel, next_achieved)
        return Batch(
            observation=ops.take(data["observation"], slots),
            action=ops.take(data["action"], slots),
            reward=reward,
            next_observation=ops.take(data["next_observation"], last),
            goal=goal,
            achieved_goal=ops.take(data["achieved_goal"], slots),
            next_achieved_goal=next_achieved,
            terminated=terminated,
            discount=discount,
            weights=None if weights is None else ops.from_host(weights),
            indices=indices,
            extras=self._extras("obs", slots),
            next_extras=self._extras("next_obs", last),
        )

    def _extras(self, side: str, slots: np.ndarray) -> dict[str, Any] | None:
        """The extra observation keys of ``slots`` (None without extra keys)."""
        if not self.extra_keys:
            return None
        data = self.storage.data
        return {key: self.ops.take(data[f"{side}.{key}"], slots) for key in self.extra_keys}

    def _returns(
        self,
        slots: np.ndarray,
        goal: np.ndarray,
        relabel: np.ndarray | None,
        next_achieved: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
        """Reward, terminal flag, slot of the last step and discount of each sample: one
        step (discount None: the agent's gamma), or n steps (:mod:`herkit.buffer.returns`),
        every reward and flag the env's where ``relabel`` is false (or None), else taken for
        ``goal`` (:mod:`herkit.buffer.env_terms`); ``next_achieved`` is the samples' own."""
        data, ops, n = self.storage.data, self.ops, self.n_step
        flat = slots
        if n > 1:
            window, recorded = step_window(self.storage, slots, n)
            flat = window.ravel()
        rewards = ops.take(data["reward"], flat)
        terminal = ops.take(data["terminated"], flat)
        if relabel is not None and relabel.any():
            goals = goal if n == 1 else ops.repeat(goal, n)
            info = {key: ops.take(data[f"info.{key}"], flat) for key in self.info_keys}
            achieved = next_achieved if n == 1 else ops.take(data["next_achieved_goal"], flat)
            goal_reward = self._reward(achieved, goals, info)
            relabelled = relabel if n == 1 else np.repeat(relabel, n)
            extra = ops.take(data["reward_extra"], flat)
            rewards = ops.where(relabelled, goal_reward + extra, rewards)
            if self.terminal_on_success:  # ended for another reason, or this goal reached
                other_end = terminal & ~ops.take(data["success"], flat)
                reached = self._reached(goal_reward, goals, info)
                terminal = ops.where(relabelled, other_end | reached, terminal)
        if n == 1:
            return rewards, ops.as_float32(terminal), slots, None
        assert self.gamma is not None
        return n_step_sums(ops, rewards, terminal, recorded, window, self.gamma)

    def _mixed_goals(self, slots: np.ndarray, goal: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Goals of the goal mix for ``slots`` (whose own goals are ``goal``) and the mask
        of the samples whose goal was replaced."""
        assert self.goal_mix is not None
        data, ops = self.storage.data, self.ops
        warm = self.storage.rows_written * self.n_envs >= self.goal_mix_warmup
        mix = self.goal_mix if warm else (0.0, 1.0, 0.0)
        future, desired = goal_sources(mix, len(slots), self.rng)
        start, length, step = self.storage.positions(slots)
        future_slots = self._goal_slots(start, length, step, slots % self.n_envs)
        other_slots = self.storage.sample_slots(len(slots), self.rng, False)
        future_goal = ops.take(data["next_achieved_goal"], future_slots)
        goal = ops.where(self._per_sample(future), future_goal, goal)
        desired_goal = ops.take(data["desired_goal"], other_slots)
        goal = ops.where(self._per_sample(desired), desired_goal, goal)
        return goal, future | desired

    def _per_sample(self, mask: np.ndarray) -> np.ndarray:
        """A ``(B,)`` mask shaped to broadcast over goals of any rank."""
        return mask.reshape(-1, *(1,) * len(self._specs["desired_goal"].shape))

    def _reached(self, goal_reward: Any, goal: Any, info: Mapping[str, Any]) -> Any:
        """Whether each sample's goal is reached, given ``goal_reward = reward_fn(achieved,
        goal)``: at or above :meth:`reached_threshold`, else equal to the reward of the
        goal paired with itself."""
        return reached(
            self.reached_threshold(), goal_reward, lambda: self._reward(goal, goal, info)
        )

    def _reward(self, achieved: Any, desired: Any, info: Mapping[str, Any]) -> Any:
        """Rewards for a batch, in the backend (see :func:`.env_terms.backend_rewards`)."""
        return backend_rewards(
            self.ops, self.reward_fn, self.torch_reward_fn, achieved, desired, info
        )

    def update_priorities(self, indices: Any, priorities: Any) -> None:
        """Set the priorities (e.g. absolute TD errors) of sampled ``indices``.

        Stored as ``(priority + eps) ** alpha``. Indices whose transition has been dropped
        since it was sampled are ignored.
        """
        if self.tree is None:
            raise ValueError("update_priorities needs a buffer built with prioritized=True")
        idx, value = checked_priorities(indices, priorities, self.tree.capacity)
        value = (value + self.eps) ** self.alpha
        live = self.tree.leaves[idx] > 0
        self.tree.set(idx[live], value[live])
        if len(value):
            self.max_priority = max(self.max_priority, float(value.max()))

    # -- persistence (:mod:`herkit.buffer.persistence`) --------------------------------

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the whole buffer to one ``.npz`` file (no pickle), atomically."""
        save_buffer(self, path)

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        reward_fn: RewardFn,
        *,
        device: Any = None,
        torch_reward_fn: TorchRewardFn | None = None,
    ) -> HerReplayBuffer:
        """Rebuild a buffer written by :meth:`save`; the reward functions are not stored,
        nor is the device: a buffer saved from any device loads onto ``device``."""
        build = partial(cls, reward_fn=reward_fn, device=device, torch_reward_fn=torch_reward_fn)
        return load_buffer(path, build)

    def _config(self) -> dict[str, Any]:
        """The keyword arguments that rebuild this buffer, but the reward functions and the
        device (what :meth:`save` stores)."""
        specs = self._specs
        return {
            "capacity": self.storage.capacity,
            "observation_shape": list(specs["observation"].shape),
            "goal_shape": list(specs["desired_goal"].shape),
            "action_shape": list(specs["action"].shape),
            "observation_dtype": specs["observation"].dtype.str,
            "goal_dtype": specs["desired_goal"].dtype.str,
            "action_dtype": specs["action"].dtype.str,
            "strategy": self.strategy.value,
            "k": self.k,
            "n_envs": self.n_envs,
            "relabel": self.relabel,
            "prioritized": self.prioritized,
            "alpha": self.alpha,
            "beta": self.beta,
            "eps": self.eps,
            "info_keys": list(self.info_keys),
            "extra_keys": {
                key: [list(spec.shape), spec.dtype.str] for key, spec in self.extra_keys.items()
            },
            "terminal_on_success": self.terminal_on_success,
            "success_threshold": self.success_threshold,
            "goal_mix": None if self.goal_mix is None else list(self.goal_mix),
            "goal_mix_warmup": self.goal_mix_warmup,
            "n_step": self.n_step,
            "gamma": self.gamma,
            "seed": self._seed,
        }
