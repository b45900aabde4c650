"""The data flow ingest -> lake -> query -> serve holds in the imports: a lower layer never
imports a higher one (no import cycles between layers; the materialized views belong to the
lake layer, the DuckDB view helpers and graph macros to the schema layer below both)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

#: Every package of the tree, lowest layer first: a package may import the ones ranked below
#: it (and the base modules graphlake.errors, graphlake.config, graphlake.cursors), never one
#: of its own rank or above, and never an entry point.
RANK = {
    "graphlake/schema": 0,  # canonical schemas, views, macros, the emit contract
    "ingest": 1,  # source formats -> rows (siblings: neither imports the other)
    "graphlake/lake": 1,  # the only writer
    "graphlake/query": 2,
    "graphlake/vision": 3,
    "graphlake/search": 4,
    "graphlake/protocols": 4,
    "graphlake/cluster": 4,  # the Ray engine: runs vision's and ingest's stages on a cluster
    "server": 5,
    "graphlake/demo": 5,
}
PACKAGE = {
    "graphlake/schema": "graphlake.schema",
    "ingest": "graphlake.ingest",
    "graphlake/lake": "graphlake.lake",
    "graphlake/query": "graphlake.query",
    "graphlake/vision": "graphlake.vision",
    "graphlake/search": "graphlake.search",
    "graphlake/protocols": "graphlake.protocols",
    "graphlake/cluster": "graphlake.cluster",
    "server": "graphlake.server",
    "graphlake/demo": "graphlake.demo",
}
ENTRY_POINTS = (
    "graphlake.cli",
    "graphlake.cli_common",
    "graphlake.cli_vision",
    "graphlake.api",
    "graphlake.client",
    "graphlake.pipeline",
)
FORBIDDEN = {
    layer: tuple(PACKAGE[other] for other, r in RANK.items() if r >= rank and other != layer)
    + ENTRY_POINTS
    for layer, rank in RANK.items()
}


def test_every_package_has_a_layer():
    """A new package cannot slip past this test: it must be given a rank."""
    found = {p.parent.relative_to(ROOT).as_posix() for p in ROOT.glob("graphlake/*/__init__.py")}
    found |= {"ingest", "server"}
    assert found == set(RANK), found ^ set(RANK)


def imports(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return out


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_a_layer_never_imports_a_higher_one(layer):
    files = sorted((ROOT / layer).rglob("*.py"))
    assert files
    bad = [
        (f.relative_to(ROOT).as_posix(), m)
        for f in files
        for m in imports(f)
        if any(m == p or m.startswith(p + ".") for p in FORBIDDEN[layer])
    ]
    assert not bad, bad


def test_every_ingestor_implements_the_protocol():
    from graphlake import ingest
    from graphlake.ingest.base import Ingestor

    for name in ingest.names():
        ing = ingest.get(name)
        assert isinstance(ing, Ingestor) and ing.name == name and ing.help, name
    with pytest.raises(TypeError, match="must subclass graphlake.ingest.base.Ingestor"):
        ingest.register("not-one")(type("Loose", (), {"units": None, "parse": None}))
    with pytest.raises(TypeError, match="abstract"):
        type("Half", (Ingestor,), {"units": lambda self, path: []})()


#: Inside the query layer: the guard is below the pattern compiler and the Spark rewrites,
#: and transpile() above all three (a function-level import once closed a guard/pattern loop).
WITHIN_QUERY = {
    "graphlake/query/guard.py": (
        "graphlake.query.pattern",
        "graphlake.query.portable",
        "graphlake.query.transpile",
    ),
    "graphlake/query/pattern.py": ("graphlake.query.portable", "graphlake.query.transpile"),
    "graphlake/query/portable.py": ("graphlake.query.transpile",),
}


@pytest.mark.parametrize("path", sorted(WITHIN_QUERY))
def test_guard_pattern_and_transpile_stay_in_order(path):
    bad = [m for m in imports(ROOT / path) if m in WITHIN_QUERY[path]]
    assert not bad, (path, bad)
