"""Episodes fixed by their reset seed, whatever the env draws its randomness from.

``env.reset(seed=s)`` seeds the env's own generator (``env.np_random``). Some envs draw from
others too: OGBench's mazes take their start and goal noise, and the task of a reset
without one, from numpy's global generator (``np.random.uniform``), the teleport maze its
destination during steps, and every maze samples its own action space for a few settling
steps at reset. A seed given to ``reset`` then fixes nothing that matters, and envs in
worker processes forked from one trainer draw the same numbers (their copies of the global
generator start alike): two envs play the same episode.

:class:`SeededEpisodes` gives those draws to the episode. Each reset draws an episode key
from the wrapper's own generator (seeded by ``reset(seed=)``, which seeds the env's action
space too; an unseeded reset goes on with both) and seeds numpy's global generator with
it, before the env resets; with ``every_step``, each step reseeds numpy's global generator
from the key and the step's index too, so that envs stepped in turn in one process never
draw each other's numbers. An episode is then a function of its reset seed (and, after an unseeded
reset, of the seed of the last seeded one), in one process or in workers.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

__all__ = ["SeededEpisodes", "seeded_episodes"]

KEY_BOUND = 2**32
"""Episode keys and the seeds made of them are below this (numpy's legacy seeds are 32-bit)."""

STEP_MIX = 0x9E3779B1
"""An odd 32-bit constant (the golden ratio's): the global generator's seed at step ``t`` of
an episode keyed ``k`` is ``(k + t * STEP_MIX) mod 2**32``, distinct for every step of the
episode."""


class SeededEpisodes(gym.Wrapper):
    """``env`` whose draws from numpy's global generator and from its action space are
    fixed by its episodes (see the module's docstring); ``every_step`` reseeds numpy's
    global generator at every step too, for an env that draws from it while it steps.

    Numpy's global generator is the env's to use while it resets and steps: code around it
    that needs a stream of its own holds a ``np.random.Generator``.
    """

    def __init__(self, env: gym.Env, every_step: bool = False) -> None:
        super().__init__(env)
        self.every_step = bool(every_step)
        """Whether each step reseeds numpy's global generator (from the episode's key and the
        step's index)."""
        self._keys: np.random.Generator | None = None
        self._key = 0
        self._steps = 0

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Reset ``env``; its episode's key comes from ``seed`` where given, else from the
        keys of the last seeded reset (fresh entropy if there was none). A seeded reset
        seeds the env's action space too (its own stream, which unseeded resets go on
        with: seeding a space costs more than an episode of a fast env)."""
        if seed is not None or self._keys is None:  # the action space's stream too
            self._keys = np.random.default_rng(seed)
            self.env.unwrapped.action_space.seed(int(self._keys.integers(KEY_BOUND)))
        self._key = int(self._keys.integers(KEY_BOUND))
        self._steps = 0
        np.random.seed(self._key)  # noqa: NPY002 (the generator the env draws from)
        return self.env.reset(seed=seed, options=options)

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        """Step ``env`` (with ``every_step``, numpy's global generator seeded for this step
        first)."""
        if self.every_step:
            np.random.seed((self._key + self._steps * STEP_MIX) % KEY_BOUND)  # noqa: NPY002
        self._steps += 1
        return self.env.step(action)


def seeded_episodes(env: gym.Env) -> gym.Env:
    """``env`` in :class:`SeededEpisodes` (reseeding at resets), unless a
    :class:`SeededEpisodes` is among its wrappers already (an env that says it draws from
    numpy's global generator while it steps comes so: OGBench's teleport maze)."""
    inner: Any = env
    while isinstance(inner, gym.Wrapper):
        if isinstance(inner, SeededEpisodes):
            return env
        inner = inner.env
    return SeededEpisodes(env)
