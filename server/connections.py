"""Client bounds below the app: a deadline for a request's headers and a cap on open connections.

uvicorn closes an idle keep-alive connection after ``timeout_keep_alive``, but a client that
sends its headers a byte at a time (slowloris), or opens a connection and says nothing more,
is kept forever: 1,100 of them used up the server's file descriptors. The app cannot see such
clients (it runs only once the headers are complete), so the bound lives in the protocol
object uvicorn makes per connection:

* **headers deadline**: a connection with no request in progress (new, or between two
  requests) must complete a request's headers within ``client_timeout_s``; otherwise it is
  closed. A request in progress is never cut here (its body has its own deadline in
  ``GuardMiddleware``; the statement its own time limit).
* **connection cap**: past ``max_connections`` open connections, a new one first evicts the
  connection that has been waiting longest for headers (idle keep-alives and slow clients
  alike: they hold nothing), so ``/health`` still gets in while an attacker holds hundreds of
  sockets; only when every connection has a request in progress is the new one refused with
  a plain 503 and closed.

The mixin works on uvicorn's own HTTP protocols (h11, or httptools when installed, as
uvicorn's ``auto`` picks), which share the attributes it reads (``cycle``, ``connections``,
``transport``, ``loop``)."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

from graphlake.server.settings import Settings

REFUSAL = (
    b"HTTP/1.1 503 Service Unavailable\r\n"
    b"content-type: application/json\r\n"
    b"retry-after: 1\r\n"
    b"connection: close\r\n"
    b"content-length: %d\r\n\r\n%s"
)


def _refusal_body(limit: int) -> bytes:
    import json

    from graphlake.server.errors import error_body

    body = error_body(
        503,
        f"the server holds its limit of {limit} connections, each with a request in "
        "progress; try again shortly (graphlake serve --max-connections)",
    )
    return json.dumps(body).encode()


def no_delay(transport) -> None:
    """Send small responses at once (TCP_NODELAY). asyncio sets it only on sockets accepted
    from a listener created with ``proto=IPPROTO_TCP``; the one uvicorn before 0.55 bound for
    ``--workers N`` (and its gunicorn worker binds) has proto 0, so every response waited for
    Nagle and a delayed ACK: two workers served about 700 requests a second at a fixed 44 ms
    median, a quarter of one (uvicorn issue 3149). Set here whatever bound the socket."""
    sock = transport.get_extra_info("socket")
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:  # already closed by the peer
            pass


class ConnectionGuard:
    """Mixed in before a uvicorn HTTP protocol class (see the module's docstring)."""

    max_connections: int = Settings.max_connections
    client_timeout_s: float = Settings.client_timeout_s

    # attributes of the uvicorn protocol this is mixed into
    cycle: Any
    connections: set
    transport: asyncio.Transport
    loop: asyncio.AbstractEventLoop

    def connection_made(self, transport) -> None:
        super().connection_made(transport)  # type: ignore[misc]
        no_delay(transport)
        self._waiting_since = self.loop.time()
        self._deadline: asyncio.TimerHandle | None = None
        if len(self.connections) > self.max_connections and not self._evict_one():
            body = _refusal_body(self.max_connections)
            transport.write(REFUSAL % (len(body), body))
            transport.close()
            return
        self._arm(self.client_timeout_s)

    def connection_lost(self, exc) -> None:
        if getattr(self, "_deadline", None) is not None:
            self._deadline.cancel()  # type: ignore[union-attr]
        super().connection_lost(exc)  # type: ignore[misc]

    def on_response_complete(self) -> None:
        self._waiting_since = self.loop.time()
        super().on_response_complete()  # type: ignore[misc]
        if not self.transport.is_closing():
            self._arm(self.client_timeout_s)

    @property
    def waiting(self) -> bool:
        """No request in progress: the connection holds a socket and nothing else."""
        return self.cycle is None or self.cycle.response_complete

    def _arm(self, delay: float) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        self._deadline = self.loop.call_later(delay, self._check_deadline)

    def _check_deadline(self) -> None:
        self._deadline = None
        if self.transport.is_closing() or not self.waiting:
            return  # closed, or a request is in progress (re-armed when it completes)
        late = self.loop.time() - self._waiting_since
        if late >= self.client_timeout_s:
            self.transport.close()
        else:  # a request completed since this was armed: wait out the rest
            self._arm(self.client_timeout_s - late)

    def _evict_one(self) -> bool:
        """Close the connection that has waited longest for headers; False if none waits."""
        idle = [
            c
            for c in self.connections
            if c is not self and isinstance(c, ConnectionGuard) and c.waiting
        ]
        if not idle:
            return False
        oldest = min(idle, key=lambda c: c._waiting_since)
        oldest.transport.close()
        oldest.connections.discard(oldest)  # counted out now, not when the loop gets to it
        return True


def _base_protocol() -> type:
    try:
        import httptools  # noqa: F401
    except ImportError:
        from uvicorn.protocols.http.h11_impl import H11Protocol

        return H11Protocol
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    return HttpToolsProtocol


def guarded_protocol(settings: Settings) -> type:
    """uvicorn's HTTP protocol with ``settings``' connection cap and headers deadline."""
    return type(
        "GuardedHTTPProtocol",
        (ConnectionGuard, _base_protocol()),
        {
            "max_connections": settings.max_connections,
            "client_timeout_s": settings.client_timeout_s,
        },
    )


def uvicorn_options(settings: Settings) -> dict:
    """What ``uvicorn.Config`` needs besides the app for ``settings``' client bounds (the
    in-process servers of the tests use it as ``graphlake serve`` does)."""
    return {
        "http": guarded_protocol(settings),
        "timeout_keep_alive": min(5, settings.client_timeout_s),
        "h11_max_incomplete_event_size": 16 * 1024,  # headers larger than this: 400
    }


#: Descriptors kept for everything but client sockets: the lake's files, LanceDB, logs.
RESERVED_DESCRIPTORS = 256


def raise_descriptor_limit(max_connections: int) -> int:
    """Raise this process's open-file limit (soft, up to the hard one) so ``max_connections``
    sockets fit beside the lake's own files; worker processes inherit it. Returns how many
    connections fit (fewer than asked only when the hard limit is too low)."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = max_connections + RESERVED_DESCRIPTORS
    if soft != resource.RLIM_INFINITY and soft < wanted:
        new = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))
        soft = new
    if soft == resource.RLIM_INFINITY:
        return max_connections
    return max(1, min(max_connections, soft - RESERVED_DESCRIPTORS))
