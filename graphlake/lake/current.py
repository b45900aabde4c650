"""What a reader of the newest lake version needs, written once by the commit that made it.

Opening the newest snapshot the long way reads the snapshots table (a Delta table of Parquet
files), then each table's Delta log for its file list, then each kept view's log and
configuration: about a third of a second and the imports of pyarrow and deltalake, every time
a command starts. The commit that makes a version knows all of it, so it writes it down here
(``_graphlake/current.json``): the snapshot, each table's Parquet files, and each kept view's
files with the key of the definitions they were computed with.

A reader trusts the manifest only while it is provably current: it names the snapshots
table's newest Delta log entry, which the reader checks with one directory listing. A commit
writes its log entry first and this file after it, so a reader between the two (or after a
writer died between them) sees a mismatch and takes the long way; nothing stale is ever read.
Kept views are trusted only while the view and macro sources hash to the same key
(:func:`source_key`), so an edited view definition is recomputed, as without the manifest.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

FILE = "current.json"
FORMAT = 1


@dataclass(frozen=True)
class Manifest:
    snapshot: object  # graphlake.lake.store.Snapshot
    files: dict[str, list[str]]
    #: each kept view's files, None where it is not current for this snapshot
    kept: dict[str, list[str] | None]
    #: each current kept view's columns as (name, DuckDB type): its view needs no schema
    kept_types: dict[str, list[tuple[str, str]]]


def _log_version(meta: Path) -> int | None:
    """The newest Delta log entry of the lake's snapshots table (None: no snapshot yet)."""
    try:
        names = os.listdir(meta / "snapshots" / "_delta_log")
    except OSError:
        return None
    versions = [int(n[:-5]) for n in names if n.endswith(".json") and n[:-5].isdigit()]
    return max(versions) if versions else None


def source_key() -> str:
    """A hash of what a kept view's rows and the catalog's statements depend on besides the
    data: the view SQL files, the modules that declare the tables and build the views and
    macros, and the limits the macros read. Cheap to compute (a few small files): the reader
    must not import sqlglot to check it."""
    import graphlake
    from graphlake.config import co_occurrence_cap, co_occurrence_lake_cap

    root = Path(graphlake.__file__).parent
    h = hashlib.sha256(graphlake.__version__.encode())
    sources = sorted((root / "queries" / "views").glob("*.sql")) + [
        root / "schema" / "graph_macros.py",
        root / "schema" / "views.py",
        root / "schema" / "tables.py",
        root / "schema" / "duckdb_views.py",
        root / "lake" / "derived.py",
    ]
    for path in sources:
        h.update(path.name.encode())
        h.update(path.read_bytes())
    h.update(f"{co_occurrence_cap()}:{co_occurrence_lake_cap()}".encode())
    return h.hexdigest()[:16]


def write(lake, snap, known: dict[str, list[str]] | None = None) -> None:
    """Write the manifest of ``snap``, the version just committed (atomically; a failure
    leaves the old one, which the log check then refuses). ``known``: files of tables at
    their version in ``snap`` that the committer already holds."""
    from graphlake.lake.derived import current_files
    from graphlake.schema import TABLES
    from graphlake.schema.duckdb_views import _DUCK_TYPES, derived_schema
    from graphlake.schema.graph_macros import MACROS, TABLE_MACROS
    from graphlake.schema.views import DERIVED_VIEWS, MATERIALIZED

    log = _log_version(lake.meta_dir)
    doc: dict = {
        "format": FORMAT,
        "log_version": log,
        "source_key": source_key(),
        "snapshot": {
            "lake_version": snap.lake_version,
            "committed_at": snap.committed_at.isoformat() if snap.committed_at else None,
            "operation": snap.operation,
            "corpus": snap.corpus,
            "source": snap.source,
            "table_versions": snap.table_versions,
            "rows_added": snap.rows_added,
            "rows_removed": snap.rows_removed,
        },
        "files": _table_files(lake, snap, log, known or {}),
        # what a catalog is made of besides the files: each table's columns, the macros and
        # the derived views' SQL (graphlake.cli_quick makes a catalog from these alone)
        "columns": {
            name: [(f.name, _DUCK_TYPES[f.type]) for f in spec.schema]
            for name, spec in TABLES.items()
        },
        "macros": [m.create_sql() for m in MACROS.values()],
        "table_macros": sorted(TABLE_MACROS),
        "views": [(name, sql) for name, (sql, _doc) in DERIVED_VIEWS.items()],
    }
    kept_files: dict[str, list[str] | None] = {}
    kept_types: dict[str, list[tuple[str, str]]] = {}
    for name in MATERIALIZED:
        kept = current_files(lake, name, snap, use_manifest=False)
        kept_files[name] = None if kept is None else _relative(lake, kept)
        if kept is not None:
            kept_types[name] = [(f.name, _DUCK_TYPES[f.type]) for f in derived_schema(name)]
    doc["kept"], doc["kept_types"] = kept_files, kept_types
    path = lake.meta_dir / FILE
    tmp = path.with_name(f".{FILE}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(doc, sort_keys=True) + "\n")
    os.replace(tmp, path)


def _table_files(lake, snap, log: int | None, known: dict[str, list[str]]) -> dict[str, list[str]]:
    """Each table's files in ``snap`` (relative to the lake). A table at the version the
    previous manifest lists has those files still (a Delta version never changes), so only
    the tables this commit wrote are opened; the previous manifest is used only when it was
    the one just before: the previous log entry's, of the previous lake version."""
    from graphlake.schema import TABLES

    try:
        prev = json.loads((lake.meta_dir / FILE).read_text())
    except (OSError, ValueError):
        prev = {}
    if not (
        prev.get("format") == FORMAT
        and log is not None
        and prev.get("log_version") == log - 1
        and (prev.get("snapshot") or {}).get("lake_version") == snap.lake_version - 1
    ):
        prev = {}
    before = (prev.get("snapshot") or {}).get("table_versions") or {}
    out = {}
    for name in TABLES:
        v = snap.table_versions.get(name)
        if v is not None and before.get(name) == v and name in prev.get("files", {}):
            out[name] = prev["files"][name]
        elif v is not None and name in known:
            out[name] = _relative(lake, known[name])
        else:
            out[name] = _relative(lake, lake.files(name, snap, use_manifest=False))
    return out


def read_doc(root: Path) -> dict | None:
    """The manifest of the lake at ``root`` as written, when it is provably current (its
    view sources unchanged too, ``fresh``); None when missing or behind the snapshot log.
    Reads two small things and imports nothing heavy: the quick CLI path starts here."""
    meta = Path(root).expanduser() / "_graphlake"
    try:
        doc = json.loads((meta / FILE).read_text())
    except (OSError, ValueError):
        return None
    if doc.get("format") != FORMAT or doc.get("log_version") != _log_version(meta):
        return None
    doc["fresh"] = doc.get("source_key") == source_key()
    return doc


def read(lake) -> Manifest | None:
    """The manifest of the newest version, or None when it is missing or not provably current."""
    from graphlake.lake.store import Snapshot

    doc = read_doc(lake.root)
    if doc is None:
        return None
    s = doc["snapshot"]
    snap = Snapshot(
        s["lake_version"],
        datetime.fromisoformat(s["committed_at"]) if s["committed_at"] else None,
        s["operation"],
        s["corpus"],
        s["source"],
        s["table_versions"],
        s["rows_added"],
        s.get("rows_removed") or {},
    )
    fresh = doc["fresh"]
    kept = {n: None if f is None else absolute(lake.root, f) for n, f in doc["kept"].items()}
    return Manifest(
        snap,
        {name: absolute(lake.root, files) for name, files in doc["files"].items()},
        kept if fresh else {},
        {n: [tuple(c) for c in cols] for n, cols in doc["kept_types"].items()} if fresh else {},
    )


def absolute(root: Path, files: list[str]) -> list[str]:
    """The manifest's file paths (relative to the lake root) as the paths to read."""
    base = Path(root).expanduser().resolve()
    return [f if os.path.isabs(f) or "://" in f else str(base / f) for f in files]


def _relative(lake, files: list[str]) -> list[str]:
    """File paths relative to the lake root (a lake moved or mounted elsewhere still reads
    its manifest); a path outside the root stays as it is."""
    root = str(lake.root.resolve())
    out = []
    for f in files:
        path = f.removeprefix("file://")
        out.append(os.path.relpath(path, root) if path.startswith(root + os.sep) else f)
    return out


_WORDS = re.compile(r"[a-z_][a-z0-9_]*")
_MACRO_NAME = re.compile(r"\bMACRO\s+(\w+)", re.IGNORECASE)


def _names(text: str) -> set[str]:
    return set(_WORDS.findall(text.lower()))


def catalog_statements(
    doc: dict, root: Path, statement: str | None = None
) -> tuple[list[str], list[str], set[str]]:
    """(the statements that make the newest version's catalog, every file its views read,
    the names of its views) from a manifest ``doc`` (:func:`read_doc`): the same views over
    the same files, macros and derived views as :func:`graphlake.query.catalog.open_catalog`
    makes, without the schema modules. Kept views are read only when ``doc`` is fresh.

    With ``statement``, only what it can reach is made: the views and macros whose names it
    spells as words, and what their SQL spells in turn (a word is a superset of a name, so
    nothing it reads is missed; making all of them took a fifth of a cold command)."""
    from graphlake.schema.files_sql import typed_files_select

    bodies: dict[str, str] = {}
    reads: dict[str, list[str]] = {}  # the files each view reads
    for name, columns in doc["columns"].items():
        reads[name] = absolute(root, doc["files"].get(name, []))
        bodies[name] = typed_files_select(reads[name], columns)
    macros = {}
    for sql in doc["macros"]:
        m = _MACRO_NAME.search(sql)
        macros[m.group(1).lower() if m else sql] = sql
    for name, sql in doc["views"]:
        kept = doc["kept"].get(name) if doc["fresh"] else None
        reads[name] = [] if kept is None else absolute(root, kept)
        bodies[name] = (
            sql if kept is None else typed_files_select(reads[name], doc["kept_types"][name])
        )
    views = set(bodies)
    names = views | set(macros)
    wanted = names
    if statement is not None:
        texts = {**bodies, **macros}  # a kept view's body reads its files, not its inputs
        wanted, todo = set(), list(_names(statement) & names)
        while todo:
            name = todo.pop()
            if name not in wanted:
                wanted.add(name)
                todo += _names(texts[name]) & names
    # in the order the full path makes them: tables, macros, derived views
    order = [*doc["columns"], *macros, *(name for name, _ in doc["views"])]
    statements, files = [], []
    for name in order:
        if name not in wanted:
            continue
        if name in macros:
            statements.append(macros[name])
        else:
            statements.append(f"CREATE VIEW {name} AS {bodies[name]}")
            files += reads[name]
    return statements, files, views
