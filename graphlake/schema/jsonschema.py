"""Render the canonical Arrow schemas as JSON Schema documents (``schemas/<table>.schema.json``).

The Arrow specs in :mod:`graphlake.schema.tables` are the source of truth; these files exist for
readers and for tools outside Python. ``tests/test_schema.py`` fails when they are stale;
regenerate them with ``graphlake schema export schemas``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa

from graphlake.schema.tables import SCHEMA_VERSION, TABLES, TableSpec


def _json_type(typ: pa.DataType) -> dict:
    if pa.types.is_string(typ) or pa.types.is_large_string(typ):
        return {"type": "string"}
    if pa.types.is_integer(typ):
        return {"type": "integer"}
    if pa.types.is_floating(typ):
        return {"type": "number"}
    if pa.types.is_boolean(typ):
        return {"type": "boolean"}
    if pa.types.is_timestamp(typ):
        return {"type": "string", "format": "date-time"}
    if pa.types.is_list(typ):
        return {"type": "array", "items": _json_type(typ.value_type)}
    raise TypeError(f"no JSON Schema mapping for Arrow type {typ}")


def table_json_schema(table: TableSpec) -> dict:
    """JSON Schema (draft 2020-12) of one row of ``table``."""
    props = {}
    for field in table.schema:
        js = _json_type(field.type)
        if field.nullable:
            js = {"anyOf": [js, {"type": "null"}]}
        js["description"] = field.metadata[b"doc"].decode()
        props[field.name] = js
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"https://graphlake.dev/schemas/v{SCHEMA_VERSION}/{table.name}.schema.json",
        "title": table.name,
        "description": f"One row per {table.row}. Primary key: {', '.join(table.key)}.",
        "type": "object",
        "properties": props,
        "required": [f.name for f in table.schema if not f.nullable],
        "additionalProperties": False,
    }


def render_all() -> dict[str, str]:
    """File name -> file text for every canonical table."""
    return {
        f"{name}.schema.json": json.dumps(table_json_schema(t), indent=2) + "\n"
        for name, t in TABLES.items()
    }


def export(directory: Path) -> list[Path]:
    """Write every canonical table's JSON Schema into ``directory``; return the paths written."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for fname, text in render_all().items():
        path = directory / fname
        path.write_text(text)
        written.append(path)
    return written
