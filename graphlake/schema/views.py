"""Derived views: SQL over the canonical tables, one file each in ``queries/views/``.

The SQL is the single definition of each view. DuckDB and Spark both run it; the views that
depend only on one session's rows are also kept as lake tables (``MATERIALIZED``), refreshed
by every ingest commit with this same SQL (see :mod:`graphlake.lake.derived`).
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

#: Views derived from the canonical tables, in dependency order: each is one SQL file in
#: ``queries/views/`` with ``-- view:`` and ``-- description:`` header lines.
VIEW_ORDER = (
    "adoptions",
    "adoption_chains",
    "co_occurrence_overflow",
    "co_occurrences",
    "session_metrics",
    "session_process",
    "run_outcomes",
    "frame_occurrences",
    "event_frames",
    "time_flags",
)

#: Views kept as lake tables, in dependency order. Each must be computable one session at a
#: time (grouped and joined by corpus and session), so that a refresh can recompute just the
#: sessions whose rows changed. Their row order is not part of their meaning.
MATERIALIZED = ("adoptions", "adoption_chains", "co_occurrences")


def _load_views() -> dict[str, tuple[str, str]]:
    folder = resources.files("graphlake.queries") / "views"
    views = {}
    for name in VIEW_ORDER:
        text = (folder / f"{name}.sql").read_text()
        doc = re.search(r"^-- description:\s*(.*)$", text, re.M)
        views[name] = (text, doc.group(1).strip() if doc else "")
    return views


#: Name -> (SQL, one line of documentation).
DERIVED_VIEWS: dict[str, tuple[str, str]] = _load_views()


@cache
def _direct(name: str) -> frozenset[str]:
    """Tables and views that the SQL of view ``name`` names (its own CTEs aside)."""
    import sqlglot
    from sqlglot import exp

    tree = sqlglot.parse_one(DERIVED_VIEWS[name][0], read="duckdb")
    ctes = {c.alias_or_name for c in tree.find_all(exp.CTE)}
    return frozenset(t.name for t in tree.find_all(exp.Table) if t.name not in ctes)


@cache
def depends_on(name: str) -> frozenset[str]:
    """The canonical tables a derived view reads, directly or through other derived views."""
    return frozenset().union(*(depends_on(t) if t in DERIVED_VIEWS else {t} for t in _direct(name)))


@cache
def reads(name: str) -> frozenset[str]:
    """Derived views that ``name`` reads, directly or through each other."""
    direct = {t for t in _direct(name) if t in DERIVED_VIEWS}
    return frozenset(direct.union(*map(reads, direct)))


def standalone_sql(name: str) -> str:
    """The view's SQL with every derived view it reads inlined as a CTE, so it reads only the
    canonical tables: the view computed from scratch, whatever the lake has materialized."""
    ctes = [f"{dep} AS ({DERIVED_VIEWS[dep][0]}\n)" for dep in VIEW_ORDER if dep in reads(name)]
    with_ = f"WITH {', '.join(ctes)}\n" if ctes else ""
    return f"{with_}SELECT * FROM ({DERIVED_VIEWS[name][0]}\n)"
