"""Named recipes of ``herkit train --recipe NAME``: the Fetch setups of the code herkit cites,
as those codes run them, each a dict of :class:`~herkit.config.train.TrainConfig` fields that
replaces the learning settings of the env's preset (its budget and evaluations stay; flags
still change any setting). Every recipe trains in float32, as the codes it cites do, so
its run never takes bfloat16 where ``--precision auto`` would (``--precision bf16`` asks).

- ``baselines``: the HER paper's DDPG as OpenAI's baselines runs it for the Fetch tasks
  (``baselines/her/experiment/config.py``, ``her.py``; the README's ``mpirun -np 19
  ... --num_env=2``): 19 workers of 2 envs each, every cycle 50 steps of each env (1,900
  env steps) then 40 updates and one move of the target networks (polyak 0.95); each
  update averages the workers' batches of 256 (here one batch of 4,864: baselines sums the
  19 gradients, which Adam's step does not see), and the 19 buffers of 1M transitions hold
  every transition of a run (here one buffer of 5M, every transition of a run up to 5M
  env steps). Every layer starts Xavier-uniform with zero biases (``her/util.py`` ``nn``),
  and each update takes the critic's and the actor's gradients at the same weights before
  stepping both (``her/ddpg.py`` ``_grads``, ``_update``).
- ``mrl-push``: mrl's ``protoge_config`` (``mrl/configs/continuous_off_policy.py``, the
  MEGA paper's setup, FetchPush by default), run by ``experiments/mega/train_mega.py``
  without ``--ag_curiosity`` (its default): goals real 0.1, future 0.4, desired 0.4 and
  achieved 0.1 (its ``rfaab_1_4_3_1_1``, whose behavioural share draws a stored
  transition's behavioural goal, which without curiosity is its desired goal; the achieved
  share draws the goal a stored transition of any episode achieved after its action),
  gradients clipped by value to 5. 12 envs, the config's ``num_envs``: ``train_mega.py``
  runs ``max(cpu_count - 1, 1)`` envs unless ``--num_envs`` is given (12 on a machine of
  13 CPUs); herkit runs 12 on every machine, so the recipe is one setup (``--n-envs N``
  runs N).
- ``mrl-slide``: mrl's ``best_slide_config`` as ``experiments/benchmarks/train_her.py``
  runs it on Push and Slide (HER+FA in ``her.txt``): 8 envs, 3 x 512 GELU layers with
  LayerNorm, goals mixed 2 : 4 : 4, no gradient clipping.

Both mrl recipes start every layer as mrl's ``layer_init`` (orthogonal weights, the output
layers' scaled by 0.1, zero biases) and normalise as mrl's ``MeanStdNormalizer`` (clip 200,
``(x - mean) / sqrt(var + 1e-8)`` from its ``RunningMeanStd``'s start, clip 5), their
statistics fed only the observations and desired goals the policy acts on, never relabelled
goals (mrl normalises one concatenated observation and goal per step; statistics per
dimension, so herkit's two normalisers fed the same rows give the same numbers).

What herkit does not do as they do (said where the recipes are documented,
docs/guide-training.md): baselines trains after each whole cycle where herkit interleaves the same
number of updates with the env steps; baselines' normalisers count, after each cycle, one
relabelled draw as large as the cycle's transitions (their count starting at 1), where
herkit's count every env step's observation and goal and the goals of every sampled batch;
baselines' Adam adds its epsilon (1e-8) before the bias correction, PyTorch's after it. mrl
counts its warm-ups (``warm_up``, ``initial_explore``) in stored transitions of finished
episodes, and its target interval in calls since the first env step (here: env steps and
updates); samples only transitions of finished episodes (here also those recorded so far of
open ones); draws a future goal at ``t + round(u (T - 1 - t))``, its first and last steps
half as likely as the others (here uniform over ``t .. T - 1``); and counts the state it
acts on in the normaliser before acting (here after the step, so an action is normalised
with the statistics up to the step before).
"""

from __future__ import annotations

from typing import Any

from herkit.agents.settings import DDPGConfig
from herkit.config.her import RunHerSettings

__all__ = ["RECIPES", "RECIPE_TASKS", "check_recipe_task", "recipe_values"]

_MRL_NETWORKS: dict[str, Any] = dict(
    hidden=(512, 512, 512),
    activation="gelu",
    actor_layer_norm=True,
    critic_layer_norm=True,
    lr=1e-3,
    polyak=0.95,
    batch_size=2000,
    noise_eps=0.1,
    gamma=0.98,
    clip_return=True,
    clip_obs=200.0,
    clip_normalized=5.0,
    normalizer="mrl",
    init="orthogonal",
    grad_clip_mode="value",
)
"""What mrl's two Fetch configs share (``protoge_config``; ``best_slide_config`` keeps it)
and the normaliser both scripts build (``MeanStdNormalizer()``)."""

RECIPES: dict[str, dict[str, Any]] = {
    "baselines": dict(
        algo="ddpg",
        n_envs=38,
        updates_per_step=40 / 1900,
        warmup_steps=1900,
        random_steps=0,
        buffer_size=5_000_000,
        ddpg=DDPGConfig(
            hidden=(256, 256, 256),
            lr=1e-3,
            gamma=0.98,
            polyak=0.95,
            target_every=40,
            batch_size=19 * 256,
            action_l2=1.0,
            noise_eps=0.2,
            random_eps=0.3,
            clip_obs=200.0,
            clip_normalized=5.0,
            clip_return=True,
            init="xavier",
            step_order="together",
        ),
        her=RunHerSettings(strategy="future", k=4),
        precision="fp32",
    ),
    "mrl-push": dict(
        algo="ddpg",
        n_envs=12,
        updates_per_step=1.0,
        warmup_steps=2500,
        random_steps=5000,
        buffer_size=1_000_000,
        normalize_relabelled_goals=False,
        ddpg=DDPGConfig(
            **_MRL_NETWORKS, target_every=40, action_l2=0.1, random_eps=0.1, grad_clip=5.0
        ),
        her=RunHerSettings(goal_mix=(1.0, 4.0, 4.0, 1.0), goal_mix_warmup=25_000),
        precision="fp32",
    ),
    "mrl-slide": dict(
        algo="ddpg",
        n_envs=8,
        updates_per_step=0.5,
        warmup_steps=5000,
        random_steps=10_000,
        buffer_size=2_500_000,
        normalize_relabelled_goals=False,
        ddpg=DDPGConfig(**_MRL_NETWORKS, target_every=10, action_l2=0.01, random_eps=0.2),
        her=RunHerSettings(goal_mix=(2.0, 4.0, 4.0), goal_mix_warmup=25_000),
        precision="fp32",
    ),
}
"""The recipes by name: the :class:`~herkit.config.train.TrainConfig` fields each sets."""


RECIPE_TASKS: dict[str, tuple[str, str]] = {
    "baselines": ("Fetch", "the Fetch tasks, as OpenAI's baselines trains them"),
    "mrl-push": ("Fetch", "the Fetch tasks (mrl's protoge_config, FetchPush by default)"),
    "mrl-slide": ("Fetch", "FetchPush and FetchSlide (mrl's best_slide_config)"),
}
"""What each recipe was written for: the prefix of the env ids it takes, and in words."""


def check_recipe_task(recipe: str | None, env_id: str) -> None:
    """A ValueError where ``recipe`` was not written for ``env_id``'s task, naming what it
    was written for (nothing for None)."""
    if recipe is None or recipe not in RECIPE_TASKS:
        return
    prefix, written_for = RECIPE_TASKS[recipe]
    if not env_id.startswith(prefix):
        raise ValueError(
            f"--recipe {recipe} was written for {written_for}, not {env_id!r}: train "
            "without --recipe (the env's preset), or set what you want with flags"
        )


def recipe_values(recipe: str | None) -> dict[str, Any]:
    """The settings of ``recipe`` ({} for None); ValueError naming the recipes for another."""
    if recipe is None:
        return {}
    if recipe not in RECIPES:
        raise ValueError(f"recipe must be one of {', '.join(RECIPES)}, got {recipe!r}")
    return dict(RECIPES[recipe])
