"""Quill deltas: the document edits CoAuthor events carry in ``events.payload``.

Part of what the lake's rows mean, so it sits in the schema layer: the CoAuthor ingestor
applies deltas to find each event's edits, and the query layer replays them to rebuild a
document at any event (:func:`graphlake.query.documents.document_at`); neither imports the
other.
"""

from __future__ import annotations


class DeltaError(ValueError):
    """A Quill delta that does not apply to the document as replayed so far."""


def apply_delta(doc: str, ops) -> tuple[str, list[tuple[str, int, int]]]:
    """Apply Quill delta ``ops`` to ``doc``; return the new text and the edits as
    ``(kind, position, length)`` with kind ``insert`` or ``delete``."""
    if not isinstance(ops, list):
        raise DeltaError("textDelta.ops must be a list")
    pos, edits = 0, []
    parts = doc
    for op in ops:
        if not isinstance(op, dict):
            raise DeltaError(f"delta op {op!r} is not an object")
        if "retain" in op:
            n = op["retain"]
            if not isinstance(n, int) or n < 0 or pos + n > len(parts):
                raise DeltaError(
                    f"retain {n!r} runs past the end of the document ({len(parts)} characters)"
                )
            pos += n
        elif "insert" in op:
            text = op["insert"] if isinstance(op["insert"], str) else ""
            parts = parts[:pos] + text + parts[pos:]
            edits.append(("insert", pos, len(text)))
            pos += len(text)
        elif "delete" in op:
            n = op["delete"]
            if not isinstance(n, int) or n < 0 or pos + n > len(parts):
                raise DeltaError(f"delete {n!r} runs past the end of the document")
            parts = parts[:pos] + parts[pos + n :]
            edits.append(("delete", pos, n))
        else:
            raise DeltaError(f"delta op {op!r} is none of retain, insert, delete")
    return parts, edits
