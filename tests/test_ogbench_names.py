"""OGBench's names on ``herkit train``'s command line (:mod:`herkit.config.ogbench_names`,
:mod:`herkit.flags`): every key of OGBench's six agents' configs is read or answered for each
agent, OGBench's defaults read as herkit's defaults, and every flag herkit suggests or
produces, for any name it is given, is one the parser takes for the run's agent."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import re
import shlex
from typing import Any

import pytest
from readme_blocks import ROOT, blocks

from herkit.agents.registry import agent_entry, algo_names
from herkit.cli import main
from herkit.config.her import RunHerSettings
from herkit.config.ogbench_names import (
    NAMES,
    OGBENCH_AGENTS,
    OGBENCH_CONFIGS,
    key_kind,
    ogbench_settings,
    ogbench_table,
)
from herkit.config.resolve import preset_config, setting_values
from herkit.flags import ANSWERS, AUTO_FLAGS, SYNONYMS, auto_flags, suggestion, train_flags
from herkit.flags.train import (
    ogbench_flags,
    parse_flags,
    parse_train,
    read_ogbench_names,
    split_agent_flags,
)

ENV = "pointmaze-medium-navigate-v0"
GUIDE = ROOT / "docs" / "guide-offline.md"
FLAG = re.compile(r"(?<![\w-])--[a-z][\w.-]*[a-z0-9_]")
"""A flag named in a message (``--gcivl.hidden``, ``--agent.low_alpha``)."""


def ogbench_text(value: Any) -> str:
    """A value as OGBench's command line writes it (``--agent.KEY=TEXT``)."""
    return "None" if value is None else str(value)


def run_goals(algo: str) -> dict[str, Any]:
    """The goal mixes of a run of ``algo`` on :data:`ENV` without OGBench's flags."""
    settings = preset_config(ENV, algo=algo).her_settings()
    return {"value_goals": settings.value_goals, "actor_goals": settings.actor_goals}


def answer(algo: str, key: str, texts: list[str]) -> tuple[list[str], str]:
    """herkit's flags for ``--agent.KEY=TEXTS`` in a run of ``algo`` and what it says (the
    line of how it was read, or the refusal), the flag as typed in it written ``KEY``."""
    typed = f"--agent.{key}=" + " ".join(texts)
    try:
        flags, words = ogbench_flags([(typed, key, texts)], algo, run_goals(algo), [])
    except ValueError as refused:
        flags, words = [], str(refused)
    return flags, re.sub(re.escape(f"--agent.{key}") + r"(?![\w.-])", "KEY", words)


def help_flags(algo: str) -> set[str]:
    """The flags ``herkit train --algo ALGO --help`` lists (the parser's own listing)."""
    shown = io.StringIO()
    with contextlib.redirect_stdout(shown), pytest.raises(SystemExit):
        parse_flags(["--algo", algo, "--help"], default=preset_config(ENV, algo=algo))
    flags = set()
    for line in shown.getvalue().splitlines():  # framed on a terminal (│ --x), else not
        if re.match(r"│? {1,2}-+[a-z]", line):
            flags |= {part.split()[0] for part in line.strip("│ ").split(", ")}
    return flags - {"-h", "--help"}


@pytest.mark.parametrize("algo", algo_names())
def test_train_flags_are_the_flags_the_parser_lists(algo: str) -> None:
    """The parser's listing, and the ``--no-X`` of the settings herkit reads before it
    (:data:`herkit.flags.AUTO_FLAGS`)."""
    own = {f"--no-{name}" for name in AUTO_FLAGS}
    assert set(train_flags(algo)) == help_flags(algo) | own
    assert set(train_flags(algo)) <= set(train_flags())


def test_every_key_of_ogbench_agents_is_read_once_for_each_of_its_agents() -> None:
    for agent in OGBENCH_AGENTS:
        assert agent in algo_names()
        for key in OGBENCH_CONFIGS[agent]:
            readings = [name for name in NAMES if name.key == key and agent in name.agents]
            assert len(readings) == 1, (agent, key, readings)
    for name in NAMES:  # and none for a key an agent's config lacks
        assert all(name.key in OGBENCH_CONFIGS[agent] for agent in name.agents), name


@pytest.mark.parametrize("agent", OGBENCH_AGENTS)
def test_ogbenchs_defaults_read_as_herkits_defaults(agent: str) -> None:
    """Each key of OGBench's config at OGBench's default value, read for the agent, is
    herkit's default of the setting it names (or left out, or answered with a flag the
    agent takes): so the transcription, the readings and herkit's defaults agree."""
    entry = agent_entry(agent)
    defaults = setting_values(preset_config("herkit/BitFlip-v0", algo=agent))
    her = RunHerSettings()
    expected = {
        f"{agent}.{field.name}": getattr(entry.default_config(), field.name)
        for field in dataclasses.fields(entry.config)
    } | {
        "her.value_goals": entry.value_goals,
        "her.actor_goals": entry.actor_goals,
        "her.value_future": her.value_future,
        "her.gc_negative": her.gc_negative,
    }
    given, answered = [], []
    for key, value in OGBENCH_CONFIGS[agent].items():
        reading = next(name for name in NAMES if name.key == key and agent in name.agents)
        typed = (f"--agent.{key}={ogbench_text(value)}", key, [ogbench_text(value)])
        (answered if reading.instead else given).append(typed)
    goals = {"value_goals": entry.value_goals, "actor_goals": entry.actor_goals}
    set_ = {}
    for read in ogbench_settings(given, agent, goals):
        assert read.settings or read.why.startswith(("left out (", "as --algo ")), read
        set_ |= read.settings
    assert set_ and all(expected[path] == value for path, value in set_.items()), {
        path: (value, expected[path]) for path, value in set_.items() if expected[path] != value
    }
    assert defaults[f"{agent}.polyak"] == pytest.approx(
        1 - OGBENCH_CONFIGS[agent].get("tau", 0.005)
    )
    for typed in answered:
        with pytest.raises(ValueError) as refused:
            ogbench_settings([typed], agent, goals)
        named = set(FLAG.findall(str(refused.value))) - {typed[0].split("=")[0]}
        assert named and named <= set(train_flags(agent)), str(refused.value)


def flag_args(flag: str, algo: str, values: dict[str, Any]) -> list[str]:
    """``flag`` with a value the parser takes: the setting's in ``values`` (a run's
    :func:`herkit.config.resolve.setting_values`)."""
    name = flag[2:].replace("-", "_")
    block, _, field = name.rpartition(".")
    negated = (f"{block}.{field[3:]}" if block else field[3:], f"her.{field[3:]}")
    if field.startswith("no_") and any(path in values for path in negated):
        return [flag]  # --no-X
    if f"her.{field}" in values and not block:
        value = values[f"her.{field}"]
    else:
        value = values[name]
    if isinstance(value, bool):
        return [flag]
    if isinstance(value, tuple):
        return [flag, *(str(item) for item in value)] if value else [flag]
    return [flag, "None" if value is None else str(value)]


def misspellings(word: str) -> list[str]:
    """A few near spellings of ``word``: a letter left out, two swapped, one doubled."""
    middle = len(word) // 2
    return [
        word[:middle] + word[middle + 1 :],
        word[: middle - 1] + word[middle] + word[middle - 1] + word[middle + 1 :],
        word[:middle] + word[middle] + word[middle:],
    ]


@pytest.mark.parametrize("algo", algo_names())
def test_every_suggestion_is_a_flag_the_parser_takes_for_the_run(algo: str) -> None:
    """Every OGBench name (at each of its agents' values, negated where a bool, misspelled),
    every herkit setting's name under ``--agent.``, every synonym (bare, as ``--her.X``, as
    ``--ALGO.X``) and near spellings of every flag: each flag herkit suggests or produces is
    one of the run's agent's flags, and all of them parse together; each ``--agent.KEY``
    it suggests is read for the agent."""
    known = train_flags(algo)
    fields = {field.name for field in dataclasses.fields(agent_entry(algo).config)}
    produced: list[str] = []
    said: list[str] = []
    keys = {key: [] for config in OGBENCH_CONFIGS.values() for key in config}
    for config in OGBENCH_CONFIGS.values():
        for key, value in config.items():
            keys[key].append(value)
    for key, values in keys.items():
        texts = {ogbench_text(value) for value in values} | {"1", "0.5", "2"}
        if key_kind(key) == "bool":
            texts |= {"True", "False"}
        for text in sorted(texts):
            flags, words = answer(algo, key, [text])
            produced += flags
            said.append(words)
        for wrong in misspellings(key):
            said.append(answer(algo, wrong, ["1"])[1])
    for field in fields:
        kind = key_kind(field)
        value = {"bool": "True", "ints": "64", "str": "None"}.get(kind or "", "1")
        flags, words = answer(algo, field, [value])
        assert flags, words
        produced += flags
    for name in [*SYNONYMS, *ANSWERS]:
        for flag in (
            f"--{name}",
            f"--{name.replace('-', '_')}",
            f"--her.{name}",
            f"--{algo}.{name}",
        ):
            said.append(suggestion(flag, algo, known) or "")
    for flag in known:
        for wrong in misspellings(flag[2:]):
            said.append(suggestion(f"--{wrong}", algo, known) or "")
    suggested = {flag for words in said for flag in FLAG.findall(words)}
    ours = {flag for flag in suggested if flag.startswith("--agent.")}
    for flag in ours:  # --agent.KEY suggested: a key the agent reads
        key = flag.removeprefix("--agent.")
        assert key in OGBENCH_CONFIGS.get(algo, {}) or key in fields, flag
    herkit = suggested - ours | {arg for arg in produced if arg.startswith("--")}
    assert herkit and herkit <= set(known), sorted(herkit - set(known))
    values = setting_values(preset_config(ENV, algo=algo))
    args = [arg for flag in sorted(herkit) for arg in flag_args(flag, algo, values)]
    config, _ = parse_flags(auto_flags(["--algo", algo, *args]), default=preset_config(ENV))
    assert config.algo == algo


def test_the_docs_table_is_the_mapping() -> None:
    page = GUIDE.read_text()
    found = re.search(r"<!-- ogbench-names: .*? -->\n(.*?)<!-- /ogbench-names -->", page, re.S)
    assert found is not None, "docs/guide-offline.md has no <!-- ogbench-names --> table"
    assert found.group(1) == ogbench_table(), "the table should read:\n" + ogbench_table()


def read(args: list[str]) -> tuple[Any, str]:
    """The config ``herkit train ARGS`` trains, and what it says of OGBench's flags."""
    rest, named = split_agent_flags(args)
    said = io.StringIO()
    with contextlib.redirect_stderr(said):
        args = read_ogbench_names(rest, named, parse_train(rest)) if named else rest
    first = parse_train(args)
    return parse_train(args, default=preset_config(first.env_id, algo=first.algo)), said.getvalue()


def test_the_guides_example_says_what_herkit_says() -> None:
    block = next(b for b in blocks(GUIDE) if b.language == "console" and "--agent." in b.code)
    command, line = block.code.strip().splitlines()
    config, said = read(shlex.split(command.removeprefix("$ herkit train ")))
    assert said.strip() == line
    assert config.algo == "gciql" and config.agent.alpha == 0.003
    assert config.agent.polyak == pytest.approx(0.99) and config.her.actor_goals == (0, 0.5, 0.5)


def test_ogbench_flags_set_herkits_settings() -> None:
    config, _ = read(
        [
            ENV, "--algo", "hiql", "--agent.subgoal_steps", "10", "--agent.discount=0.995",
            "--agent.layer_norm=False", "--agent.value_p_curgoal=0", "--agent.value_p_trajgoal",
            "0.7", "--agent.value_geom_sample", "False", "--noagent.gc_negative",
            "--agent.low_actor_rep_grad", "--agent.hidden", "64", "64",
        ]
    )  # fmt: skip
    agent, her = config.agent, config.her
    assert (agent.subgoal_steps, agent.gamma, agent.critic_layer_norm) == (10, 0.995, False)
    assert agent.low_actor_rep_grad and agent.hidden == (64, 64)
    assert her.value_goals == pytest.approx((0, 0.7, 0.3)) and her.value_future == "uniform"
    assert not her.gc_negative
    gcbc, said = read([ENV, "--agent=agents/gcbc.py", "--agent.actor_hidden_dims=(32, 32)"])
    assert gcbc.algo == "gcbc" and gcbc.agent.hidden == (32, 32)
    assert "--agent.actor_hidden_dims=(32, 32) as --gcbc.hidden 32 32" in said
    online, _ = read(["herkit/BitFlip-v0", "--agent.lr", "0.01"])  # the preset's agent, DQN
    assert online.algo == "dqn" and online.agent.lr == 0.01


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--algo", "hiql", "--agent.alpha", "3"], "--agent.alpha is not a setting of OGBench's "
         "hiql (it is gcivl, gciql, crl and qrl's); did you mean --agent.high_alpha or "
         "--agent.low_alpha?"),
        (["--agent.subgoal_steps=10"], "--agent.subgoal_steps is not a setting of OGBench's "
         "gcivl (it is hiql's)"),
        (["--algo", "crl", "--agent.tau=0.01"], "not a setting of OGBench's crl"),
        (["--agent.value_hidden_dims=(256,256)"], "--agent.value_hidden_dims: herkit's is "
         "--gcivl.hidden (one size for the actor and the value networks alike)"),
        (["--agent.encoder=impala_small"], "herkit's gcivl has encoder=None only, not "
         "'impala_small'; herkit's agents read states"),
        (["--agent.p_aug=0.5"], "herkit's gcivl has p_aug=0.0 only, not 0.5"),
        (["--algo", "gciql", "--agent.actor_loss=awr"], "has actor_loss=ddpgbc only"),
        (["--agent.actor_p_randomgoal=0.5"], "OGBench draws random goals for what "
         "actor_p_curgoal 0 and actor_p_trajgoal 1 leave, 0 here, not 0.5"),
        (["--agent.value_p_curgoal=0.6", "--agent.value_p_trajgoal=0.6"], "at most 1"),
        (["--algo", "gciql", "--agent=agents/qrl.py"], "--agent=agents/qrl.py names OGBench's "
         "qrl, but the run's agent is gciql (--algo): give one"),
        (["--agent.alpha=1", "--gcivl.alpha", "3"], "--agent.alpha=1 and --gcivl.alpha both "
         "set gcivl.alpha: give one"),
        (["--agent.alpha=high"], "--agent.alpha expects a number, got 'high'"),
        (["--agent.tau=2"], "--agent.tau must be a number in [0, 1] (polyak = 1 - tau)"),
        (["--algo", "sac", "--agent.discount=0.9"], "--agent.discount is OGBench's name: "
         "sac's is --sac.gamma"),
        (["--agent.alpah=1"], "did you mean --agent.alpha?"),
        (["--her.alpha", "0.5"], "--her.alpha: did you mean --alpha?"),
        (["--tau", "0.01"], "--tau: did you mean --gcivl.polyak (polyak = 1 - tau)?"),
        (["--train_steps", "5"], "--train_steps: did you mean --offline-steps?"),
        (["--env_name", "x"], "the env id is herkit train's first argument"),
    ],
)  # fmt: skip
def test_a_name_herkit_does_not_read_is_answered_in_one_line(
    args: list[str], words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["train", ENV, *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("herkit: error: ") and err.count("\n") == 1 and words in err, err
