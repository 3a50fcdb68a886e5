"""The package's layers hold: no module of `recall` imports, directly or through others, a module
that imports it. Imports inside functions and type-only imports count: a circle in either is a
seam in the wrong place."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "python" / "recall"


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package modules `name` imports (the longest known prefix of each imported name)."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            names = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        for imported in names:
            while imported and imported not in modules:
                imported = imported.rpartition(".")[0]
            if imported and imported not in (name, "recall"):
                targets.add(imported)
    return targets


def test_no_import_circles() -> None:
    modules = _modules()
    graph = {name: _imports(name, path, modules) for name, path in modules.items()}
    circles = []
    for start in graph:
        # Every module reachable from `start`; a path back to `start` is a circle.
        seen, frontier = set(), list(graph[start])
        while frontier:
            current = frontier.pop()
            if current == start:
                circles.append(start)
                break
            if current not in seen:
                seen.add(current)
                frontier.extend(graph[current])
    assert not circles, f"modules on an import circle: {sorted(circles)}"
    assert len(graph) > 40 and graph["recall.api"], "the walk found the package"
