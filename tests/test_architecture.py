"""The package's shape: imports flow one way (no cycle among its modules), every
module is small enough to read in one sitting, and what its docstrings name exists.

Imports are read from the source: every ``import``, also those inside functions (which
run later but are still dependencies, so a cycle hidden in a lazy import fails too), those
for type checkers under ``if TYPE_CHECKING:`` (a cycle of types is still a cycle of
understanding), and the modules imported by name: ``importlib.import_module("herkit.x")``
and every string that names a module of the package (``"herkit.x"``, ``"herkit.x:Name"``:
an agent module of :data:`herkit.agents.AGENTS`, a registry entry's class, an env's entry
point), which some code imports when it runs (not the module of a ``python -m``, which
another process runs). A name built at run time cannot be read:
the test of :func:`imported_modules` holds that no module builds one.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "herkit"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def imported_modules(name: str, path: Path) -> set[str]:
    """The package's modules that ``name`` imports anywhere in its source."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    tree = ast.parse(path.read_text())
    elsewhere = {  # python -m MODULE: another process runs it
        id(items[i + 1])
        for node in ast.walk(tree)
        if isinstance(node, (ast.List, ast.Tuple))
        for items in [node.elts]
        for i in range(len(items) - 1)
        if isinstance(items[i], ast.Constant) and items[i].value == "-m"
    }
    for node in ast.walk(tree):
        if id(node) in elsewhere:
            continue
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            named = node.value.partition(":")[0]  # "herkit.x" or "herkit.x:Name"
            targets = [named] if named in MODULES and "." in named else []
        elif isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from .x import y
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            # `from pkg import sub` depends on the module pkg.sub, `from pkg import name` on pkg
            targets = [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in MODULES:  # herkit.x.Name -> herkit.x
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def modules_named_at_run_time(path: Path) -> list[str]:
    """The calls of ``import_module`` or ``__import__`` in ``path`` whose module is not a
    string written in the code (a name built at run time, which no reader can follow)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            literal = bool(node.args) and isinstance(node.args[0], ast.Constant)
            if called in ("import_module", "__import__") and not literal:
                found.append(f"{path.name}:{node.lineno}")
    return found


def test_modules_imported_by_name_count_as_imports(tmp_path: Path) -> None:
    source = tmp_path / "named.py"
    source.write_text(
        "import importlib\n"
        "importlib.import_module('herkit.buffer.her')\n"
        "ENTRY = 'herkit.envs.bitflip:BitFlipEnv'\n"
        "TEXT = 'herkit.buffer is not a module name here'\n"
    )
    assert imported_modules("herkit.x", source) == {"herkit.buffer.her", "herkit.envs.bitflip"}
    source.write_text("import importlib\nname = 'x'\nimportlib.import_module(name)\n")
    assert modules_named_at_run_time(source) == ["named.py:3"]


KNOWN_RUN_TIME_NAMES = {
    "herkit": "its names of the train extra, each a string of _ON_FIRST_USE",
    "herkit.envs.registration": "a user's 'module:Id' env id, imported to register it",
    "herkit.envs.imports": "the module a user's env id names",
}
"""Modules that import a module named at run time, and what they import: nothing of
herkit's own beyond the strings the test reads."""


def test_no_module_imports_a_name_built_at_run_time_but_a_users() -> None:
    built = {
        name: found
        for name, path in MODULES.items()
        if (found := modules_named_at_run_time(path)) and name not in KNOWN_RUN_TIME_NAMES
    }
    assert not built, built


def test_the_registry_imports_no_agent() -> None:
    registry = reachable("herkit.agents.registry")
    assert not {name for name in registry if name.startswith("herkit.agents")}
    assert "herkit.agents" not in registry


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as a path that starts and ends at the same node, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (cycle := visit(start)):
            return cycle
    return None


def test_no_import_cycle_among_the_package_modules() -> None:
    graph = {name: imported_modules(name, path) for name, path in MODULES.items()}
    assert len(graph) > 30 and graph["herkit.training.run"] >= {
        "herkit.training.collector",
        "herkit.training.evaluation",
    }
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_cycle_finder_finds_cycles() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None
    assert find_cycle({"a": {"a"}}) == ["a", "a"]


def reachable(start: str) -> set[str]:
    """The package's modules that ``start`` imports, directly or through others."""
    graph = {name: imported_modules(name, path) for name, path in MODULES.items()}
    seen, todo = set(), [start]
    while todo:
        for nxt in graph[todo.pop()] - seen:
            seen.add(nxt)
            todo.append(nxt)
    return seen


LOOP = {"herkit.training.loop", "herkit.training.run", "herkit.training.startup", "herkit.cli"}
PLOTTING = {
    "herkit.presentation.plots",
    "herkit.presentation.report",
    "herkit.presentation.figures",
}
"""The presentation modules that import matplotlib or Plotly."""


def test_evaluation_and_policy_do_not_import_the_loop() -> None:
    assert not reachable("herkit.training.evaluation") & LOOP
    assert not reachable("herkit.training.policy") & LOOP
    assert not reachable("herkit.training.build") & (
        LOOP | {"herkit.training.evaluation", "herkit.training.policy"}
    )


def test_the_loop_imports_no_plotting() -> None:
    loop = reachable("herkit.training.loop")
    assert "herkit.presentation.presenter" in loop  # it starts herkit.presentation.figures
    assert not loop & PLOTTING
    assert PLOTTING - {"herkit.presentation.figures"} <= reachable("herkit.presentation.figures")


def room_of(module: str) -> str:
    """``herkit.training.loop`` -> ``training``; the package itself is ``herkit``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "herkit"


LAYERS = [
    ["__main__"],
    ["cli"],
    ["commands", "flags"],
    ["herkit", "bench"],
    ["training"],
    ["presentation"],
    ["rundir"],
    ["config"],
    ["agents"],
    ["envs", "runtime"],
    ["sb3", "cpprb"],
    ["buffer"],
    ["extras"],
]
"""The package's rooms (a sub-package, or a module at its top), from the top: each imports
only rooms of the layers below it. docs/architecture.md draws the same layers."""

FACADES = {"sb3", "cpprb"}
"""Rooms that nothing in the package imports."""


def room_graph() -> dict[str, set[str]]:
    """Which rooms each room imports (lazy and type-only imports included)."""
    graph: dict[str, set[str]] = {}
    for name, path in MODULES.items():
        mine = room_of(name)
        graph.setdefault(mine, set()).update(
            room_of(target) for target in imported_modules(name, path) if room_of(target) != mine
        )
    return graph


def test_each_room_imports_only_the_layers_below_it() -> None:
    graph = room_graph()
    layer = {room: depth for depth, rooms in enumerate(LAYERS) for room in rooms}
    assert set(layer) == set(graph), "every room in one layer"
    upward = [
        f"{room} -> {other}"
        for room, others in graph.items()
        for other in others
        if layer[other] <= layer[room]
    ]
    assert not upward, "imports that do not go down: " + ", ".join(sorted(upward))
    assert graph["buffer"] == set(), "buffer/ imports nothing of herkit outside it"
    assert not any(graph[room] & FACADES for room in graph)


def test_the_architecture_page_draws_the_layers() -> None:
    page = (PACKAGE.parents[1] / "docs" / "architecture.md").read_text()
    picture = page.split("<!-- layers -->\n```text\n")[1].split("```")[0]
    drawn = [line.split("  ")[0].strip() for line in picture.splitlines()]
    assert drawn == [", ".join(rooms) for rooms in LAYERS]


@pytest.mark.slow("a training run in a subprocess")
def test_a_training_process_imports_neither_plotly_nor_matplotlib(tmp_path: Path) -> None:
    """A whole short run, then the modules the process holds (the figures were drawn by
    another process: they are there)."""
    from herkit.rundir.paths import RunPaths

    run = tmp_path / "run"
    script = (
        "import sys\n"
        "from herkit.config.train import TrainConfig\n"
        "from herkit.training.loop import train\n"
        f"train(TrainConfig(env_id='herkit/BitFlip-v0', steps=400, out={str(run)!r}, "
        "progress=False, tensorboard=False, eval_episodes=2))\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'plotly', 'matplotlib'}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"
    assert RunPaths(run).curve.stat().st_size > 0
    assert RunPaths(run).report.stat().st_size > 0


@pytest.mark.parametrize("name", sorted(MODULES))
def test_each_module_says_what_it_holds(name: str) -> None:
    """A module is one concept, as long as the concept needs (no line cap): its docstring
    says which."""
    source = MODULES[name].read_text()
    assert ast.get_docstring(ast.parse(source)), f"{name} has no module docstring"


REFERENCE = re.compile(
    r":(?:mod|func|class|meth|data|attr|exc|obj):`~?(?:[^`<]*<)?(herkit[\w.]*)>?`"
)
"""A reference by role to a name of the package (``:mod:`herkit.x```, ``:func:`~herkit.x.f```,
``:meth:`text <herkit.x.C.m>```)."""


def top_level(tree: ast.Module) -> dict[str, ast.AST]:
    """The names a module defines or imports at its top level (and its ``__all__``)."""
    names: dict[str, ast.AST] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names[node.name] = node
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    names[target.id] = node
                    if target.id == "__all__" and isinstance(node.value, ast.List | ast.Tuple):
                        names |= {
                            e.value: node for e in node.value.elts if isinstance(e, ast.Constant)
                        }
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names |= {(a.asname or a.name).split(".")[0]: node for a in node.names}
        elif isinstance(node, ast.If):  # if TYPE_CHECKING: imports
            names |= top_level(ast.Module(body=node.body, type_ignores=[]))
    return names


def members(node: ast.ClassDef) -> set[str]:
    """The names a class body defines."""
    found: set[str] = set()
    for item in ast.walk(node):
        if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found.add(item.name)
        elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            found.add(item.target.id)
        elif isinstance(item, ast.Assign):
            found |= {t.id for t in item.targets if isinstance(t, ast.Name)}
        elif isinstance(item, ast.Attribute) and isinstance(item.value, ast.Name):
            if item.value.id == "self":
                found.add(item.attr)
    return found


def missing(reference: str) -> str | None:
    """Why ``reference`` names nothing in the package (None where it names something)."""
    parts = reference.rstrip(".").split(".")
    found = next((i for i in range(len(parts), 0, -1) if ".".join(parts[:i]) in MODULES), 0)
    module, rest = ".".join(parts[:found]), parts[found:]
    if not module:
        return "no such module"
    if not rest:
        return None
    names = top_level(ast.parse(MODULES[module].read_text()))
    if rest[0] not in names:
        return f"{module} has no {rest[0]}"
    node = names[rest[0]]
    if len(rest) > 1 and isinstance(node, ast.ClassDef) and not node.bases:
        if rest[1] not in members(node):
            return f"{module}.{rest[0]} has no {rest[1]}"
    return None


def test_every_name_of_the_package_its_docstrings_refer_to_exists() -> None:
    """A docstring's :mod:, :func:, :class: ... reference to herkit names a module of the
    package, or a name one defines or imports: none is left behind by a move or a rename."""
    references = {
        (reference, f"{path.relative_to(PACKAGE.parent)}")
        for path in MODULES.values()
        for reference in REFERENCE.findall(path.read_text())
    }
    assert len(references) > 100
    wrong = sorted(
        f"{where}: {reference} ({why})"
        for reference, where in references
        if (why := missing(reference)) is not None
    )
    assert not wrong, "\n".join(wrong)
    assert missing("herkit.buffer.returns") == "herkit.buffer has no returns"
    assert missing("herkit.buffer.HerSettings") == "herkit.buffer has no HerSettings"


def test_every_document_the_package_names_is_in_the_repository() -> None:
    """The docs pages and files a module names exist; none names the design notes kept
    outside the repository (a reader cannot open them: say the principle in words)."""
    root = PACKAGE.parents[1]
    wrong = []
    for path in MODULES.values():
        source = path.read_text()
        where = path.relative_to(PACKAGE.parent)
        pages = re.findall(r"\bdocs/[\w./-]*\w", source)
        wrong += [f"{where}: {page}" for page in pages if not (root / page).exists()]
        if re.search(r"\bDESIGN\b", source):
            wrong.append(f"{where}: DESIGN")
    assert not wrong, "\n".join(wrong)


def test_one_ddpg_update_reads_in_the_files_and_frames_the_architecture_page_lists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From the loop's learn call to the loss: the frames of an eager DDPG update and the
    files they are in, as docs/architecture.md's walk of one update lists them."""
    import inspect

    from herkit.agents.ddpg_td3 import DDPGAgent
    from herkit.training.loop import train
    from runs import quiet

    seen: list[list[tuple[str, str]]] = []
    update = DDPGAgent._update

    def traced(self: DDPGAgent, *args: object, **kwargs: object) -> object:
        if not seen:
            frames = [(Path(f.filename).as_posix(), f.function) for f in inspect.stack()[1:]]
            seen.append(frames)
        return update(self, *args, **kwargs)

    monkeypatch.setattr(DDPGAgent, "_update", traced)
    small = {"hidden": (16,), "batch_size": 16}
    config = quiet(
        env_id="herkit/PointReach-v0",
        algo="ddpg",
        steps=150,
        warmup_steps=100,
        eval_every=150,
        eval_episodes=1,
        update_mode="eager",
        ddpg=small,
        out=str(tmp_path / "run"),
    )
    train(config)
    frames = seen[0]
    learn = next(i for i, (path, name) in enumerate(frames) if name == "learn")
    path = [(f"{Path(p).parent.name}/{Path(p).name}", name) for p, name in frames[: learn + 1]]
    assert path[::-1] == [
        ("training/learner.py", "learn"),
        ("agents/base.py", "update"),
        ("agents/base.py", "step"),
    ], path
    # the budget: at most 3 frames from Learner.learn to the loss (the loss's own
    # included) and 4 herkit files (learner.py and the loss's file included)
    between = frames[:learn]  # the frames called by learn, the loss's caller first
    assert len(between) + 1 <= 3, path
    files = {p for p, _ in frames[: learn + 1]} | {inspect.getsourcefile(update)}
    assert all("herkit" in Path(p).parts for p in files), files
    assert len(files) <= 4, files
    assert frames[learn + 1][0].endswith("training/loop.py")  # the loop calls learn
    page = (PACKAGE.parents[1] / "docs" / "architecture.md").read_text()
    for frame in ("`Learner.learn`", "`GoalAgent.update`", "`GoalAgent.step`"):
        assert frame in page
    assert "`DDPGAgent._update` | `agents/ddpg_td3.py`" in page
