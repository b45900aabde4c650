"""The mapping language: one YAML file that turns a log format graphlake has never seen into
the canonical tables, compiled to DuckDB SQL (``schemas/mapping.schema.json`` is the language;
``docs/mappings.md`` the guide).

``load(path)`` reads and checks a mapping; ``MappingIngestor(mapping)`` ingests with it;
``shipped()`` lists the mappings that come with graphlake (``ingest/mappings/*.yaml``) and
those plugins install (the ``graphlake.mappings`` entry-point group).
"""

from __future__ import annotations

from graphlake.ingest.mapping.spec import Mapping, MappingError, load

__all__ = ["Mapping", "MappingError", "load"]
