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
from collections import OrderedDict
from dataclasses import dataclass, field
from threading import Lock

from graphlake.query.connection import Connection

_STEPS = ("SELECT step_id, ordinal, badge, name, action, t_start, t_end FROM steps "
          "WHERE corpus = $c AND session_id = $s ORDER BY ordinal, step_id")
_OCCURRENCES = (
    "SELECT o.node_id, o.seq, o.t_start, o.t_end, n.step_id, n.actor_type, n.actor, n.label, "
    "n.detail, n.local_id FROM node_occurrences o JOIN nodes n ON n.corpus = o.corpus "
    "AND n.session_id = o.session_id AND n.node_id = o.node_id "
    "WHERE o.corpus = $c AND o.session_id = $s ORDER BY o.t_start, o.node_id, o.seq")
_NODES_WITHOUT_TIME = (
    "SELECT node_id, step_id, actor_type, actor, label, detail, local_id, t_start, t_end "
    "FROM nodes WHERE corpus = $c AND session_id = $s")
_EDGES = ("SELECT src, dst, kind FROM edges WHERE corpus = $c AND session_id = $s "
          "AND level = 'action' ORDER BY edge_id")
_EVENTS = ("SELECT event_id, seq, t, t_end, actor, actor_type, kind, channel, initiator, "
           "request_id, status, node_id, step_id, text, payload FROM events "
           "WHERE corpus = $c AND session_id = $s ORDER BY t NULLS LAST, seq, event_id")
_SESSION = ("SELECT title, goal, domain, condition, split, attrs FROM sessions "
            "WHERE corpus = $c AND session_id = $s")
_MEDIA = ("SELECT media_id, kind, duration_s, fps, width, height FROM media "
          "WHERE corpus = $c AND session_id = $s ORDER BY media_id")
_MENTAL_MODELS = ("SELECT target_id, label, text FROM annotations WHERE corpus = $c "
                  "AND session_id = $s AND kind = 'mental_model' ORDER BY annotation_id")
_PARTICIPANTS = ("SELECT participant_id, kind, role, name, persona FROM participants "
                 "WHERE corpus = $c AND session_id = $s ORDER BY participant_id")


@dataclass
class SessionData:
    corpus: str
    session_id: str
    info: dict
    steps: list[dict]
    occurrences: list[dict]
    edges: list[dict]
    events: list[dict]
    media: list[dict]
    participants: list[dict]
    mental_models: list[dict] = field(default_factory=list)
    _by_step: dict = field(default_factory=dict, repr=False)

    @property
    def goal(self) -> str:
        return self.info.get("goal") or self.info.get("title") or ""

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
        return [e for e in self.events
                if e["kind"] == "message" and e["t"] is not None and t0 <= e["t"] < cutoff]

    def events_before(self, cutoff_seq: int | None = None, cutoff_t: float | None = None):
        """Events strictly before an event (by order) or a time."""
        out = []
        for e in self.events:
            if cutoff_t is not None and (e["t"] is None or e["t"] >= cutoff_t):
                continue
            if cutoff_seq is not None and not (e["seq"] is not None and e["seq"] < cutoff_seq):
                continue
            out.append(e)
        return out


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
    info = con.rows(_SESSION, p)
    if not info:
        return None
    occurrences = con.rows(_OCCURRENCES, p)
    if not occurrences:  # corpora whose nodes carry their times on the node row only
        occurrences = [{**n, "seq": 0} for n in con.rows(_NODES_WITHOUT_TIME, p)]
    return SessionData(corpus, session_id, info[0], con.rows(_STEPS, p), occurrences,
                       con.rows(_EDGES, p), con.rows(_EVENTS, p), con.rows(_MEDIA, p),
                       con.rows(_PARTICIPANTS, p),
                       con.rows(_MENTAL_MODELS, p) if corpus == "almanac" else [])


class SessionCache:
    """The most recently used sessions of one connection version (an LRU of SessionData)."""

    def __init__(self, con: Connection, size: int = 512):
        self.con = con
        self.size = size
        self._items: OrderedDict = OrderedDict()
        self._lock = Lock()

    def get(self, corpus: str, session_id: str) -> SessionData | None:
        key = (self.con.version, corpus, session_id)
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
        data = load_session(self.con, corpus, session_id)
        with self._lock:
            self._items[key] = data
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return data
