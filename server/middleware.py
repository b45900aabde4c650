"""Pure ASGI middleware: bearer-token auth on every request (docs included) and a cap on the
request body, counted as it arrives (a missing or false Content-Length cannot get around it)
and due within the client timeout (the headers' deadline is in server/connections.py).

The workbench's page and its static files hold no lake data and are served without a token;
the page then sends the token it is given on every call. A ``<video>`` or ``<img>`` cannot send
a header, so a GET may carry the token as ``?token=`` instead (as Jupyter does)."""

from __future__ import annotations

import asyncio
import hmac
import json
from urllib.parse import parse_qs

from graphlake.server.errors import error_body


class _TooLarge(Exception):
    pass


async def _send_error(send, status: int, message: str, headers=()) -> None:
    body = json.dumps(error_body(status, message)).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


#: Paths anyone may read: the workbench page and its scripts (no lake data).
PUBLIC_PATHS = ("/",)
PUBLIC_PREFIX = "/static/"


def _query_token(scope) -> bytes:
    if scope.get("method") != "GET" or not scope.get("query_string"):
        return b""
    given = parse_qs(scope["query_string"].decode("latin-1")).get("token")
    return f"Bearer {given[0]}".encode() if given else b""


class GuardMiddleware:
    def __init__(
        self, app, *, token: str | None, max_body_bytes: int, body_timeout_s: float = 10.0
    ):
        self.app = app
        self.token = f"Bearer {token}".encode() if token else None
        self.max_body = max_body_bytes
        self.body_timeout = body_timeout_s

    async def _read_body(self, receive) -> bytes | None:
        """The whole body (None if the client left); ``_TooLarge`` past the limit."""
        body: list[bytes] = []
        seen, more = 0, True
        while more:
            msg = await receive()
            if msg["type"] != "http.request":
                return None
            body.append(msg.get("body", b""))
            seen += len(body[-1])
            more = msg.get("more_body", False)
            if seen > self.max_body:
                raise _TooLarge
        return b"".join(body)

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = dict(scope.get("headers") or [])
        path = scope.get("path", "")
        public = path in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIX)
        if self.token is not None and not public:
            given = headers.get(b"authorization") or _query_token(scope)
            if not hmac.compare_digest(given, self.token):
                return await _send_error(
                    send,
                    401,
                    "this server needs a token: send the header "
                    "'Authorization: Bearer <token>' with the token `graphlake serve` was "
                    "started with (a GET may pass ?token=<token>; the workbench: open "
                    "/?token=<token>)",
                    [(b"www-authenticate", b"Bearer")],
                )
        length = headers.get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.max_body:
            return await _send_error(
                send,
                413,
                f"request body of {int(length)} bytes is over "
                f"the {self.max_body}-byte limit (--max-body)",
            )
        if scope.get("method") in ("POST", "PUT", "PATCH"):
            # read the body here, up to the limit and the deadline, then hand it on: a chunked
            # body states no length (past the limit FastAPI would answer 400, not 413), and a
            # client trickling its body must not hold the connection forever
            try:
                whole = await asyncio.wait_for(self._read_body(receive), self.body_timeout)
            except TimeoutError:
                return await _send_error(
                    send,
                    408,
                    f"the request body did not arrive within {self.body_timeout:g} s "
                    "(--client-timeout)",
                    [(b"connection", b"close")],
                )
            except _TooLarge:
                return await _send_error(
                    send,
                    413,
                    f"request body is over the {self.max_body}-byte limit (--max-body)",
                )
            if whole is None:
                return  # the client went away
            replayed = False

            async def replay():
                nonlocal replayed
                if replayed:
                    return await receive()
                replayed = True
                return {"type": "http.request", "body": whole, "more_body": False}

            return await self.app(scope, replay, send)
        return await self.app(scope, receive, send)
