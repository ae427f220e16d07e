"""OGBench's settings per dataset, read from OGBench's own files: each agent's presets
against every line of ``impls/hyperparameters.sh`` for the locomaze datasets (pointmaze,
antmaze, humanoidmaze), each preset value against the lines its comment cites, and the
recipes of ``benchmarks/offline_data.py`` against ``data_gen_scripts/commands.sh``.

The files are the excerpts under tests/data/ogbench (their origin and licence in its
README.md); where OGBench's repository is at hand (``OGBENCH_REPO``, a clone or a bare
mirror), each excerpt is checked against it, line for line."""

from __future__ import annotations

import ast
import fnmatch
import inspect
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from scripts import load_benchmark

from herkit.agents.registry import GOAL_MIXES, agent_entry, algo_names
from herkit.config.resolve import preset_config

DATA = Path(__file__).resolve().parent / "data" / "ogbench"
OGBENCH_COMMIT = "1d4140997f60c52c6fb0702ec100dc988b18c548"
MIRROR = Path(os.environ.get("OGBENCH_REPO", "/work/.mirror/seohongpark+ogbench/repo"))
FAMILIES = ("pointmaze-", "antmaze-", "humanoidmaze-")
"""The datasets whose lines herkit's presets hold (OGBench's state-based locomaze ones)."""
CITED = re.compile(r"#\s*hyperparameters\.sh:([\d,]+)\s*$")

OGBENCH_FLAGS = {
    "alpha": "alpha",
    "high_alpha": "high_alpha",
    "low_alpha": "low_alpha",
    "discount": "gamma",
    "subgoal_steps": "subgoal_steps",
}
"""OGBench's ``--agent.X`` flags on these lines -> herkit's settings (the actor-goal
shares, ``actor_p_*``, make ``actor_goals``)."""
ACTOR_SHARES = ("actor_p_curgoal", "actor_p_trajgoal", "actor_p_randomgoal")


def excerpt(name: str) -> list[str]:
    """The lines of the excerpt ``name``, checked against OGBench's repository where it is
    at hand."""
    lines = (DATA / name).read_text().splitlines()
    original = {"hyperparameters.sh": "impls", "commands.sh": "data_gen_scripts"}[name]
    if MIRROR.exists():
        shown = subprocess.run(
            ["git", "-C", str(MIRROR), "show", f"{OGBENCH_COMMIT}:{original}/{name}"],
            capture_output=True,
            text=True,
            check=False,
        )
        if shown.returncode == 0:
            assert shown.stdout.splitlines()[: len(lines)] == lines, f"{name} is not a copy"
    return lines


def hyperparameter_lines() -> dict[int, tuple[str, str, dict[str, str]]]:
    """Every command line of the excerpt: line number -> (dataset, agent, its flags)."""
    found = {}
    for number, line in enumerate(excerpt("hyperparameters.sh"), start=1):
        if line.startswith("python main.py"):
            dataset = re.search(r"--env_name=(\S+)", line)
            agent = re.search(r"--agent=agents/(\w+)\.py", line)
            assert dataset and agent, line
            flags = dict(re.findall(r"--agent\.(\w+)=(\S+)", line))
            found[number] = (dataset.group(1), agent.group(1), flags)
    return found


LINES = hyperparameter_lines()


def settings_of(algo: str, flags: dict[str, str]) -> dict[str, Any]:
    """herkit's settings that OGBench's ``flags`` (of one line, for ``algo``) give."""
    settings: dict[str, Any] = {}
    for flag, value in flags.items():
        if flag in ACTOR_SHARES:
            continue
        assert flag in OGBENCH_FLAGS, f"--agent.{flag}: no herkit setting known for it"
        settings[OGBENCH_FLAGS[flag]] = ast.literal_eval(value)
    if set(flags) & set(ACTOR_SHARES):
        own = agent_entry(algo).actor_goals  # OGBench's defaults of the shares not given
        settings["actor_goals"] = tuple(
            float(flags.get(share, own[i])) for i, share in enumerate(ACTOR_SHARES)
        )
    return settings


def run_settings(dataset: str, algo: str) -> dict[str, Any]:
    """What ``herkit train DATASET --algo ALGO`` trains with (its preset), by setting."""
    config = preset_config(dataset, algo=algo)
    agent = config.agent_config()
    values = {name: getattr(agent, name) for name in vars(agent)}
    return values | {"actor_goals": tuple(config.her_settings().actor_goals or ())}


def test_the_excerpt_holds_every_agent_of_every_locomaze_dataset() -> None:
    datasets = {dataset for dataset, _, _ in LINES.values()}
    assert len(datasets) == 8 + 11 + 6  # pointmaze 8, antmaze 11, humanoidmaze 6
    for dataset in datasets:
        agents = sorted(agent for name, agent, _ in LINES.values() if name == dataset)
        assert agents == ["crl", "gcbc", "gciql", "gcivl", "hiql", "qrl"], dataset


@pytest.mark.parametrize("number", sorted(LINES), ids=lambda n: f"line{n}")
def test_each_line_is_what_herkit_trains_with(number: int) -> None:
    """Every setting a line of hyperparameters.sh gives is the run's on that dataset with
    that agent (``discount`` is ``gamma``, ``actor_p_*`` the actor goals), the preset of
    ``herkit train DATASET --algo AGENT`` (OGBench's other settings are the defaults)."""
    dataset, algo, flags = LINES[number]
    run = run_settings(dataset, algo)
    for name, value in settings_of(algo, flags).items():
        assert run[name] == pytest.approx(value), f"{dataset} {algo}: {name}"
    if "discount" not in flags and algo != "gcbc":
        assert run["gamma"] == 0.99
    if not set(flags) & set(ACTOR_SHARES):
        assert run["actor_goals"] == agent_entry(algo).actor_goals


def cited_presets(algo: str) -> dict[str, tuple[list[int], dict[str, Any]]]:
    """The presets of ``algo``'s registry entry as its source writes them: prefix ->
    (the lines of hyperparameters.sh its comment cites, its values)."""
    entry = agent_entry(algo)
    path = inspect.getsourcefile(sys.modules[entry.config.__module__])
    assert path is not None
    source = Path(path).read_text()
    lines = source.splitlines()
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and getattr(node.func, "id", "") == "AgentEntry"):
            continue
        if ast.literal_eval(node.args[0]) != algo:
            continue
        presets = [k.value for k in node.keywords if k.arg == "presets"]
        if not presets:
            return {}
        assert isinstance(presets[0], ast.Dict)
        found = {}
        for key, value in zip(presets[0].keys, presets[0].values, strict=True):
            assert key is not None
            comment = CITED.search(lines[key.lineno - 2])  # the line above the prefix
            prefix = ast.literal_eval(key)
            assert comment, f"{algo}'s preset {prefix!r} cites no line of hyperparameters.sh"
            cited = [int(n) for n in comment.group(1).split(",")]
            found[prefix] = (cited, ast.literal_eval(value))
        return found
    raise AssertionError(f"no AgentEntry({algo!r}, ...) in {path}")


OGBENCH_AGENTS = ("gcbc", "gcivl", "gciql", "qrl", "crl", "hiql")


@pytest.mark.parametrize("algo", OGBENCH_AGENTS)
def test_each_preset_value_is_held_once_and_cites_the_lines_it_comes_from(algo: str) -> None:
    """A preset of an OGBench agent cites exactly the lines of its agent whose dataset the
    prefix matches, and each of those lines gives each of its values."""
    entry = agent_entry(algo)
    cited = cited_presets(algo)
    assert set(cited) == set(entry.presets)
    for prefix, (numbers, values) in cited.items():
        assert dict(entry.presets[prefix]) == values  # the source is the registered entry
        assert prefix.startswith(FAMILIES)
        matching = [
            number
            for number, (dataset, agent, _) in LINES.items()
            if agent == algo and fnmatch.fnmatchcase(dataset, prefix + "*")
        ]
        assert numbers == matching, f"{algo} {prefix!r}: cites {numbers}, lines {matching}"
        for number in numbers:
            given = settings_of(algo, LINES[number][2])
            for name, value in values.items():
                assert name in given, f"line {number} gives no {name} ({algo} {prefix!r})"
                assert given[name] == pytest.approx(value), f"line {number}: {name}"
    held = [(prefix, name) for prefix, (_, values) in cited.items() for name in values]
    for prefix, name in held:  # no value restated where a shorter prefix holds it already
        for other, (_, values) in cited.items():
            if other != prefix and fnmatch.fnmatchcase(prefix, other + "*"):
                assert values.get(name, object()) != entry.presets[prefix][name], (prefix, name)


def test_offline_agents_are_ogbenchs_six() -> None:
    assert set(OGBENCH_AGENTS) <= set(algo_names(offline=True))


def test_presets_merge_by_prefix_and_goal_mixes_go_to_the_run() -> None:
    """Every matching prefix counts, the longer over the shorter; a goal mix is the run's
    ``her`` setting, given by its preset and changed by a flag."""
    from herkit.config.resolve import resolve, run_directory

    entry = agent_entry("gciql")
    assert entry.preset_values("pointmaze-giant-stitch-v0") == {
        "alpha": 0.003,
        "gamma": 0.995,
        "actor_goals": (0.0, 0.5, 0.5),
    }
    assert entry.preset_goals("pointmaze-giant-navigate-v0") == {}
    assert entry.preset_config("module:pointmaze-giant-stitch-v0").gamma == 0.995
    assert entry.preset_config("visual-antmaze-giant-navigate-v0").gamma == 0.99
    flags = {"algo": "gciql", "dataset": "d.npz", "offline_steps": 10}
    run = resolve("pointmaze-large-stitch-v0", flags=flags, probe=False)
    assert run.config.her.actor_goals == (0.0, 0.5, 0.5)
    assert run.provenance["her.actor_goals"] == "preset"
    name = run_directory(run.config).name  # the preset's goals: not named
    assert name == "pointmaze-large-stitch-v0-gciql-s0-d", name
    given = resolve(
        "pointmaze-large-stitch-v0", flags=flags | {"her.actor_goals": (0, 1, 0)}, probe=False
    )
    assert given.config.her_settings().actor_goals == (0, 1, 0)
    gcbc = resolve("pointmaze-large-stitch-v0", flags=flags | {"algo": "gcbc"}, probe=False)
    assert gcbc.config.her_settings().actor_goals == (0.0, 1.0, 0.0)  # OGBench's gcbc line


def test_a_preset_naming_no_setting_is_refused_at_registration(monkeypatch) -> None:
    import dataclasses

    from herkit.config import registry

    monkeypatch.setattr(registry, "_ENTRIES", dict(registry._ENTRIES))
    entry = dataclasses.replace(agent_entry("gcivl"), name="gcivl_typo")
    with pytest.raises(ValueError, match="presets for 'pointmaze-' name alhpa, which are"):
        registry.register(dataclasses.replace(entry, presets={"pointmaze-": {"alhpa": 1.0}}))
    online = dataclasses.replace(agent_entry("ddpg"), name="ddpg_goals")
    with pytest.raises(ValueError, match="goal mixes in its presets need offline=True"):
        registry.register(dataclasses.replace(online, presets={"x": {"actor_goals": (0, 1, 0)}}))
    assert set(GOAL_MIXES) == {"value_goals", "actor_goals"}


def test_the_data_recipes_are_commands_sh_lines() -> None:
    """Each dataset ``benchmarks/offline.py data NAME`` makes is its line of OGBench's
    data_gen_scripts/commands.sh: env, dataset type, episodes, episode length, noise."""
    datasets = load_benchmark("offline_data").DATASETS
    lines = excerpt("commands.sh")
    made = set()
    for name, recipe in datasets.items():
        line = lines[recipe.line - 1]
        flags = dict(re.findall(r"--(\w+)=(\S+)", line))
        assert line.startswith("python generate_locomaze.py"), line
        assert flags["save_path"] == f"data/{name}.npz"
        assert (recipe.env, recipe.kind) == (flags["env_name"], flags["dataset_type"])
        assert (recipe.episodes, recipe.steps) == (
            int(flags["num_episodes"]),
            int(flags["max_episode_steps"]),
        )
        assert recipe.noise == float(flags["noise"])
        made.add(name)
    listed = {
        m.group(1) for m in re.finditer(r"save_path=data/(pointmaze\S+)\.npz", "\n".join(lines))
    }
    assert made == listed and len(made) == 8
