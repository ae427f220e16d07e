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

:func:`resolve` is the one way in, for a new run and for a whole config (the layer
``given``: a run's from Python, or config.json on ``--resume``, completed by the same
probe); :func:`preset_config` and :func:`run_directory` are views of it. The lower layers
(default, preset, recipe) of an env, device and recipe are a :class:`LayerStack`, read once
per ``herkit train`` command. A run's default directory (:func:`default_run_name`) and its
start-up line spell the settings alike.
"""

from __future__ import annotations

import dataclasses
import hashlib
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from herkit.agents.registry import AgentEntry, agent_entry, algo_names
from herkit.agents.settings import OffPolicyConfig
from herkit.buffer.conventions import GoalConventions
from herkit.config.her import HER_ONLY, RunHerSettings, her_name
from herkit.config.learning import flat_settings, learning_differences
from herkit.config.presets import preset_values
from herkit.config.probe import EnvProbe, hand_over, probe_env, take_probe
from herkit.config.recipes import recipe_values
from herkit.config.train import TrainConfig
from herkit.envs.registration import env_kwargs
from herkit.runtime.devices import on_gpu

__all__ = [
    "FALLBACK_ALGOS",
    "LAYERS",
    "LayerStack",
    "Resolution",
    "default_run_name",
    "preset_config",
    "resolve",
    "run_directory",
    "setting_values",
]

LAYERS = ("default", "preset", "recipe", "env", "flag", "given", "machine")
"""The layers of a run's settings, lowest first: ``given`` is a whole config handed to
:func:`resolve` (from Python, or config.json on ``--resume``), ``machine`` what a run's start
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
    run: str | TrainConfig,
    recipe: str | None = None,
    flags: Mapping[str, Any] | None = None,
    *,
    probe: bool = True,
    tell: Callable[[str], None] | None = None,
    layers: LayerStack | None = None,
) -> Resolution:
    """The settings of a run, resolved as the layers of this module say: of a new run on the
    env id ``run`` with ``recipe`` and ``flags`` (settings by field name, ``her.NAME`` /
    ``ALGO.NAME`` paths, or whole blocks: ``her=``, ``ddpg=``, ``agent=``), or of the whole
    config ``run`` (the layer ``given``: from Python, or config.json on ``--resume``, with
    ``flags`` over it; where this process resolved that config, that resolution, its probe
    handed over: the env is not made again).

    ``probe``: make the env once for the ``env`` layer (else that layer is empty and the
    config's env settings stay None). ``tell`` says an algorithm the env chose (default:
    stderr). ``layers``: the lower layers of ``run``'s env, device and recipe, read already
    (``herkit train`` reads them once for its flags' defaults and its resolution)."""
    given = _given(dict(flags or {}), recipe)
    if isinstance(run, TrainConfig):
        return _resolve_given(run, given, probe)
    env_id = run
    device = given.get("device", TrainConfig.device)
    if layers is None:
        layers = LayerStack(env_id, device, given.get("recipe"))
    elif (layers.env_id, layers.device, layers.recipe) != (env_id, device, given.get("recipe")):
        raise ValueError(
            f"layers of {layers.env_id} on {layers.device} with recipe {layers.recipe} "
            f"resolve no run on {env_id} on {device} with recipe {given.get('recipe')}"
        )
    algo = given.get("algo", layers.algo())
    values, provenance = _flagged(layers, algo, given)
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
        values, provenance = _flagged(layers, algo, given, env_algo=True)
    if "out" not in given:  # the run's directory named as the settings stand, the env's aside
        values["out"] = str(_named_directory(_config(env_id, algo, values), layers))
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
    """The run directory of ``config``: its ``out``, else the one :func:`resolve` names, under
    ``runs/``, that tells runs of different tasks and learning settings apart
    (:func:`default_run_name`, against the env's preset)."""
    if config.out is not None:
        return Path(config.out)
    return _named_directory(config, LayerStack.of(config))


class LayerStack:
    """The lower layers of the runs on one env, device and recipe: the defaults, the env's
    preset and the recipe (:data:`LAYERS`' first three), read once, and the settings of a
    run of each agent stacked from them once (:meth:`settings`), which the env's probe and
    the flags then change. ``herkit train`` reads them once per command, for its flags'
    defaults (every agent's settings for the env, :meth:`agent`) and its resolution alike."""

    def __init__(self, env_id: str, device: str = "cpu", recipe: str | None = None) -> None:
        self.env_id, self.device, self.recipe = env_id, device, recipe
        self.by_layer = [
            ("preset", preset_values(env_id, gpu=on_gpu(device))),
            ("recipe", recipe_values(recipe)),
        ]
        """Each layer's name and the settings it sets (the preset's, the recipe's), lowest
        first."""
        self._stacked: dict[str, tuple[dict[str, Any], dict[str, str]]] = {}

    @classmethod
    def of(cls, config: TrainConfig) -> LayerStack:
        """The lower layers of ``config``'s env, device and recipe."""
        return cls(config.env_id, config.device, config.recipe)

    def algo(self) -> str:
        """The algorithm of a run where none is given: the last layer's that names one, else
        TrainConfig's."""
        named = [layer["algo"] for _, layer in self.by_layer if "algo" in layer]
        return named[-1] if named else TrainConfig.algo

    def settings(self, algo: str) -> tuple[dict[str, Any], dict[str, str]]:
        """The settings of a run of ``algo`` by path (:func:`setting_values`) from the
        defaults up through these layers, and the layer of each (copies of a stack made
        once per algorithm)."""
        if algo not in self._stacked:
            self._stacked[algo] = _stack(self.env_id, algo, self.by_layer)
        values, provenance = self._stacked[algo]
        return dict(values), dict(provenance)

    def agent(self, algo: str) -> OffPolicyConfig:
        """The settings of the agent ``algo`` these layers give (those of a run with ``--algo
        ALGO``, whether or not the rest of that run's settings would suit the agent)."""
        values, _ = _agent_values(agent_entry(algo), self.env_id, self.by_layer)
        return _agent(algo, values)

    def config(self, algo: str) -> TrainConfig:
        """The settings of a run of ``algo`` that is given only these layers' device and
        recipe (:func:`preset_config`)."""
        flags = {"device": self.device, "algo": algo}
        values, _ = _flagged(self, algo, _given(flags, self.recipe))
        return _config(self.env_id, algo, values)


def _resolve_given(config: TrainConfig, given: dict[str, Any], probe: bool) -> Resolution:
    """The resolution of the whole ``config`` with the settings ``given`` (by path) over it
    (see :func:`resolve`)."""
    found = take_probe(config) if probe and not given else None
    if found is not None and found.resolved is not None and _same_run(found.resolved[0], config):
        _, conventions, provenance = found.resolved
        return Resolution(config, provenance, conventions, found)
    values, provenance = setting_values(config), _given_provenance(config)
    algo = given.get("algo", config.algo)
    _put_flags(values, provenance, algo, given, over_preset=False)
    if not probe:
        return Resolution(_config(config.env_id, algo, values), provenance)
    if found is None:
        found = take_probe(_config(config.env_id, algo, values))
    return _completed(config.env_id, algo, values, provenance, found)


def _named_directory(config: TrainConfig, layers: LayerStack) -> Path:
    """The run directory a config without ``out`` is given: ``runs/`` and its name
    (:func:`default_run_name`) against the config ``layers`` give its algorithm."""
    return Path("runs") / default_run_name(config, layers.config(config.algo))


_NAMED = ("env_id", "env_kwargs", "recipe", "algo", "strategy", "goal_mix", "seed", "dataset")
"""The fields a default run name spells out in its fixed parts."""


def default_run_name(config: TrainConfig, preset: TrainConfig) -> str:
    """``ENV[-KWARGS][-RECIPE]-ALGO[-STRATEGY]-sSEED[-DATASET][-CHANGES]``: the env kwargs and the
    learning settings that differ from the env's preset are part of the name (spelled as
    given when short, ``shaped_reward=1x2``, else a hash of them), so that two runs that
    learn differently never share a default directory; the settings of
    :data:`~herkit.config.learning.BOOKKEEPING` are left out. An offline agent's goals are
    named only where given (its own are OGBench's), its dataset by the file's name where
    that is not the env id. ``preset`` is the config of ``config``'s env with nothing
    changed (:func:`preset_config`)."""
    mine, theirs = flat_settings(config.to_dict()), preset.to_dict()
    preset_kwargs = env_kwargs(preset.env_kwargs)
    kwargs = {
        key: value
        for key, value in env_kwargs(config.env_kwargs).items()
        if key not in preset_kwargs or preset_kwargs[key] != value
    }

    def value(name: str) -> Any:
        block, _, key = name.rpartition(".")
        return mine[block][key] if block else mine[name]

    changes = [
        f"{name}={_spelled(value(name))}"
        for name in learning_differences(mine, theirs)
        if name not in _NAMED
    ]
    parts = [config.env_id.split(":")[-1].replace("/", "-")]
    if kwargs:
        parts.append(_short(",".join(f"{k}={_spelled(v)}" for k, v in sorted(kwargs.items()))))
    if config.recipe is not None:
        parts.append(config.recipe)
    parts.append(config.algo)
    goals = ("value_goals", "actor_goals")  # the preset's (an agent's own for the env)?
    own_goals = all(getattr(config.her, name) == getattr(preset.her, name) for name in goals)
    if config.algo not in algo_names(offline=True) or not own_goals:
        parts.append(her_name(mine).replace(":", "-"))  # from its buffer settings as written
    parts.append(f"s{config.seed}")
    data = None if config.dataset is None else Path(config.dataset).name.removesuffix(".npz")
    if data is not None and data != parts[0]:
        parts.append(_short(data))
    if changes:
        parts.append(_short(",".join(sorted(changes))))
    return "-".join(parts)


def _spelled(value: Any) -> str:
    """A setting's value as a run's name and its start-up line spell it: numbers short
    (``1``, ``0.5``), a sequence of numbers joined by ``x`` (``256x256``), of other values by
    commas, an empty one ``()``."""
    if isinstance(value, (list, tuple)):
        numbers = all(isinstance(item, (int, float)) for item in value)
        return ("x" if numbers else ",").join(_spelled(item) for item in value) or "()"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _short(text: str, limit: int = 40) -> str:
    """``text`` made safe for a file name, or a hash of it when longer than ``limit``."""
    safe = "".join(c if c.isalnum() or c in "._=,+" else "_" for c in text.replace(" ", ""))
    if len(safe) <= limit:
        return safe
    return "h" + hashlib.sha1(text.encode()).hexdigest()[:8]


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
    env_id: str, algo: str, by_layer: list[tuple[str, dict[str, Any]]]
) -> tuple[dict[str, Any], dict[str, str]]:
    """The settings of ``algo``'s run on ``env_id`` from the defaults up, through the
    layers ``by_layer`` (each one's name and the settings it sets: a preset's or recipe's
    dict), and the layer of each."""
    values = setting_values(TrainConfig(env_id=env_id, algo=algo))
    provenance = dict.fromkeys(values, "default")
    entry = agent_entry(algo)
    for name, layer in by_layer:
        for key, value in layer.items():
            if key in algo_names() or key == "her":
                continue
            values[key], provenance[key] = value, name
        her = {} if "her" not in layer else RunHerSettings.of(layer["her"]).values()
        if name == "preset":  # the agent's goal mixes for the env (OGBench's stitch datasets')
            her.update(entry.preset_goals(env_id))
        if entry.offline:  # HER's relabelling: no setting of its run
            her = {key: value for key, value in her.items() if key not in HER_ONLY}
        for key, value in her.items():
            if values[f"her.{key}"] != value:
                values[f"her.{key}"], provenance[f"her.{key}"] = value, name
    agent_values, agent_provenance = _agent_values(entry, env_id, by_layer)
    values.update(agent_values)
    provenance.update(agent_provenance)
    return values, provenance


def _agent_values(
    entry: AgentEntry, env_id: str, by_layer: list[tuple[str, dict[str, Any]]]
) -> tuple[dict[str, Any], dict[str, str]]:
    """The settings of ``entry``'s agent by path (``ALGO.NAME``) from its defaults up through
    the blocks named after it of the layers ``by_layer`` (at the preset, the preset's block,
    else the agent's own settings for ``env_id``: its entry's), and the layer of each. A
    block counts as setting the values that differ from the layers below."""
    prefix = f"{entry.name}."
    values = {prefix + key: value for key, value in _fields(entry.default_config()).items()}
    provenance = dict.fromkeys(values, "default")
    for name, layer in by_layer:
        block = layer.get(entry.name)
        if name == "preset" and block is None:
            block = entry.preset_config(env_id)
        for key, value in {} if block is None else _fields(block).items():
            if values[prefix + key] != value:
                values[prefix + key], provenance[prefix + key] = value, name
    return values, provenance


def _flagged(
    layers: LayerStack, algo: str, given: dict[str, Any], env_algo: bool = False
) -> tuple[dict[str, Any], dict[str, str]]:
    """The settings of ``algo``'s run from ``layers`` with the env's choice of the algorithm
    (``env_algo``) and the ``given`` flags over them; and the layer of each."""
    values, provenance = layers.settings(algo)
    if env_algo:
        values["algo"], provenance["algo"] = algo, "env"
    _put_flags(values, provenance, algo, given, over_preset=True)
    return values, provenance


def _put_flags(
    values: dict[str, Any],
    provenance: dict[str, str],
    algo: str,
    given: dict[str, Any],
    over_preset: bool,
) -> None:
    """The ``given`` flags put over the settings ``values`` of ``algo``'s run (and their
    layer, ``flag``, in ``provenance``): ``agent=`` as all its settings, another agent's
    left out; ``over_preset`` (a new run's, over the env's preset): env kwargs merged into
    the preset's (the preset's others stay), and ``--dataset`` without ``--steps`` sets no
    env step."""
    for path, value in given.items():
        prefix, dot, key = path.partition(".")
        if path == "agent":
            if value is None:
                continue
            for key, item in _fields(value).items():
                values[f"{algo}.{key}"], provenance[f"{algo}.{key}"] = item, "flag"
        elif dot and prefix != "her" and prefix != algo:
            continue  # another agent's settings: not this run's
        elif over_preset and path == "env_kwargs" and value is not None and values["env_kwargs"]:
            mine = _kwarg_names(value)
            kept = tuple(item for item in values["env_kwargs"] if item.split("=")[0] not in mine)
            values[path], provenance[path] = kept + tuple(value), "flag"
        else:
            values[path], provenance[path] = value, "flag"
    if over_preset and given.get("dataset") is not None and "steps" not in given:
        values["steps"], provenance["steps"] = 0, "flag"  # --dataset: no env step unless given


def _kwarg_names(items: Any) -> set[str]:
    """The names of env kwargs given as KEY=VALUE items (checked as the config checks them)."""
    return set(env_kwargs(items))


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


def _stderr(line: str) -> None:
    print(line, file=sys.stderr)
