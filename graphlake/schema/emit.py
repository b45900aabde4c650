"""The emit contract: what an ingestor hands the lake, and the one thing both sides import.

An ingestor parses a source into canonical rows by calling :meth:`Emitter.row` and
:meth:`Emitter.reject`; the lake's writer (:class:`graphlake.lake.writer.StagingEmitter`) is one
emitter, :class:`CollectingEmitter` (rows in memory, for tests and notebooks) another. It sits
in the schema layer, below both: the lake never imports an ingestor, and an ingestor never
imports the lake.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from graphlake.config import max_attrs_bytes, max_file_bytes, max_reject_raw
from graphlake.errors import InputLimitError


class _Unit(Protocol):
    """A source unit as an emitter sees it (ingest.base.SourceUnit is one)."""

    @property
    def path(self) -> Path: ...


def attrs_over(attrs: str | None, limit: int) -> int:
    """The size in UTF-8 bytes of ``attrs`` when it is past ``limit``, else 0 (encoded only
    when it could be: a character takes at most 4 bytes)."""
    if attrs is None or 4 * len(attrs) <= limit:
        return 0
    size = len(attrs.encode())
    return size if size > limit else 0


def attrs_limit_reason(size: int, limit: int) -> str:
    """Why a record whose attrs are ``size`` bytes is a reject."""
    return (
        f"its fields without a column (attrs) are {size:,} bytes as JSON, over the limit of "
        f"{limit:,}; raise $GRAPHLAKE_MAX_ATTRS_BYTES and re-ingest to keep the record (the "
        "raw text here is cut at $GRAPHLAKE_MAX_REJECT_RAW)"
    )


def head_bytes(path: Path, limit: int | None = None) -> bytes:
    """The first bytes of a file a reject keeps (never the whole file read to cut it)."""
    with open(path, "rb") as fh:
        return fh.read(max_reject_raw() if limit is None else limit)


def read_whole(path: Path) -> bytes:
    """The bytes of a file a reader must hold whole (one JSON, YAML or XML document), or
    :class:`InputLimitError` past ``$GRAPHLAKE_MAX_FILE_BYTES`` (read up to the limit only, so
    a file that grows while read cannot get past it)."""
    limit = max_file_bytes()
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        data = fh.read(limit + 1) if size <= limit else b""
    if size > limit or len(data) > limit:
        raise InputLimitError(
            f"{Path(path).name} is {max(size, len(data)):,} bytes, over the {limit:,}-byte "
            "limit for files read whole ($GRAPHLAKE_MAX_FILE_BYTES; reading one takes about "
            "25 times its size in memory): split it, or raise the limit on a machine with "
            "the memory for it"
        )
    return data


def tail_bytes(path: Path, size: int) -> bytes:
    """The last ``size`` bytes of a file (where a truncated file's damage is)."""
    with open(path, "rb") as fh:
        fh.seek(max(0, fh.seek(0, 2) - size))
        return fh.read()


#: The columns that name a row, in the order a reject's ``record_ref`` looks for them.
_ROW_KEYS = ("node_id", "event_id", "edge_id", "annotation_id", "media_id", "session_id", "run_id")


def to_json(value: Any) -> str:
    """Compact, key-sorted JSON text (deterministic, so ids and attrs are reproducible)."""
    try:
        return orjson.dumps(
            value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS, default=str
        ).decode()
    except TypeError:  # integers beyond 64 bits, which orjson cannot write
        try:
            return json.dumps(
                value, sort_keys=True, separators=(",", ":"), default=str, ensure_ascii=False
            )
        except RecursionError:
            raise RecordError(
                "a value is nested deeper than JSON writers allow (about "
                "1,000 levels); flatten it and re-ingest"
            ) from None


def raw_text(value: Any) -> str:
    """The raw payload a reject keeps: JSON for parsed values, text for bytes, capped."""
    if isinstance(value, bytes):
        text = value.decode("utf-8", errors="replace")
    elif isinstance(value, str):
        text = value
    else:
        try:
            text = to_json(value)
        except RecordError:  # nested too deep to write back: say so rather than fail
            text = f"<{type(value).__name__} nested too deep to write as JSON>"
    limit = max_reject_raw()
    if len(text) > limit:
        text = (
            text[:limit] + f"... [cut: {len(text):,} characters in all, a reject keeps "
            f"{limit:,} ($GRAPHLAKE_MAX_REJECT_RAW); the source file has the rest]"
        )
    return text


def stable_id(*parts: object) -> str:
    """A short deterministic id from its parts (same input, same id, on every machine)."""
    h = hashlib.blake2b("\x1f".join(map(str, parts)).encode(), digest_size=10)
    return h.hexdigest()


class Emitter(Protocol):
    """Where an ingestor writes canonical rows and rejects."""

    corpus: str
    max_attrs: int  # the largest attrs (JSON bytes) a row may carry: $GRAPHLAKE_MAX_ATTRS_BYTES

    def row(self, table: str, row: dict) -> None: ...

    def rows(self, table: str, rows: pa.Table) -> None: ...

    def reject(
        self,
        *,
        source_file: str,
        target_table: str,
        record_kind: str,
        record_ref: str,
        reason: str,
        raw: Any,
        session_id: str | None = None,
    ) -> None: ...


def run_row(
    run_id: str,
    name: str,
    source: str,
    *,
    started_at: datetime | None = None,
    agent=None,
    agent_model=None,
    user_simulator=None,
    user_model=None,
    policy=None,
    settings: dict | None = None,
    attrs: dict | None = None,
) -> dict:
    """A ``runs`` row (session_id '' like scenarios: a run is above any one session)."""
    return {
        "session_id": "",
        "run_id": run_id,
        "name": name,
        "source": source,
        "started_at": started_at,
        "agent": agent,
        "agent_model": agent_model,
        "user_simulator": user_simulator,
        "user_model": user_model,
        "policy": policy,
        "settings": to_json(settings) if settings else None,
        "attrs": to_json(attrs) if attrs else None,
    }


def source_run(corpus: str, source: str) -> dict:
    """The run of a source that records no run of its own: the ingest source itself, named
    by its folder or file name and identified by a hash of its resolved path."""
    return run_row(
        f"{Path(source).name or 'source'}:{stable_id(corpus, source)[:12]}",
        Path(source).name,
        source,
        settings={"ingestor": corpus},
    )


class EmitterBase:
    """Counting and reject-row construction shared by every emitter.

    ``default_run`` (a :func:`run_row`) is the run of sessions whose ingestor names none:
    their ``run_id`` is filled in and the run's row is emitted once.
    """

    def __init__(self, corpus: str, default_run: dict | None = None):
        self.corpus = corpus
        self.unit = 0  # index of the source unit being parsed (set by the driver)
        self.accepted: Counter[str] = Counter()
        self.rejected: Counter[str] = Counter()
        self.default_run = default_run
        self._default_run_emitted = False
        self.failed_units: list[int] = []
        #: (session_id, unit) of sessions whose own row was rejected: their other rows are
        #: dropped too (a session that did not land leaves no orphan nodes or events)
        self.lost_sessions: list[tuple[str, int]] = []
        self.max_attrs = max_attrs_bytes()

    def _store(self, table: str, row: dict) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _use_default_run(self) -> str:
        """The default run's id; its row is emitted the first time it is used."""
        assert self.default_run is not None  # row() calls this only when there is one
        if not self._default_run_emitted:
            self._default_run_emitted = True
            self.row("runs", dict(self.default_run))
        return self.default_run["run_id"]

    def row(self, table: str, row: dict) -> None:
        size = attrs_over(row.get("attrs"), self.max_attrs)
        if size:
            return self._reject_oversized(table, row, size)
        row["corpus"] = self.corpus
        if table == "sessions" and row.get("run_id") is None and self.default_run:
            row["run_id"] = self._use_default_run()
        self.accepted[table] += 1
        self._store(table, row)

    def _reject_oversized(self, table: str, row: dict, size: int) -> None:
        """A record whose attrs are past the limit: a reject naming it (a row with its attrs
        cut would lose what was cut without a word)."""
        key = next((k for k in _ROW_KEYS if row.get(k) is not None), None)
        lost = table == "sessions" and isinstance(row.get("session_id"), str)
        self.reject(
            source_file=str(row.get("source_file") or ""),
            target_table=table,
            record_kind="row",
            record_ref=f"{key}={row[key]}" if key else "$",
            raw=row,
            session_id=row.get("session_id"),
            reason=attrs_limit_reason(size, self.max_attrs)
            + ("; the session's other rows were left out with it" if lost else ""),
        )
        if lost:
            self.lose_session(row["session_id"])

    def lose_session(self, session_id: str) -> None:
        """The session ``session_id`` of the current unit did not land: none of its rows do
        (those already emitted and those to come; its rejects stay)."""
        self.lost_sessions.append((session_id, self.unit))

    def within_limits(self, table: str, rows: pa.Table) -> pa.Table:
        """``rows`` without those whose attrs are past the limit, each of which becomes a
        reject (checked on the column at once: the bulk paths never unpack rows)."""
        if "attrs" not in rows.column_names or rows.num_rows == 0:
            return rows
        sizes = pc.binary_length(rows.column("attrs"))
        over = pc.fill_null(pc.greater(sizes, self.max_attrs), False)
        if not pc.any(over).as_py():
            return rows
        was = self.unit
        for row in rows.filter(over).to_pylist():
            self.unit = row.pop("_unit", was)
            self._reject_oversized(table, row, len(row["attrs"].encode()))
        self.unit = was
        return rows.filter(pc.invert(over))

    def rows(self, table: str, rows: pa.Table) -> None:
        """Many rows at once, as an Arrow table with the canonical columns plus ``_unit``
        (the source unit each row came from). Emitters that can, store it without
        unpacking; this default hands the rows to :meth:`row` one by one."""
        units = rows.column("_unit").to_pylist()
        for unit, row in zip(units, rows.drop_columns(["_unit"]).to_pylist(), strict=True):
            self.unit = unit
            self.row(table, row)

    def fail_unit(self, index: int, unit: _Unit, exc: BaseException) -> None:
        """The reader failed on a whole unit: none of its rows land (the commit drops rows of
        ``failed_units``), and one reject says which file and why, with its bytes."""
        self.failed_units.append(index)
        self._drop_unit(index)
        path = unit.path
        raw = (
            head_bytes(path)
            if path.is_file()
            else "\n".join(sorted(str(p.relative_to(path)) for p in path.rglob("*"))[:1000])
        )
        was, self.unit = self.unit, -1  # the reject itself is not the failed unit's row
        if isinstance(exc, InputLimitError):  # not a failure of the reader: a limit, named
            reason = f"{exc}; nothing of it was ingested, the rest of the run was"
        else:
            reason = (
                f"graphlake's {self.corpus} reader failed "
                f"on this {'file' if path.is_file() else 'folder'} ({type(exc).__name__}: "
                f"{str(exc)[:300]}); nothing of it was ingested, the rest of the run was. "
                "Fix the file, or report it with this reject"
            )
        self.reject(
            source_file=str(path),
            target_table="sessions",
            record_kind="file",
            record_ref="$",
            raw=raw,
            reason=reason,
        )
        self.unit = was

    def _drop_unit(self, index: int) -> None:
        """Forget rows of a failed unit that this emitter still holds (staging emitters drop
        them at commit instead)."""

    def reject(
        self,
        *,
        source_file: str,
        target_table: str,
        record_kind: str,
        record_ref: str,
        reason: str,
        raw: Any,
        session_id: str | None = None,
    ) -> None:
        self.rejected[target_table] += 1
        if session_id is not None and not isinstance(session_id, str):
            session_id = to_json(session_id)  # a source's numeric or odd id, kept readable
        self._store(
            "rejects",
            {
                "corpus": self.corpus,
                "session_id": session_id or "",
                "reject_id": stable_id(self.corpus, source_file, record_ref, reason),
                "source_file": source_file,
                "target_table": target_table,
                "record_kind": record_kind,
                "record_ref": record_ref,
                "reason": reason,
                "raw": raw_text(raw),
            },
        )


class CollectingEmitter(EmitterBase):
    """Keeps every row in memory, grouped by table: for tests and small notebooks."""

    def __init__(self, corpus: str):
        super().__init__(corpus)
        self.tables: dict[str, list[dict]] = defaultdict(list)
        self._units: dict[str, list[int]] = defaultdict(list)

    def _store(self, table: str, row: dict) -> None:
        if table != "rejects" and (row.get("session_id"), self.unit) in self.lost_sessions:
            return
        self.tables[table].append(row)
        self._units[table].append(self.unit)

    def lose_session(self, session_id: str) -> None:
        super().lose_session(session_id)
        for table, rows in self.tables.items():
            if table == "rejects":
                continue
            keep = [
                k
                for k, (r, u) in enumerate(zip(rows, self._units[table], strict=True))
                if not (r.get("session_id") == session_id and u == self.unit)
            ]
            self.accepted[table] -= len(rows) - len(keep)
            self.tables[table] = [rows[k] for k in keep]
            self._units[table] = [self._units[table][k] for k in keep]

    def _drop_unit(self, index: int) -> None:
        for table, units in self._units.items():
            keep = [k for k, u in enumerate(units) if u != index]
            self.tables[table] = [self.tables[table][k] for k in keep]
            self._units[table] = [units[k] for k in keep]


class RecordError(ValueError):
    """A source record that cannot be ingested; its message becomes the reject reason."""


@dataclass
class IngestStats:
    """Accepted / rejected counts per table for one run, how many rows were new, and what a
    changed source replaced: rows removed per table, sessions replaced and pruned."""

    accepted: Counter = field(default_factory=Counter)
    rejected: Counter = field(default_factory=Counter)
    added: Counter = field(default_factory=Counter)
    removed: Counter = field(default_factory=Counter)
    replaced_sessions: int = 0
    pruned_sessions: int = 0
    units: int = 0
    #: Units not read at all: every file of the source was as the last ingest read it.
    unchanged_units: int = 0
    skipped: list[str] = field(default_factory=list)  # README, LICENSE, ...: not data
    #: When some records were rejected: how many sampled files under the path look like
    #: another corpus's (a parent folder holding several corpora), by that corpus.
    elsewhere: dict[str, int] = field(default_factory=dict)
