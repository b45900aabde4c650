"""Canonical schema: Arrow table specs (source of truth) and their JSON Schema rendering.

The names resolve on first use (PEP 562), so the schema's light modules
(:mod:`graphlake.schema.files_sql`, :mod:`graphlake.schema.views`) load without pyarrow.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from graphlake.lazy import attributes

if TYPE_CHECKING:  # pragma: no cover - for type checkers and readers
    from graphlake.schema.tables import SCHEMA_VERSION, TABLES, TableSpec, spec

__all__ = ["SCHEMA_VERSION", "TABLES", "TableSpec", "spec"]

__getattr__ = attributes(__name__, globals(), dict.fromkeys(__all__, "tables"))
