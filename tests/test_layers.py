"""The data flow ingest -> lake -> query -> serve holds in the imports: a lower layer never
imports a higher one (no import cycles between layers; the materialized views belong to the
lake layer, the DuckDB view helpers and graph macros to the schema layer below both)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: layer folder -> packages it must not import
FORBIDDEN = {
    "graphlake/schema": (
        "graphlake.lake",
        "graphlake.query",
        "graphlake.server",
        "graphlake.ingest",
        "graphlake.cli",
        "graphlake.api",
    ),
    "ingest": (
        "graphlake.lake",
        "graphlake.query",
        "graphlake.server",
        "graphlake.cli",
        "graphlake.api",
    ),
    "graphlake/lake": ("graphlake.query", "graphlake.server", "graphlake.cli", "graphlake.api"),
    "graphlake/query": ("graphlake.server", "graphlake.cli", "graphlake.api"),
}


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
