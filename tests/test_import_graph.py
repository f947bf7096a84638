"""The modules of indexing/ and service/ import each other without a circle, and never up a layer (LAYERS names them,
bottom first): every import statement counts, at the top of a module, under `if TYPE_CHECKING:` or deferred inside a
function (a deferred import hides a circle from Python, not from the layering). No module imports another package's
private name."""

import ast
from pathlib import Path

from tests.helpers import ROOT

PACKAGES = ("indexing", "service")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))}


def imported(path: Path, name: str, known: dict[str, Path]) -> set[str]:
    """The project modules one module's import statements name (`from a import b` names a.b when b is a module)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1] + ([base] if base else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:  # a name inside a module: the module
                target = target.rpartition(".")[0]
            if target and target != name:
                out.add(target)
    return out


def import_graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imported(path, name, known) for name, path in known.items()}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def test_the_graph_finds_a_circle_and_the_imports_it_is_made_of():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(graph) == [["a", "b", "c"]]
    graph = import_graph()
    assert "indexing.matcher.decide" in graph["indexing.matcher.serving"]  # from-imports of names
    assert "indexing.vectorindex.qdrant" in graph["indexing.versions"]  # deferred, inside use_version
    assert not any(t.startswith("service") for name, ts in graph.items() if name.startswith("indexing") for t in ts)


def test_no_import_circle_in_indexing_or_service():
    assert circles(import_graph()) == []


# The layers, bottom first: a module may import its own layer and those below it, never one above. A module belongs
# to the layer of the longest prefix that names it.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("errors", ("indexing.errors",)),  # the domain's one error base: everything may raise it
    ("foundation", ("indexing.settings", "indexing.retry", "indexing.stopwords", "indexing.cachekey",
                    "indexing.models", "indexing.db")),
    ("indexing", ("indexing",)),  # the offline library: ingest, fetch, embed, index, match
    ("build", ("indexing.build",)),  # the index build orchestrates the library; nothing in it reaches up to the build
    ("schemas", ("service.schemas",)),  # the API's request and answer models the library shapes its answers with
    # scoring's steps: the window a request scores in (and the systems whose declared cutoff it reads), the answer's
    # shape, the store and the columns a stored match of either side shares; prior art builds on them
    ("scoring steps", ("service.systems", "service.scoring")),
    ("service library", ("service",)),  # analyses, labels, the LLM judge, prior art: what the CLI and API call
    ("scoring flow", ("service.scoring.flow",)),  # the one flow that scores and stores a run, prior art included
    ("http", ("service.errors", "service.deps", "service.uploads", "service.jobs", "service.state", "service.heap",
              "service.threads")),  # the server's plumbing: error handlers, dependencies, the index holder, jobs
    ("routers", ("service.routers",)),
    ("app", ("service.app",)),
    ("cli", ("service.cli",)),
]


def layer_of(module: str, layers: list[tuple[str, tuple[str, ...]]] = LAYERS) -> int:
    found = [(len(p), i) for i, (_, prefixes) in enumerate(layers) for p in prefixes
             if module == p or module.startswith(p + ".")]
    assert found, f"{module} is in no layer"
    return max(found)[1]


def upward(graph: dict[str, set[str]], layers: list[tuple[str, tuple[str, ...]]] = LAYERS) -> list[str]:
    """Every import of a module in a higher layer, as 'a (layer) -> b (layer)'."""
    return sorted(f"{a} ({layers[layer_of(a, layers)][0]}) -> {b} ({layers[layer_of(b, layers)][0]})"
                  for a, targets in graph.items() for b in targets if layer_of(b, layers) > layer_of(a, layers))


def test_the_layering_finds_an_import_that_goes_up():
    layers = [("low", ("a",)), ("mid", ("b",)), ("top", ("b.c",))]
    assert upward({"a.x": {"b.y"}, "b.y": {"a.x"}, "b.c": {"b.y"}}, layers) == ["a.x (low) -> b.y (mid)"]
    assert upward({"b.y": {"b.c.z"}}, layers) == ["b.y (mid) -> b.c.z (top)"]


def test_no_import_goes_up_a_layer():
    graph = import_graph()
    assert upward(graph) == []
    held = {layer_of(module) for module in graph}
    assert held == set(range(len(LAYERS))), [LAYERS[i][0] for i in range(len(LAYERS)) if i not in held]


def private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def test_no_module_imports_another_packages_private_name():
    """Neither `from a.b import _c` nor `b._c` on a module imported from another package."""
    found, known = [], modules()
    for name, path in known.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        outside = lambda module: module != package and not module.startswith(package + ".")  # noqa: E731
        tree = ast.parse(path.read_text())
        bound: dict[str, str] = {}  # local name -> the module it names
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found += [f"{name}: from {node.module} import {a.name}" for a in node.names
                          if private(a.name) and outside(node.module)]
                bound |= {a.asname or a.name: f"{node.module}.{a.name}" for a in node.names}
            elif isinstance(node, ast.Import):
                bound |= {a.asname or a.name: a.name for a in node.names}
        found += [f"{name}: {node.value.id}.{node.attr}" for node in ast.walk(tree)
                  if isinstance(node, ast.Attribute) and private(node.attr) and isinstance(node.value, ast.Name)
                  and node.value.id in bound and bound[node.value.id] in known
                  and outside(bound[node.value.id])]
    assert found == []


# the offline fitting commands read the fitting modules (labelled sets, calibration, evaluation); scoring does not
FITTING = ("service.cli.calibrate", "service.cli.calibrate_hybrid", "service.cli.calibrate_verifier",
           "service.cli.evaluate_kinds")


def test_the_service_reaches_the_matcher_through_one_entry():
    """Scoring, prior art, analyses, routers: the matcher through indexing.matcher.serving (and the verifier's
    package), never assembled from its submodules."""
    found = [f"{name} -> {target}" for name, targets in import_graph().items()
             if name.startswith("service") and name not in FITTING for target in sorted(targets)
             if target.startswith("indexing.matcher.") and target != "indexing.matcher.serving"
             and not target.startswith("indexing.matcher.verifier")]
    assert found == []
