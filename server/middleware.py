"""Pure ASGI middleware: bearer-token auth on every request (docs included) and a cap on the
request body, counted as it arrives (a missing or false Content-Length cannot get around it)."""

from __future__ import annotations

import hmac
import json

from graphlake.server.errors import error_body


async def _send_error(send, status: int, message: str, headers=()) -> None:
    body = json.dumps(error_body(status, message)).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()), *headers]})
    await send({"type": "http.response.body", "body": body})


class _TooLarge(Exception):
    pass


class GuardMiddleware:
    def __init__(self, app, *, token: str | None, max_body_bytes: int):
        self.app = app
        self.token = f"Bearer {token}".encode() if token else None
        self.max_body = max_body_bytes

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = dict(scope.get("headers") or [])
        if self.token is not None:
            given = headers.get(b"authorization", b"")
            if not hmac.compare_digest(given, self.token):
                return await _send_error(
                    send, 401, "this server needs a token: send the header "
                    "'Authorization: Bearer <token>' with the token `graphlake serve` was "
                    "started with", [(b"www-authenticate", b"Bearer")])
        length = headers.get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.max_body:
            return await _send_error(send, 413, f"request body of {int(length)} bytes is over "
                                     f"the {self.max_body}-byte limit (--max-body)")
        seen = 0
        started = False

        async def counted_receive():
            nonlocal seen
            msg = await receive()
            if msg["type"] == "http.request":
                seen += len(msg.get("body", b""))
                if seen > self.max_body:
                    raise _TooLarge
            return msg

        async def tracked_send(msg):
            nonlocal started
            if msg["type"] == "http.response.start":
                started = True
            await send(msg)

        try:
            await self.app(scope, counted_receive, tracked_send)
        except _TooLarge:
            if not started:
                await _send_error(send, 413, f"request body is over the {self.max_body}-byte "
                                  "limit (--max-body)")
