"""A run's settings resolved once, as layers (:func:`resolve`).

Every setting of a :class:`~herkit.config.train.TrainConfig` (by path: ``steps``,
``her.k``, ``ddpg.lr`` for the agent's) takes its value from the highest of
:data:`LAYERS` that sets it:

1. ``default``: TrainConfig's own, and the agent's registry entry's;
2. ``preset``: the env's preset (its GPU preset on a GPU; :mod:`herkit.config.presets`),
   with the agent's settings for the env (the preset's block, else its registry entry's)
   and its goal mixes there (its entry's: ``her.actor_goals`` on OGBench's stitch datasets);
3. ``recipe``: ``--recipe``'s settings (:mod:`herkit.config.recipes`);
4. ``env``: what one probe of the env decides (:mod:`herkit.config.probe`): the algorithm
   where none is given and the preset's does not fit the action space; the settings left
   to the env (``reward_range``, ``success_key``, ``her.terminal_on_success``: None) and the
   info fields its reward reads, filled only where no layer above gives them;
5. ``flag``: what the user gave (the flags typed, ``config_for``'s keywords), nothing else.

A preset or recipe sets the top-level settings it names; a block it names (``her=``,
``ddpg=``) replaces the block whole, and counts as setting the values that differ from the
layers below. The result, a :class:`Resolution`, holds the final config, the layer of each
setting (``provenance``, written to config.json beside the config and said in one line when a
run starts) and the env's conventions. The env is probed once, before the config is final;
nothing rewrites the config after (the machine's choices, ``auto`` and None settings of
cores, precision and update mode, are recorded as the layer ``machine`` when a run starts).
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from herkit.buffer.conventions import GoalConventions
from herkit.config.agents import OffPolicyConfig
from herkit.config.her import HER_ONLY, RunHerSettings
from herkit.config.presets import preset_values
from herkit.config.probe import EnvProbe, hand_over, probe_env, take_probe
from herkit.config.recipes import recipe_values
from herkit.config.registry import agent_entry, algo_names
from herkit.config.train import TrainConfig, default_run_name, on_gpu

__all__ = [
    "FALLBACK_ALGOS",
    "LAYERS",
    "Resolution",
    "agent_preset",
    "preset_config",
    "resolve",
    "run_directory",
    "setting_values",
    "settle",
]

LAYERS = ("default", "preset", "recipe", "env", "flag", "given", "machine")
"""The layers of a run's settings, lowest first: ``given`` is a whole config handed to
:func:`settle` (from Python, or config.json on ``--resume``), ``machine`` what a run's start
decides from the machine (threads, env workers, precision, update mode)."""

FALLBACK_ALGOS = {True: "dqn", False: "sac"}
"""The agent a run takes where the preset's does not fit the env's action space (and no
``algo`` is given): by whether the space is discrete."""


def setting_values(config: TrainConfig) -> dict[str, Any]:
    """Every setting of ``config`` by path: its fields, ``her.NAME`` for its HER settings
    and ``ALGO.NAME`` for its agent's (as config.json and the flags name them)."""
    values = {
        field.name: getattr(config, field.name)
        for field in dataclasses.fields(config)
        if field.name not in ("her", "agent")
    }
    values |= {f"her.{name}": value for name, value in config.her.values().items()}
    agent = config.agent_config()
    values |= {
        f"{config.algo}.{field.name}": getattr(agent, field.name)
        for field in dataclasses.fields(agent)
    }
    return values


@dataclass(frozen=True)
class Resolution:
    """A run's settings and where each came from."""

    config: TrainConfig
    """The final settings."""
    provenance: Mapping[str, str]
    """Every setting's path (:func:`setting_values`) -> the layer that set it (:data:`LAYERS`)."""
    conventions: GoalConventions | None = None
    """The env's conventions as the settings complete them (None: the env was not probed)."""
    probe: EnvProbe | None = None
    """What the env said (None: not probed)."""

    def chosen(self) -> dict[str, dict[str, Any]]:
        """The settings that are not defaults, by the layer that set them (in the order of
        :data:`LAYERS`)."""
        values = setting_values(self.config)
        by_layer: dict[str, dict[str, Any]] = {}
        for layer in LAYERS[1:]:
            for path, source in self.provenance.items():
                if source == layer and path != "env_id":
                    by_layer.setdefault(layer, {})[path] = values[path]
        return by_layer

    def record(self) -> dict[str, str]:
        """What config.json holds of the provenance: the layer of every setting that is not
        a default (the others are)."""
        return {path: layer for path, layer in self.provenance.items() if layer != "default"}

    def with_machine(self, config: TrainConfig) -> Resolution:
        """This resolution with the run's start's ``config`` in place of its own: the
        settings that differ, the machine's."""
        mine, theirs = setting_values(self.config), setting_values(config)
        provenance = dict(self.provenance)
        for path, value in theirs.items():
            if mine.get(path) != value and path != "out":
                provenance[path] = "machine"
        return dataclasses.replace(self, config=config, provenance=provenance)

    def describe(self) -> str:
        """One line: the settings that are not defaults, by layer
        (``preset: steps=10000, ...; flag: seed=2``)."""
        words = {"recipe": f"recipe {self.config.recipe}", "env": "env probe", "flag": "flags"}
        parts = [
            f"{words.get(layer, layer)}: "
            + ", ".join(f"{path}={_spelled(value)}" for path, value in settings.items())
            for layer, settings in self.chosen().items()
        ]
        return "; ".join(parts) if parts else "all defaults"


def resolve(
    env_id: str,
    recipe: str | None = None,
    flags: Mapping[str, Any] | None = None,
    *,
    probe: bool = True,
    tell: Callable[[str], None] | None = None,
) -> Resolution:
    """The settings of a new run on ``env_id`` with ``recipe`` and ``flags`` (settings by
    field name, ``her.NAME`` / ``ALGO.NAME`` paths, or whole blocks: ``her=``, ``ddpg=``,
    ``agent=``), resolved as the layers of this module say; ``probe``: make the env once
    for the ``env`` layer (else that layer is empty and the config's env settings stay
    None). ``tell`` says an algorithm the env chose (default: stderr)."""
    given = _given(dict(flags or {}), recipe)
    raw = _layers(env_id, given.get("device", TrainConfig.device), given.get("recipe"))
    algo = given.get("algo")
    if algo is None:
        named = [layer["algo"] for _, layer in raw if "algo" in layer]
        algo = named[-1] if named else TrainConfig.algo
    values, provenance = _stack(env_id, algo, raw, given)
    if not probe:
        return Resolution(_config(env_id, algo, values), provenance)
    found = probe_env(_config(env_id, algo, values))
    if "algo" not in given and found.discrete != agent_entry(algo).discrete:
        algo = FALLBACK_ALGOS[found.discrete]
        kind = "discrete" if found.discrete else "continuous"
        (tell or _stderr)(
            f"herkit: {env_id} has a {kind} action space: training with --algo {algo} "
            "(give --algo to choose another)"
        )
        values, provenance = _stack(env_id, algo, raw, given, env_algo=True)
    if "out" not in given:  # the run's directory named as the settings stand, the env's aside
        values["out"] = str(run_directory(_config(env_id, algo, values)))
    resolution = _completed(env_id, algo, values, provenance, found)
    assert resolution.conventions is not None
    hand_over(found, resolution.config, resolution.conventions, dict(resolution.provenance))
    return resolution


def preset_config(
    env_id: str, device: str = "cpu", recipe: str | None = None, algo: str | None = None
) -> TrainConfig:
    """TrainConfig defaults for ``env_id`` on ``device``: the settings a run given only the
    device (and ``algo``: that agent in place of the preset's) takes from the defaults, the
    env's preset and ``recipe`` (:func:`resolve` without the env's probe); the device and
    the recipe are kept in the config."""
    flags = {"device": device} | ({} if algo is None else {"algo": algo})
    return resolve(env_id, recipe, flags, probe=False).config


def run_directory(config: TrainConfig) -> Path:
    """The run directory of ``config``: its ``out``, else a name under ``runs/`` that tells
    runs of different tasks and learning settings apart (:func:`default_run_name`, against
    the env's preset)."""
    if config.out is not None:
        return Path(config.out)
    preset = preset_config(config.env_id, config.device, config.recipe, algo=config.algo)
    return Path("runs") / default_run_name(config, preset)


def agent_preset(
    env_id: str, algo: str, device: str = "cpu", recipe: str | None = None
) -> OffPolicyConfig:
    """The settings of the agent ``algo`` for ``env_id`` on ``device`` with ``recipe``, as
    :func:`resolve` stacks them (those of a run with ``--algo ALGO``, whether or not the
    rest of that run's settings would suit the agent)."""
    values, _ = _stack(env_id, algo, _layers(env_id, device, recipe), {})
    return _agent(algo, values)


def settle(config: TrainConfig) -> Resolution:
    """``config`` as given (a run's config from Python or config.json: every setting that is
    not a default counts as ``given``), completed by the probe of its env (made here); or,
    where :func:`resolve` resolved ``config`` in this process, that resolution (its probe
    handed over: the env is not made again)."""
    found = take_probe(config)
    if found.resolved is not None and _same_run(found.resolved[0], config):
        _, conventions, provenance = found.resolved
        return Resolution(config, provenance, conventions, found)
    values = setting_values(config)
    return _completed(config.env_id, config.algo, values, _given_provenance(config), found)


def _given_provenance(config: TrainConfig) -> dict[str, str]:
    """``given`` for every setting of ``config`` that differs from the defaults."""
    default = setting_values(TrainConfig(env_id=config.env_id, algo=config.algo))
    return {
        path: "default" if default.get(path) == value else "given"
        for path, value in setting_values(config).items()
    }


def _same_run(a: TrainConfig, b: TrainConfig) -> bool:
    """Whether two configs are one run's (their run directories spelled alike or not)."""
    return dataclasses.replace(a, out=None) == dataclasses.replace(b, out=None)


def _completed(
    env_id: str, algo: str, values: dict[str, Any], provenance: dict[str, str], found: EnvProbe
) -> Resolution:
    """The resolution whose settings left to the env are the probe's ``found``."""
    keys = values["her.info_keys"]
    added = tuple(key for key in found.info_keys if key not in keys)
    if added:  # read by the env's reward: relabelling needs them
        values["her.info_keys"], provenance["her.info_keys"] = (*keys, *added), "env"
    conventions = found.conventions_for(_config(env_id, algo, values))
    filled = {
        "reward_range": conventions.reward_range,
        "success_key": conventions.success_key,
        "her.terminal_on_success": conventions.terminal_on_success,
    }
    for path, value in filled.items():
        if values[path] is None and value is not None:
            values[path], provenance[path] = value, "env"
    return Resolution(_config(env_id, algo, values), provenance, conventions, found)


def _layers(env_id: str, device: str, recipe: str | None) -> list[tuple[str, dict[str, Any]]]:
    """The preset's and the recipe's layers of a run on ``env_id`` and ``device``."""
    return [
        ("preset", preset_values(env_id, gpu=on_gpu(device))),
        ("recipe", recipe_values(recipe)),
    ]


def _given(flags: dict[str, Any], recipe: str | None) -> dict[str, Any]:
    """The flags as settings by path: a block (``her=``, ``ALGO=``) as all its settings,
    ``agent=`` kept whole (its algorithm is known later)."""
    if recipe is not None:
        flags["recipe"] = recipe
    given: dict[str, Any] = {}
    for key, value in flags.items():
        if key == "her":
            her = value if isinstance(value, Mapping) else RunHerSettings.of(value).values()
            given |= {f"her.{name}": item for name, item in her.items()}
        elif key in algo_names() and "." not in key:
            block = value if isinstance(value, Mapping) else _fields(value)
            given |= {f"{key}.{name}": item for name, item in block.items()}
        else:
            given[key] = value
    return given


def _fields(settings: Any) -> dict[str, Any]:
    """A settings dataclass's values by field name."""
    return {field.name: getattr(settings, field.name) for field in dataclasses.fields(settings)}


def _stack(
    env_id: str,
    algo: str,
    raw: list[tuple[str, dict[str, Any]]],
    given: dict[str, Any],
    env_algo: bool = False,
) -> tuple[dict[str, Any], dict[str, str]]:
    """The settings of ``algo``'s run on ``env_id`` from the defaults up, through the
    ``raw`` layers (a preset's or recipe's dict), the env's choice of the algorithm
    (``env_algo``) and the ``given`` flags; and the layer of each."""
    values = setting_values(TrainConfig(env_id=env_id, algo=algo))
    provenance = dict.fromkeys(values, "default")
    entry = agent_entry(algo)
    for name, layer in raw:
        block = layer.get(algo)
        if name == "preset" and block is None:
            block = entry.preset_config(env_id)  # the agent's own settings for the env
        for key, value in layer.items():
            if key in algo_names() or key == "her":
                continue
            values[key], provenance[key] = value, name
        nested = {} if "her" not in layer else {"her": RunHerSettings.of(layer["her"]).values()}
        if name == "preset":  # the agent's goal mixes for the env (OGBench's stitch datasets')
            nested.setdefault("her", {}).update(entry.preset_goals(env_id))
        if entry.offline and "her" in nested:  # HER's relabelling: no setting of its run
            nested["her"] = {k: v for k, v in nested["her"].items() if k not in HER_ONLY}
        if block is not None:
            nested[algo] = _fields(block)
        for prefix, settings in nested.items():
            for key, value in settings.items():
                path = f"{prefix}.{key}"
                if values[path] != value:
                    values[path], provenance[path] = value, name
    if env_algo:
        values["algo"], provenance["algo"] = algo, "env"
    for path, value in given.items():
        prefix, dot, key = path.partition(".")
        if path == "agent":
            if value is None:
                continue
            for key, item in _fields(value).items():
                values[f"{algo}.{key}"], provenance[f"{algo}.{key}"] = item, "flag"
        elif dot and prefix != "her" and prefix != algo:
            continue  # another agent's settings: not this run's
        elif path == "env_kwargs" and value is not None and values["env_kwargs"]:
            mine = _kwarg_names(value)
            kept = tuple(item for item in values["env_kwargs"] if item.split("=")[0] not in mine)
            values[path], provenance[path] = kept + tuple(value), "flag"
        else:
            values[path], provenance[path] = value, "flag"
    if given.get("dataset") is not None and "steps" not in given:
        values["steps"], provenance["steps"] = 0, "flag"  # --dataset: no env step unless given
    return values, provenance


def _kwarg_names(items: Any) -> set[str]:
    """The names of env kwargs given as KEY=VALUE items (checked as the config checks them)."""
    return set(TrainConfig(env_kwargs=tuple(items)).env_kwargs_dict())


def _config(env_id: str, algo: str, values: Mapping[str, Any]) -> TrainConfig:
    """The TrainConfig of settings by path (:func:`setting_values`)."""
    top = {key: value for key, value in values.items() if "." not in key}
    her = {key[4:]: value for key, value in values.items() if key.startswith("her.")}
    top |= {"env_id": env_id, "algo": algo}
    return TrainConfig(her=RunHerSettings.of(None, her), agent=_agent(algo, values), **top)


def _agent(algo: str, values: Mapping[str, Any]) -> OffPolicyConfig:
    """The settings of the agent ``algo`` among settings by path."""
    prefix = f"{algo}."
    own = {key[len(prefix) :]: value for key, value in values.items() if key.startswith(prefix)}
    return agent_entry(algo).config(**own)


def _spelled(value: Any) -> str:
    """A setting's value as the start-up line spells it: numbers short, sequences of numbers
    joined by ``x`` (``256x256``), others by commas."""
    if isinstance(value, (list, tuple)):
        numbers = all(isinstance(item, (int, float)) for item in value)
        return ("x" if numbers else ",").join(_spelled(item) for item in value) or "()"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _stderr(line: str) -> None:
    print(line, file=sys.stderr)
