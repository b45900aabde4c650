"""Export lake data as OCEL 2.0 (object-centric event log), JSON or SQLite, so process-mining
tools such as pm4py (``pm4py.read_ocel2_json`` / ``read_ocel2_sqlite``) can read graphlake
corpora. Both files are written from one in-memory OCEL document (:func:`ocel_document`).

Objects: one ``session`` per session, one ``participant`` per participant and one ``node``
per workflow node. Events: every node occurrence (type ``human action`` / ``ai action``, with
the node's label) and every row of ``events`` (type = its kind), each related to its session
(qualifier ``session``), its actor (``actor``) and its node (``node``) when known.

OCEL needs absolute times: an event's time is the session's ``started_at`` plus its offset in
seconds, or, for sessions recorded without a start, 1970-01-01T00:00:00Z plus the offset (the
offsets, and so every duration, stay exact).
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

from graphlake.query.engine import run_sql
from graphlake.schema.duckdb_views import string_literal

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _iso(t: datetime) -> str:
    return t.astimezone(UTC).isoformat().replace("+00:00", "Z")


def export_ocel(
    lake,
    path: str | Path,
    *,
    corpus: str | None = None,
    version: int | None = None,
    fmt: str | None = None,
) -> dict:
    """Write the lake (or one corpus) as an OCEL 2.0 file; return counts written.

    ``fmt`` is ``json`` or ``sqlite``; by default ``.sqlite``/``.db`` paths get SQLite."""
    path = Path(path)
    fmt = fmt or ("sqlite" if path.suffix in (".sqlite", ".sqlite3", ".db") else "json")
    doc = ocel_document(lake, corpus=corpus, version=version)
    if fmt == "sqlite":
        write_sqlite(doc, path)
    elif fmt == "json":
        path.write_text(json.dumps(doc))
    else:
        raise ValueError(f"unknown OCEL format {fmt!r}; choose json or sqlite")
    return {"objects": len(doc["objects"]), "events": len(doc["events"])}


def ocel_document(lake, *, corpus: str | None = None, version: int | None = None) -> dict:
    """The lake (or one corpus) as an OCEL 2.0 document (the JSON layout, as Python data)."""
    where = "" if corpus is None else f"WHERE corpus = {string_literal(corpus)}"

    def q(sql: str) -> list[dict]:
        return run_sql(sql, lake, version=version, max_rows=None, timeout_s=None).table.to_pylist()

    sessions = q(
        f"SELECT corpus, session_id, title, domain, condition, started_at FROM sessions {where}"
    )
    start = {(s["corpus"], s["session_id"]): s["started_at"] or EPOCH for s in sessions}

    def oid(kind: str, c: str, s: str, local: str = "") -> str:
        return f"{kind}:{c}:{s}" + (f":{local}" if local else "")

    objects = []
    for s in sessions:
        attrs = [
            {"name": k, "time": _iso(EPOCH), "value": str(s[k])}
            for k in ("corpus", "title", "domain", "condition")
            if s[k] is not None
        ]
        objects.append(
            {
                "id": oid("session", s["corpus"], s["session_id"]),
                "type": "session",
                "attributes": attrs,
                "relationships": [],
            }
        )
    for p in q(
        f"SELECT corpus, session_id, participant_id, kind, role FROM participants "
        f"{where}{' AND' if where else 'WHERE'} session_id <> ''"
    ):
        objects.append(
            {
                "id": oid("participant", p["corpus"], p["session_id"], p["participant_id"]),
                "type": "participant",
                "attributes": [
                    {"name": k, "time": _iso(EPOCH), "value": str(p[k])}
                    for k in ("kind", "role")
                    if p[k] is not None
                ],
                "relationships": [
                    {
                        "objectId": oid("session", p["corpus"], p["session_id"]),
                        "qualifier": "in session",
                    }
                ],
            }
        )
    known = {o["id"] for o in objects}
    events = []
    for o in q(
        f"SELECT o.corpus, o.session_id, o.node_id, o.seq, o.t_start, o.actor_type, "
        f"n.label, n.actor FROM node_occurrences o JOIN nodes n USING "
        f"(corpus, session_id, node_id) {where.replace('corpus', 'o.corpus')}"
    ):
        key = (o["corpus"], o["session_id"])
        if key not in start or o["t_start"] is None:
            continue
        node = oid("node", o["corpus"], o["session_id"], o["node_id"])
        if node not in known:
            known.add(node)
            objects.append(
                {
                    "id": node,
                    "type": "node",
                    "attributes": [
                        {"name": "label", "time": _iso(EPOCH), "value": str(o["label"] or "")}
                    ],
                    "relationships": [
                        {"objectId": oid("session", *key), "qualifier": "in session"}
                    ],
                }
            )
        events.append(
            {
                "id": f"occ:{o['corpus']}:{o['session_id']}:{o['node_id']}#{o['seq']}",
                "type": f"{o['actor_type'] or 'unknown'} action",
                "time": _iso(start[key] + timedelta(seconds=o["t_start"])),
                "attributes": [
                    {"name": "label", "value": str(o["label"] or "")},
                    {"name": "actor", "value": str(o["actor"] or "")},
                ],
                "relationships": [
                    {"objectId": oid("session", *key), "qualifier": "session"},
                    {"objectId": node, "qualifier": "node"},
                ],
            }
        )
    for e in q(
        f"SELECT corpus, session_id, event_id, kind, t, timestamp, actor, text, node_id "
        f"FROM events {where}"
    ):
        key = (e["corpus"], e["session_id"])
        if key not in start or (e["t"] is None and e["timestamp"] is None):
            continue
        when = e["timestamp"] or start[key] + timedelta(seconds=e["t"])
        rels = [{"objectId": oid("session", *key), "qualifier": "session"}]
        actor = oid("participant", *key, e["actor"]) if e["actor"] else None
        if actor in known:
            rels.append({"objectId": actor, "qualifier": "actor"})
        node = oid("node", *key, e["node_id"]) if e["node_id"] else None
        if node in known:
            rels.append({"objectId": node, "qualifier": "node"})
        events.append(
            {
                "id": f"ev:{e['corpus']}:{e['session_id']}:{e['event_id']}",
                "type": e["kind"] or "event",
                "time": _iso(when),
                "attributes": [{"name": "text", "value": (e["text"] or "")[:1000]}],
                "relationships": rels,
            }
        )
    doc = {
        "objectTypes": [
            {"name": t, "attributes": [{"name": a, "type": "string"} for a in attrs]}
            for t, attrs in (
                ("session", ("corpus", "title", "domain", "condition")),
                ("participant", ("kind", "role")),
                ("node", ("label",)),
            )
        ],
        "eventTypes": [
            {
                "name": t,
                "attributes": [{"name": a, "type": "string"} for a in ("label", "actor", "text")],
            }
            for t in sorted({e["type"] for e in events})
        ],
        "objects": objects,
        "events": events,
    }
    return doc


def _sql_name(kind: str, taken: set[str]) -> str:
    base = re.sub(r"[^A-Za-z0-9]+", "", kind.title()) or "Type"
    name, i = base, 1
    while name in taken:
        i += 1
        name = f"{base}{i}"
    taken.add(name)
    return name


def write_sqlite(doc: dict, path: Path) -> None:
    """Write an OCEL document in the OCEL 2.0 SQLite layout: ``event`` / ``object`` with their
    types, one ``event_<Type>`` / ``object_<Type>`` table of attributes per type, and the
    ``event_object`` / ``object_object`` relations with qualifiers."""
    import sqlite3

    path.unlink(missing_ok=True)
    con = sqlite3.connect(path)
    try:
        con.executescript("""
            CREATE TABLE event (ocel_id TEXT PRIMARY KEY, ocel_type TEXT);
            CREATE TABLE object (ocel_id TEXT PRIMARY KEY, ocel_type TEXT);
            CREATE TABLE event_map_type (ocel_type TEXT PRIMARY KEY, ocel_type_map TEXT);
            CREATE TABLE object_map_type (ocel_type TEXT PRIMARY KEY, ocel_type_map TEXT);
            CREATE TABLE event_object (ocel_event_id TEXT, ocel_object_id TEXT,
                                       ocel_qualifier TEXT,
                                       PRIMARY KEY (ocel_event_id, ocel_object_id,
                                                    ocel_qualifier));
            CREATE TABLE object_object (ocel_source_id TEXT, ocel_target_id TEXT,
                                        ocel_qualifier TEXT,
                                        PRIMARY KEY (ocel_source_id, ocel_target_id,
                                                     ocel_qualifier));
        """)
        taken: set[str] = set()
        for side, types in (("event", doc["eventTypes"]), ("object", doc["objectTypes"])):
            for t in types:
                table = f"{side}_{_sql_name(t['name'], taken)}"
                cols = [a["name"] for a in t["attributes"]]
                extra = ", ocel_changed_field TEXT" if side == "object" else ""
                con.execute(
                    f'CREATE TABLE "{table}" (ocel_id TEXT, ocel_time TIMESTAMP{extra}'
                    + "".join(f', "{c}" TEXT' for c in cols)
                    + ")"
                )
                con.execute(
                    f"INSERT INTO {side}_map_type VALUES (?, ?)",
                    (t["name"], table.split("_", 1)[1]),
                )
                t["_table"], t["_cols"] = table, cols
        etables = {t["name"]: t for t in doc["eventTypes"]}
        otables = {t["name"]: t for t in doc["objectTypes"]}
        con.executemany(
            "INSERT INTO event VALUES (?, ?)", [(e["id"], e["type"]) for e in doc["events"]]
        )
        con.executemany(
            "INSERT INTO object VALUES (?, ?)", [(o["id"], o["type"]) for o in doc["objects"]]
        )
        for e in doc["events"]:
            t = etables[e["type"]]
            values = {a["name"]: a["value"] for a in e["attributes"]}
            con.execute(
                f'INSERT INTO "{t["_table"]}" VALUES (?, ?' + ", ?" * len(t["_cols"]) + ")",
                [e["id"], _sqlite_time(e["time"])] + [values.get(c) for c in t["_cols"]],
            )
        for o in doc["objects"]:
            t = otables[o["type"]]
            values = {a["name"]: a["value"] for a in o["attributes"]}
            con.execute(
                f'INSERT INTO "{t["_table"]}" VALUES (?, ?, NULL' + ", ?" * len(t["_cols"]) + ")",
                [o["id"], _sqlite_time(_iso(EPOCH))] + [values.get(c) for c in t["_cols"]],
            )
        con.executemany(
            "INSERT OR IGNORE INTO event_object VALUES (?, ?, ?)",
            [
                (e["id"], r["objectId"], r["qualifier"])
                for e in doc["events"]
                for r in e["relationships"]
            ],
        )
        con.executemany(
            "INSERT OR IGNORE INTO object_object VALUES (?, ?, ?)",
            [
                (o["id"], r["objectId"], r["qualifier"])
                for o in doc["objects"]
                for r in o["relationships"]
            ],
        )
        con.commit()
    finally:
        con.close()
    for t in doc["eventTypes"] + doc["objectTypes"]:
        t.pop("_table", None)
        t.pop("_cols", None)


def _sqlite_time(iso: str) -> str:
    return iso.replace("T", " ").replace("Z", "")
