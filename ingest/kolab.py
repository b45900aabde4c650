"""Kolab ingestor: workflow graph JSON (Kolab paper, appendix A.5) plus optional side files.

PATH may be one graph JSON, one session folder, or a folder holding either (searched
recursively). A session folder is any folder with a ``graph.json``; its side files are read by
:mod:`graphlake.ingest.kolab_session` (layout in ``docs/kolab-layout.md``). Runs of bare graph
files go through the vectorised reader (:mod:`graphlake.ingest.kolab_fast`); each file it
hands back, and every other unit, through :class:`~graphlake.ingest.kolab_graph.GraphParser`;
a graph too large to hold whole (past ``$GRAPHLAKE_MAX_FILE_BYTES``) through
:mod:`~graphlake.ingest.kolab_stream`.
"""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from graphlake.config import max_file_bytes
from graphlake.ingest import register
from graphlake.ingest.base import (
    Emitter,
    Ingestor,
    SourceUnit,
    head_bytes,
    load_json,
    read_whole_or_reject,
    reject_encoding,
    reject_file,
    repair_utf8,
    within,
)
from graphlake.ingest.kolab_graph import GraphParser, ParsedGraph
from graphlake.ingest.sniff import is_atif
from graphlake.ingest.vectorised import parse_batched

GRAPH_FILE = "graph.json"
FAST_BATCH = 4000  # graph files per vectorised batch

VIDEO_EXT = {".mp4", ".mov", ".webm", ".mkv", ".avi"}


def _convert_graphs(units: list[SourceUnit], out: Emitter, first: int) -> list[int]:
    """A run of graph files through the vectorised reader; the positions it hands back."""
    from graphlake.ingest.kolab_fast import read_batch

    batch = read_batch([u.path for u in units], out.corpus)
    for name, table in batch.tables.items():
        unit = pc.add(table.column("_idx"), first).cast(pa.int32())
        out.rows(name, table.drop_columns(["_idx"]).append_column("_unit", unit))
    return batch.fallback


@register("kolab")
class KolabIngestor(Ingestor):
    """Kolab workflow graphs: a graph JSON, a session folder, or a folder of either."""

    name = "kolab"
    independent_units = True  # a graph file or a session folder reads nothing else
    help = (
        "Kolab workflow graph JSON (paper appendix A.5); PATH is a graph .json, a session "
        "folder with graph.json and optional side files, or a folder of either."
    )

    def units(self, path: Path) -> list[SourceUnit]:
        path = Path(path)
        if not path.exists():
            raise FileNotFoundError(
                f"{path} does not exist; give a graph .json file, a session "
                "folder with graph.json, or a folder of either"
            )
        if path.is_file():
            return [SourceUnit(path, "graph_file")]
        if (path / GRAPH_FILE).is_file():
            return [SourceUnit(path, "session_dir")]
        out: list[SourceUnit] = []
        self._walk(path, path, out)
        return out

    def _walk(self, folder: Path, top: Path, out: list[SourceUnit]) -> None:
        """``folder``'s files in name order, then its folders' (links to folders are not
        followed): a folder holding graph.json is one session unit. Only a link's target is
        checked to stay inside ``top``; resolving every path cost 0.7 s a re-ingest of
        26,525 files."""
        with os.scandir(folder) as it:
            entries = sorted(it, key=lambda e: e.name)
        files = [e for e in entries if not e.is_dir()]
        if folder != top and any(e.name == GRAPH_FILE for e in files):
            out.append(SourceUnit(folder, "session_dir"))
            return
        for e in files:
            if e.name.startswith("."):
                continue
            p = folder / e.name
            if e.is_symlink() and not within(p, top):
                continue
            kind = "graph_file" if e.name.lower().endswith(".json") else "unknown_file"
            out.append(SourceUnit(p, kind))
        for e in entries:
            if e.is_dir() and not e.is_symlink() and not e.name.startswith("."):
                self._walk(folder / e.name, top, out)

    def parse_many(self, units: list[SourceUnit], start: int, out: Emitter, tick=None) -> None:
        """Parse ``units`` (numbered from ``start``): runs of bare graph files go through the
        vectorised reader in batches; what it hands back, and everything else, through
        :meth:`parse`."""
        parse_batched(
            units,
            start,
            out,
            tick,
            lambda u: u.kind == "graph_file" and u.path.suffix.lower() == ".json",
            _convert_graphs,
            self.parse,
            FAST_BATCH,
        )

    def parse(self, unit: SourceUnit, out: Emitter) -> None:
        if unit.kind == "session_dir":
            from graphlake.ingest.kolab_session import parse_session_dir

            parse_session_dir(self, unit.path, out)
        elif unit.kind == "graph_file":
            if unit.path.suffix.lower() != ".json":
                self.reject_file(out, unit.path, "the file is not a .json Kolab graph")
                return
            self.parse_graph_file(unit.path, out, None)
        else:
            self.reject_file(
                out,
                unit.path,
                "not a Kolab graph: expected a .json file or a "
                "session folder with graph.json (see docs/kolab-layout.md)",
            )

    @staticmethod
    def _repaired(path: Path, data: bytes, out: Emitter):
        """The graph read with its bytes that are not UTF-8 as U+FFFD, and one reject saying
        where they were (one bad byte in one label lost the whole session); None when that
        is not what was wrong."""
        fixed, replaced, first = repair_utf8(data)
        if not replaced:
            return None
        try:
            obj = load_json(fixed)
        except ValueError:
            return None
        reject_encoding(out, path, "nodes", replaced, first, "the graph")
        return obj

    @staticmethod
    def reject_file(out: Emitter, path: Path, reason: str, table: str = "sessions") -> None:
        reject_file(out, path, table, reason, head_bytes(path) if path.is_file() else str(path))

    def parse_graph_file(
        self, path: Path, out: Emitter, meta: dict | None, fallback_sid: str | None = None
    ) -> ParsedGraph | None:
        if path.stat().st_size > max_file_bytes():  # too large to hold whole: streamed
            return self.stream_graph_file(path, out, meta, fallback_sid or path.stem)
        data = read_whole_or_reject(path, out, "sessions")
        if data is None:
            return None
        try:
            obj = load_json(data)
        except ValueError as exc:
            obj = self._repaired(path, data, out)
            if obj is None:
                self.reject_file(out, path, f"not valid JSON ({exc}); fix the syntax and re-ingest")
                return None
        if is_atif(obj):
            # Harbor's trajectories also have `steps` and `session_id`: not a Kolab graph
            self.reject_file(
                out,
                path,
                f"this is a Harbor ATIF trajectory ({obj['schema_version']}), not a Kolab "
                "workflow graph: ingest it with `graphlake ingest harbor_atif` (or `ingest auto`)",
            )
            return None
        return GraphParser(out, str(path)).parse(obj, fallback_sid or path.stem, meta)

    def stream_graph_file(
        self, path: Path, out: Emitter, meta: dict | None, fallback_sid: str
    ) -> ParsedGraph | None:
        """A graph past ``$GRAPHLAKE_MAX_FILE_BYTES``, read as a stream with bounded memory
        (:mod:`~graphlake.ingest.kolab_stream`); one the full rules must judge is a reject
        saying what was found and how to have it read whole."""
        from graphlake.ingest.kolab_stream import NotStreamable, StreamedGraph, stream_graph

        limit = max_file_bytes()
        staged: list[tuple[str, pa.Table]] = []
        try:
            for item in stream_graph(path, out.corpus, fallback_sid):
                if isinstance(item, StreamedGraph):
                    streamed = item
                elif item[0] in ("sessions", "participants"):
                    staged.append(item)  # one row each: meta is applied below
                else:
                    self._emit_rows(out, *item)
        except NotStreamable as exc:
            self.reject_file(
                out,
                path,
                f"the graph is {path.stat().st_size:,} bytes, over the {limit:,}-byte limit "
                "for reading a file whole ($GRAPHLAKE_MAX_FILE_BYTES), so it was streamed; "
                "a streamed graph must be exactly in the paper's format, and this one is not "
                f"({exc}). Fix that record, split the session, or raise the limit (reading "
                "whole takes about 25 times the file's size in memory) to have every record "
                "judged on its own",
            )
            return None
        parser = GraphParser(out, str(path))
        parser.sid = streamed.graph.session_id
        for name, table in staged:
            rows = table.drop_columns(["_idx"]).to_pylist()
            for row in rows:
                if name == "sessions":
                    row.update(parser.session_fields(streamed.extra, meta or {}))
                elif row["kind"] == "human":
                    row["persona"] = parser.persona(meta or {})
                row.pop("corpus", None)
                out.row(name, row)
        return streamed.graph

    @staticmethod
    def _emit_rows(out: Emitter, name: str, table: pa.Table) -> None:
        unit = pa.repeat(pa.scalar(out.unit, pa.int32()), table.num_rows)
        out.rows(name, table.drop_columns(["_idx"]).append_column("_unit", unit))
