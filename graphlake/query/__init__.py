"""Query layer: DuckDB views over a lake snapshot, guarded and transpiled by sqlglot."""

from graphlake.query.catalog import Catalog, open_catalog
from graphlake.query.engine import QueryResult, run_sql
from graphlake.query.guard import check
from graphlake.query.transpile import transpile

__all__ = ["Catalog", "QueryResult", "check", "open_catalog", "run_sql", "transpile"]
