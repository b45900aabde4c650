"""Page cursors, decoded and validated in one typed place.

A cursor is opaque to clients: URL-safe base64 of a small JSON object that names the list it
pages (``"r"``) and either the last item's key (``"k"``, keyset paging) or the next offset
(``"o"``, offset paging, with the lake version it was cut on in ``"v"``). Decoding checks the
shape completely, so a cursor of another shape, another list or an older format is refused
with :class:`CursorError` (HTTP 400) instead of reaching a query as a wrong value; an offset
cursor from another lake version is :class:`StaleCursorError` (HTTP 409), because the same
offset there may point at other rows. A keyset cursor names the last item it returned, so it
stays meaningful at every lake version.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass

import orjson

from graphlake.errors import GraphlakeError

#: Longest cursor accepted: a keyset cursor holds a few ids, never kilobytes.
MAX_CURSOR_CHARS = 4096


class CursorError(GraphlakeError, ValueError):
    """A cursor this list did not issue (malformed, or of another list)."""


class StaleCursorError(GraphlakeError):
    """An offset cursor issued at another lake version: list again from the first page."""


_RESTART = "pass the next_cursor of the previous page, or none for the first page"


def _encode(obj: dict) -> str:
    return base64.urlsafe_b64encode(orjson.dumps(obj)).decode().rstrip("=")


def _decode(cursor: str, route: str) -> dict:
    if len(cursor) > MAX_CURSOR_CHARS:
        raise CursorError(
            f"cursor is {len(cursor)} characters, longer than any this service issues; {_RESTART}"
        )
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        obj = orjson.loads(raw)
    except (ValueError, binascii.Error, orjson.JSONDecodeError):
        obj = None
    if not isinstance(obj, dict) or obj.get("r") != route:
        raise CursorError(f"cursor is not one {route} issued; {_RESTART}")
    return obj


@dataclass(frozen=True)
class KeyCursor:
    """Keyset paging: the cursor holds the last item's key, ``arity`` strings."""

    route: str
    arity: int = 1

    def encode(self, key: list[str] | tuple[str, ...]) -> str:
        return _encode({"r": self.route, "k": list(key)})

    def decode(self, cursor: str | None) -> list[str] | None:
        """The last key of the previous page, or None for the first page."""
        if not cursor:
            return None
        key = _decode(cursor, self.route).get("k")
        if (
            not isinstance(key, list)
            or len(key) != self.arity
            or not all(isinstance(k, str) for k in key)
        ):
            raise CursorError(f"cursor is not one {self.route} issued; {_RESTART}")
        return key


@dataclass(frozen=True)
class OffsetCursor:
    """Offset paging over a list computed at one lake version."""

    route: str

    def encode(self, version: int, offset: int) -> str:
        return _encode({"r": self.route, "v": version, "o": offset})

    def decode(self, cursor: str | None, version: int) -> int:
        """The offset to start at (0 for the first page)."""
        if not cursor:
            return 0
        obj = _decode(cursor, self.route)
        offset, at = obj.get("o"), obj.get("v")
        if type(offset) is not int or offset < 0 or type(at) is not int:
            raise CursorError(f"cursor is not one {self.route} issued; {_RESTART}")
        if at != version:
            raise StaleCursorError(
                f"cursor was issued at lake version {at} and this list now "
                f"reads version {version}; list again from the first page"
            )
        return offset
