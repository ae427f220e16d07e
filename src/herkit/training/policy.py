"""A trained policy, loaded from a run directory to act in Python.

::

    import herkit

    policy = herkit.load_policy("runs/herkit-BitFlip-v0-dqn-future-s0")
    env = policy.make_env()
    obs, _ = env.reset(seed=0)
    action = policy.act(obs)  # deterministic; a batch of observations gives a batch of actions

Loading reads the checkpoint the way ``herkit train --resume`` does (tensors only, no
pickle, every file checked against its SHA-256 in ``state.json``); the replay buffer is not
read. A run trained with torchrun loads from rank 0's file (the ranks' networks are equal).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from herkit.agents import GoalAgent
from herkit.config.train import TrainConfig
from herkit.envs.imports import prepare_run_env
from herkit.rundir.checkpoint import load_agent_state
from herkit.rundir.settings import load_run_config, saved_env_import
from herkit.training.build import make_run_agent, make_run_env

__all__ = ["Policy", "load_policy", "make_run_agent"]


@dataclass(frozen=True)
class Policy:
    """The policy of a trained run: its agent (with the observation and goal normalisers
    it trained with) and the run's config. Build it with :func:`load_policy`."""

    agent: GoalAgent
    """The trained agent; :meth:`act` is the way to use it."""
    config: TrainConfig
    """The run's settings, as in its ``config.json``."""
    observation_space: gym.spaces.Dict
    """The env's observation space (a GoalEnv ``Dict``)."""
    action_space: gym.spaces.Space
    """The env's action space; :meth:`act` returns actions in it."""
    run_dir: Path
    """The run directory it was loaded from."""
    env_steps: int
    """Env steps the run had trained when its checkpoint was written."""
    updates: int = 0
    """Gradient steps the run had made when its checkpoint was written (on its dataset,
    then online)."""

    @property
    def env_id(self) -> str:
        """The id of the env the policy was trained on."""
        return self.config.env_id

    def act(self, observation: Mapping[str, Any], deterministic: bool = True) -> Any:
        """The action for one GoalEnv observation, or actions for a batch of them.

        ``observation`` is the env's observation dict (its ``observation`` and
        ``desired_goal`` are read; other keys are ignored), either of one env or with a
        leading batch axis (as a vector env gives). One observation gives one action of
        the env's action space (an int for ``Discrete``); a batch gives an array with the
        same leading axis. ``deterministic=False`` samples as in training (exploration
        noise or SAC's stochastic policy).
        """
        if not isinstance(observation, Mapping) or not all(
            key in observation for key in ("observation", "desired_goal")
        ):
            raise ValueError(
                "observation must be a GoalEnv observation dict with the keys 'observation' "
                f"and 'desired_goal', got {type(observation).__name__}"
            )
        obs = np.asarray(observation["observation"], dtype=np.float32)
        goal = np.asarray(observation["desired_goal"], dtype=np.float32)
        shape = self.observation_space["observation"].shape
        single = obs.shape == shape
        if not single and obs.shape[1:] != shape:
            raise ValueError(
                f"observation['observation'] must have shape {shape} or (n, *{shape}), "
                f"got {obs.shape}"
            )
        actions = self.agent.act(obs, goal, deterministic=deterministic)
        if not single:
            return actions
        action = actions[0]
        return int(action) if isinstance(self.action_space, gym.spaces.Discrete) else action

    __call__ = act

    def make_env(self, render_mode: str | None = None, **env_kwargs: Any) -> gym.Env:
        """The env the policy was trained on (its ``env_kwargs`` too), e.g. to watch it
        with ``render_mode="rgb_array"``; ``env_kwargs`` override the run's."""
        if render_mode is not None:
            env_kwargs["render_mode"] = render_mode
        return make_run_env(self.config, **env_kwargs)


def load_policy(run_dir: str | Path, device: str = "cpu", env_id: str | None = None) -> Policy:
    """The trained policy of a run directory (written by ``herkit train``), on ``device``.

    The run's env is made as the run recorded it (``config.json``'s ``env_import``: a
    ``module:Id``'s module is imported from the folder it was trained from, wherever this
    runs); ``env_id`` (an id, or ``module:Id``) names it instead, e.g. an id that the
    training script registered itself.

    Raises:
        ValueError: the directory has no valid ``config.json`` or checkpoint (a
            :class:`herkit.rundir.checkpoint.CheckpointError` for a damaged one), the device
            is not available, the env cannot be made here (one line on how to name it), or
            the env named by ``env_id`` has other sizes than the run's.
    """
    config = load_run_config(run_dir)
    if env_id is not None:
        if not isinstance(env_id, str) or not env_id:
            raise ValueError(f"env_id must be a non-empty env id string, got {env_id!r}")
        config = dataclasses.replace(config, env_id=env_id)
    prepare_run_env(config.env_id, saved_env_import(run_dir), given=env_id is not None)
    try:
        torch_device = torch.device(device)
    except RuntimeError:
        raise ValueError(f"device {device!r} is not a torch device (e.g. 'cpu', 'cuda')") from None
    if torch_device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {device!r}: CUDA is not available here; use device='cpu'")
    with contextlib.closing(make_run_env(config)) as env:
        observation_space, action_space = env.observation_space, env.action_space
    assert isinstance(observation_space, gym.spaces.Dict)
    agent = make_run_agent(config, observation_space, action_space, torch_device)
    state = load_agent_state(run_dir, torch_device)
    try:
        agent.load_state_dict(state["agent"])
    except RuntimeError as error:  # another env's spaces: networks of other sizes
        if env_id is None:
            raise
        raise ValueError(
            f"the policy of {run_dir} does not fit {env_id!r}: its observation, goal or action "
            f"sizes differ from the run's env ({str(error).splitlines()[-1].strip()})"
        ) from None
    return Policy(
        agent=agent,
        config=config,
        observation_space=observation_space,
        action_space=action_space,
        run_dir=Path(run_dir),
        env_steps=int(state["loop"]["env_steps"]),
        updates=int(state["loop"].get("updates", 0)),
    )
