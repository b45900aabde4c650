"""Canonical schema: Arrow table specs (source of truth) and their JSON Schema rendering."""

from graphlake.schema.tables import SCHEMA_VERSION, TABLES, TableSpec, spec

__all__ = ["SCHEMA_VERSION", "TABLES", "TableSpec", "spec"]
