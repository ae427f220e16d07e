"""A tagged-episode simulator: every goal carries the episode and step it came from.

Tags (float32 triples):
- ``observation`` at step t of episode ``uid`` in env ``e``: ``(uid, t, e)``, and the next
  observation that plus ``next_offset`` (default ``(1, 1, 1)``, which no real step gives;
  ``(0, 1, 0)`` makes it the observation of step t + 1, as an env would);
- ``next_achieved_goal`` at step t: ``(uid, t, e)`` and ``achieved_goal``: ``(uid, t - 1, e)``;
- ``desired_goal`` (the real goal): ``(-1 - uid, 0, e)``, negative so a relabelled goal
  (always an achieved-goal tag, ``uid >= 0``) is told apart from the original.

The reward is ``0`` when the goal equals the achieved tag and ``-1`` otherwise, so a
reward of 0 proves the goal came from the transition's own step.

Episodes of odd ``uid`` end ``terminated``, the others ``truncated``. With ``env_terms``
the run also hands the buffer the env's reward, ``tag_reward`` plus :func:`penalty` (a
term that ``compute_reward`` lacks), and success flags: an episode with ``uid % 4 == 3``
ends on reaching its goal, one with ``uid % 4 == 1`` in a crash (:func:`crashed`).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field, fields, replace
from typing import Any

import numpy as np
import pytest
import torch

from herkit import Batch, HerReplayBuffer
from herkit.buffer.strategies import STRATEGIES


def tag_reward(achieved: np.ndarray, desired: np.ndarray, info: object) -> np.ndarray:
    """0 where the goal is exactly the achieved tag, else -1."""
    return -np.any(achieved != desired, axis=-1).astype(np.float32)


def penalty(uid: Any, t: Any) -> Any:
    """The env's reward term beyond ``compute_reward`` at step ``t`` of episode ``uid``."""
    return np.where((np.asarray(uid) * 7 + np.asarray(t)) % 5 == 0, -5.0, 0.0)


def crashed(uid: Any) -> Any:
    """Whether episode ``uid`` ends terminated for another reason than its goal."""
    return np.asarray(uid) % 4 == 1


def torch_tag_reward(achieved: Any, desired: Any, info: object) -> Any:
    """:func:`tag_reward` in torch, for buffers on a device."""
    return -(achieved != desired).any(dim=-1).float()


STRATEGY_NAMES: list[str] = list(STRATEGIES)
"""Every HER strategy, from the registry (:data:`herkit.buffer.strategies.STRATEGIES`)."""

RELABELLING: list[str] = [name for name, rule in STRATEGIES.items() if rule.source != "none"]
"""The strategies that relabel (all but ``none``)."""


def with_needs(kwargs: dict[str, Any], gamma: float = 0.9) -> dict[str, Any]:
    """A buffer's keywords with what their strategy needs: ``gamma`` for one that reads it
    (unless given)."""
    rule = STRATEGIES.get(str(kwargs.get("strategy", "future")))
    if rule is not None and rule.needs_gamma and kwargs.get("gamma") is None:
        return kwargs | {"gamma": gamma}
    return kwargs


DEVICES: list[str | None] = [None, "cpu"] + (["cuda"] if torch.cuda.is_available() else [])
"""Where a buffer's data can live here: numpy (None), torch tensors on the CPU, a GPU."""


def host(batch: Batch) -> Batch:
    """``batch`` with every tensor field as a numpy array."""
    return replace(
        batch,
        **{
            f.name: getattr(batch, f.name).cpu().numpy()
            for f in fields(batch)
            if isinstance(getattr(batch, f.name), torch.Tensor)
        },
    )


@dataclass
class Episode:
    """What the simulator knows of one episode."""

    uid: int
    env: int
    start_row: int
    length: int = 0
    closed: bool = False


@dataclass
class TaggedRun:
    """Feeds tagged episodes of given lengths into a buffer and remembers them."""

    buffer: HerReplayBuffer
    episodes: dict[int, Episode] = field(default_factory=dict)
    rows_written: int = 0
    current: list[Episode] = field(default_factory=list)
    next_offset: tuple[float, float, float] = (1.0, 1.0, 1.0)
    env_terms: bool = False
    penalties: bool = True
    """With ``env_terms``: the env's rewards carry :func:`penalty` (else they are its
    compute_reward, success flags and crashes alone)."""

    def feed(
        self, lengths_per_env: list[list[int]], end_open: bool = False, steps: int | None = None
    ) -> None:
        """Step all envs together until the env with the most steps has played its list.

        The others cycle through their lists meanwhile. ``steps`` overrides the number
        of steps. The episodes in progress at the end stay open, unless ``end_open`` ends
        them with the last step.
        """
        n_envs = self.buffer.n_envs
        queues = [itertools.cycle(lengths) for lengths in lengths_per_env]
        if not self.current:  # episodes left open by an earlier feed continue
            self.current = [self._new_episode(e) for e in range(n_envs)]
        current = self.current
        remaining = [
            max(next(q), episode.length + 1) for q, episode in zip(queues, current, strict=True)
        ]
        if steps is None:
            steps = max(sum(lengths) for lengths in lengths_per_env)
        for step in range(steps):
            obs = np.zeros((n_envs, 3), np.float32)
            achieved = np.zeros((n_envs, 3), np.float32)
            desired = np.zeros((n_envs, 3), np.float32)
            next_achieved = np.zeros((n_envs, 3), np.float32)
            terminated = np.zeros(n_envs, bool)
            truncated = np.zeros(n_envs, bool)
            for e, episode in enumerate(current):
                t = episode.length
                obs[e] = (episode.uid, t, e)
                achieved[e] = (episode.uid, t - 1, e)
                desired[e] = (-1 - episode.uid, 0, e)
                next_achieved[e] = (episode.uid, t, e)
                episode.length += 1
                if episode.length == remaining[e]:
                    # Alternate the kind of ending; both close the episode.
                    (terminated if episode.uid % 2 else truncated)[e] = True
                elif end_open and step == steps - 1:
                    truncated[e] = True
            action = np.zeros((n_envs, 1), np.float32)
            extra: dict[str, Any] = {}
            if self.env_terms:
                uid, t = obs[:, 0], obs[:, 1]
                own = tag_reward(next_achieved, desired, None)
                extra["reward"] = own + (penalty(uid, t) if self.penalties else 0.0)
                extra["success"] = terminated & ~crashed(uid)
            self.buffer.add(
                {"observation": obs, "achieved_goal": achieved, "desired_goal": desired},
                action,
                {
                    "observation": obs + self.next_offset,
                    "achieved_goal": next_achieved,
                    "desired_goal": desired,
                },
                terminated,
                truncated,
                info={"step": obs[:, 1]} if self.buffer.settings.info_keys else None,
                **extra,
            )
            self.rows_written += 1
            for e in np.flatnonzero(terminated | truncated):
                current[e].closed = True
                current[e] = self._new_episode(int(e))
                remaining[e] = next(queues[e])

    def _new_episode(self, env: int) -> Episode:
        episode = Episode(uid=len(self.episodes), env=env, start_row=self.rows_written)
        self.episodes[episode.uid] = episode
        return episode

    def sampleable(self, uid: int, closed_only: bool) -> bool:
        """Whether the buffer may sample episode ``uid``: whole, and closed if required."""
        episode = self.episodes[uid]
        rows = self.buffer.storage.rows
        whole = episode.start_row >= self.rows_written - rows
        return whole and episode.length > 0 and (episode.closed or not closed_only)


def check_n_step_batch(
    run: TaggedRun, batch: Batch, n_step: int, gamma: float, terminal_on_success: bool
) -> None:
    """Each n-step sample of ``batch`` against an explicit per-sample computation: the
    rewards of its goal (relabelled or not) over its episode's next steps, cut at the first
    terminal step (a crash, or, where episodes end on success, a relabelled goal reached),
    at the episode's end or at its last recorded step; ``gamma ** m`` for the ``m`` steps
    summed; the observation after the last of them."""
    uid = batch.observation[:, 0].astype(int)
    step = batch.observation[:, 1].astype(int)
    env = batch.observation[:, 2].astype(int)
    for i in range(len(batch)):
        episode = run.episodes[uid[i]]
        relabelled = batch.goal[i, 0] >= 0
        reward, m, terminal = 0.0, 0, False
        for j in range(n_step):
            t = step[i] + j
            if t >= episode.length:  # not recorded (yet): the window ends, bootstrapping
                break
            reached = np.array_equal(batch.goal[i], [uid[i], t, env[i]])
            reward += gamma**j * (0.0 if reached else -1.0)
            m += 1
            # odd episodes end terminated without reaching their goal (a crash: terminal
            # for every goal); a relabelled goal reached is terminal where episodes end on it
            ended_here = episode.closed and t == episode.length - 1 and uid[i] % 2 == 1
            terminal = ended_here or (terminal_on_success and relabelled and reached)
            if terminal:
                break
        assert batch.reward[i] == pytest.approx(reward, abs=1e-5), i
        assert batch.discount[i] == pytest.approx(gamma**m), i
        assert batch.terminated[i] == float(terminal), i
        last = [uid[i], step[i] + m - 1, env[i]]  # the observation after the last step
        np.testing.assert_array_equal(batch.next_observation[i], np.add(last, run.next_offset))


def expected_env_terms(
    run: TaggedRun, batch: Batch, terminal_on_success: bool, keep_env_terms: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """The reward and terminal flag each sample of a host ``batch`` of a run with
    ``env_terms`` must have: its own goal gets what the env gave; a relabelled goal its
    compute_reward plus (``keep_env_terms``) the step's penalty, terminal after a crash or,
    where episodes end on success, when it is reached."""
    uid, t, env = (batch.observation[:, i].astype(int) for i in range(3))
    own_goal = np.stack([-1 - uid, np.zeros_like(uid), env], axis=1)
    relabelled = np.any(batch.goal != own_goal, axis=1)
    reached = np.all(batch.goal == batch.next_achieved_goal, axis=1)
    lengths_of = np.array([run.episodes[u].length for u in uid])
    closed = np.array([run.episodes[u].closed for u in uid])
    ended = closed & (t == lengths_of - 1) & (uid % 2 == 1)  # the env's terminated flag
    kept = ~relabelled | keep_env_terms
    reward = np.where(relabelled & reached, 0.0, -1.0) + np.where(kept, penalty(uid, t), 0.0)
    if not terminal_on_success:
        return reward, ended.astype(np.float32)
    terminal = np.where(relabelled, (ended & crashed(uid)) | reached, ended)
    return reward, terminal.astype(np.float32)
