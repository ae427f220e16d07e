"""Every code block of the README and the docs, as written: Python blocks run, each
command of a bash block is checked (``herkit`` commands parsed and validated by herkit's own
parser without training, benchmark scripts and their flags looked up), and a block quoted
from the source must still be in it. A new block is picked up by these tests unchanged."""

from __future__ import annotations

import functools
import itertools
import json
import re
import subprocess
import sys
from collections.abc import Callable
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import pytest
from readme_blocks import README, ROOT, RUN_LANGUAGES, Block, blocks, commands, pages, section

import herkit.cli
import herkit.training.loop
from herkit.envs.ogbench_maze import OGBENCH_MAZE_ID
from herkit.envs.registration import ROBOTICS_ID
from runs import herkit as herkit_cli
from runs import quick_flags

ALL = [block for page in pages() for block in blocks(page)]
HERE = Path(__file__).resolve().parent
SHELL_TOOLS = {"pip", "git", "sudo", "apt-get", "nvidia-smi", "cd", "export", "ls", "cat", "."}
"""Commands of other programs that the docs may show (checked only for being listed)."""
PYTHON_TOOLS = {
    "pytest",
    "ruff",
    "mypy",
    "sphinx",
    "build",
    "twine",
    "pip",
    "pyinstrument",
    "rl_zoo3.train",
    "rl_zoo3.enjoy",
    "venv",
}
"""``python -m X`` modules of tools (the dev, docs and zoo extras; venv of Python's own)."""


def test_every_block_has_a_language_that_the_tests_know() -> None:
    unknown = [
        b.name
        for b in ALL
        if b.language not in (*RUN_LANGUAGES, "text", "console")
        and not (b.language == "yaml" and b.page.name == "guide-sb3.md")
    ]
    assert not unknown, f"blocks without python/bash/text/console fences: {unknown}"
    assert "the_guides_file" in (HERE / "test_zoo.py").read_text()  # runs the SB3 guide's yaml


def test_the_extractor_finds_the_readme_examples() -> None:
    """A guard against an extractor that silently finds nothing."""
    languages = [b.language for b in blocks(README)]
    assert languages.count("python") >= 3 and languages.count("bash") >= 2
    assert len([b for b in ALL if b.language == "bash"]) > 20


# -- bash blocks: every command -------------------------------------------------------------


def _statements(words: list[str]) -> list[list[str]]:
    """``a && b | c ; d`` as four commands."""
    out: list[list[str]] = [[]]
    for word in words:
        if word in ("&&", "||", "|", ";"):
            out.append([])
        else:
            out[-1].append(word)
    return [c for c in out if c]


def _run_herkit(args: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """``herkit ARGS`` through herkit's own parser and checks, with the work itself
    (training, evaluating, drawing) replaced by a stub."""
    ran: list[str] = []

    def stub(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        def record(*_: Any, **__: Any) -> None:
            ran.append(name)

        return record

    for name, function in list(herkit.cli.COMMANDS.items()):
        monkeypatch.setitem(herkit.cli.COMMANDS, name, stub(name, function))

    def fake_train(config: Any, resume: bool = False) -> dict[str, Any]:
        ran.append("train")
        return {"success_rate": 0.0, "env_steps": 0, "run_dir": str(config.out)}

    monkeypatch.setattr(herkit.training.loop, "train", fake_train)
    if args[:1] == ["train"] and "--resume" in args:  # no run directory to resume here
        from herkit.flags import auto_flags
        from herkit.flags.train import parse_train

        parse_train(auto_flags(args[1:]))
        return
    if "--help" in args or "-h" in args:
        with pytest.raises(SystemExit) as shown:
            herkit.cli.main(args)
        assert shown.value.code == 0
        return
    code = herkit.cli.main(args)
    assert code == 0, f"herkit {' '.join(args)}: exit code {code}"
    assert ran == [args[0]] or args[0] in ("--version", "-V"), ran


def _check_benchmark(words: list[str]) -> None:
    script = ROOT / words[1]
    assert script.is_file(), f"{words[1]} does not exist"
    source = script.read_text() + (ROOT / "benchmarks" / "common.py").read_text()
    for flag in (w.split("=")[0] for w in words[2:] if w.startswith("--")):
        if flag == "--herkit-args":
            break  # what follows goes to herkit train
        assert f'"{flag}"' in source, f"{words[1]} has no flag {flag}"
    if "--herkit-args" in words:
        rest = words[words.index("--herkit-args") + 1 :]
        assert all(w.startswith("-") or not w.startswith("herkit") for w in rest)


def check_command(words: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """One shell command of the docs: checked as far as it can be without running it."""
    head = words[0]
    if head == "herkit":
        _run_herkit(words[1:], monkeypatch)
    elif head == "torchrun":
        at = words.index("-m")
        assert words[at + 1] == "herkit", words
        _run_herkit(words[at + 2 :], monkeypatch)
    elif head in ("python", "python3") and words[1:3] == ["-m", "herkit"]:
        _run_herkit(words[3:], monkeypatch)
    elif head in ("python", "python3") and words[1] == "-m":
        assert words[2] in PYTHON_TOOLS, f"python -m {words[2]}: not a known tool"
    elif head in ("python", "python3") and words[1].startswith("benchmarks/"):
        _check_benchmark(words)
    elif head in ("python", "python3"):
        assert (ROOT / words[1]).is_file(), f"{words[1]} does not exist"
    elif head == "bash":
        assert (ROOT / words[1]).is_file(), f"{words[1]} does not exist"
        if words[1] == "install.sh":
            import tomllib

            extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
                "optional-dependencies"
            ]
            for extra in words[2:]:
                assert extra in extras, f"install.sh {extra}: no such extra"
    elif "=" in head:  # VAR=value command ...
        check_command(words[1:], monkeypatch)
    else:
        assert head in SHELL_TOOLS, f"{head}: a command the docs test does not know"


BASH = [b for b in ALL if b.language == "bash"]
EXTRA_OF_ENV = {
    "robotics": ("gymnasium_robotics", ROBOTICS_ID),
    "offline": ("ogbench", OGBENCH_MAZE_ID),
}
"""The extras whose envs the docs' commands name: the module each brings, its env ids."""


def missing_extra(words: list[str]) -> str | None:
    """The extra that an env named by ``words`` needs and this install lacks, or None: the
    fast tier runs with ``bash install.sh dev`` alone, where a command that fails for want
    of it is left out (CI, with every extra, checks it)."""
    for extra, (module, env_id) in EXTRA_OF_ENV.items():
        if any(env_id.match(w.split(":")[-1]) for w in words) and not find_spec(module):
            return extra
    return None


@pytest.mark.parametrize("block", BASH, ids=[b.name for b in BASH])
def test_every_command_of_the_docs_is_accepted(
    block: Block, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    if block.page.name == "guide-offline.md" and not find_spec("ogbench"):
        pytest.skip("its dataset needs OGBench: bash install.sh offline")
    setup_for(block.page, tmp_path, train=False)
    left_out = set()
    for words in commands(block):
        bound: dict[str, str] = {}  # for VAR in A B ...: each $VAR checked with A
        for statement in _statements(words):
            if statement[0] == "for":
                bound[f"${statement[1]}"] = statement[3]
                continue
            statement = [bound.get(w, w) for w in statement if w not in ("do", "done")]
            if not statement:
                continue
            try:
                check_command(statement, monkeypatch)
            except AssertionError:
                extra = missing_extra(statement)
                if extra is None:
                    raise
                left_out.add(extra)
    if left_out:
        extras = " ".join(sorted(left_out))
        pytest.skip(f"the rest checked; commands of envs not installed: bash install.sh {extras}")


def test_a_wrong_flag_in_the_docs_would_be_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(AssertionError, match="exit code 2"):
        check_command(["herkit", "train", "--no-such-flag", "3"], monkeypatch)
    with pytest.raises(AssertionError, match="no flag --no-such-flag"):
        check_command(["python", "benchmarks/bitflip.py", "--no-such-flag"], monkeypatch)


# -- Python blocks: run, or checked against the source they quote ------------------------


EXCERPTS = [b for b in ALL if b.excerpt_of]


def _squeezed(text: str) -> str:
    """Code without comments or whitespace."""
    return "".join(re.sub(r"#.*$", "", line) for line in text.splitlines()).replace(" ", "")


@pytest.mark.parametrize("block", EXCERPTS, ids=[b.name for b in EXCERPTS])
def test_a_quoted_block_is_still_in_the_source_in_this_order(block: Block) -> None:
    """Each line of the quote (``...`` standing for left-out code) is in the source, in order."""
    assert block.excerpt_of is not None
    source = _squeezed((ROOT / block.excerpt_of).read_text())
    at = 0
    for line in block.code.splitlines():
        for piece in filter(None, _squeezed(line).split("...")):
            found = source.find(piece, at)
            assert found >= 0, f"{block.name}: {line.strip()!r} is not in {block.excerpt_of}"
            at = found + len(piece)


def setup_for(page: Path, cwd: Path, train: bool = True) -> None:
    """What a page's examples take as already done (``train``: runs they load)."""
    if page.name == "guide-own-env.md":  # its module, imported by herkit train mymodule:Env
        code = [b.code for b in blocks(page) if b.language == "python"]
        (cwd / "myreach.py").write_text(code[0])
    if page.name == "guide-offline.md":  # the datasets its commands train from, small
        from scripts import load_benchmark

        data = load_benchmark("offline_data")
        named = set(re.findall(r"data/(pointmaze-[\w-]+)\.npz", page.read_text()))
        for name in sorted(named & set(data.DATASETS)):
            data.make_named(name, 0, cwd / "data" / f"{name}.npz", episodes=3, steps=101)
        data.make_dataset(
            "pointmaze-medium-v0", 3, 101, 0.5, 0, cwd / "data" / "pointmaze-small.npz"
        )
    if page.name == "guide-training.md" and train:  # load_policy of a finished default run
        out = cwd / "runs" / "herkit-BitFlip-v0-dqn-future-s0"
        done = herkit_cli(
            "train",
            "--steps",
            "300",
            "--eval-every",
            "300",
            *quick_flags(eval_episodes=2),
            "--out",
            str(out),
            cwd=cwd,
        )
        assert done.returncode == 0, done.stderr


RUNNABLE = sorted({b.page for b in ALL if b.language == "python" and not b.excerpt_of})


@pytest.mark.slow("runs every Python example of the docs, SB3's learn() among them")
@pytest.mark.parametrize("page", RUNNABLE, ids=[p.name for p in RUNNABLE])
def test_every_python_example_of_a_page_runs_in_order(page: Path, tmp_path: Path) -> None:
    code = "\n".join(b.code for b in blocks(page) if b.language == "python" and not b.excerpt_of)
    setup_for(page, tmp_path)
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, f"{page.name}:\n{done.stderr[-3000:]}"


def test_the_readme_results_are_the_results_pages() -> None:
    """The headline table is written once, in docs/results.md; README's copy must match,
    its links pointing into ``docs/`` where the page's point beside it."""
    pattern = r"<!-- headline: start -->.*?<!-- headline: end -->"
    ours = re.search(pattern, README.read_text(), re.S)
    theirs = re.search(pattern, (ROOT / "docs" / "results.md").read_text(), re.S)
    assert ours and theirs
    assert ours.group(0) == re.sub(r"\]\((?!http)", "](docs/", theirs.group(0))


def test_readme_sections_the_site_includes_exist() -> None:
    for title in ("The buffer in your own loop", "Stable-Baselines3 and cpprb by one import"):
        assert "```python" in section(README, title)


INCLUDE = re.compile(r"```\{include\} \.\./README\.md\n:start-after: (.*)\n:end-before: (.*)\n")
"""A part of the README that a page of the site shows (MyST's include)."""


def test_the_readme_examples_and_features_are_on_the_site_where_the_index_says() -> None:
    """Each README part a page includes is marked in the README, and the buffer example,
    the SB3 example and the features table each appear on the page the index names."""
    readme = README.read_text()
    shown = {}
    for page in pages()[1:]:
        for start, end in INCLUDE.findall(page.read_text()):
            assert start in readme and end in readme, f"{page.name}: {start} ... {end}"
            shown[readme.split(start)[1].split(end)[0]] = page.name
    where = {
        "buf.sample(256)": "guide-buffer.md",
        "from herkit.sb3 import HerReplayBuffer": "guide-sb3.md",
        "| goal strategies |": "index.md",
    }
    for text, page in where.items():
        assert [name for part, name in shown.items() if text in part] == [page], text
    index = (ROOT / "docs" / "index.md").read_text()
    for page in where.values():
        assert page == "index.md" or f"]({page})" in index, f"index.md does not point to {page}"


def test_the_first_commands_start_in_a_fresh_virtual_environment_and_agree_on_the_time() -> None:
    """README's and getting-started's first command make and enter a virtual environment
    before install.sh, a test line installs the fast tier's tools alone (the dev extra; the
    line before it, CI's, every extra), and the first run's time is one statement, with its
    machine, on both pages."""
    first, _, tests = blocks(README)[0].code.splitlines()[:3]
    venv = "python3 -m venv .venv && . .venv/bin/activate && bash install.sh && herkit train"
    started = (ROOT / "docs" / "getting-started.md").read_text()
    assert first.startswith(venv) and f"```bash\n{venv}\n```" in started
    assert tests.split("#")[0].split() == "bash install.sh dev && python -m pytest".split()
    time = re.search(r"DQN\+HER \((about \d+ s on a [^)]+)\)", first)
    assert time and re.search(r"Xeon|EPYC|Zen", time.group(1)), first
    assert f"{time.group(1)}, " in " ".join(started.split()), "getting-started says another time"


def test_every_zoo_line_of_the_docs_runs_torch_on_one_thread() -> None:
    """rl-zoo3 leaves torch at a thread per core, many times slower for these networks
    (2,000 TQC steps: about 37 s on one thread, over 300 s on two with a core taken);
    README's SB3 example sets one thread, and so does every zoo line of the docs."""
    zoo = [
        words
        for block in BASH
        for words in commands(block)
        if words[:2] == ["python", "-m"] and words[2] in ("rl_zoo3.train", "rl_zoo3.enjoy")
    ]
    assert len(zoo) >= 3
    for words in zoo:
        assert "--num-threads" in words, " ".join(words)
        assert words[words.index("--num-threads") + 1] == "1", " ".join(words)


WRITES = ("-o", "--out", "--video", "--json")
"""Flags of ``herkit`` whose value is a file or folder the command writes (``--json`` of
``herkit eval`` takes none)."""


def test_what_a_documented_command_writes_goes_under_runs() -> None:
    """A reader runs the docs from the checkout: a file that a ``herkit`` line writes goes
    into ``runs/`` (which git ignores) or a folder the line names absolutely, never beside
    the source."""
    assert "runs/" in (ROOT / ".gitignore").read_text().split()
    outside = []
    for block in BASH:
        for words in commands(block):
            if "herkit" not in words:  # herkit ..., torchrun ... -m herkit ...
                continue
            for flag, value in itertools.pairwise(words):
                if flag in WRITES and not value.startswith(("-", "runs/", "/", "$")):
                    outside.append(f"{block.name}: {' '.join(words)}")
    assert not outside, outside


PAIRED = re.compile(r"<!-- paired (\S+) (\S+) -->\n(.*?)\n?<!-- /paired -->", re.S)
"""A table of ``benchmarks/sb3_compare.py buffer --paired FIRST SECOND`` in a page."""
RULES = re.compile(r"<!-- rules ([^>]+) -->\n(.*?)\n?<!-- /rules -->", re.S)
"""A table of ``benchmarks/sb3_compare.py buffer --rules TASK...`` in a page."""


def test_the_sb3_parity_tables_are_the_records() -> None:
    """Each paired table of the SB3 guide is what ``benchmarks/sb3_compare.py buffer
    --paired`` prints from docs/sb3_buffer.json, and its table of the rules for relabelled
    samples what ``--rules`` prints, so that they cannot drift from the runs."""
    from scripts import load_benchmark

    buffers = load_benchmark("sb3_buffer")
    guide = (ROOT / "docs" / "guide-sb3.md").read_text()
    tables = PAIRED.findall(guide)
    assert len(tables) == 3, "docs/guide-sb3.md should hold the parity, crash and n-step tables"
    for first, second, table in tables:
        assert table == buffers.paired_table(list(buffers.BUFFER_TASKS), first, second)
    ((tasks, table),) = RULES.findall(guide)
    assert table == buffers.rules_table(tasks.split())


def test_the_sb3_report_is_made_from_its_records() -> None:
    """docs/sb3.md's marked parts (the machine, each part's section, the speed-ups) are
    what ``benchmarks/sb3_compare.py --report-only`` makes from docs/sb3.json."""
    from scripts import load_benchmark

    report = load_benchmark("sb3_report")
    page = (ROOT / "docs" / "sb3.md").read_text()
    parts = {name for _, name, _, _ in report.MARKED.findall(page)}
    assert parts == {"machine", *report.SECTIONS, "speedups"}
    results = json.loads((ROOT / "docs" / "sb3.json").read_text())
    assert report.fill_report(page, results) == page


BLOCKER = """
import importlib.abc, sys

class Missing(importlib.abc.MetaPathFinder):
    '''The train and sb3 extras are not installed (what Sphinx mocks comes first).'''

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("torch", "tyro", "stable_baselines3"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, Missing())
from sphinx.cmd.build import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.slow("builds the documentation site")
def test_the_site_builds_with_the_docs_extra_alone(tmp_path: Path) -> None:
    """`pip install -e '.[docs]'` and the documented command, warnings as errors, with
    neither torch, tyro nor stable-baselines3 importable."""
    pytest.importorskip("sphinx", reason="install with: bash install.sh docs")
    import subprocess
    import sys

    command = [
        sys.executable,
        "-c",
        BLOCKER,
        "-W",
        "-q",
        "-b",
        "html",
        str(ROOT / "docs"),
        str(tmp_path / "html"),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "update_drawn" in (tmp_path / "html" / "api" / "index.html").read_text()
