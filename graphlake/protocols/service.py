"""Instances of every protocol over one pinned lake connection: listed in id order with
cursors, fetched one by one, exported, and scored.

A protocol's instance index (id, session, target, gold) is one SQL query over the lake,
computed on first use and kept for the connection's snapshot as an Arrow table sorted by id:
pagination is a binary search on the id column, so pages never skip or repeat an instance.
An instance's context is cut from its session's rows (``SessionCache``), on demand.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from graphlake.config import DEFAULT_TIMEOUT_S
from graphlake.cursors import KeyCursor
from graphlake.protocols import scoring
from graphlake.protocols.arrow_cache import cached_table
from graphlake.protocols.session import SessionCache
from graphlake.protocols.spec import (
    ProtocolError,
    ProtocolSpec,
    UnknownProtocolError,
    needs_recording,
)
from graphlake.query.connection import Connection

MAX_PAGE = 1000
#: Instance indexes kept per lake version (one per protocol and parameter values): a client
#: cycling through parameter values evicts the least recently used, never grows memory.
MAX_INDEXES = 32
#: Index columns that hold answers: scoring reads them (``gold``), contexts never see them.
GOLD_COLUMNS = frozenset({"gold", "gold_cells"})


@dataclass
class Page:
    items: list[dict]
    next_cursor: str | None


def _id_array(ids: pa.Array) -> np.ndarray:
    """The id column as a NumPy array to binary-search. Ids are 20 hex digits: when every
    one has the same width the array is a view of the Arrow buffer (no copy, and for a
    memory-mapped index no private memory); otherwise a copy."""
    n = len(ids)
    if (
        n
        and ids.null_count == 0
        and (pa.types.is_string(ids.type) or pa.types.is_large_string(ids.type))
    ):
        width_type = np.int64 if pa.types.is_large_string(ids.type) else np.int32
        itemsize = np.dtype(width_type).itemsize
        offsets = np.frombuffer(
            ids.buffers()[1], dtype=width_type, count=n + 1, offset=ids.offset * itemsize
        )
        width = int(offsets[1] - offsets[0])
        if width > 0 and bool((np.diff(offsets) == width).all()):
            return np.frombuffer(
                ids.buffers()[2], dtype=f"S{width}", count=n, offset=int(offsets[0])
            )
    return np.asarray(ids.to_pylist(), dtype=str)


@dataclass
class _Index:
    table: pa.Table  # one row per instance, sorted by id
    corpora: frozenset  # the corpora its instances come from

    def _key(self, iid: str):
        return iid.encode() if self.ids.dtype.kind == "S" else iid

    def find(self, iid: str) -> int | None:
        key = self._key(iid)
        i = int(np.searchsorted(self.ids, key))
        return i if i < len(self.ids) and self.ids[i] == key else None

    def after(self, last: str | None) -> int:
        if last is None:
            return 0
        return int(np.searchsorted(self.ids, self._key(last), side="right"))

    def id_at(self, i: int) -> str:
        value = self.ids[i]
        return value.decode() if isinstance(value, bytes) else str(value)

    def __len__(self) -> int:
        return len(self.ids)

    def __post_init__(self):
        # one contiguous array per column: indexing it is about twice as fast as indexing a
        # chunked column
        self.table = self.table.combine_chunks()
        self.ids = (
            _id_array(self.table.column("id").chunk(0))
            if self.table.num_rows
            else np.array([], dtype=str)
        )
        self._cols = [
            (name, col.chunk(0) if col.num_chunks else col)
            for name, col in zip(self.table.column_names, self.table.columns, strict=True)
            if name not in GOLD_COLUMNS
        ]

    def row(self, i: int) -> dict:
        """Instance ``i`` as the builders see it: every index column but the gold ones."""
        return {name: col[i].as_py() for name, col in self._cols}

    @cached_property
    def recorded(self) -> _Index:
        """The instances whose session has a recording: what a video condition lists (the
        others would promise frames and hold none). Built once per index."""
        if "media_id" not in self.table.column_names:
            return self
        return _Index(self.table.filter(pc.is_valid(self.table.column("media_id"))), self.corpora)


log = logging.getLogger(__name__)


class Benchmarks:
    """Every protocol over ``con`` (its pinned snapshot)."""

    def __init__(
        self,
        con: Connection,
        *,
        session_cache: int = 1024,
        preload_rows: int = 20_000_000,
        index_timeout_s: float = DEFAULT_TIMEOUT_S,
    ):
        from graphlake.protocols import REGISTRY

        self.con = con
        self.registry = REGISTRY
        self.sessions = SessionCache(con, session_cache, preload_rows)
        self.index_timeout_s = index_timeout_s
        self._indexes: OrderedDict[tuple, _Index] = OrderedDict()
        self._building: dict[tuple, threading.Lock] = {}
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ specs
    def spec(self, pid: str) -> tuple[ProtocolSpec, object]:
        try:
            return self.registry[pid]
        except KeyError:
            raise UnknownProtocolError(
                f"unknown benchmark {pid!r}; the benchmarks are "
                f"{', '.join(self.registry)} (GET /benchmarks)"
            ) from None

    def specs(self) -> list[dict]:
        return [spec.summary() for spec, _m in self.registry.values()]

    def warm(self, stop: threading.Event | None = None) -> int:
        """Build every protocol's index for its default parameters (what an evaluator asks
        for first), most instances last; the service runs this in the background at start,
        so the first request finds the index built, or waits for the build under way instead
        of starting its own (the first kolab-1b request waited 2.5-7.7 s). A protocol whose
        index fails is left to its request, which reports why. Returns how many were built."""
        built = 0
        for spec, _m in list(self.registry.values()):
            if stop is not None and stop.is_set():
                break
            try:
                self.index(spec.id, spec.bind(None))
                built += 1
            except Exception:  # noqa: BLE001 - reported to the request that needs it
                log.debug("warming %s failed", spec.id, exc_info=True)
        return built

    # ------------------------------------------------------------------ index
    def _warm_index(self, spec: ProtocolSpec, bound: dict) -> _Index | None:
        """The protocol's index when an instance can be built without a query: the index is
        built and, where contexts are cut from session rows, its corpora are in memory."""
        idx = self._indexes.get(self._key(spec.id, bound))
        if idx is None:
            return None
        _spec, module = self.registry[spec.id]
        if module.needs_session(spec) and not all(self.sessions.in_memory(c) for c in idx.corpora):
            return None
        return idx

    def instance_if_warm(
        self, pid: str, iid: str, *, condition: str | None = None, params: dict | None = None
    ) -> dict | None:
        """``instance(...)`` when it needs no query, else None: the server builds these on
        its event loop and hands the others to a thread."""
        spec, _m = self.spec(pid)
        bound = spec.bind(params)
        idx = self._warm_index(spec, bound)
        if idx is None:
            return None
        condition = spec.check_condition(condition)
        i = idx.find(iid)
        if i is None:
            self._missing(pid, iid)
        return self._build(spec, idx.row(i), condition, bound)

    def _key(self, pid: str, params: dict) -> tuple:
        return (self.con.version, pid, tuple(sorted(params.items())))

    def index(self, pid: str, params: dict) -> _Index:
        """The protocol's instance index for ``params``: built once per key (concurrent first
        requests wait for the one build), under the query time limit, and kept in an LRU of
        :data:`MAX_INDEXES` for this lake version."""
        spec, module = self.spec(pid)
        key = self._key(pid, params)
        with self._lock:
            found = self._indexes.get(key)
            if found is not None:
                self._indexes.move_to_end(key)
                return found
            building = self._building.setdefault(key, threading.Lock())
        with building:
            with self._lock:
                found = self._indexes.get(key)
            if found is not None:
                return found
            try:
                idx = self._build_index(pid, spec, module, params)
            finally:
                with self._lock:
                    self._building.pop(key, None)
            with self._lock:
                for stale in [k for k in self._indexes if k[0] != self.con.version]:
                    del self._indexes[stale]
                self._indexes[key] = idx
                while len(self._indexes) > MAX_INDEXES:
                    self._indexes.popitem(last=False)
        return idx

    def _build_index(self, pid: str, spec: ProtocolSpec, module, params: dict) -> _Index:
        inner, bind = module.targets_sql(spec, params)
        sql = (
            f"SELECT left(sha256(concat_ws(chr(31), $__pid, t.corpus, t.session_id, "
            f"t.target)), 20) AS id, t.* FROM ({inner}) AS t ORDER BY id"
        )
        params = {**bind, "__pid": pid}

        def build() -> pa.Table:
            return self.con.execute(
                sql, params, max_rows=None, timeout_s=self.index_timeout_s
            ).table

        recipe = f"{sql}\0{json.dumps(params, sort_keys=True, default=str)}"
        table = cached_table(self.con.lake, self.con.version, f"index-{pid}", recipe, build)
        return _Index(table, frozenset(table.column("corpus").unique().to_pylist()))

    # ------------------------------------------------------------------ instances
    def instances(
        self,
        pid: str,
        *,
        condition: str | None = None,
        params: dict | None = None,
        limit: int = 100,
        cursor: str | None = None,
    ) -> Page:
        spec, _m = self.spec(pid)
        bound = spec.bind(params)
        condition = spec.check_condition(condition)
        idx = self.listed(self.index(pid, bound), condition)
        pages = KeyCursor(f"instances of {pid}")
        last = pages.decode(cursor)
        start = idx.after(last[0] if last else None)
        limit = max(1, min(limit, MAX_PAGE))
        stop = min(start + limit, len(idx))
        items = [self._build(spec, idx.row(i), condition, bound) for i in range(start, stop)]
        nxt = pages.encode([idx.id_at(stop - 1)]) if stop < len(idx) else None
        return Page(items, nxt)

    def instance(
        self, pid: str, iid: str, *, condition: str | None = None, params: dict | None = None
    ) -> dict:
        spec, _m = self.spec(pid)
        bound = spec.bind(params)
        condition = spec.check_condition(condition)
        idx = self.index(pid, bound)
        i = idx.find(iid)
        if i is None:
            self._missing(pid, iid)
        return self._build(spec, idx.row(i), condition, bound)

    def _missing(self, pid: str, iid: str):
        raise UnknownProtocolError(
            f"{pid} has no instance {iid!r} at lake version "
            f"{self.con.version}; list them with "
            f"GET /benchmarks/{pid}/instances"
        )

    @staticmethod
    def listed(idx: _Index, condition: str) -> _Index:
        """The instances a listing in ``condition`` holds: for a video condition only those
        whose session has a recording. Fetching another by id still works (its
        ``inputs.video.available`` is false)."""
        return idx.recorded if needs_recording(condition) else idx

    def count(self, pid: str, params: dict | None = None, condition: str | None = None) -> int:
        """How many instances ``pid`` lists (in ``condition``, when given)."""
        spec, _m = self.spec(pid)
        idx = self.index(pid, spec.bind(params))
        return len(self.listed(idx, spec.check_condition(condition)) if condition else idx)

    def recorded(self, pid: str, params: dict | None = None) -> int | None:
        """How many instances have a recording, for a protocol with a video condition."""
        spec, _m = self.spec(pid)
        if not any(needs_recording(c) for c in spec.conditions):
            return None
        return len(self.index(pid, spec.bind(params)).recorded)

    def _build(self, spec: ProtocolSpec, ref: dict, condition: str, params: dict) -> dict:
        _spec, module = self.spec(spec.id)
        data = (
            self.sessions.get(ref["corpus"], ref["session_id"])
            if module.needs_session(spec)
            else None
        )
        prompt, inputs = module.build(spec, data, ref, condition, params)
        return {
            "id": ref["id"],
            "protocol": spec.id,
            "condition": condition,
            "spec_hash": spec.hash,
            "corpus": ref["corpus"],
            "session_id": ref["session_id"],
            "lake_version": self.con.version,
            "params": params,
            "prompt": prompt,
            "inputs": inputs,
        }

    # ------------------------------------------------------------------ scoring
    def gold(self, pid: str, params: dict | None = None) -> dict[str, dict]:
        """id -> the instance's whole index row, gold label included (for inspection and
        tests; scoring reads only the answers, see ``_answers``)."""
        spec, _m = self.spec(pid)
        return {r["id"]: r for r in self.index(pid, spec.bind(params)).table.to_pylist()}

    def _answers(self, pid: str, params: dict | None) -> dict[str, dict]:
        """id -> its gold columns: what scoring needs, without converting the contexts."""
        spec, _m = self.spec(pid)
        table = self.index(pid, spec.bind(params)).table
        table = table.select([c for c in ("id", *GOLD_COLUMNS) if c in table.column_names])
        return {r["id"]: r for r in table.to_pylist()}

    def save(
        self,
        pid: str,
        predictions: list[dict],
        params: dict | None = None,
        *,
        model: str | None = None,
        condition: str | None = None,
        name: str | None = None,
        source: str = "bench score",
        subset: bool = False,
    ) -> tuple[dict, str]:
        """Score ``predictions`` and keep the run in the lake
        (:mod:`graphlake.protocols.saved_runs`): the report and the run's id."""
        from graphlake.protocols.saved_runs import save_score

        result = self.score(pid, predictions, params, subset=subset)
        spec, _m = self.spec(pid)
        gold = self._answers(pid, params)
        classes = spec.labels or tuple(sorted({str(r["gold"]) for r in gold.values()}))
        run_id = save_score(
            self.con.lake,
            result,
            predictions,
            gold,
            classes=tuple(classes),
            rating=spec.task == "rating",
            model=model,
            condition=condition,
            params=params,
            name=name,
            source=source,
        )
        return result, run_id

    def baseline(self, pid: str, name: str, params: dict | None = None) -> list[dict]:
        """Predictions of a built-in baseline for every instance: ``majority`` (the most
        frequent gold class, Kolab's "Adopt") or ``mode`` (the most frequent rating)."""
        if name not in ("majority", "mode"):
            raise ProtocolError(f"unknown baseline {name!r}; choose majority or mode")
        rows = self._answers(pid, params)
        if not rows:
            return []
        label = scoring.majority([r["gold"] for r in rows.values()])
        return [{"id": iid, "label": label} for iid in rows]

    def score(
        self,
        pid: str,
        predictions: list[dict],
        params: dict | None = None,
        *,
        subset: bool = False,
    ) -> dict:
        """The paper's metrics of ``predictions`` against the gold. With ``subset`` only the
        instances predicted are scored (a run over part of the protocol, e.g. an inspect
        ``--limit``): the others are not listed as missing, and ``n_instances`` counts the
        instances scored (``n_protocol_instances`` all of them)."""
        spec, _m = self.spec(pid)
        rows = self._answers(pid, params)
        n_all = len(rows)
        if subset:
            asked = {str(p.get("id")) for p in predictions}
            rows = {iid: r for iid, r in rows.items() if iid in asked}
        unknown, invalid, duplicate, seen = [], [], [], {}
        for p in predictions:
            iid = str(p.get("id"))
            if iid not in rows:
                unknown.append(iid)
            elif iid in seen:
                duplicate.append(iid)
            else:
                seen[iid] = p
        missing = sorted(set(rows) - set(seen))
        out: dict = {
            "protocol": pid,
            "spec_hash": spec.hash,
            "lake_version": self.con.version,
            "n_instances": len(rows),
        }
        if subset:
            out.update({"subset": True, "n_protocol_instances": n_all})
        if spec.task == "rating":
            gold, pred = [], []
            for iid, p in seen.items():
                v = scoring.parse_rating(p.get("label"))
                if v is None:
                    invalid.append(iid)
                    continue
                gold.append(int(rows[iid]["gold"]))
                pred.append(v)
            out.update(scoring.ratings(gold, pred))
        else:
            classes = spec.labels
            if not classes:  # open label set (Almanac mental-model categories)
                classes = tuple(sorted({str(r["gold"]) for r in rows.values()}))
            gold, pred, draw = [], [], [0.0, 0]
            for iid, p in seen.items():
                label = scoring.parse_label(p.get("label"), classes)
                if label is None or label not in classes:
                    invalid.append(iid)
                    continue
                gold.append(str(rows[iid]["gold"]))
                pred.append(label)
                if spec.task == "next_action" and label == "draw" and p.get("cells"):
                    s, n = scoring.chebyshev_score(p["cells"], rows[iid].get("gold_cells"))
                    draw[0] += s
                    draw[1] += n
            out.update(scoring.classification(gold, pred, classes))
            if spec.task == "next_action":
                out["drawing_score"] = draw[0] / draw[1] if draw[1] else None
                out["drawing_cells"] = draw[1]
        out.update(
            {"unknown": unknown, "missing": missing, "invalid": invalid, "duplicate": duplicate}
        )
        return out
