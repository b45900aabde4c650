"""What every ingestor shares: the emitter it writes rows into and the reject helper.

An ingestor never touches the lake. It lists its *units* (files or session folders) and parses
each into canonical rows by calling :meth:`Emitter.row` and :meth:`Emitter.reject`. The lake's
writer is one emitter (it spills to Parquet, bounded memory); :class:`CollectingEmitter` keeps
rows in memory for tests and notebooks.
"""

from __future__ import annotations

import abc
import codecs
import io
import json
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from graphlake.errors import InputLimitError
from graphlake.ingest.yaml_bounded import load_yaml, load_yaml_items  # noqa: F401

# the emit contract lives in the schema layer (the lake imports it, not this module);
# ingestors keep importing it from here
from graphlake.schema.emit import (  # noqa: F401
    CollectingEmitter,
    Emitter,
    EmitterBase,
    IngestStats,
    RecordError,
    head_bytes,
    raw_text,
    read_whole,
    run_row,
    source_run,
    stable_id,
    tail_bytes,
    to_json,
)


def load_json(data: bytes | str) -> Any:
    """Parse JSON fast with orjson; fall back to the standard library for what orjson refuses
    but Python's JSON writers produce (integers beyond 64 bits, NaN and Infinity, 1e999), and
    to ijson, which builds values without recursion, for a document nested deeper than either
    parser's recursion allows (the caller then rejects the record that holds it, not the
    whole document). Raises ``ValueError`` for invalid JSON."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        try:
            return json.loads(data)
        except RecursionError:
            depth = json_depth(data)
            limit = max_json_depth()
            if depth > limit:  # ijson's builder is quadratic in depth: 30,000 levels, 2 GiB
                raise ValueError(
                    f"nested {depth:,} levels deep, past the limit of {limit:,} "
                    "($GRAPHLAKE_JSON_MAX_DEPTH)"
                ) from None
            deep = _load_iteratively(data)
            if deep is not _NOTHING:
                return deep
        except (json.JSONDecodeError, UnicodeDecodeError):
            pass  # orjson's own message says what is wrong
        raise


_NOTHING = object()
#: JSON nested deeper than this is refused (``$GRAPHLAKE_JSON_MAX_DEPTH``): documents past
#: the parsers' recursion are built by ijson, whose cost grows with the square of the depth
#: (10,000 levels: 0.3 GiB)
DEFAULT_JSON_MAX_DEPTH = 10_000


def max_json_depth() -> int:
    from graphlake.config import int_env

    return int_env("GRAPHLAKE_JSON_MAX_DEPTH", DEFAULT_JSON_MAX_DEPTH)


def json_depth(data: bytes | str) -> int:
    """The deepest nesting of ``[`` and ``{`` in a JSON text, outside its strings, in linear
    time with NumPy (no parse): quotes escaped by an odd run of backslashes do not count."""
    import numpy as np

    raw = data.encode() if isinstance(data, str) else data
    b = np.frombuffer(raw, np.uint8)
    quotes = np.flatnonzero(b == 34)
    if quotes.size:  # a quote is escaped when an odd number of backslashes precede it
        run = np.zeros(quotes.size, np.int64)
        live = quotes > 0
        k = 1
        while live.any():
            at = quotes - k
            live &= at >= 0
            hit = live.copy()
            hit[live] = b[at[live]] == 92
            run += hit
            live = hit
            k += 1
        quotes = quotes[run % 2 == 0]
    marks = np.flatnonzero((b == 91) | (b == 123) | (b == 93) | (b == 125))
    if not marks.size:
        return 0
    # a bracket is inside a string when an odd number of real quotes come before it
    inside = np.searchsorted(quotes, marks) % 2 == 1
    marks = marks[~inside]
    step = np.where((b[marks] == 91) | (b[marks] == 123), 1, -1)
    return int(np.cumsum(step).max(initial=0))


def _load_iteratively(data: bytes | str) -> Any:
    import ijson

    raw = data.encode() if isinstance(data, str) else data
    try:
        return next(iter(ijson.items(io.BytesIO(raw), "", use_float=True)), _NOTHING)
    except (ijson.JSONError, UnicodeDecodeError):
        return _NOTHING


def read_whole_or_reject(
    path: Path, out: Emitter, table: str, session_id: str | None = None
) -> bytes | None:
    """:func:`read_whole`, or (past ``$GRAPHLAKE_MAX_FILE_BYTES``) one reject naming the limit
    and None: a side file or layer too large to read costs itself, not the session it is in."""
    try:
        return read_whole(path)
    except InputLimitError as exc:
        reject_file(out, path, table, str(exc), head_bytes(path), session_id)
        return None


def reject_file(
    out: Emitter, path: Path, table: str, reason: str, raw, session_id: str | None = None
) -> None:
    """One reject for a whole file (``record_ref`` ``$``)."""
    out.reject(
        source_file=str(path),
        target_table=table,
        record_kind="file",
        record_ref="$",
        reason=reason,
        raw=raw,
        session_id=session_id,
    )


def reject_encoding(
    out: Emitter, path: Path, table: str, replaced: int, first: int | None, landed: str
) -> None:
    """The one reject that says a file's bytes that are not UTF-8 were read as U+FFFD (where
    the first was, and 400 bytes around it) while ``landed`` (e.g. "every simulation")
    landed."""
    with Path(path).open("rb") as fh:
        fh.seek(max(0, (first or 0) - 200))
        around = fh.read(400)
    out.reject(
        source_file=str(path),
        target_table=table,
        record_kind="encoding",
        record_ref=f"byte {first}",
        reason=f"{replaced} byte(s) are not UTF-8 (the first at byte {first}); each was read "
        f"as U+FFFD and {landed} landed. Re-encode the file as UTF-8 and re-ingest for the "
        "exact text",
        raw=around,
    )


def repair_utf8(data: bytes) -> tuple[bytes, int, int | None]:
    """``data`` with every byte that is not UTF-8 replaced by U+FFFD, how many were, and the
    offset of the first (0 and None when it was all UTF-8): a document with one bad byte is
    read, and the caller says where the byte was, instead of losing every record in it."""
    try:
        data.decode("utf-8")
        return data, 0, None
    except UnicodeDecodeError as exc:
        first = exc.start
    fixed = data.decode("utf-8", errors="replace").encode("utf-8")
    replaced = fixed.count(_FFFD) - data.count(_FFFD)  # minus those the file already had
    return fixed, max(replaced, 1), first


_FFFD = "\ufffd".encode()


def read_json_repaired(path: Path, out: Emitter, table: str, landed: str) -> Any:
    """A whole JSON document (within $GRAPHLAKE_MAX_FILE_BYTES) whose bytes that are not
    UTF-8 are read as U+FFFD, with one reject saying where (:func:`reject_encoding`): one
    bad byte in one record must not cost the file's other records."""
    data, replaced, first = repair_utf8(read_whole(path))
    if replaced:
        reject_encoding(out, path, table, replaced, first, landed)
    return load_json(data)


class RepairedUtf8(io.RawIOBase):
    """A binary file read as UTF-8 with each invalid byte replaced by U+FFFD, for streaming
    parsers (ijson): one bad byte in one record must not cost every record of the file.
    ``replaced`` counts the bytes replaced so far and ``first_bad`` is the file offset of the
    first, so the reader can say so in a reject."""

    CHUNK = 1 << 16

    def __init__(self, path: Path):
        self._fh = Path(path).open("rb")
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="strict")
        self._pending = b""
        self._offset = 0  # bytes of the file handed to the decoder so far
        self.replaced = 0
        self.first_bad: int | None = None

    def readable(self) -> bool:
        return True

    def _decode(self, chunk: bytes, final: bool) -> str:
        out = []
        while True:
            try:
                out.append(self._decoder.decode(chunk, final=final))
                return "".join(out)
            except UnicodeDecodeError as exc:
                # exc.object is the decoder's carried-over bytes plus this chunk: keep what
                # precedes the bad bytes, replace them, go on after them with a fresh decoder
                good = exc.object[: exc.start]
                out.append(good.decode("utf-8"))
                out.append("\ufffd" * (exc.end - exc.start))
                if self.first_bad is None:
                    self.first_bad = self._offset - len(exc.object) + exc.start
                self.replaced += exc.end - exc.start
                chunk = exc.object[exc.end :]
                self._decoder.reset()

    def readinto(self, buffer) -> int:
        while not self._pending:
            chunk = self._fh.read(self.CHUNK)
            self._offset += len(chunk)
            # the decoder keeps an incomplete trailing sequence for the next chunk
            text = self._decode(chunk, final=not chunk)
            self._pending = text.encode("utf-8")
            if not chunk:
                break
        n = min(len(buffer), len(self._pending))
        buffer[:n] = self._pending[:n]
        self._pending = self._pending[n:]
        return n

    def close(self) -> None:
        self._fh.close()
        super().close()


def attrs_json(obj: dict, known: frozenset[str] | set[str]) -> str | None:
    """JSON of the fields of ``obj`` that have no column; None when there are none."""
    if obj.keys() <= known:
        return None
    extra = {k: v for k, v in obj.items() if k not in known}
    return to_json(extra) if extra else None


@dataclass(frozen=True)
class SourceUnit:
    """One thing an ingestor parses on its own: a file, or a session folder, with the other
    files that belong to the same session wherever they lie (``companions``: e.g. a Map Task
    dialogue's annotation layers, which the release keeps in one folder per layer)."""

    path: Path
    kind: str  # e.g. "graph_file", "session_dir", "unknown_file"
    companions: tuple[Path, ...] = ()
    #: Files beside the unit that its reader opens too but that are not parsed as its own
    #: (a GMMT dialogue's annotations): fingerprinted with it, so an edit to one is seen
    reads: tuple[Path, ...] = ()
    #: (start, end, first line number): the bytes [start, end) of ``path`` that the unit
    #: is, cut at line ends: a slice of a large JSON Lines file, so that several workers
    #: parse one file (:func:`line_slices`)
    span: tuple[int, int, int] | None = None

    def files(self) -> tuple[Path, ...]:
        """Every path the unit reads (folders are walked by the manifest)."""
        return (self.path, *self.companions, *self.reads)


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
    #: Whether a unit reads nothing but its own files (and companions): then a re-ingest
    #: reads only the units whose files changed (graphlake.lake.manifest). Off by default:
    #: a unit may read another's files (a task list beside its traces).
    independent_units: bool = False
    #: Whether ``parse_many`` spends its time in native code that releases the GIL (a
    #: compiled mapping runs in DuckDB): then the units of one ingest are parsed by threads
    #: of this process, with no worker process to start and no rows to pickle back. Such an
    #: ingestor keeps no per-call state on itself and gets its DuckDB connection from
    #: :func:`graphlake.ingest.vectorised.connection`, which is per thread.
    parse_in_threads: bool = False

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
    out: list[Path] = []
    folders = [path]
    while folders:  # links to folders are not followed; only a link's own target is checked
        with os.scandir(folders.pop()) as entries:
            for e in entries:
                if e.is_dir(follow_symlinks=False):
                    folders.append(Path(e.path))
                elif e.name.startswith("."):
                    continue
                elif e.is_symlink():
                    p = Path(e.path)
                    if p.is_file() and within(p, path):
                        out.append(p)
                elif e.is_file(follow_symlinks=False):  # a regular file below the folder
                    out.append(Path(e.path))
    return sorted(out, key=path_order)


def path_order(p: Path) -> tuple[str, ...]:
    """The order of ``sorted(paths)`` (POSIX paths compare by their parts), compared in C
    instead of by ``Path.__lt__`` (a tenth of the time over 10,000 files)."""
    return p.parts


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
    path: Path,
    bad_line: Callable[[int, str, bytes], None],
    span: tuple[int, int, int] | None = None,
) -> Iterator[tuple[int, Any]]:
    """Stream a JSON Lines file as (line number, value); blank lines are skipped and a line
    that is not JSON goes to ``bad_line(lineno, reason, raw)`` instead. With ``span`` (a
    :func:`line_slices` unit's), only those bytes, numbered as lines of the whole file."""
    for lineno, value, _ in json_lines_with_bytes(path, bad_line, span):
        yield lineno, value


def json_lines_with_bytes(
    path: Path,
    bad_line: Callable[[int, str, bytes], None],
    span: tuple[int, int, int] | None = None,
) -> Iterator[tuple[int, Any, bytes]]:
    """:func:`json_lines`, each value with the bytes of its line (for a reader that hands
    some lines on as they are)."""
    with Path(path).open("rb") as fh:
        lines: Iterable[bytes] = fh
        first = 1
        if span is not None:
            start, end, first = span
            fh.seek(start)
            lines = _lines_within(fh, end - start)
        for lineno, line in enumerate(lines, first):
            if not line.strip():
                continue
            try:
                yield lineno, load_json(line), line
            except ValueError as exc:
                bad_line(lineno, f"not valid JSON ({exc})", line)


#: A JSON Lines file this large is cut into slices of at least SLICE_BYTES (line_slices)
SLICE_MIN_BYTES = 4 << 20
SLICE_BYTES = 1 << 20


def line_slices(units: list[SourceUnit], kind: str) -> list[SourceUnit]:
    """``units``, with each of ``kind`` whose file holds SLICE_MIN_BYTES or more cut at line
    ends into slices (:attr:`SourceUnit.span`: four a core at most, of SLICE_BYTES at least),
    so that worker processes share one large file as they share many small ones. Only for
    formats whose lines are read independently of each other (a MARBLE task or result log a
    line). The cut reads the file once, counting lines, so each slice knows the number of
    its first line."""
    out: list[SourceUnit] = []
    cores = max(1, min(os.cpu_count() or 1, 8))
    for u in units:
        size = u.path.stat().st_size if u.kind == kind and u.path.is_file() else 0
        if size < SLICE_MIN_BYTES:
            out.append(u)
            continue
        pieces = max(2, min(4 * cores, size // SLICE_BYTES))
        with u.path.open("rb") as fh:
            spans = _cut_at_lines(fh, size, [size * k // pieces for k in range(1, pieces)])
        out.extend(replace(u, span=span) for span in spans)
    return out


def _cut_at_lines(
    fh, size: int, targets: list[int], block_size: int = 1 << 20
) -> list[tuple[int, int, int]]:
    """(start, end, number of the first line) of slices of ``fh`` that end at the first line
    end at or after each target offset; one pass over the file in blocks."""
    spans: list[tuple[int, int, int]] = []
    start, first, lines, offset, t = 0, 1, 0, 0, 0  # lines: line ends before ``offset``
    while t < len(targets) and (block := fh.read(block_size)):
        while t < len(targets):
            at = max(targets[t], start) - offset
            if at >= len(block):
                break
            nl = block.find(b"\n", at)
            if nl < 0:  # no line end after the target in this block: the next one's first
                targets[t] = offset + len(block)
                break
            cut = offset + nl + 1
            if cut >= size:
                t = len(targets)
                break
            spans.append((start, cut, first))
            start, first = cut, 1 + lines + block.count(b"\n", 0, nl + 1)
            t += 1
        lines += block.count(b"\n")
        offset += len(block)
    spans.append((start, size, first))
    return spans


def _lines_within(fh, size: int) -> Iterator[bytes]:
    """The lines of ``fh`` from where it stands, for ``size`` bytes (a slice ends at a line
    end), streamed as a whole file is: never more than a line in memory."""
    for line in fh:
        yield line
        size -= len(line)
        if size <= 0:
            return


def parse_isolated(
    parse: Callable[[SourceUnit, Emitter], None],
    unit: SourceUnit,
    out: EmitterBase,
    index: int,
    undo: Callable[[], None] | None = None,
) -> None:
    """Parse one unit so that whatever its reader raises (a bug, a RecursionError on absurd
    nesting, a library error) rejects that unit alone and the run goes on. ``undo`` forgets
    what the reader collected of the unit outside the emitter (rows batched across units)."""
    out.unit = index
    try:
        parse(unit, out)
    except Exception as exc:  # noqa: BLE001 - any failure of one file must not end the run
        if undo is not None:
            undo()
        out.fail_unit(index, unit, exc)
