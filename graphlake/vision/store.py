"""The frame and text vectors beside the lake: a LanceDB database in ``<lake>/_frames``.

Tables:

* ``frames``: one row per kept frame: ids, time, OCR text, the MiniLM vector of that text, the
  OpenCLIP vector of the picture when a model was given, the difference hash and block hash,
  a JPEG thumbnail, and the workflow state at that moment (step, active nodes, whether a human
  or an AI node was running, whether an AI episode was open), so that search filters are
  plain column predicates LanceDB applies before the vector search.
* ``frame_progress``: one row per recording whose sampling finished.
* ``texts``: node labels and details and chat turns with their MiniLM vectors, for
  ``graphlake search text``.

The models that made the vectors are recorded in each table's schema metadata; opening a
table with different models is refused rather than mixing incomparable vectors.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pyarrow as pa

from graphlake.errors import attempt_import
from graphlake.schema.duckdb_views import string_literal
from graphlake.vision.embed import ModelError

DB_DIR = "_frames"
META_TEXT = "graphlake.text_model"
META_IMAGE = "graphlake.image_model"
META_TEXT_SPEC = "graphlake.text_model_spec"  # how to load the model again (search)
META_IMAGE_SPEC = "graphlake.image_model_spec"
META_OCR = "graphlake.ocr"
META_FORMAT = "graphlake.frames_format"
FORMAT = "1"
#: Below this many rows a vector search scans exactly (recall 1.0, a few ms); from here on an
#: ANN index is built and used unless a filter leaves fewer than EXACT_MAX_ROWS rows.
ANN_MIN_ROWS = 100_000
EXACT_MAX_ROWS = 20_000


def sql_str(value) -> str:
    """A string literal for a LanceDB (DataFusion) filter, quoted by sqlglot as for DuckDB:
    both dialects write string literals the same way."""
    return string_literal(str(value))


def vector_type(dim: int) -> pa.DataType:
    return pa.list_(pa.float32(), dim)


def frames_schema(text_dim: int, image_dim: int | None, meta: dict[str, str]) -> pa.Schema:
    fields = [
        pa.field("frame_id", pa.string(), False),
        pa.field("corpus", pa.string(), False),
        pa.field("session_id", pa.string(), False),
        pa.field("media_id", pa.string(), False),
        pa.field("t", pa.float64(), False),
        pa.field("kind", pa.string()),
        pa.field("text", pa.string()),
        pa.field("ocr_score", pa.float64()),
        pa.field("text_vector", vector_type(text_dim)),
    ]
    if image_dim:
        fields.append(pa.field("image_vector", vector_type(image_dim)))
    fields += [
        pa.field("dhash", pa.int64()),
        pa.field("block_hash", pa.binary()),
        pa.field("thumbnail", pa.binary()),
        pa.field("step_id", pa.string()),
        pa.field("node_ids", pa.list_(pa.string())),
        pa.field("human_active", pa.bool_()),
        pa.field("ai_active", pa.bool_()),
        pa.field("ai_episode", pa.bool_()),
    ]
    return pa.schema(fields, metadata={k.encode(): v.encode() for k, v in meta.items()})


PROGRESS_SCHEMA = pa.schema(
    [
        pa.field("session_id", pa.string(), False),
        pa.field("media_id", pa.string(), False),
        pa.field("every", pa.float64()),
        pa.field("frames", pa.int64()),
        pa.field("decoded", pa.int64()),
        pa.field("duration_s", pa.float64()),
    ]
)


def texts_schema(dim: int, meta: dict[str, str]) -> pa.Schema:
    return pa.schema(
        [
            pa.field("text_id", pa.string(), False),
            pa.field("corpus", pa.string(), False),
            pa.field("session_id", pa.string(), False),
            pa.field("source", pa.string(), False),  # node or chat
            pa.field("ref_id", pa.string(), False),  # node_id or event_id
            pa.field("t", pa.float64()),
            pa.field("step_id", pa.string()),
            pa.field("actor_type", pa.string()),
            pa.field("text", pa.string()),
            pa.field("text_vector", vector_type(dim)),
        ],
        metadata={k.encode(): v.encode() for k, v in meta.items()},
    )


def _meta(table) -> dict[str, str]:
    raw = table.schema.metadata or {}
    return {k.decode(): v.decode() for k, v in raw.items()}


class FrameStore:
    """The LanceDB database of one lake (created on first write)."""

    def __init__(self, lake_root: str | Path):
        os.environ.setdefault("LANCEDB_LOG", "error")  # Lance's notices are not the user's
        self.lancedb = attempt_import("lancedb", "frames")
        self.path = Path(lake_root) / DB_DIR
        self._db = None

    @property
    def db(self):
        if self._db is None:
            self._db = self.lancedb.connect(str(self.path))
        return self._db

    def exists(self, name: str = "frames") -> bool:
        return self.path.is_dir() and name in self._names()

    def _names(self) -> list[str]:
        res = self.db.list_tables()
        return list(getattr(res, "tables", res))

    def table(self, name: str = "frames"):
        return self.db.open_table(name) if self.exists(name) else None

    def metadata(self, name: str = "frames") -> dict[str, str]:
        table = self.table(name)
        return _meta(table) if table is not None else {}

    def drop(self) -> None:
        """Forget every frame and text vector (``frames index --rebuild``)."""
        self._db = None
        shutil.rmtree(self.path, ignore_errors=True)

    # ------------------------------------------------------------------ writing
    def open_for_write(self, name: str, schema: pa.Schema, checked: tuple[str, ...]):
        """The table ``name``, created with ``schema`` when missing; when it exists, the
        metadata keys in ``checked`` must equal the schema's (the same models)."""
        wanted = {k.decode(): v.decode() for k, v in (schema.metadata or {}).items()}
        table = self.table(name)
        if table is None:
            return self.db.create_table(name, schema=schema)
        have = _meta(table)
        for key in checked:
            if have.get(key, "") != wanted.get(key, ""):
                what = key.removeprefix("graphlake.").replace("_", " ")
                raise ModelError(
                    f"the {name} in {self.path} were indexed with {what} "
                    f"{have.get(key) or 'none'!r}, not {wanted.get(key) or 'none'!r}; vectors "
                    "of different models cannot be searched together. Index with the same "
                    "model (--model), or start over with `graphlake frames index --rebuild`."
                )
        return table

    def progress(self) -> set[tuple[str, str]]:
        table = self.table("frame_progress")
        if table is None:
            return set()
        got = table.to_arrow().select(["session_id", "media_id"]).to_pylist()
        return {(r["session_id"], r["media_id"]) for r in got}

    def mark_done(self, row: dict) -> None:
        table = self.open_for_write("frame_progress", PROGRESS_SCHEMA, ())
        table.add(pa.Table.from_pylist([row], schema=PROGRESS_SCHEMA))

    def resume_point(self, session_id: str, media_id: str) -> tuple[float, bytes] | None:
        """Time and block hash of the last frame written for a recording, if any."""
        table = self.table("frames")
        if table is None:
            return None
        where = f"session_id = {sql_str(session_id)} AND media_id = {sql_str(media_id)}"
        rows = (
            table.search()
            .where(where)
            .select(["t", "block_hash"])
            .limit(table.count_rows(where) or 1)
            .to_arrow()
        )
        if rows.num_rows == 0:
            return None
        i = max(range(rows.num_rows), key=lambda j: rows.column("t")[j].as_py())
        return rows.column("t")[i].as_py(), rows.column("block_hash")[i].as_py()

    def ensure_indexes(self, name: str = "frames") -> list[str]:
        """Full-text index on ``text``, scalar indexes on the filter columns, and an ANN
        index per vector column once the table is large enough. Returns what was built."""
        table = self.table(name)
        if table is None or table.count_rows() == 0:
            return []
        built = []
        from lancedb.index import FTS

        if name == "frames":  # OCR drops narrow spaces ("Floorplan"): match trigrams
            fts = FTS(base_tokenizer="ngram", ngram_min_length=3, ngram_max_length=3)
        else:  # clean text: words, stemmed
            fts = FTS()
        table.create_index("text", config=fts, replace=True)
        built.append(f"fts({name}.text)")
        from lancedb.index import BTree

        existing = {ix.name: ix for ix in table.list_indices()}
        for column in ("session_id", "media_id"):
            indexed = any(column in ix.columns for ix in existing.values())
            if column in table.schema.names and not indexed:
                table.create_index(column, config=BTree())
                built.append(f"btree({name}.{column})")
        n = table.count_rows()
        if n >= ANN_MIN_ROWS:
            for column in vector_columns(table.schema):
                if any(column in ix.columns for ix in existing.values()):
                    continue
                build_ann_index(table, column, n)
                built.append(f"ann({name}.{column})")
        table.optimize()  # compacts the small appends, folds new rows into existing indexes
        return built


def vector_columns(schema: pa.Schema) -> list[str]:
    return [f.name for f in schema if pa.types.is_fixed_size_list(f.type)]


def has_ann_index(table, column: str) -> bool:
    return any(
        column in ix.columns and ix.index_type.upper().startswith("IVF")
        for ix in table.list_indices()
    )


def build_ann_index(table, column: str, n_rows: int) -> None:
    """IVF partitions with HNSW graphs over scalar-quantised vectors: the recall of a graph
    index at the memory of 8-bit codes (benchmarks/frames.py measured it against IVF_PQ)."""
    from lancedb.index import HnswSq

    partitions = max(1, int(n_rows**0.5 // 4))
    table.create_index(
        column, config=HnswSq(distance_type="cosine", num_partitions=partitions), replace=True
    )
