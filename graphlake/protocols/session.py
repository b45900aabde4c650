"""One session's rows, loaded once, and the leakage-safe slices a context is cut from.

Every context is cut from the same few lists (steps, node occurrences, action edges, events,
media) with the same rule: **an item enters a context only if it started before the cut-off**
(``t_start < cutoff`` for a node occurrence, ``t < cutoff`` for an event or chat turn), and
overlaps the window ``[t0, cutoff]``. The one exception is the protocol's own target (the AI
output a question is about), which is named in the prompt anyway. The leakage property test
(`tests/test_protocols_leakage.py`) holds every protocol to this rule.
"""

from __future__ import annotations

import json
import logging
from collections import OrderedDict
from threading import Lock

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from graphlake.errors import QueryMemoryError, QueryTimeoutError
from graphlake.protocols.arrow_cache import cached_table
from graphlake.query.connection import Connection

log = logging.getLogger(__name__)

#: What a context may need from a session: (table alias, columns, FROM, ORDER BY). Each runs
#: either for one session or, sorted by session, for a whole corpus at once (``SessionStore``).
_PARTS = {
    "info": (
        "s",
        "title, goal, domain, condition, split, attrs, (SELECT any_value(sc.goal) "
        "FROM scenarios sc WHERE sc.corpus = s.corpus AND sc.scenario_id = s.scenario_id) "
        "AS scenario_goal",
        "sessions s",
        "s.session_id",
    ),
    "steps": (
        "s",
        "step_id, ordinal, badge, name, action, t_start, t_end",
        "steps s",
        "s.ordinal, s.step_id",
    ),
    "occurrences": (
        "o",
        "o.node_id, o.t_start, o.t_end, n.step_id, n.actor_type, n.actor, n.label, n.detail",
        "node_occurrences o JOIN nodes n ON n.corpus = o.corpus AND n.session_id = o.session_id "
        "AND n.node_id = o.node_id",
        "o.t_start, o.node_id, o.seq",
    ),
    "nodes": (
        "n",
        "node_id, t_start, t_end, step_id, actor_type, actor, label, detail",
        "nodes n",
        "n.t_start, n.node_id",
    ),
    "edges": ("e", "src, dst, kind", "edges e", "e.edge_id"),
    "events": (
        "e",
        "event_id, seq, t, t_end, actor, actor_type, kind, channel, initiator, "
        "request_id, status, node_id, step_id, text, payload",
        "events e",
        "e.t NULLS LAST, e.seq, e.event_id",
    ),
    "media": ("m", "media_id, kind, duration_s, fps, width, height", "media m", "m.media_id"),
    "participants": (
        "p",
        "participant_id, kind, role, name, persona",
        "participants p",
        "p.participant_id",
    ),
    "mental_models": ("a", "target_id, label, text", "annotations a", "a.annotation_id"),
}
_EXTRA_WHERE = {"edges": "e.level = 'action'", "mental_models": "a.kind = 'mental_model'"}


def _part_sql(part: str, *, one_session: bool, session_range: bool = False) -> str:
    """One part's SELECT for one session ($s) or a corpus ($c), sorted by session; with
    ``session_range`` only the sessions in [$lo, $hi) ($hi NULL: no upper end)."""
    alias, cols, source, order = _PARTS[part]
    where = [f"{alias}.corpus = $c"]
    if one_session:
        where.append(f"{alias}.session_id = $s")
    if session_range:
        where.append(f"{alias}.session_id >= $lo AND ($hi IS NULL OR {alias}.session_id < $hi)")
    if part in _EXTRA_WHERE:
        where.append(_EXTRA_WHERE[part])
    sid = "" if one_session else f"{alias}.session_id AS _sid, "
    return (
        f"SELECT {sid}{cols} FROM {source} "
        f"WHERE {' AND '.join(where)} ORDER BY {alias}.session_id, {order}"
    )


class SessionData:
    """One session's rows by part (info, steps, occurrences, edges, events, media,
    participants, mental_models), each turned into Python rows only when first used: a graph
    context never pays for the session's events, a chat context never for its edges."""

    __slots__ = ("_by_step", "_parts", "_rows", "corpus", "session_id")

    def __init__(self, corpus: str, session_id: str, parts):
        self.corpus, self.session_id = corpus, session_id
        self._parts = parts  # part name -> list of rows, or a callable giving them
        self._rows: dict = {}
        self._by_step: dict = {}

    def _get(self, name: str) -> list[dict]:
        rows = self._rows.get(name)
        if rows is None:
            part = self._parts[name]
            rows = self._rows[name] = part() if callable(part) else part
        return rows

    info = property(lambda self: self._get("info")[0])
    steps = property(lambda self: self._get("steps"))
    occurrences = property(
        lambda self: self._get("occurrences") or self._get("nodes"),
        doc="Node occurrences (nodes that carry their time on the node "
        "row only count as one occurrence each).",
    )
    edges = property(lambda self: self._get("edges"))
    events = property(lambda self: self._get("events"))
    media = property(lambda self: self._get("media"))
    participants = property(lambda self: self._get("participants"))
    mental_models = property(
        lambda self: self._get("mental_models") if self.corpus == "almanac" else []
    )

    def as_dict(self) -> dict:
        return {name: self._get(name) for name in _PARTS}

    def __eq__(self, other) -> bool:
        return (
            isinstance(other, SessionData)
            and (self.corpus, self.session_id) == (other.corpus, other.session_id)
            and self.as_dict() == other.as_dict()
        )

    __hash__ = None

    @property
    def goal(self) -> str:
        """The session's goal, else its scenario's (tau2: the user's reason for calling),
        else its title."""
        i = self.info
        return i.get("goal") or i.get("scenario_goal") or i.get("title") or ""

    @property
    def profession(self) -> str:
        """``{PROFESSION_PHRASE}`` of the Kolab prompts: "a music producer", from the session's
        occupation (meta.json), else its domain, else "a professional"."""
        attrs = _json(self.info.get("attrs"))
        occ = (attrs.get("meta") or {}).get("occupation") if isinstance(attrs, dict) else None
        if not occ and self.info.get("domain"):
            occ = f"{self.info['domain']} professional"
        occ = occ or "professional"
        return ("an " if occ[:1].lower() in "aeiou" else "a ") + occ

    def step(self, step_id: str | None) -> dict | None:
        if not self._by_step:
            self._by_step = {s["step_id"]: s for s in self.steps}
        return self._by_step.get(step_id)

    def step_name(self, step_id: str | None) -> str:
        s = self.step(step_id)
        return (s.get("name") or s.get("badge") or step_id) if s else (step_id or "")

    # ------------------------------------------------------------------ slices
    def graph(self, t0: float, cutoff: float, keep: frozenset = frozenset()):
        """Nodes with an occurrence that overlaps [t0, cutoff] and started before ``cutoff``
        (or whose id is in ``keep``), each with the earliest such start, and the action edges
        among them."""
        nodes: dict[str, dict] = {}
        for o in self.occurrences:
            ts, te = o["t_start"], o["t_end"]
            if ts is None:
                continue
            inside = ts < cutoff and (te if te is not None else ts) >= t0
            if inside or (o["node_id"] in keep and ts <= cutoff):
                cur = nodes.get(o["node_id"])
                if cur is None or ts < cur["t_start"]:
                    nodes[o["node_id"]] = {**o, "t_start": ts}
        edges = [e for e in self.edges if e["src"] in nodes and e["dst"] in nodes]
        return list(nodes.values()), edges

    def chat(self, t0: float, cutoff: float) -> list[dict]:
        """Chat messages sent in [t0, cutoff)."""
        return [
            e
            for e in self.events
            if e["kind"] == "message" and e["t"] is not None and t0 <= e["t"] < cutoff
        ]

    def events_before(self, cutoff_seq: int) -> list[dict]:
        """Events strictly before the event at ``cutoff_seq`` in the source's order."""
        return [e for e in self.events if e["seq"] is not None and e["seq"] < cutoff_seq]


def _json(text):
    if not text:
        return {}
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return {}


def load_session(con: Connection, corpus: str, session_id: str) -> SessionData | None:
    """All rows a context may need from one session (None when the lake has no such session)."""
    p = {"c": corpus, "s": session_id}
    info = con.rows(_part_sql("info", one_session=True), p)
    if not info:
        return None
    parts = {
        name: (lambda name=name: con.rows(_part_sql(name, one_session=True), p)) for name in _PARTS
    }
    parts["info"] = info
    return SessionData(corpus, session_id, parts)


def _ranges(sids: pa.ChunkedArray) -> dict[str, tuple[int, int]]:
    """Row range of every session in a column sorted by session, from its runs (no Python
    object per row: the column of a mapped table stays on its pages)."""
    if len(sids) == 0:
        return {}
    ree = pc.run_end_encode(sids.combine_chunks())
    ends = ree.run_ends.to_numpy()
    starts = np.concatenate(([0], ends[:-1]))
    return {
        sid: (int(a), int(b))
        for sid, a, b in zip(ree.values.to_pylist(), starts, ends, strict=True)
    }


class CorpusRows:
    """Every session of one corpus, each part an Arrow table sorted by session, with the row
    range of every session: a session's rows are a slice, found in a dict, not a query."""

    #: sessions read by one statement of a build: each statement's join and sort stay far
    #: below the connection's memory limit however large the corpus (at 100,000 Kolab
    #: sessions one statement for the whole corpus needed more than 2 GiB)
    SESSIONS_PER_READ = 10_000

    def __init__(self, con: Connection, corpus: str):
        self.tables, self.ranges = {}, {}
        bounds: list[str] | None = None

        def ranges() -> list[tuple[str, str | None]]:
            nonlocal bounds
            if bounds is None:  # every SESSIONS_PER_READ-th session id, in order
                bounds = [
                    r["session_id"]
                    for r in con.rows(
                        "SELECT session_id FROM (SELECT session_id, row_number() OVER "
                        "(ORDER BY session_id) - 1 AS i FROM sessions WHERE corpus = $c) "
                        f"WHERE i % {self.SESSIONS_PER_READ} = 0 ORDER BY session_id",
                        {"c": corpus},
                    )
                ]
            lows = [""] + bounds[1:]
            return list(zip(lows, [*bounds[1:], None], strict=True))

        for name in _PARTS:
            sql = _part_sql(name, one_session=False, session_range=True)

            def build(write, sql: str = sql) -> None:
                for lo, hi in ranges():
                    con.execute(
                        sql,
                        {"c": corpus, "lo": lo, "hi": hi},
                        max_rows=None,
                        timeout_s=None,
                        consume=write,
                    )

            # built once per lake version, streamed to its file range by range (never whole
            # in memory: the serving process's data segment is capped), memory-mapped by
            # every worker and every restart
            recipe = f"{sql}\0{corpus}\0{self.SESSIONS_PER_READ}"
            table = cached_table(con.lake, con.version, f"rows-{name}", recipe, stream=build)
            self.tables[name] = table.drop_columns(["_sid"])
            self.ranges[name] = _ranges(table.column("_sid"))

    def get(self, corpus: str, session_id: str) -> SessionData | None:
        if session_id not in self.ranges["info"]:
            return None
        return SessionData(
            corpus,
            session_id,
            {name: (lambda name=name: self._rows(name, session_id)) for name in self.tables},
        )

    def _rows(self, name: str, session_id: str) -> list[dict]:
        a, b = self.ranges[name].get(session_id, (0, 0))
        return self.tables[name].slice(a, b - a).to_pylist() if b > a else []


class SessionCache:
    """Sessions for contexts, by (corpus, session_id), for one connection.

    A corpus whose rows fit ``preload_rows`` is read once, whole, into :class:`CorpusRows` on
    its first request (a few seconds for 100k sessions), after which a session costs a slice;
    a larger corpus is read one session at a time with point queries. Either way the most
    recently used sessions are kept as :class:`SessionData` (an LRU of ``size``)."""

    def __init__(self, con: Connection, size: int = 1024, preload_rows: int = 20_000_000):
        self.con = con
        self.size = size
        self.preload_rows = preload_rows
        self._items: OrderedDict = OrderedDict()
        self._corpora: dict[str, CorpusRows | None] = {}
        self._known: frozenset[str] | None = None
        self._lock = Lock()
        self._load_lock = Lock()
        self._version = con.version

    def preload(self) -> list[str]:
        """Read every corpus that fits into memory now (the server does it at startup, so
        that no request pays for it); returns the corpora held."""
        return [c for c in sorted(self.known()) if self._corpus(c) is not None]

    def in_memory(self, corpus: str) -> bool:
        """True when a session of ``corpus`` costs no query (its corpus is held)."""
        return self._corpora.get(corpus) is not None and self._version == self.con.version

    def known(self) -> frozenset[str]:
        """The corpora this snapshot has sessions of (read once per snapshot): only these are
        ever cached, so requests naming made-up corpora cost one set lookup and leave
        nothing behind."""
        known = self._known
        if known is None:
            known = self._known = frozenset(
                r["corpus"] for r in self.con.rows("SELECT DISTINCT corpus FROM sessions")
            )
        return known

    def _corpus(self, corpus: str) -> CorpusRows | None:
        if corpus in self._corpora:
            return self._corpora[corpus]
        if corpus not in self.known():
            return None
        with self._load_lock:
            if corpus not in self._corpora:
                n = self.con.rows(
                    "SELECT (SELECT count(*) FROM node_occurrences WHERE corpus = $c) + "
                    "(SELECT count(*) FROM events WHERE corpus = $c) AS n",
                    {"c": corpus},
                )
                fits = n[0]["n"] <= self.preload_rows
                self._corpora[corpus] = self._hold(corpus) if fits else None
        return self._corpora[corpus]

    def _hold(self, corpus: str) -> CorpusRows | None:
        """The corpus held whole, or None (point queries) when reading it runs past the
        connection's memory or time limits: a server that cannot hold a corpus still serves
        it, one session at a time, and says so once."""
        try:
            return CorpusRows(self.con, corpus)
        except (QueryMemoryError, QueryTimeoutError, MemoryError) as exc:
            log.warning(
                "corpus %s is served one session at a time: holding its rows failed (%s)",
                corpus,
                exc,
            )
            return None

    def get(self, corpus: str, session_id: str) -> SessionData | None:
        if self.con.version != self._version:  # the connection moved to another snapshot
            with self._load_lock, self._lock:
                self._items.clear()
                self._corpora.clear()
                self._known = None
                self._version = self.con.version
        key = (corpus, session_id)
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
        if corpus not in self.known():
            return None  # an unknown corpus: a 404 before anything is read or cached
        rows = self._corpus(corpus)
        data = (
            rows.get(corpus, session_id)
            if rows is not None
            else load_session(self.con, corpus, session_id)
        )
        if data is None:
            return None  # an unknown session is not cached either
        with self._lock:
            self._items[key] = data
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return data
