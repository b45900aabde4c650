"""What every ingestor shares: the emitter it writes rows into and the reject helper.

An ingestor never touches the lake. It lists its *units* (files or session folders) and parses
each into canonical rows by calling :meth:`Emitter.row` and :meth:`Emitter.reject`. The lake's
writer is one emitter (it spills to Parquet, bounded memory); :class:`CollectingEmitter` keeps
rows in memory for tests and notebooks.
"""

from __future__ import annotations

import abc
import hashlib
import json
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

import orjson
import pyarrow as pa

RAW_LIMIT = 1 << 20  # rejects keep at most 1 MiB of the raw record


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


def load_json(data: bytes | str) -> Any:
    """Parse JSON fast with orjson; fall back to the standard library for what orjson refuses
    but JSON allows (integers beyond 64 bits). Raises ``ValueError`` for invalid JSON."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        try:
            return json.loads(data)
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
            pass  # orjson's own message says what is wrong (e.g. nested too deep)
        raise


def attrs_json(obj: dict, known: frozenset[str] | set[str]) -> str | None:
    """JSON of the fields of ``obj`` that have no column; None when there are none."""
    if obj.keys() <= known:
        return None
    extra = {k: v for k, v in obj.items() if k not in known}
    return to_json(extra) if extra else None


def load_yaml(data: bytes | str) -> Any:
    """Parse YAML safely, with libyaml's C loader when PyYAML has it (about 10x faster).
    Raises ``yaml.YAMLError`` for invalid YAML."""
    import yaml

    return yaml.load(data, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # noqa: S506


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
    if len(text) > RAW_LIMIT:
        text = text[:RAW_LIMIT] + f"... [truncated, {len(text)} characters in all]"
    return text


def stable_id(*parts: object) -> str:
    """A short deterministic id from its parts (same input, same id, on every machine)."""
    h = hashlib.blake2b("\x1f".join(map(str, parts)).encode(), digest_size=10)
    return h.hexdigest()


class Emitter(Protocol):
    """Where an ingestor writes canonical rows and rejects."""

    corpus: str

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

    def _store(self, table: str, row: dict) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _use_default_run(self) -> str:
        """The default run's id; its row is emitted the first time it is used."""
        if not self._default_run_emitted:
            self._default_run_emitted = True
            self.row("runs", dict(self.default_run))
        return self.default_run["run_id"]

    def row(self, table: str, row: dict) -> None:
        row["corpus"] = self.corpus
        if table == "sessions" and row.get("run_id") is None and self.default_run:
            row["run_id"] = self._use_default_run()
        self.accepted[table] += 1
        self._store(table, row)

    def rows(self, table: str, rows: pa.Table) -> None:
        """Many rows at once, as an Arrow table with the canonical columns plus ``_unit``
        (the source unit each row came from). Emitters that can, store it without
        unpacking; this default hands the rows to :meth:`row` one by one."""
        units = rows.column("_unit").to_pylist()
        for unit, row in zip(units, rows.drop_columns(["_unit"]).to_pylist(), strict=True):
            self.unit = unit
            self.row(table, row)

    def fail_unit(self, index: int, unit: SourceUnit, exc: BaseException) -> None:
        """The reader failed on a whole unit: none of its rows land (the commit drops rows of
        ``failed_units``), and one reject says which file and why, with its bytes."""
        self.failed_units.append(index)
        self._drop_unit(index)
        path = unit.path
        raw = (
            path.read_bytes()[:RAW_LIMIT]
            if path.is_file()
            else "\n".join(sorted(str(p.relative_to(path)) for p in path.rglob("*"))[:1000])
        )
        was, self.unit = self.unit, -1  # the reject itself is not the failed unit's row
        self.reject(
            source_file=str(path),
            target_table="sessions",
            record_kind="file",
            record_ref="$",
            raw=raw,
            reason=f"graphlake's {self.corpus} reader failed "
            f"on this {'file' if path.is_file() else 'folder'} ({type(exc).__name__}: "
            f"{str(exc)[:300]}); nothing of it was ingested, the rest of the run was. "
            "Fix the file, or report it with this reject",
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
        self.tables[table].append(row)
        self._units[table].append(self.unit)

    def _drop_unit(self, index: int) -> None:
        for table, units in self._units.items():
            keep = [k for k, u in enumerate(units) if u != index]
            self.tables[table] = [self.tables[table][k] for k in keep]
            self._units[table] = [units[k] for k in keep]


@dataclass(frozen=True)
class SourceUnit:
    """One thing an ingestor parses on its own: a file, or a session folder, with the other
    files that belong to the same session wherever they lie (``companions``: e.g. a Map Task
    dialogue's annotation layers, which the release keeps in one folder per layer)."""

    path: Path
    kind: str  # e.g. "graph_file", "session_dir", "unknown_file"
    companions: tuple[Path, ...] = ()


class Ingestor(abc.ABC):
    """What every source format implements (``@register("name")`` sets ``name``).

    ``units`` lists what can be parsed on its own (a file, a session folder); ``parse`` turns
    one unit into canonical rows and rejects through an emitter and never writes the lake.
    ``parse_many`` is the driver's entry point: by default each unit is parsed in isolation
    (whatever one file raises becomes its reject, the run goes on); an ingestor with a faster
    batch path (Kolab's vectorised reader) overrides it. Shared helpers for the common chores
    live beside this class: :func:`file_units` and :func:`data_files` (walking the input,
    symlinks kept inside it), :func:`json_lines`, :func:`load_json`, :func:`load_yaml`
    (bounded reading), :func:`iso_time` (times)."""

    name: str = ""
    help: str = ""

    @abc.abstractmethod
    def units(self, path: Path) -> list[SourceUnit]:
        """The independently parseable units under ``path`` (a file or a folder)."""

    @abc.abstractmethod
    def parse(self, unit: SourceUnit, out: Emitter) -> None:
        """Emit the rows and rejects of one unit."""

    def parse_many(
        self,
        units: list[SourceUnit],
        start: int,
        out: EmitterBase,
        tick: Callable[[SourceUnit, int], None] | None = None,
    ) -> None:
        """Parse ``units`` (numbered from ``start``), each isolated from the others."""
        for i, unit in enumerate(units):
            parse_isolated(self.parse, unit, out, start + i)
            if tick:
                tick(unit, 1)


class RecordError(ValueError):
    """A source record that cannot be ingested; its message becomes the reject reason."""


#: What a reader raises when a record has a shape it did not expect (a list where an object
#: belongs, a number where a name does): per-record loops catch these with their own
#: RecordError so that one odd record is one reject, not a lost file.
SHAPE_ERRORS: tuple[type[Exception], ...] = (
    RecordError,
    TypeError,
    AttributeError,
    ValueError,
    KeyError,
    IndexError,
    OverflowError,
)


def shape_reason(exc: Exception) -> str:
    """The reject reason for ``exc`` caught as one of :data:`SHAPE_ERRORS`."""
    if isinstance(exc, RecordError):
        return str(exc)
    return (
        f"the record does not have the shape this source's format gives it "
        f"({type(exc).__name__}: {str(exc)[:200]}); check its fields' types against the "
        "format's documentation"
    )


def within(p: Path, root: Path) -> bool:
    """Whether ``p`` stays inside ``root`` once symbolic links are followed. A link out of the
    input folder (say, to /etc/passwd) or to nowhere is never read: its bytes would otherwise
    land in the lake, as rows or as a reject's raw payload."""
    try:
        real = p.resolve(strict=True)
    except (OSError, RuntimeError):  # a dangling link, or a loop
        return False
    return real.is_relative_to(Path(root).resolve())


def data_files(path: Path) -> list[Path]:
    """``path`` if it is a file (named by the user, so read wherever it points), else every
    non-hidden regular file below it that :func:`within` keeps, sorted."""
    path = Path(path)
    if path.is_file():
        return [path]
    return sorted(
        p for p in path.rglob("*") if not p.name.startswith(".") and p.is_file() and within(p, path)
    )


def file_units(path: Path, kinds: dict[str, str] | str, what: str) -> list[SourceUnit]:
    """``path`` (a file, or every non-hidden file below a folder) as units whose kind comes
    from the file suffix (``{".jsonl": "session", ...}``, or one suffix such as ``"jsonl"``);
    any other file is kind ``other``, which the ingestor rejects."""
    if isinstance(kinds, str):
        kinds = {f".{kinds}": kinds}
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist; give {what}, or a folder of them")
    return [SourceUnit(p, kinds.get(p.suffix.lower(), "other")) for p in data_files(path)]


def iso_time(value, what: str = "started_at") -> datetime | None:
    """An ISO 8601 text as an aware datetime (no zone means UTC); None stays None; anything
    else raises :class:`RecordError` naming ``what``."""
    if value is None:
        return None
    try:
        ts = datetime.fromisoformat(value)
    except (TypeError, ValueError):
        raise RecordError(
            f"{what} {value!r} is not ISO 8601 (e.g. 2026-03-02T14:00:00+00:00)"
        ) from None
    return ts if ts.tzinfo else ts.replace(tzinfo=UTC)


def json_lines(
    path: Path, bad_line: Callable[[int, str, bytes], None]
) -> Iterator[tuple[int, Any]]:
    """Stream a JSON Lines file as (line number, value); blank lines are skipped and a line
    that is not JSON goes to ``bad_line(lineno, reason, raw)`` instead."""
    with Path(path).open("rb") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                yield lineno, load_json(line)
            except ValueError as exc:
                bad_line(lineno, f"not valid JSON ({exc})", line)


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
    skipped: list[str] = field(default_factory=list)  # README, LICENSE, ...: not data


def parse_isolated(
    parse: Callable[[SourceUnit, Emitter], None], unit: SourceUnit, out: EmitterBase, index: int
) -> None:
    """Parse one unit so that whatever its reader raises (a bug, a RecursionError on absurd
    nesting, a library error) rejects that unit alone and the run goes on."""
    out.unit = index
    try:
        parse(unit, out)
    except Exception as exc:  # noqa: BLE001 - any failure of one file must not end the run
        out.fail_unit(index, unit, exc)
