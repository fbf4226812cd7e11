"""The package's layers, written down once, checked against its imports.

Every module of ``toolbound`` belongs to one layer of ``LAYERS`` (leaf first),
found by the longest prefix of its dotted name. A module may import its own
layer and the layers below it, never one above, and no chain of imports may
lead back to where it started.

What counts as an import: ``import toolbound.x`` and ``from toolbound.x import
y`` (relative ones resolved), at module level and deferred inside functions
alike, since a deferred import is still a dependency, only a later one.
Imports under ``if TYPE_CHECKING:`` count for circles but are exempt from the
layer rule: they name a type and load nothing (``gauge.py`` names the
store's ``ContextTally`` so). Not seen: ``importlib.import_module`` with a
string, and the parent packages Python runs before a submodule.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import toolbound

PACKAGE = Path(toolbound.__file__).parent

# Leaf first. A module is placed by the longest entry that is its name or a
# package above it (names relative to ``toolbound``; "" is the package itself).
LAYERS: list[tuple[str, list[str]]] = [
    (
        "values",
        ["limits", "fit", "linear_regex", "fsroot", "names", "gauge", "lazy", "busy", "heap"],
    ),
    ("bounds", ["bounds"]),
    ("text", ["notices", "views", "model_text", "results", "arguments", "models", "listeners"]),
    ("files", ["paths", "scratch", "namespaces", "edit"]),
    ("exec", ["exec", "jobs"]),
    ("search", ["search"]),
    ("store", ["store"]),
    ("context", ["context", "shrink", "session"]),
    ("tools", ["tools", "tooldefs"]),
    ("host", ["host", "pool", ""]),
    (
        "adapters",
        [
            "cli",
            "__main__",
            "greeting",
            "harness_setup",
            "mcp_server",
            "serve",
            "stdio_calls",
            "stdio_pipes",
            "web",
        ],
    ),
]

# Upward imports not removed yet, each with its issue. Empty: none remain.
ALLOWED_UPWARD: set[tuple[str, str]] = set()


@dataclass(frozen=True, slots=True)
class Import:
    """``importer`` imports ``imported`` (both relative to ``toolbound``)."""

    importer: str
    imported: str
    type_only: bool


def module_names(package: Path) -> dict[str, Path]:
    """Every module of the package, by its name relative to ``toolbound``."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _is_type_checking(node: ast.If) -> bool:
    return "TYPE_CHECKING" in ast.unparse(node.test)


def _walk(node: ast.AST, type_only: bool = False) -> Iterator[tuple[ast.AST, bool]]:
    """Every node below ``node``, with whether an ``if TYPE_CHECKING:`` holds it."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child):
            for inner in child.body:
                yield inner, True
                yield from _walk(inner, True)
            for inner in child.orelse:
                yield inner, type_only
                yield from _walk(inner, type_only)
            continue
        yield child, type_only
        yield from _walk(child, type_only)


def imports_of(name: str, path: Path, modules: Iterable[str]) -> set[Import]:
    """The package's modules that the module ``name`` at ``path`` imports."""
    known = set(modules)
    is_package = path.name == "__init__.py"
    here = name.split(".") if name else []
    package = here if is_package else here[:-1]

    def resolve(dotted: str) -> str | None:
        while dotted not in known and dotted:
            dotted = dotted.rpartition(".")[0]
        return dotted if dotted in known else None

    found = set()
    for node, type_only in _walk(ast.parse(path.read_text(), str(path))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names if a.name.split(".")[0] == "toolbound"]
            targets = [t.removeprefix("toolbound").lstrip(".") for t in targets]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                source = ".".join([*base, *([node.module] if node.module else [])])
            elif node.module and node.module.split(".")[0] == "toolbound":
                source = node.module.removeprefix("toolbound").lstrip(".")
            else:
                continue
            # ``from toolbound.store import backend`` imports the submodule.
            targets = [
                f"{source}.{a.name}".lstrip(".")
                if f"{source}.{a.name}".lstrip(".") in known
                else source
                for a in node.names
            ]
        for target in targets:
            imported = resolve(target)
            if imported is not None and imported != name:
                found.add(Import(name, imported, type_only))
    return found


def layer_of(name: str, layers: list[tuple[str, list[str]]] = LAYERS) -> int | None:
    """The index of ``name``'s layer, by the longest entry that holds it."""
    best: tuple[int, int] | None = None
    for index, (_, entries) in enumerate(layers):
        for entry in entries:
            holds = name == entry or (entry != "" and name.startswith(entry + "."))
            if holds and (best is None or len(entry) > best[0]):
                best = (len(entry), index)
    return None if best is None else best[1]


def upward(
    imports: Iterable[Import], layers: list[tuple[str, list[str]]] = LAYERS
) -> set[tuple[str, str]]:
    """Each runtime import of a higher layer, as ``(importer, imported)``."""
    found = set()
    for imp in imports:
        if imp.type_only:
            continue
        low, high = layer_of(imp.importer, layers), layer_of(imp.imported, layers)
        if low is not None and high is not None and high > low:
            found.add((imp.importer, imp.imported))
    return found


def circles(imports: Iterable[Import]) -> list[list[str]]:
    """The import circles: each strongly connected set of two or more modules (Tarjan)."""
    graph: dict[str, set[str]] = {}
    for imp in imports:
        graph.setdefault(imp.importer, set()).add(imp.imported)
        graph.setdefault(imp.imported, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            members = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                members.append(top)
                if top == node:
                    break
            if len(members) > 1:
                found.append(sorted(members))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def package_imports() -> set[Import]:
    modules = module_names(PACKAGE)
    found: set[Import] = set()
    for name, path in modules.items():
        found |= imports_of(name, path, modules)
    return found


def test_every_module_has_a_layer() -> None:
    assert [name for name in module_names(PACKAGE) if layer_of(name) is None] == []


def test_no_module_imports_a_higher_layer() -> None:
    found = upward(package_imports())
    assert sorted(found - ALLOWED_UPWARD) == []
    # An allowance whose import is gone is taken off the list.
    assert sorted(ALLOWED_UPWARD - found) == []


def test_the_package_has_no_import_circle() -> None:
    assert circles(package_imports()) == []


def test_a_deferred_import_back_closes_a_circle(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("from toolbound.b import x\n")
    (tmp_path / "b.py").write_text("def f():\n    from toolbound import c\n")
    (tmp_path / "c.py").write_text("from . import a\n")
    modules = module_names(tmp_path)
    found = set().union(*(imports_of(n, p, modules) for n, p in modules.items()))
    assert circles(found) == [["a", "b", "c"]]


def test_an_import_of_a_higher_layer_is_named_unless_only_for_types(tmp_path: Path) -> None:
    (tmp_path / "low.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "import toolbound.high\n"
        "if TYPE_CHECKING:\n"
        "    from toolbound.top import T\n"
    )
    for name in ("high", "top"):
        (tmp_path / f"{name}.py").write_text("from toolbound import low\n")
    modules = module_names(tmp_path)
    found = set().union(*(imports_of(n, p, modules) for n, p in modules.items()))
    layers = [("leaf", ["low"]), ("middle", ["high"]), ("top", ["top"])]
    assert upward(found, layers) == {("low", "high")}
