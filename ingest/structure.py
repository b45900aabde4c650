"""What a JSON or JSON Lines file is shaped like, read from its structure rather than a fixed
prefix: the top-level keys of a document (streamed with ijson, however far into the file a
key starts), the keys of a top-level list's first element, or the first line of a JSON Lines
file parsed whole, however long. Detectors (``graphlake ingest auto``, the trace sniffer)
decide on this, so a SWE-agent trajectory whose ``history`` starts after megabytes of
``trajectory`` is still recognised."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ijson

from graphlake.config import max_file_bytes
from graphlake.ingest.base import load_json

#: a first JSON Lines record is parsed whole up to this many bytes
MAX_FIRST_LINE = 64 << 20


@dataclass
class Shape:
    """``kind``: object (one JSON object), array (a JSON list), lines (JSON Lines), or None."""

    kind: str | None
    keys: list[str] = field(default_factory=list)  # top-level keys of the (first) record
    item_keys: list[str] = field(default_factory=list)  # keys of the first list element
    first: Any = None  # the first JSON Lines record, or the list's first element

    def value_at(self, dotted: str) -> Any:
        """The value at a dotted path of the first record (JSON Lines / list element); for a
        document, its top-level (and second-level) scalars by dotted name."""
        if self.kind == "object":
            return (self.first or {}).get(dotted, _MISSING)
        node = self.first
        for part in dotted.split("."):
            if not isinstance(node, dict) or part not in node:
                return _MISSING
            node = node[part]
        return node


_MISSING = object()


def _first_line(path: Path) -> bytes:
    with path.open("rb") as fh:
        while True:
            line = fh.readline(MAX_FIRST_LINE)
            if not line:
                return b""
            if line.strip():
                return line


def first_line_record(path: Path, size: int) -> dict | None:
    """The first line of ``path`` as a JSON object when it is one whole record with more of
    the file after it (JSON Lines), however long the line; None for a one-line document."""
    line = _first_line(path)
    if not line.rstrip().endswith(b"}") or len(line) >= size - 1:
        return None
    try:
        first = load_json(line)
    except ValueError:
        return None
    return first if isinstance(first, dict) else None


def shape(path: Path) -> Shape:
    """The shape of ``path`` (never more than the file limit read; ijson streams)."""
    path = Path(path)
    try:
        size = path.stat().st_size
        with path.open("rb") as fh:
            start = fh.read(1 << 12).lstrip()
    except OSError:
        return Shape(None)
    if not start or size > max_file_bytes() * 4:
        return Shape(None)
    if start[:1] == b"{" and (first := first_line_record(path, size)) is not None:
        return Shape("lines", list(first), [], first)  # JSON Lines: a whole object on line 1
    if start[:1] == b"{":
        return _object(path)
    if start[:1] == b"[":
        return _array(path)
    return Shape(None)


_SCALARS = frozenset({"string", "number", "integer", "double", "boolean"})


def _object(path: Path) -> Shape:
    """The top-level keys of a JSON object (and the scalar values at the first two levels),
    streamed with ijson's basic events and a depth counter: ``ijson.parse`` builds a prefix
    string per event, which grows with the depth (a 100,000-deep value: gigabytes), and past
    ``$GRAPHLAKE_JSON_MAX_DEPTH`` the walk stops with what it has."""
    from graphlake.ingest.base import max_json_depth

    keys: list[str] = []
    first: dict = {}
    limit = max_json_depth()
    stack: list[str] = []  # the open containers' kinds, outermost first
    key: str | None = None  # the top-level key being read
    sub: str | None = None  # a key of the object under it
    try:
        with path.open("rb") as fh:
            for event, value in ijson.basic_parse(fh, use_float=True):
                depth = len(stack)
                if event in ("start_map", "start_array"):
                    if depth >= limit:
                        break
                    stack.append(event)
                elif event in ("end_map", "end_array"):
                    stack.pop()
                elif event == "map_key":
                    if depth == 1:
                        key, sub = value, None
                        keys.append(value)
                    elif depth == 2 and stack[1] == "start_map":
                        sub = f"{key}.{value}"
                        keys.append(sub)
                elif event not in _SCALARS:
                    continue
                elif depth == 1 and key is not None:  # a scalar under a top-level key
                    first[key] = value
                elif depth == 2 and stack[1] == "start_map" and sub is not None:
                    first[sub] = value
    except (ijson.JSONError, UnicodeDecodeError):
        if not keys:
            return Shape(None)
    return Shape("object", keys, [], first or None)


def _array(path: Path) -> Shape:
    try:
        with path.open("rb") as fh:
            for item in ijson.items(fh, "item", use_float=True):
                if isinstance(item, dict):
                    return Shape("array", [], list(item), item)
                return Shape("array", [], [], item)
    except (ijson.JSONError, UnicodeDecodeError):
        return Shape(None)
    return Shape("array")
