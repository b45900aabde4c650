"""Files into record texts: the one relation (``src``) every compiled mapping reads.

JSON documents are one record each; JSON Lines are split at line ends (blank lines skipped,
each line numbered as in the file); CSV and Parquet rows become JSON objects in DuckDB; a zip
is read member by member, each member's declared size checked against the file limit before
it is inflated, and the inflated bytes counted as they come. Bytes that are not UTF-8 are read
as U+FFFD and said so in one reject, so one bad byte does not cost a file.
"""

from __future__ import annotations

import fnmatch
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from graphlake.config import max_file_bytes
from graphlake.errors import InputLimitError
from graphlake.ingest.base import head_bytes, read_whole, repair_utf8

#: members of one zip read at most (a zip of a million empty members is not a corpus)
MAX_ZIP_MEMBERS = 10_000

SRC_SCHEMA = pa.schema(
    [
        pa.field("_unit", pa.int32()),
        pa.field("_file", pa.string()),
        pa.field("_stem", pa.string()),
        pa.field("_line", pa.int64()),
        pa.field("_text", pa.string()),
    ]
)

_SUFFIX = {
    "json": (".json",),
    "jsonl": (".jsonl", ".ndjson", ".jsonl.txt"),
    "csv": (".csv", ".tsv"),
    "parquet": (".parquet",),
}


@dataclass
class Records:
    """Columns of ``src`` being gathered for a batch, and what could not be read."""

    unit: list[int] = field(default_factory=list)
    file: list[str] = field(default_factory=list)
    stem: list[str] = field(default_factory=list)
    line: list[int] = field(default_factory=list)
    text: list[str] = field(default_factory=list)
    #: (unit, file, reason, raw) of files that could not be read at all
    unreadable: list[tuple[int, str, str, bytes | str]] = field(default_factory=list)
    #: (unit, file, replaced byte count, offset of the first)
    repaired: list[tuple[int, str, int, int | None]] = field(default_factory=list)
    #: whole files already cut into lines (JSON Lines), as Arrow tables of SRC_SCHEMA
    chunks: list[pa.Table] = field(default_factory=list)

    def add(self, unit: int, file: str, stem: str, line: int, text: str) -> None:
        self.unit.append(unit)
        self.file.append(file)
        self.stem.append(stem)
        self.line.append(line)
        self.text.append(text)

    def __len__(self) -> int:
        return len(self.text) + sum(c.num_rows for c in self.chunks)

    def table(self) -> pa.Table:
        return pa.concat_tables([self._listed(), *self.chunks])

    def _listed(self) -> pa.Table:
        return pa.Table.from_arrays(
            [
                pa.array(self.unit, pa.int32()),
                pa.array(self.file, pa.string()),
                pa.array(self.stem, pa.string()),
                pa.array(self.line, pa.int64()),
                pa.array(self.text, pa.string()),
            ],
            schema=SRC_SCHEMA,
        )


def stem(name: str) -> str:
    """A file's name without its format suffixes (``a.traj.json`` -> ``a``)."""
    base = name.rsplit("/", 1)[-1]
    for suffix in (
        ".traj.json",
        ".jsonl.txt",
        ".json",
        ".jsonl",
        ".ndjson",
        ".csv",
        ".tsv",
        ".parquet",
        ".traj",
    ):
        if base.lower().endswith(suffix):
            return base[: -len(suffix)]
    return base.rsplit(".", 1)[0] if "." in base else base


def _text(data: bytes, unit: int, name: str, out: Records) -> str:
    fixed, replaced, first = repair_utf8(data)
    if replaced:
        out.repaired.append((unit, name, replaced, first))
    return fixed.decode("utf-8")


def _lines(data: bytes, unit: int, name: str, s: str, out: Records) -> pa.Table:
    """A JSON Lines file as one row per line, cut where the newlines are (NumPy finds them;
    the Arrow strings point into the file's bytes, no Python string per line). Each line
    keeps its line end (JSON allows the whitespace); blank lines are dropped in SQL."""
    import numpy as np

    fixed, replaced, first = repair_utf8(data)
    if replaced:
        out.repaired.append((unit, name, replaced, first))
    if fixed and not fixed.endswith(b"\n"):
        fixed += b"\n"
    buf = np.frombuffer(fixed, dtype=np.uint8)
    ends = np.flatnonzero(buf == 10) + 1
    offsets = np.concatenate([np.zeros(1, dtype=np.int64), ends]).astype(np.int64)
    n = len(ends)
    if offsets[-1] >= 2**31:
        text = pa.LargeStringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(fixed)).cast(
            pa.string()
        )
    else:
        text = pa.StringArray.from_buffers(
            n, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(fixed)
        )
    return pa.Table.from_arrays(
        [
            pa.array(np.full(n, unit, dtype=np.int32)),
            pa.array([name] * n, pa.string()),
            pa.array([s] * n, pa.string()),
            pa.array(np.arange(1, n + 1, dtype=np.int64)),
            text,
        ],
        schema=SRC_SCHEMA,
    )


def _add_bytes(fmt: str, data: bytes, unit: int, name: str, out: Records, options: dict) -> None:
    s = stem(name)
    if fmt == "json":
        out.add(unit, name, s, 1, _text(data, unit, name, out))
        return
    if fmt == "jsonl":
        out.chunks.append(_lines(data, unit, name, s, out))
        return
    # csv and parquet rows as JSON objects, converted in DuckDB
    import io

    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    from graphlake.ingest.vectorised import connection

    if fmt == "csv":
        parse = (
            pacsv.ParseOptions(delimiter=options["delimiter"]) if options.get("delimiter") else None
        )
        table = pacsv.read_csv(io.BytesIO(data), parse_options=parse)
        table = table.cast(pa.schema([pa.field(f.name, pa.string()) for f in table.schema]))
    else:
        table = pq.read_table(io.BytesIO(data))
    con = connection("SET TimeZone = 'UTC'")
    con.register("m_table_rows", table)
    try:
        rows = con.sql("SELECT to_json(t)::VARCHAR FROM m_table_rows t").fetchall()
    finally:
        con.unregister("m_table_rows")
    for n, (row,) in enumerate(rows, 2 if fmt == "csv" else 1):
        out.add(unit, name, s, n, row)


def read_file(path: Path, unit: int, fmt: str, out: Records, options: dict) -> None:
    """Add the records of ``path`` (a file of ``fmt``, or a zip of such members) to ``out``;
    a file that cannot be read at all goes to ``out.unreadable``."""
    name = str(path)
    try:
        if path.suffix.lower() == ".zip":
            _read_zip(path, unit, fmt, out, options)
            return
        data = read_whole(path)
    except InputLimitError as exc:
        out.unreadable.append((unit, name, str(exc), head_bytes(path)))
        return
    except OSError as exc:
        out.unreadable.append((unit, name, f"cannot read the file ({exc.strerror or exc})", b""))
        return
    try:
        _add_bytes(fmt, data, unit, name, out, options)
    except (pa.ArrowInvalid, ValueError) as exc:
        out.unreadable.append((unit, name, f"not a {fmt} file ({str(exc)[:200]})", data[:4096]))


def _read_zip(path: Path, unit: int, fmt: str, out: Records, options: dict) -> None:
    limit = max_file_bytes()
    pattern = options.get("members")
    try:
        zf = zipfile.ZipFile(path)
    except zipfile.BadZipFile as exc:
        out.unreadable.append((unit, str(path), f"not a zip file ({exc})", b""))
        return
    with zf:
        members = [
            m
            for m in zf.infolist()
            if not m.is_dir()
            and (
                fnmatch.fnmatch(m.filename, pattern)
                if pattern
                else m.filename.lower().endswith(_SUFFIX[fmt])
            )
        ]
        if len(members) > MAX_ZIP_MEMBERS:
            raise InputLimitError(
                f"{path} holds {len(members):,} members of this format; at most "
                f"{MAX_ZIP_MEMBERS:,} are read from one zip: split it"
            )
        for m in members:
            name = f"{path}!{m.filename}"
            if m.file_size > limit:
                out.unreadable.append(
                    (
                        unit,
                        name,
                        f"the member inflates to {m.file_size:,} bytes, past the "
                        f"{limit:,}-byte file limit ($GRAPHLAKE_MAX_FILE_BYTES)",
                        b"",
                    )
                )
                continue
            with zf.open(m) as fh:
                data = fh.read(limit + 1)  # a member that lies about its size stops here
            if len(data) > limit:
                out.unreadable.append(
                    (unit, name, f"the member inflates past the {limit:,}-byte file limit", b"")
                )
                continue
            try:
                _add_bytes(fmt, data, unit, name, out, options)
            except (pa.ArrowInvalid, ValueError) as exc:
                out.unreadable.append(
                    (unit, name, f"not a {fmt} member ({str(exc)[:200]})", data[:4096])
                )
