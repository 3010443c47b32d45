"""The house's shape: imports run down the layers, never back up, with no circle between rooms, and imports sit at
module tops but for the few that load a heavy optional library."""

from __future__ import annotations

import ast
import collections
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "linkcheck"
# Bottom to top. A room may import from its own layer's other rooms only where the graph stays without circles.
LAYERS = [
    {"linkcheck", "errors", "integers", "model", "records", "strict_json", "safe_read", "safe_write", "schema",
     "values", "yamlfile"},
    {"parsers", "transport"},
    {"collect", "bundle"},
    {"facts"},
    {"cluster"},
    {"diagnose", "config"},
    {"outcome"},
    {"bench", "baseline", "accept", "repair", "advise"},
    {"report"},
    {"app", "service"},
    {"cli", "api"},
]
RANK = {room: i for i, rooms in enumerate(LAYERS) for room in rooms}
HEAVY = ("paramiko", "pyroute2", "pandas", "matplotlib")
# Imports that stay inside a function, each with its reason: a heavy optional library the command may not need.
LATE = {
    ("linkcheck.collect.collector", "linkcheck.transport.ssh"),  # paramiko: only when a node is remote
    ("linkcheck.collect.collector", "linkcheck.transport.pyroute_facts"),  # pyroute2: only for a local node
    ("linkcheck.report.html", "linkcheck.report.html_plots"),  # matplotlib: the optional html extra
    ("linkcheck.repair.node", "linkcheck.transport.netlink_change"),  # pyroute2: only to change a local node
    ("linkcheck.service.run", "linkcheck.transport.ssh"),  # paramiko: only when the service runs
    ("linkcheck.app.history", "linkcheck.app.trend"),  # pandas: the optional trend extra, only for --trend
}


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module(p): p for p in sorted(ROOT.rglob("*.py"))}


def _room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "linkcheck"


def _imports(path: Path) -> list[tuple[str, bool, bool]]:
    """(imported name, inside a function, is the statement's module) for every import of the file, TYPE_CHECKING
    ones included; `from a import b` gives a, and a.b in case b is a module."""
    tree = ast.parse(path.read_text())
    inner = {id(n) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
             for n in ast.walk(f)}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        out += [(n, id(node) in inner, i == 0) for i, n in enumerate(names)]
    return out


def _edges() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = collections.defaultdict(set)
    for module, path in MODULES.items():
        for name, _, _ in _imports(path):
            if name in MODULES and name != module:
                edges[module].add(name)
    return edges


def test_every_room_has_a_layer() -> None:
    assert {_room(m) for m in MODULES} <= set(RANK)


def test_no_import_runs_back_up_the_layers() -> None:
    up = [f"{m} -> {t}" for m, targets in _edges().items() for t in targets
          if _room(m) != _room(t) and RANK[_room(t)] > RANK[_room(m)]]
    assert up == []


def test_no_circle_between_modules_or_rooms() -> None:
    edges = _edges()
    rooms: dict[str, set[str]] = collections.defaultdict(set)
    for m, targets in edges.items():
        rooms[_room(m)] |= {_room(t) for t in targets if _room(t) != _room(m)}
    for graph in (edges, rooms):
        state: dict[str, int] = {}

        def visit(node: str, trail: list[str], graph: dict[str, set[str]] = graph,
                  state: dict[str, int] = state) -> None:
            state[node] = 1
            for nxt in sorted(graph.get(node, ())):
                assert state.get(nxt) != 1, f"import circle: {' -> '.join([*trail, node, nxt])}"
                if nxt not in state:
                    visit(nxt, [*trail, node])
            state[node] = 2

        for node in sorted(graph):
            if node not in state:
                visit(node, [])


def test_imports_are_at_module_tops_but_the_heavy_ones() -> None:
    inside = {(m, name) for m, path in MODULES.items() for name, late, primary in _imports(path) if late and primary}
    heavy_in_owner = {(m, n) for m, n in inside if n.split(".")[0] in HEAVY}
    assert inside - heavy_in_owner - LATE == set()
    # A heavy library is imported at the top of the one module that needs it, never inside a function.
    assert heavy_in_owner == set()


def test_a_circle_is_caught() -> None:
    """The circle check itself fails on a circle (guards against a check that passes everything)."""
    edges = {"a": {"b"}, "b": {"a"}}
    try:
        state: dict[str, int] = {}

        def visit(node: str) -> None:
            state[node] = 1
            for nxt in edges[node]:
                assert state.get(nxt) != 1
                if nxt not in state:
                    visit(nxt)
            state[node] = 2

        visit("a")
    except AssertionError:
        return
    raise AssertionError("a circle went unnoticed")


def test_one_kind_of_record() -> None:
    """Records are msgspec.Structs: no NamedTuple, TypedDict or dataclass beside them."""
    others = []
    for module, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                bases = {ast.unparse(b) for b in node.bases}
                decorators = {ast.unparse(d).split("(")[0] for d in node.decorator_list}
                if bases & {"NamedTuple", "typing.NamedTuple", "TypedDict", "typing.TypedDict"} or \
                        decorators & {"dataclass", "dataclasses.dataclass"}:
                    others.append(f"{module}.{node.name}")
    assert others == []



def _asks_record(tree: ast.AST) -> list[int]:
    """The lines of each `isinstance(x, ...)` whose classes name a pair's Outcome or a cluster's ClusterCheck."""
    return [node.lineno for node in ast.walk(tree)
            if isinstance(node, ast.Call) and ast.unparse(node.func) == "isinstance" and len(node.args) == 2
            and {"Outcome", "ClusterCheck"} & {ast.unparse(n) for n in ast.walk(node.args[1])}]


def test_no_command_asks_which_record_it_holds() -> None:
    """cli/ and app/ read a judged run through its one face (outcome.py `Judged`: verdict, exit code, links,
    statuses, node problems, baseline, bundle); telling a pair's Outcome from a cluster's ClusterCheck is left to the
    library entries that read either (plan_for, advise_judged, baseline_of, append_judged, the writers)."""
    asked = [f"{module}:{line}" for module, path in MODULES.items() if _room(module) in ("cli", "app")
             for line in _asks_record(ast.parse(path.read_text()))]
    assert asked == []


def test_the_record_check_sees_an_isinstance_on_a_record() -> None:
    assert _asks_record(ast.parse("if isinstance(judged, (Outcome, int)):\n    pass\n")) == [1]
    assert _asks_record(ast.parse("x = 1\nok = isinstance(j, ClusterCheck)\n")) == [2]
    assert _asks_record(ast.parse("if isinstance(value, str):\n    pass\n")) == []
