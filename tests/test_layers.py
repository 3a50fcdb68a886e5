"""The floors of the house run one way: a module imports only from its own floor or below, and no
modules import each other in a circle, in the Python package and in the Rust core.

The Python floors are declared here, bottom first. A new module must be given a floor; an import
that runs up a floor fails with the line that makes it, wherever it is made: at the top of a
module, inside a function, or for types only (a seam in the wrong place either way).
Subpackages that are one room (`recall.cli`, `recall.postgres`, ...) are placed as a whole.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "python" / "recall"
RUST = ROOT / "rust"

#: Bottom first. A module may import from its own floor and the floors below.
FLOORS: list[tuple[str, set[str]]] = [
    (
        "foundations: errors, instants, rows, the store contract and rules with no dependency",
        {
            "recall.errors",
            "recall.call_log",
            "recall.instants",
            "recall.rows",
            "recall.store",
            "recall.digests",
            "recall.interrupts",
            "recall.chunking",
            "recall.frontmatter",
            "recall.status",
            "recall.writing",
            "recall.churn",
            "recall.selfcal",
            "recall.int8_graph",
            "recall.names",
            "recall.heap",
            "recall.pathlist",
        },
    ),
    (
        "reading and records: the walk, declarations as read, calibration records, results",
        {
            "recall.walk",
            "recall.sources",
            "recall.closures",
            "recall.opening",
            "recall.vocabularies",
            "recall.calibration",
            "recall.embedding_journal",
            "recall.results",
            "recall.undeclared",
            "recall.graphs",
            "recall.models",
            "recall.priors",
            "recall.salvage",
            "recall.forgetting",
        },
    ),
    (
        "engines: backends, embedders, the judge, refusals, the index run, fitting, lint, doctor",
        {
            "recall.postgres",
            "recall.backends",
            "recall.embedders",
            "recall.judge",
            "recall.refusals",
            "recall.indexing",
            "recall.fitting",
            "recall.doctor",
            "recall.model_tools",
            "recall.authoring",
            "recall.authoring.corpus",
            "recall.authoring.lint",
            "recall.lineage",
        },
    ),
    (
        "the API: Memory and what is measured through it",
        {"recall", "recall.api", "recall.arguments", "recall.demo", "recall.evaluation"},
    ),
    (
        "front ends and tools over the API: the CLI, the MCP server, watch, migrate, check, fix",
        {
            "recall.cli",
            "recall.mcp_server",
            "recall.watch",
            "recall.migrate",
            "recall.authoring.check",
            "recall.authoring.fix",
            "recall.authoring.predecessors",
            "recall.report",
        },
    ),
]

#: Subpackages placed as one room: their modules import each other freely.
ROOMS = (
    "recall.calibration",
    "recall.cli",
    "recall.postgres",
    "recall.mcp_server",
    "recall.evaluation",
    "recall.report",
)


def module_name(path: Path, package: Path) -> str:
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def room(module: str) -> str:
    return next((r for r in ROOMS if module == r or module.startswith(r + ".")), module)


def imports(path: Path, module: str, known: set[str]) -> list[tuple[str, int]]:
    """The recall modules `path` imports, with the line of each import, wherever it is made (at
    the top, inside a function, for types only); `recall._core`, the Rust core below every
    floor, is left out."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    found: list[tuple[str, int]] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import):
                found.extend((a.name, child.lineno) for a in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    up = package[: len(package) - child.level + 1]
                    base = ".".join(up + ([child.module] if child.module else []))
                for a in child.names:
                    full = f"{base}.{a.name}"
                    if full != "recall._core":
                        found.append((full if full in known else base, child.lineno))
            visit(child)

    visit(tree)
    return [(m, line) for m, line in found if m in known and m != "recall._core"]


def dependencies(package: Path) -> dict[str, list[tuple[str, str, int]]]:
    """Per room: (the room it imports, the file, the line)."""
    files = {module_name(p, package): p for p in sorted(package.rglob("*.py"))}
    known = set(files)
    deps: dict[str, list[tuple[str, str, int]]] = {}
    for module, path in files.items():
        here = room(module)
        for target, line in imports(path, module, known):
            if room(target) != here:
                rel = path.relative_to(package.parent).as_posix()
                deps.setdefault(here, []).append((room(target), rel, line))
        deps.setdefault(here, [])
    return deps


def floor_of(floors: list[tuple[str, set[str]]]) -> dict[str, int]:
    return {m: i for i, (_, members) in enumerate(floors) for m in members}


def upward(
    deps: dict[str, list[tuple[str, str, int]]], floors: list[tuple[str, set[str]]]
) -> list[str]:
    """Every import that runs up a floor, as `file:line: a (floor) imports b (floor)`."""
    floor = floor_of(floors)
    found = []
    for here, targets in deps.items():
        for target, file, line in targets:
            if floor[target] > floor[here]:
                found.append(
                    f"{file}:{line}: {here} (floor {floor[here]}) imports {target}"
                    f" (floor {floor[target]}: {floors[floor[target]][0]})"
                )
    return sorted(found)


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return out


def test_every_module_has_a_floor() -> None:
    placed = floor_of(FLOORS)
    missing = sorted(set(dependencies(PACKAGE)) - set(placed))
    assert not missing, f"give these modules a floor in FLOORS: {missing}"
    assert not set(placed) - set(dependencies(PACKAGE)), "FLOORS names a module that is gone"


def test_no_import_runs_up_a_floor() -> None:
    found = upward(dependencies(PACKAGE), FLOORS)
    assert not found, "imports that run up a floor:\n" + "\n".join(found)


def test_no_python_modules_import_each_other_in_a_circle() -> None:
    deps = dependencies(PACKAGE)
    graph = {m: {t for t, _, _ in targets} for m, targets in deps.items()}
    assert circles(graph) == []


def test_importing_a_submodule_runs_no_api() -> None:
    # `recall/__init__.py` imports nothing until a name is asked for: a submodule brings only
    # what it needs.
    tree = ast.parse((PACKAGE / "__init__.py").read_text(encoding="utf-8"))
    top = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert all(
        isinstance(n, ast.ImportFrom) and n.module in ("__future__", "typing") for n in top
    ), [ast.unparse(n) for n in top]


def test_an_upward_import_is_found(tmp_path: Path) -> None:
    # The check itself: a leaf that reaches for the API is named, file and line.
    package = tmp_path / "recall"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "errors.py").write_text('"""Leaf."""\n\nfrom recall.api import Memory\n')
    (package / "api.py").write_text("from recall import errors\n")
    floors = [("leaf", {"recall", "recall.errors"}), ("api", {"recall.api"})]
    found = upward(dependencies(package), floors)
    assert found == [
        "recall/errors.py:3: recall.errors (floor 0) imports recall.api (floor 1: api)"
    ]
    graph = {m: {t for t, _, _ in ts} for m, ts in dependencies(package).items()}
    assert circles(graph) == [["recall.api", "recall.errors"]]


def rust_modules() -> dict[str, set[str]]:
    """The core crate's modules and the modules each refers to (`crate::x`), test code left out;
    `store/` is one module."""
    graph: dict[str, set[str]] = {}
    for path in sorted(RUST.rglob("*.rs")):
        rel = path.relative_to(RUST)
        name = "store" if rel.parts[0] == "store" else rel.stem
        if name == "lib":
            continue
        text = path.read_text(encoding="utf-8")
        text = text.split("#[cfg(test)]\nmod tests")[0]
        used = set(re.findall(r"\bcrate::(\w+)", text))
        for group in re.findall(r"use crate::\{([^}]*)\}", text):
            used |= set(re.findall(r"(?:^|,)\s*(\w+)", group))
        graph.setdefault(name, set()).update(used - {name, "self"})
    return graph


def test_no_rust_modules_refer_to_each_other_in_a_circle() -> None:
    graph = rust_modules()
    assert {"dense", "row_code", "sliced", "scan", "store"} <= set(graph)
    assert circles(graph) == []


def test_a_rust_circle_is_found() -> None:
    assert circles({"dense": {"row_code"}, "row_code": {"dense"}, "scan": set()}) == [
        ["dense", "row_code"]
    ]


@pytest.mark.parametrize("crate", ["crates/judgment/Cargo.toml"])
def test_the_judgment_crate_depends_on_no_io_library(crate: str) -> None:
    # The compiler keeps the rules pure only while the crate cannot reach a store, an index or
    # Python: its dependencies are named here.
    text = (ROOT / crate).read_text(encoding="utf-8")
    deps = text.split("[dependencies]", 1)[1].split("\n[", 1)[0]
    names = set(re.findall(r"^([a-z0-9_-]+)\s*=", deps, flags=re.M))
    assert names == {"regex", "rustc-hash"}
