"""Rebuild a CoAuthor document as it stood at any event, from the lake.

The lake keeps the prompt (``documents`` row ``prompt``) and every event's Quill delta
(``events.payload``); replaying the deltas up to an event gives the text the writer saw.
"""

from __future__ import annotations

import orjson

from graphlake.errors import GraphlakeError
from graphlake.query.engine import run_sql
from graphlake.schema.quill import apply_delta


def document_at(lake, session_id: str, seq: int | None = None, *, corpus: str = "coauthor") -> str:
    """The document text after the event with sequence number ``seq`` (the end when None)."""
    key = {"corpus": corpus, "sid": session_id}
    prompt = run_sql(
        "SELECT text FROM documents WHERE corpus = $corpus AND "
        "session_id = $sid AND doc_id = 'prompt'",
        lake,
        params=key,
    ).table.to_pylist()
    if not prompt:
        raise GraphlakeError(
            f"no {corpus} session {session_id!r} in the lake; list them with "
            f'graphlake sql "SELECT session_id FROM sessions WHERE corpus = '
            f"'{corpus}'\""
        )
    deltas = (
        run_sql(
            "SELECT payload FROM events WHERE corpus = $corpus AND session_id = $sid "
            "AND payload IS NOT NULL AND ($seq IS NULL OR seq <= $seq) ORDER BY seq",
            lake,
            params={**key, "seq": None if seq is None else int(seq)},
            max_rows=None,
        )
        .table.column("payload")
        .to_pylist()
    )
    doc = prompt[0]["text"] or ""
    for payload in deltas:
        doc, _ = apply_delta(doc, orjson.loads(payload)["ops"])
    return doc
