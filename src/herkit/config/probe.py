"""What a run's env decides before its settings are final: one env made and asked once
(:func:`probe_env`), its answer an :class:`EnvProbe`.

The probe is a layer of the run's settings (:mod:`herkit.config.resolve`): whether the
action space is discrete (the algorithm where none is given), the env's conventions
(reward range, where success is read, whether episodes end on success:
:mod:`herkit.buffer.conventions`), the info fields its reward reads and the evaluation
tasks it declares. :func:`make_run_env` makes every env of a run. Torch-free: ``herkit
train`` resolves its settings before torch loads.
"""

from __future__ import annotations

import dataclasses
import traceback
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import gymnasium as gym

from herkit.buffer.conventions import GoalConventions, probe_conventions
from herkit.buffer.ending import Ending
from herkit.buffer.goal_env import compute_reward_of, wrapper_attr
from herkit.envs import make_goal_env
from herkit.envs.failures import EnvFailure, Failed, raised
from herkit.envs.registration import env_kwargs as given_kwargs
from herkit.envs.seeding import seeded_episodes
from herkit.envs.task_variants import FixedGoal, ShapedReward, reward_info_keys

if TYPE_CHECKING:
    from herkit.config.train import TrainConfig

__all__ = ["EnvProbe", "hand_over", "make_run_env", "probe_env", "take_probe"]

GIVEN = "given (flag or config.json)"
"""The source of a convention that the settings give (:attr:`GoalConventions.sources`)."""


def make_run_env(config: TrainConfig, **env_kwargs: Any) -> gym.Env:
    """The run's env: ``config.env_id`` made with its ``env_kwargs`` (``env_kwargs`` given
    here override them), with the goal and reward of ``--fixed-goal`` and
    ``--shaped-reward`` (:mod:`herkit.envs.task_variants`). Every env of a run (training,
    evaluation, probes, a loaded policy's) is made here, its episodes fixed by their reset
    seeds (:func:`~herkit.envs.seeding.seeded_episodes`: numpy's global generator and its
    action space seeded at each reset)."""
    env = make_goal_env(config.env_id, **{**given_kwargs(config.env_kwargs), **env_kwargs})
    env = seeded_episodes(env)
    try:
        if config.shaped_reward is not None:
            env = ShapedReward(env, *config.shaped_reward)
        if config.fixed_goal:
            goal_seed = config.seed if config.goal_seed is None else config.goal_seed
            env = FixedGoal(env, goal_seed=goal_seed)
    except Exception:
        env.close()
        raise
    return env


@dataclass(frozen=True)
class EnvProbe:
    """What one env of a run said before the run's settings were final."""

    key: tuple[Any, ...]
    """The settings that make the env (:func:`probe_key`): the probe answers for them."""
    discrete: bool
    """Its action space is ``Discrete`` (else a ``Box``)."""
    observation_space: gym.Space[Any]
    """Its observation space (a ``Dict``: ``observation``, ``achieved_goal``, ``desired_goal``)."""
    action_space: gym.Space[Any]
    """Its action space."""
    info_keys: tuple[str, ...]
    """The info fields its reward reads that the settings did not name (``--shaped-reward``'s)."""
    conventions: GoalConventions
    """Its conventions as probed (nothing given yet)."""
    task: str | None
    """What its task is in words (``task_words``), if it says."""
    tasks: tuple[dict[str, Any] | None, ...]
    """The reset options of the evaluation tasks it declares (OGBench's ``{"task_id": k}``),
    or ``(None,)``: one task, the goals it draws itself."""
    resolved: tuple[TrainConfig, GoalConventions, dict[str, str]] | None = None
    """The settings this probe completed, the conventions and the provenance they came with
    (set where it is handed over to the run of those settings, :func:`hand_over`)."""

    def conventions_for(self, config: TrainConfig) -> GoalConventions:
        """The run's conventions: the probe's, with what ``config`` gives in their place
        (``reward_range``, ``success_key``, ``terminal_on_success``: a flag or config.json;
        None: the env's). ValueError where ``config`` reads success from a reward the env
        does not make sparse."""
        probed = self.conventions
        sources = dict(probed.sources)
        for name in ("reward_range", "success_key"):
            if getattr(config, name) is not None:
                sources[name] = GIVEN
        success_key = config.success_key or probed.success_key
        if success_key == "compute_reward" and probed.success_reward is None:
            raise ValueError(
                "success_key 'compute_reward' needs a sparse reward (a reached goal's reward is "
                f"the largest of a few values); {config.env_id}'s reward is not: use another "
                "--success-key"
            )
        ending = Ending.given(config.her.terminal_on_success, GIVEN).otherwise(probed.ending)
        return dataclasses.replace(
            probed,
            reward_range=config.reward_range or probed.reward_range,
            success_key=success_key,
            sources=sources,
            task=self.task,
        ).with_ending(ending)


def probe_key(config: TrainConfig, info_keys: tuple[str, ...] | None = None) -> tuple[Any, ...]:
    """The settings that make and probe a run's env (its id and kwargs, task variants, seed
    and info fields: ``info_keys`` in place of the config's where given), and the id's
    registration: a probe answers for these alone."""
    name = config.env_id.split(":")[-1]
    return (
        config.env_id,
        config.env_kwargs,
        config.shaped_reward,
        config.fixed_goal,
        config.goal_seed,
        config.seed,
        config.her.info_keys if info_keys is None else info_keys,
        id(gym.registry.get(name)),
    )


_HANDED: list[EnvProbe] = []
"""The last probe made in this process, handed over to the run that asks for it once."""


def probe_env(config: TrainConfig) -> EnvProbe:
    """Make the env of ``config`` once and ask it everything the run's settings need (see
    :class:`EnvProbe`). An env that fails in the probe's random steps raises :class:`EnvFailure`."""
    env = make_run_env(config)
    try:
        discrete = isinstance(env.action_space, gym.spaces.Discrete)
        needed = tuple(key for key in reward_info_keys(env) if key not in config.her.info_keys)
        task = getattr(env.unwrapped, "task_words", None)
        declared = wrapper_attr(env, "evaluation_tasks")
        try:
            conventions = probe_conventions(
                env,
                compute_reward_of(env),
                info_keys=(*config.her.info_keys, *needed),
                seed=config.seed,
            )
        except ValueError:
            raise
        except Exception as error:  # the env's own failure, in the probe's random steps
            what = raised(error)
            failed = Failed(
                (0,), what, "the random steps of the conventions probe", traceback.format_exc()
            )
            raise EnvFailure("env", [failed]) from error
    finally:
        env.close()
    found = EnvProbe(
        key=probe_key(config),
        discrete=discrete,
        observation_space=env.observation_space,
        action_space=env.action_space,
        info_keys=needed,
        conventions=conventions,
        task=task,
        tasks=tuple(declared) if declared else (None,),
    )
    return found


def hand_over(
    found: EnvProbe, config: TrainConfig, conventions: GoalConventions, provenance: dict[str, str]
) -> None:
    """Keep ``found``, which completed ``config`` with ``conventions`` (its settings' layers
    ``provenance``), for the next :func:`take_probe` of that config in this process (the
    run that trains it)."""
    _HANDED[:] = [dataclasses.replace(found, resolved=(config, conventions, provenance))]


def take_probe(config: TrainConfig) -> EnvProbe:
    """The probe of ``config``'s env: the one handed over for the same settings
    (:func:`hand_over`; taken: handed over once), else a new one (:func:`probe_env`). The
    settings that a probe completed (its info fields added) match it too."""
    if _HANDED:
        found = _HANDED.pop()
        if found.key in (probe_key(config), _without_added(config, found)):
            return found
    return probe_env(config)


def _without_added(config: TrainConfig, found: EnvProbe) -> tuple[Any, ...]:
    """The probe key of ``config`` before the probe's info fields were added to it."""
    keys = config.her.info_keys
    if found.info_keys and keys[len(keys) - len(found.info_keys) :] == found.info_keys:
        keys = keys[: len(keys) - len(found.info_keys)]
    return probe_key(config, keys)
