"""A mapping as an ingestor: the files of its format, read in batches into one relation and
converted by the compiled plan in DuckDB; whatever a batch raises, its files are parsed one
by one so that one file's failure is its own reject."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import orjson
import pyarrow as pa

from graphlake.ingest.base import (
    Emitter,
    EmitterBase,
    Ingestor,
    RecordError,
    SourceUnit,
    file_units,
    head_bytes,
    parse_isolated,
    reject_encoding,
    to_json,
)
from graphlake.ingest.mapping.compile import Plan, compile_mapping
from graphlake.ingest.mapping.run import execute
from graphlake.ingest.mapping.sources import _SUFFIX, Records, read_file
from graphlake.ingest.mapping.spec import Mapping
from graphlake.ingest.vectorised import canonical, connection

#: bytes of source files converted in one DuckDB pass
BATCH_BYTES = 64 << 20
BATCH_FILES = 2_000


def _canonical_text(text: str | None) -> str:
    """JSON text as graphlake writes it everywhere (compact, keys sorted: equal values, equal
    text); anything that is not JSON as it is."""
    if not text:
        return ""
    try:
        return to_json(orjson.loads(text))
    except (orjson.JSONDecodeError, RecordError):
        return text


def canonical_json(column: pa.ChunkedArray) -> pa.Array:
    """A column of JSON texts in graphlake's canonical form (see :func:`_canonical_text`)."""
    return pa.array(
        [None if v is None else _canonical_text(v) for v in column.to_pylist()], pa.string()
    )


class MappingIngestor(Ingestor):
    """Reads the files of one mapping's format into the canonical tables."""

    independent_units = True
    parse_in_threads = True  # the plan runs in DuckDB, which releases the GIL

    def __init__(self, mapping: Mapping):
        self.mapping = mapping
        self.name = mapping.name
        self.help = mapping.description
        self._plan: Plan | None = None

    @property
    def plan(self) -> Plan:
        if self._plan is None:
            self._plan = compile_mapping(self.mapping)
        return self._plan

    def units(self, path: Path) -> list[SourceUnit]:
        fmt = self.mapping.source["format"]
        kinds = {s: fmt for s in _SUFFIX[fmt]}
        kinds[".zip"] = fmt
        units = []
        for u in file_units(path, kinds, f"a {fmt} file of the {self.name} format"):
            name = u.path.name.lower()
            if u.kind == "other" and any(name.endswith(s) for s in _SUFFIX[fmt]):
                u = SourceUnit(u.path, fmt)  # a double suffix such as .traj.json
            units.append(u)
        return units

    def parse(self, unit: SourceUnit, out: Emitter) -> None:
        self._convert([unit], out, out.unit)

    def parse_many(
        self,
        units: list[SourceUnit],
        start: int,
        out: EmitterBase,
        tick: Callable[[SourceUnit, int], None] | None = None,
    ) -> None:
        i = 0
        while i < len(units):
            j, size = i, 0
            while j < len(units) and j - i < BATCH_FILES and (j == i or size < BATCH_BYTES):
                try:
                    size += units[j].path.stat().st_size
                except OSError:
                    pass
                j += 1
            batch = units[i:j]
            try:
                self._convert(batch, out, start + i)
            except Exception:  # noqa: BLE001 - then each file alone, each failure its own reject
                for k, unit in enumerate(batch):
                    parse_isolated(self.parse, unit, out, start + i + k)
            if tick:
                tick(batch[-1], len(batch))
            i = j

    def _convert(self, units: list[SourceUnit], out, first: int) -> None:
        """Read ``units`` into one relation and run the plan; nothing is emitted until the
        plan has run, so a batch that raises leaves no rows behind for the one-by-one retry."""
        fmt = self.mapping.source["format"]
        records = Records()
        for k, unit in enumerate(units):
            if unit.kind == "other":
                records.unreadable.append(
                    (
                        first + k,
                        str(unit.path),
                        f"not a {fmt} file: the {self.name} mapping reads "
                        f"{', '.join(_SUFFIX[fmt])} files (and .zip archives of them)",
                        head_bytes(unit.path),
                    )
                )
                continue
            read_file(unit.path, first + k, fmt, records, self.mapping.source)
        self.convert_records(records, out)

    def convert_records(self, records: Records, out) -> None:
        """Run the plan over ``records`` (gathered by this ingestor, or by a reader that hands
        some of its records to a mapping) and emit the rows and rejects; nothing is emitted
        until the plan has run."""
        tables: dict[str, pa.Table] = {}
        rejects: list[dict] = []
        if len(records):
            con = connection("SET TimeZone = 'UTC'")
            tables, rejects = execute(self.plan, con, records.table())
        for unit_no, name, reason, raw in records.unreadable:
            out.unit = unit_no
            out.reject(
                source_file=name,
                target_table="sessions",
                record_kind="file",
                record_ref="$",
                reason=reason,
                raw=raw,
            )
        for table, rows in tables.items():
            if rows.num_rows:
                self._emit(out, table, rows)
        for r in rejects:
            out.unit = r["_unit"]
            out.reject(
                source_file=r["_file"],
                target_table=r["table"],
                record_kind=r["kind"],
                record_ref=r["ref"],
                reason=r["reason"],
                raw=_canonical_text(r["raw"]) if r["kind"] != "line" else r["raw"] or "",
                session_id=r["session_id"],
            )
        for unit_no, name, replaced, offset in records.repaired:
            out.unit = unit_no
            reject_encoding(
                out, Path(name.split("!", 1)[0]), "sessions", replaced, offset, "every record"
            )

    def _emit(self, out, table: str, rows: pa.Table) -> None:
        keep = [c for c in rows.column_names if not c.startswith("_") or c == "_unit"]
        rows = rows.select(keep)
        if "attrs" in rows.column_names:
            i = rows.column_names.index("attrs")
            rows = rows.set_column(i, "attrs", canonical_json(rows.column(i)))
        rows = rows.append_column("corpus", pa.array([self.name] * rows.num_rows, pa.string()))
        out.rows(table, canonical(table, rows))
