"""The agents' registry (:mod:`herkit.agents.registry`): every list of agents is built from
it, a run's settings hold one agent slot (flags ``--ALGO.FIELD``, config.json's block
``ALGO``, the old layout of a block per algorithm still read and resumed), and a new agent
is one file and one import line."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import sys
import textwrap
from pathlib import Path

import pytest
from readme_blocks import README, ROOT

from herkit.cli import algo_help, main
from herkit.agents.settings import (
    ALGOS,
    OFFLINE_ALGOS,
    DDPGConfig,
    GCIQLConfig,
    config_class,
    default_agent_config,
)
from herkit.config.her import AGENTS_OWN, HER_ONLY
from herkit.agents.registry import AgentEntry, agent_entries, agent_entry, algo_names, register
from herkit.config.resolve import preset_config
from herkit.config.train import TrainConfig, config_from_dict
from herkit.rundir.settings import load_run_config
from runs import QUICK, point_reach_dataset

HERE = Path(__file__).resolve().parent
OLD_CONFIG = HERE / "data" / "config-before-one-agent-slot.json"
"""The config.json of a run written before the agent slot (``herkit train
herkit/PointReach-v0 --dataset data.npz --algo gciql --offline-steps 20 --gciql.hidden 16 16
--gciql.batch-size 32 --gciql.expectile 0.8 ...``): a block for each of the seven
algorithms then known."""


def test_the_lists_of_agents_are_the_registrys() -> None:
    names = tuple(entry.name for entry in agent_entries())
    assert ALGOS == algo_names() == names and set(names) >= {"dqn", "ddpg", "td3", "sac"}
    assert OFFLINE_ALGOS == tuple(entry.name for entry in agent_entries() if entry.offline)
    for entry in agent_entries():
        assert config_class(entry.name) is entry.config
        assert default_agent_config(entry.name) == entry.default_config()
        assert isinstance(entry.default_config(), entry.config)
        assert entry.name in algo_help() and entry.name not in TrainConfig.__dataclass_fields__
    assert default_agent_config("td3") == DDPGConfig.td3()  # a default config of its own
    assert config_class("td3") is config_class("ddpg") is DDPGConfig


@pytest.mark.parametrize("algo", algo_names())
def test_each_entry_names_a_goal_agent_class_it_builds(algo: str) -> None:
    import gymnasium

    from herkit.agents import GoalAgent, make_agent

    entry = agent_entry(algo)
    assert issubclass(entry.agent_class(), GoalAgent)
    space = gymnasium.spaces.Discrete(3) if entry.discrete else gymnasium.spaces.Box(-1, 1, (2,))
    small = dataclasses.replace(entry.default_config(), hidden=(8,))
    agent = make_agent(algo, small, 4, 2, space, (-1.0, 0.0), seed=0)
    assert type(agent) is entry.agent_class() and agent.config == small


def test_an_offline_entry_gives_the_goal_mixes_it_draws() -> None:
    from herkit.buffer.rules import OGBENCH_ACTOR_GOALS, OGBENCH_VALUE_GOALS

    for algo in OFFLINE_ALGOS:
        entry, settings = agent_entry(algo), TrainConfig(algo=algo).her_settings()
        assert (settings.value_goals, settings.actor_goals) == (
            entry.value_goals,
            entry.actor_goals,
        )
    assert agent_entry("gcivl").value_goals == OGBENCH_VALUE_GOALS
    assert agent_entry("gcbc").value_goals is None  # no value: no value goals drawn
    assert agent_entry("gciql").actor_goals == OGBENCH_ACTOR_GOALS


def test_an_entry_gives_its_settings_per_env_family() -> None:
    maze = preset_config("pointmaze-medium-navigate-v0", algo="gciql")
    assert (
        maze.agent
        == GCIQLConfig.pointmaze()
        == agent_entry("gciql").preset_config("pointmaze-large-navigate-v0")
    )
    assert preset_config("antmaze-large-navigate-v0", algo="gciql").agent == GCIQLConfig()
    assert TrainConfig(env_id="pointmaze-medium-navigate-v0", algo="gciql").agent == GCIQLConfig()


def test_a_name_is_registered_once_as_a_lowercase_identifier() -> None:
    entry = agent_entry("ddpg")
    assert register(entry) is entry  # the same entry again: nothing changes
    with pytest.raises(ValueError, match="registered already"):
        register(dataclasses.replace(entry, help="another"))
    for name in ("DDPG", "my-agent", ""):
        with pytest.raises(ValueError, match="lowercase identifier"):
            register(dataclasses.replace(entry, name=name))
    with pytest.raises(ValueError, match="algo must be one of dqn, ddpg"):
        agent_entry("ppo")


def test_a_train_config_holds_the_settings_of_its_algo_alone() -> None:
    config = TrainConfig(algo="td3")
    assert config.agent == DDPGConfig.td3() and config.agent_config() is config.agent
    values = config.to_dict()
    assert list(values)[-1] == "td3" and not set(values) & (set(ALGOS) - {"td3"})
    assert config_from_dict(values) == config
    with pytest.raises(ValueError, match="algo='td3' needs a DDPGConfig with twin_q=True"):
        TrainConfig(algo="td3", agent=DDPGConfig())
    with pytest.raises(ValueError, match="algo='sac' needs a SACConfig, got DDPGConfig"):
        dataclasses.replace(config, algo="sac")


def test_a_config_json_of_the_old_layout_loads_with_its_values(tmp_path: Path) -> None:
    """A block per algorithm: the run's own is read, with the values it held."""
    old = json.loads(OLD_CONFIG.read_text())
    assert {"dqn", "ddpg", "td3", "sac", "gcbc", "gcivl", "gciql"} <= set(old)
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(OLD_CONFIG, run / "config.json")
    config = load_run_config(run)
    assert config.algo == "gciql" and config.agent == GCIQLConfig(
        hidden=(16, 16), batch_size=32, expectile=0.8
    )
    new = config.to_dict()
    for name, value in new.items():  # every other value as the old file has it
        if name != "her":
            assert json.loads(json.dumps(value)) == old[name], name
    # an offline agent's: its goal mixes written out (None was its own, OGBench's), HER's
    # relabelling and the agent's own buffer settings left out; later ones at their defaults
    mixes = {"value_goals": [0.2, 0.5, 0.3], "actor_goals": [0.0, 1.0, 0.0]}
    kept = {k: v for k, v in old["her"].items() if k not in (*HER_ONLY, *AGENTS_OWN, "gamma")}
    assert {name: new["her"][name] for name in kept} == kept | mixes
    assert config_from_dict(new) == config  # and read back as the agent's own
    assert set(old) - set(new) == {
        "dqn",
        "ddpg",
        "td3",
        "sac",
        "gcbc",
        "gcivl",
        "conventions",
        "machine",
    }


def test_an_old_run_directory_resumes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A run whose config.json has the old layout goes on with ``--resume``, its settings
    as they were; a flag of its agent's settings is refused as for any run."""
    data = point_reach_dataset(tmp_path / "data.npz")
    run = tmp_path / "run"
    small = ["--gciql.hidden", "16", "16", "--gciql.batch-size", "32", "--torch-threads", "1"]
    args = ["train", "herkit/PointReach-v0", "--dataset", str(data), "--algo", "gciql"]
    assert main([*args, "--offline-steps", "20", *small, "--out", str(run), *QUICK]) == 0
    new = json.loads((run / "config.json").read_text())
    old = json.loads(OLD_CONFIG.read_text())
    layout = {name: old[name] for name in ("dqn", "ddpg", "td3", "sac", "gcbc", "gcivl")}
    (run / "config.json").write_text(json.dumps(new | layout | {"gciql": new["gciql"]}))
    before = load_run_config(run)
    assert main(["train", "--resume", str(run), "--offline-steps", "40", *QUICK]) == 0
    assert "at 40 gradient steps" in capsys.readouterr().err
    assert load_run_config(run).agent == before.agent == GCIQLConfig(hidden=(16, 16), batch_size=32)
    refused = main(["train", "--resume", str(run), "--gciql.expectile", "0.7"])
    assert refused == 2 and "gciql cannot change" in capsys.readouterr().err


def test_flags_of_another_agent_than_the_runs_are_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["train", "herkit/PointReach-v0", "--algo", "ddpg", "--sac.lr", "0.1"]) == 2
    error = capsys.readouterr().err.strip()
    assert error.count("\n") == 0 and "--sac.* set the settings of --algo sac" in error


# --- a new agent: one file and one import line ---------------------------------------

NEW_AGENT = '''
"""Behaviour cloning with a weight on its log-likelihood: a new agent in one file."""

from dataclasses import dataclass

import torch

from herkit.agents.offline import GCBCAgent
from herkit.agents.settings import GCBCConfig
from herkit.agents.registry import AgentEntry, register


@dataclass(frozen=True)
class WeightedBCConfig(GCBCConfig):
    """Settings of weighted behaviour cloning."""

    weight: float = 1.0
    """Weight of the log-likelihood in the actor's loss."""


class WeightedBCAgent(GCBCAgent):
    """GCBC with its loss scaled by ``config.weight``."""

    config: WeightedBCConfig

    def _update(self, batch, actor_step, move_targets):
        actor_x, _ = self._actor_inputs(batch)
        _, log_prob, metrics = self._behaviour(actor_x, self._unit_action(batch))
        actor_loss = -self.config.weight * log_prob.mean()
        self._step(self.optimizers["actor"], actor_loss)
        metrics["actor_loss"] = actor_loss
        return metrics, torch.zeros(len(batch.reward), device=self.device)


register(
    AgentEntry(
        "wbc",
        WeightedBCConfig,
        WeightedBCAgent,
        "offline behaviour cloning, its loss weighted",
        offline=True,
        value_goals=None,  # no value function: no value goals drawn
        presets={"herkit/PointReach": {"weight": 0.5}},
    )
)
'''


@pytest.fixture
def registry_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    """The registry as it is now, given back after the test (the agents it adds go)."""
    from herkit.config import registry

    monkeypatch.setattr(registry, "_ENTRIES", dict(registry._ENTRIES))


def test_a_new_agent_is_one_file_and_one_import_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    registry_kept: None,
) -> None:
    (tmp_path / "weighted_bc.py").write_text(textwrap.dedent(NEW_AGENT))
    monkeypatch.syspath_prepend(str(tmp_path))
    data = point_reach_dataset(tmp_path / "data.npz")
    run = tmp_path / "run"
    args = [
        "train",
        "herkit/PointReach-v0",
        "--dataset",
        str(data),
        "--algo",
        "wbc",
        "--offline-steps",
        "20",
        "--wbc.hidden",
        "16",
        "16",
        "--wbc.batch-size",
        "32",
        "--wbc.weight",
        "0.25",
        "--torch-threads",
        "1",
        "--out",
        str(run),
        *QUICK,
    ]
    assert main(args) == 2  # without the import line: refused, in one line
    error = capsys.readouterr().err.strip()
    assert error.count("\n") == 0 and "invalid choice 'wbc' for argument '--algo'" in error

    monkeypatch.delitem(sys.modules, "weighted_bc", raising=False)
    __import__("weighted_bc")  # the one import line (in herkit/agents/__init__.py)
    assert "wbc" in algo_names(offline=True) and "wbc" in algo_help()
    assert main(args) == 0, capsys.readouterr().err
    assert "with wbc on " in capsys.readouterr().err
    saved = json.loads((run / "config.json").read_text())
    assert saved["algo"] == "wbc" and saved["wbc"]["weight"] == 0.25
    assert saved["wbc"]["hidden"] == [16, 16]
    config = load_run_config(run)
    assert type(config.agent).__name__ == "WeightedBCConfig" and config.agent.weight == 0.25
    assert config.her_settings().value_goals is None  # as its entry says
    assert preset_config("herkit/PointReach-v0", algo="wbc").agent.weight == 0.5  # its preset


def test_the_help_of_a_new_agent_shows_its_flags(registry_kept: None) -> None:
    from herkit.agents.offline import GCBCAgent
    from herkit.config import agents
    from herkit.agents.settings import GCBCConfig
    from herkit.flags import train_flags

    register(AgentEntry("tinybc", GCBCConfig, GCBCAgent, "a test's agent", offline=True))
    assert "--tinybc.hidden" in train_flags() and "tinybc" in agents.ALGOS
    # herkit bench update --algos reads the registry when the flag is read
    import tyro

    from herkit.bench import UpdateBenchConfig
    from herkit.flags import parse

    bench = parse(tyro.cli, UpdateBenchConfig, ["--algos", "tinybc"], "herkit bench update")
    assert bench.algos == ("tinybc",)
    with pytest.raises(ValueError, match=r"^--algos must be .*tinybc.*got \('nobc',\)"):
        parse(tyro.cli, UpdateBenchConfig, ["--algos", "nobc"], "herkit bench update")


# --- the docs' lists of agents -------------------------------------------------------

AGENTS_TABLE = re.compile(r"<!-- agents: .*? -->\n(.*?)<!-- /agents -->", re.S)
"""docs/architecture.md's table of the registered agents, between these markers."""


def agents_table() -> str:
    """The table of the registered agents as docs/architecture.md shows it."""
    rows = ["| `--algo` | kind | settings | agent | what it is |", "|---|---|---|---|---|"]
    for entry in agent_entries():
        kind = "offline" if entry.offline else "discrete" if entry.discrete else "continuous"
        agent = entry.agent if isinstance(entry.agent, str) else entry.agent.__name__
        default = "" if entry.default is None else f" (`{entry.default.__qualname__}()`)"
        rows.append(
            f"| `{entry.name}` | {kind} | `{entry.config.__name__}`{default} | "
            f"`{agent.split(':')[-1]}` | {entry.help} |"
        )
    return "\n".join(rows) + "\n"


def test_the_docs_table_of_agents_is_the_registry() -> None:
    page = (ROOT / "docs" / "architecture.md").read_text()
    found = AGENTS_TABLE.search(page)
    assert found is not None, "docs/architecture.md has no <!-- agents: --> table"
    assert found.group(1) == agents_table(), (
        "docs/architecture.md's table of agents is not the registry's; it should read:\n"
        + agents_table()
    )


PROSE = [
    (README, "trains DQN, DDPG, TD3 and SAC", False),
    (ROOT / "docs" / "index.md", "goal-conditioned DQN, DDPG, TD3 and SAC", False),
    (ROOT / "docs" / "guide-offline.md", "GCBC, GCIVL, GCIQL, CRL, HIQL and QRL", True),
]
"""Sentences of the docs that name the agents of one kind (online or offline) in words."""


@pytest.mark.parametrize(("page", "words", "offline"), PROSE, ids=[p.name for p, _, _ in PROSE])
def test_the_docs_sentences_name_every_agent_of_their_kind(
    page: Path, words: str, offline: bool
) -> None:
    names = [name.upper() for name in algo_names(offline=offline)]
    spoken = ", ".join(names[:-1]) + f" and {names[-1]}"
    assert words in page.read_text(), f"{page.name} no longer says {words!r}: update PROSE"
    assert spoken in words, f"{page.name}: {words!r} should name {spoken}"


def test_adding_an_agent_is_documented() -> None:
    page = (ROOT / "docs" / "architecture.md").read_text()
    assert "## Adding an agent" in page and "register(" in page
    assert "--ALGO." in (ROOT / "docs" / "guide-training.md").read_text()
