"""The package's shape, read from its source (nothing is imported): imports point one way (no
cycle between tcgleague modules, imports under TYPE_CHECKING included), the framework imports no
game and no game another (game.py reaches them by module name), no module passes 400 lines and
no function 80, and no code outside the trainer assigns a trainer's fields."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "python" / "src" / "tcgleague"
SOURCES = sorted(PACKAGE.rglob("*.py")) + sorted((ROOT / "tools").glob("*.py"))
MAX_MODULE_LINES, MAX_FUNCTION_LINES = 400, 80


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path, tree: ast.Module) -> set[str]:
    """Every tcgleague module `path` imports (a `from x import name` also counts x.name, which
    is a module when `name` is a submodule)."""
    me = module_name(path)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else [])) if node.level else node.module or ""
            out |= {module} | {f"{module}.{alias.name}" for alias in node.names}
        elif isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names}
    return {m for m in out if m == "tcgleague" or m.startswith("tcgleague.")}


def import_graph() -> dict[str, set[str]]:
    graph = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        graph[module_name(path)] = imported_modules(path, ast.parse(path.read_text()))
    return {m: {d for d in deps if d in graph and d != m} for m, deps in graph.items()}


def cycle_from(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle, as the modules along it, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        path.append(m)
        for d in sorted(graph[m]):
            if state.get(d) == 1:
                return path[path.index(d) :] + [d]
            if d not in state and (found := visit(d)):
                return found
        state[m] = 2
        path.pop()
        return None

    for m in sorted(graph):
        if m not in state and (found := visit(m)):
            return found
    return None


def test_the_import_graph_has_no_cycle_type_checking_imports_included():
    graph = import_graph()
    assert {"tcgleague.trainer", "tcgleague.run_state", "tcgleague.league.opponents"} <= set(graph)
    assert "tcgleague.run_state" in graph["tcgleague.trainer"], "the graph sees the trainer's imports"
    assert cycle_from({"a": {"b"}, "b": {"a"}}) == ["a", "b", "a"], "the search finds a planted cycle"
    assert cycle_from(graph) is None, f"import cycle: {' -> '.join(cycle_from(graph))}"


GAMES_PACKAGE = "tcgleague.games"


def game_of_module(module: str) -> str | None:
    """The game package a module belongs to ("tcgleague.games.poker.env" -> "poker"), or None."""
    parts = module.split(".")
    return parts[2] if module.startswith(GAMES_PACKAGE + ".") and len(parts) > 2 else None


def plug_in_violations(graph: dict[str, set[str]]) -> list[str]:
    """Imports that break the plug-in: a framework module importing a game, a game another."""
    out = []
    for module, deps in sorted(graph.items()):
        mine = game_of_module(module)
        for dep in sorted(deps):
            theirs = game_of_module(dep)
            if theirs is not None and theirs != mine:
                out.append(f"{module} imports {dep}")
    return out


def test_the_framework_imports_no_game_and_no_game_another():
    graph = import_graph()
    assert {"tcgleague.games.emberfront.env", "tcgleague.games.poker.env"} <= set(graph), "the games are seen"
    planted = {"tcgleague.trainer": {"tcgleague.games.poker.env"}, "tcgleague.games.poker.env": set()}
    assert plug_in_violations(planted) == ["tcgleague.trainer imports tcgleague.games.poker.env"]
    assert plug_in_violations({"tcgleague.games.emberfront.play": {"tcgleague.games.poker.rules"}})
    assert plug_in_violations(graph) == []
    game_py = (PACKAGE / "game.py").read_text()
    for module in re.findall(r'"(tcgleague\.games\.[a-z_.]+)"', game_py):  # the registry names them instead
        assert (PACKAGE.parent / (module.replace(".", "/") + ".py")).is_file(), module


def test_no_module_or_function_is_too_long_to_read():
    too_long = []
    for path in SOURCES:
        text = path.read_text()
        name = path.relative_to(ROOT).as_posix()
        if text.count("\n") > MAX_MODULE_LINES:
            too_long.append(f"{name}: {text.count(chr(10))} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    too_long.append(f"{name}:{node.lineno} {node.name}: {lines} lines")
    assert not too_long, "\n".join(too_long)


def test_only_the_trainer_assigns_a_trainers_fields():
    assignment = re.compile(r"\btrainer\.[a-z_]+\s*=[^=]")
    found = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for path in SOURCES
        if path.name != "trainer.py"
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if assignment.search(line)
    ]
    assert not found, "\n".join(found)
