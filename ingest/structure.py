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
    line = _first_line(path)
    if start[:1] == b"{" and line.rstrip().endswith(b"}") and len(line) < size - 1:
        try:
            first = load_json(line)
        except ValueError:
            first = None
        if isinstance(first, dict):  # JSON Lines: a whole object on the first line
            return Shape("lines", list(first), [], first)
    if start[:1] == b"{":
        return _object(path)
    if start[:1] == b"[":
        return _array(path)
    return Shape(None)


def _object(path: Path) -> Shape:
    keys: list[str] = []
    first: dict = {}
    try:
        with path.open("rb") as fh:
            for prefix, event, value in ijson.parse(fh, use_float=True):
                if event == "map_key" and prefix.count(".") == 0:
                    keys.append(f"{prefix}.{value}" if prefix else value)
                elif event in ("string", "number", "boolean") and prefix.count(".") <= 1:
                    if prefix in keys:
                        first[prefix] = value
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
