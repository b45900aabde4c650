"""Query layer: DuckDB views over a lake snapshot, guarded and transpiled by sqlglot.

The names below resolve on first use (PEP 562): ``graphlake.query.named`` (what ``graphlake
query list`` reads) needs none of DuckDB, Delta or the catalog, and importing the package
for it must not load them (0.3 s of a cold command).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from graphlake.lazy import attributes

# bound now, not on first use: the submodule of the same name, once imported, would shadow
# a lazily resolved function (sqlglot only, which named queries load anyway)
from graphlake.query.transpile import transpile

if TYPE_CHECKING:  # pragma: no cover - for type checkers and readers
    from graphlake.query.catalog import Catalog, open_catalog
    from graphlake.query.engine import QueryResult, run_sql
    from graphlake.query.guard import check

_WHERE = {
    "Catalog": "catalog",
    "open_catalog": "catalog",
    "QueryResult": "engine",
    "run_sql": "engine",
    "check": "guard",
}

__all__ = ["Catalog", "QueryResult", "check", "open_catalog", "run_sql", "transpile"]

__getattr__ = attributes(__name__, globals(), _WHERE)
