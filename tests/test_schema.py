"""The Arrow specs are the source of truth; schemas/*.schema.json must match them, and rows in
a real lake must validate against them."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema

from conftest import HAND
from graphlake.pipeline import ingest_path
from graphlake.query import run_sql
from graphlake.schema import TABLES
from graphlake.schema.jsonschema import render_all

SCHEMAS = Path(__file__).parent.parent / "schemas"


def test_generated_json_schemas_are_fresh():
    expected = render_all()
    stale = [
        name
        for name, text in expected.items()
        if not (SCHEMAS / name).is_file() or (SCHEMAS / name).read_text() != text
    ]
    assert not stale, f"run `graphlake schema export schemas`: stale {stale}"


def test_every_table_has_corpus_session_and_its_key():
    for name, spec in TABLES.items():
        assert spec.columns[:2] == ["corpus", "session_id"], name
        assert set(spec.key) <= set(spec.columns), name
        if name != "rejects":
            assert spec.columns[-1] == "attrs", name


def test_lake_rows_validate_against_the_json_schemas(lake):
    ingest_path("kolab", HAND, lake)
    for name in TABLES:
        schema = json.loads((SCHEMAS / f"{name}.schema.json").read_text())
        rows = run_sql(f"SELECT * FROM {name}", lake, max_rows=None).table.to_pylist()
        for row in rows:
            row = {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in row.items()}
            jsonschema.validate(row, schema)


def test_string_literals_read_back_as_the_text_they_quote():
    """Every value pasted into generated SQL goes through one quoting function (no sqlglot,
    so the quick CLI path can use it): DuckDB reads each literal back as the exact text, and
    it is the literal sqlglot writes for DuckDB."""
    import random

    import duckdb
    from sqlglot import exp

    from graphlake.schema.files_sql import string_list, string_literal

    rng = random.Random(0)
    pieces = ["'", "''", '"', "\\", "\n", "\t", "\r", "é", "☃", "a", " ", "$1", "?", "--", "/*"]
    texts = ["".join(rng.choice(pieces) for _ in range(rng.randrange(12))) for _ in range(500)]
    con = duckdb.connect()
    for text in texts:
        lit = string_literal(text)
        assert lit == exp.Literal.string(text).sql("duckdb")
        assert con.execute(f"SELECT {lit}").fetchone()[0] == text
    assert con.execute(f"SELECT {string_list(texts[:20])}").fetchone()[0] == texts[:20]
