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

from herkit.agents.ddpg_td3 import DDPGConfig
from herkit.agents.gciql import GCIQLConfig
from herkit.agents.registry import AgentEntry, agent_entries, agent_entry, algo_names, register
from herkit.agents.settings import (
    ALGOS,
    OFFLINE_ALGOS,
    config_class,
    default_agent_config,
)
from herkit.cli import main
from herkit.config.her import AGENTS_OWN, HER_ONLY
from herkit.config.resolve import preset_config
from herkit.config.train import TrainConfig, config_from_dict
from herkit.flags.train import algo_help
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
        == GCIQLConfig(alpha=0.003)
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
    with pytest.raises(ValueError, match=r"a registered agent \(dqn, ddpg"):
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


# --- a new agent: one file and one line --------------------------------------------

NEW_AGENT = '''
"""Behaviour cloning with a weight on its log-likelihood: a new agent in one file."""

from dataclasses import dataclass

from herkit.agents.gcbc import GCBCConfig
from herkit.agents.registry import AgentEntry, register


@dataclass(frozen=True)
class WeightedBCConfig(GCBCConfig):
    """Settings of weighted behaviour cloning."""

    weight: float = 1.0
    """Weight of the log-likelihood in the actor's loss."""


register(
    AgentEntry(
        "wbc",
        WeightedBCConfig,
        f"{__name__}:WeightedBCAgent",
        "offline behaviour cloning, its loss weighted",
        offline=True,
        value_goals=None,  # no value function: no value goals drawn
        presets={"herkit/PointReach": {"weight": 0.5}},
    )
)

import torch

from herkit.agents.gcbc import GCBCAgent


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
'''


@pytest.fixture
def registry_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    """The registry as it is now, given back after the test (the agents it adds go)."""
    from herkit.agents import registry

    monkeypatch.setattr(registry, "_ENTRIES", dict(registry._ENTRIES))


def wbc_args(tmp_path: Path) -> list[str]:
    """``herkit train`` of the new agent on a small dataset, 20 gradient steps."""
    data = point_reach_dataset(tmp_path / "data.npz")
    small = ["--wbc.hidden", "16", "16", "--wbc.batch-size", "32", "--wbc.weight", "0.25"]
    return [
        *("train", "herkit/PointReach-v0", "--dataset", str(data), "--algo", "wbc"),
        *("--offline-steps", "20", *small, "--torch-threads", "1"),
        *("--out", str(tmp_path / "run"), *QUICK),
    ]


def test_a_new_agent_is_one_file_and_one_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    registry_kept: None,
) -> None:
    """The file, refused without its line (in one line that says how to register it), then
    read as the line reads it: its settings and entry without torch, its agent when built."""
    from herkit.agents import read_settings

    (tmp_path / "weighted_bc.py").write_text(textwrap.dedent(NEW_AGENT))
    monkeypatch.syspath_prepend(str(tmp_path))
    args = wbc_args(tmp_path)
    assert main(args) == 2  # without the line: refused, in one line
    error = capsys.readouterr().err.strip()
    assert error.count("\n") == 0 and "'wbc'" in error and "AGENTS" in error, error

    monkeypatch.delitem(sys.modules, "weighted_bc", raising=False)
    module = read_settings("weighted_bc")  # what the line in AGENTS does
    assert "WeightedBCConfig" in vars(module) and "WeightedBCAgent" not in vars(module)
    assert "wbc" in algo_names(offline=True) and "wbc" in algo_help()
    assert main(args) == 0, capsys.readouterr().err
    assert "with wbc on " in capsys.readouterr().err
    assert "WeightedBCAgent" in vars(module)  # the rest of the file, run to build it
    run = tmp_path / "run"
    saved = json.loads((run / "config.json").read_text())
    assert saved["algo"] == "wbc" and saved["wbc"]["weight"] == 0.25
    assert saved["wbc"]["hidden"] == [16, 16]
    config = load_run_config(run)
    assert type(config.agent).__name__ == "WeightedBCConfig" and config.agent.weight == 0.25
    assert config.her_settings().value_goals is None  # as its entry says
    assert preset_config("herkit/PointReach-v0", algo="wbc").agent.weight == 0.5  # its preset


@pytest.mark.slow("herkit's package copied, three herkit processes")
def test_a_new_agent_in_a_copy_of_the_package_is_one_file_and_its_line_in_agents(
    tmp_path: Path,
) -> None:
    """The same file written into herkit/agents/ of a copy of the package: refused without
    its line in AGENTS; with it, listed by ``herkit train --help`` without torch, and
    trained."""
    import subprocess

    package = tmp_path / "src" / "herkit"
    shutil.copytree(ROOT / "src" / "herkit", package)
    (package / "agents" / "wbc.py").write_text(textwrap.dedent(NEW_AGENT))
    env = {**__import__("os").environ, "PYTHONPATH": str(tmp_path / "src")}
    args = [sys.executable, "-m", "herkit", *wbc_args(tmp_path)]
    refused = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300)
    assert refused.returncode == 2 and "AGENTS" in refused.stderr, refused.stderr

    agents = package / "agents" / "__init__.py"
    text = agents.read_text()
    last = '    "herkit.agents.gctd3bc",\n'
    agents.write_text(text.replace(last, last + '    "herkit.agents.wbc",\n'))  # the line
    help_check = (
        "import sys; from herkit.flags import train_flags; "
        "assert '--wbc.weight' in train_flags(); assert 'torch' not in sys.modules"
    )
    listed = subprocess.run([sys.executable, "-c", help_check], env=env, capture_output=True)
    assert listed.returncode == 0, listed.stderr
    trained = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300)
    assert trained.returncode == 0, trained.stderr
    assert json.loads((tmp_path / "run" / "config.json").read_text())["wbc"]["weight"] == 0.25


def test_the_help_of_a_new_agent_shows_its_flags(registry_kept: None) -> None:
    from herkit.agents import settings
    from herkit.agents.gcbc import GCBCConfig
    from herkit.flags import train_flags

    register(
        AgentEntry("tinybc", GCBCConfig, "herkit.agents.gcbc:GCBCAgent", "a test's agent", True)
    )
    assert "--tinybc.hidden" in train_flags() and "tinybc" in settings.ALGOS
    assert "tinybc" not in ALGOS  # imported before: a snapshot (read settings.ALGOS)
    # herkit bench update --algos reads the registry when the flag is read
    import tyro

    from herkit.bench import UpdateBenchConfig
    from herkit.flags import parse

    bench = parse(tyro.cli, UpdateBenchConfig, ["--algos", "tinybc"], "herkit bench update")
    assert bench.algos == ("tinybc",)
    with pytest.raises(ValueError, match=r"^--algos must be .*tinybc.*got \('nobc',\)"):
        parse(tyro.cli, UpdateBenchConfig, ["--algos", "nobc"], "herkit bench update")


def test_an_unregistered_name_says_how_to_register_an_agent() -> None:
    with pytest.raises(ValueError, match=r"registered agent \(dqn, .*'nope'.*AGENTS"):
        agent_entry("nope")


# --- the docs' lists of agents -------------------------------------------------------

AGENTS_TABLE = re.compile(r"<!-- agents: .*? -->\n(.*?)<!-- /agents -->", re.S)
"""docs/architecture.md's table of the registered agents, between these markers."""


def agents_table() -> str:
    """The table of the registered agents as docs/architecture.md shows it."""
    rows = ["| `--algo` | kind | module | settings | agent | what it is |", "|---" * 6 + "|"]
    for entry in agent_entries():
        kind = "offline" if entry.offline else "discrete" if entry.discrete else "continuous"
        agent = entry.agent if isinstance(entry.agent, str) else entry.agent.__name__
        module = agent.partition(":")[0].removeprefix("herkit.agents.")
        default = "" if entry.default is None else f" (`{entry.default.__qualname__}()`)"
        rows.append(
            f"| `{entry.name}` | {kind} | `{module}` | `{entry.config.__name__}`{default} | "
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


NAMED = re.compile(r"<!-- the (online|offline) agents -->\n(.*?)(?:\n\n|$)", re.S)
"""A paragraph that names the agents of one kind in words, after its marker line."""


def test_the_docs_sentences_name_every_agent_of_their_kind() -> None:
    """Each paragraph after a ``<!-- the online agents -->`` or ``<!-- the offline agents
    -->`` line names every registered agent of its kind, "A, B and C", in the registry's
    order (the registry's names upper-cased)."""
    found = 0
    for page in [README, *sorted((ROOT / "docs").glob("*.md"))]:
        for kind, paragraph in NAMED.findall(page.read_text()):
            names = [name.upper() for name in algo_names(offline=kind == "offline")]
            spoken = ", ".join(names[:-1]) + f" and {names[-1]}"
            assert spoken in " ".join(paragraph.split()), f"{page.name}: say {spoken!r}"
            found += 1
    assert found >= 3


def test_the_api_page_shows_every_agents_settings() -> None:
    page = (ROOT / "docs" / "api" / "index.md").read_text()
    for entry in agent_entries():
        module = entry.agent.partition(":")[0] if isinstance(entry.agent, str) else ""
        shown = f"{module}.{entry.config.__name__}"
        assert shown in page, f"docs/api/index.md: add .. autoclass:: {shown}"


def test_adding_an_agent_is_documented() -> None:
    page = (ROOT / "docs" / "architecture.md").read_text()
    assert "## Adding an agent" in page and "register(" in page
    assert "--ALGO." in (ROOT / "docs" / "guide-training.md").read_text()
