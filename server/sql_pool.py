"""Where the service's SQL statements run: a bounded pool of their own.

FastAPI runs a plain ``def`` route in one thread pool shared by every route (40 threads). Long
statements there hold every thread, and the health check, instance fetches and the workbench
wait behind them (45 long statements made ``/health`` take 35 s). Statements therefore run
here instead:

* at most ``workers`` statements run at once and ``queue`` more wait; past that the request is
  refused at once with 503 and ``Retry-After`` (never an unbounded backlog);
* the connection's own timer interrupts a statement at its time limit (408). A statement
  stuck inside one long function call does not see the interrupt until the call returns: the
  request is answered 408 a grace period after its limit and the statement is abandoned to
  finish in its thread, still holding its slot, so abandoned work stays bounded by the pool;
* a request still waiting in the queue when its time is up is cancelled before it starts.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from graphlake.errors import GraphlakeError, QueryTimeoutError

T = TypeVar("T")

#: Seconds past a statement's time limit before its request is answered 408 without it.
GRACE_S = 5.0


class ServiceBusyError(GraphlakeError):
    """Every SQL slot is taken (running or queued): try again shortly (HTTP 503)."""


class SqlPool:
    def __init__(self, workers: int, queue: int):
        self.workers, self.queue = workers, queue
        self._executor = ThreadPoolExecutor(workers, thread_name_prefix="graphlake-sql")
        self._slots = threading.BoundedSemaphore(workers + queue)
        self._count_lock = threading.Lock()
        self._taken = 0

    def _take(self) -> bool:
        if not self._slots.acquire(blocking=False):
            return False
        with self._count_lock:
            self._taken += 1
        return True

    def _give_back(self, _future: object = None) -> None:
        with self._count_lock:
            self._taken -= 1
        self._slots.release()

    async def run(self, fn: Callable[..., T], *args: Any, timeout_s: float | None) -> T:
        """``fn(*args)`` in the pool; 503 when it is full, 408 when ``timeout_s`` (plus the
        grace period) passes first."""
        if not self._take():
            raise ServiceBusyError(
                f"the server is running {self.workers} statements and has {self.queue} more "
                "waiting; try again in a moment (or start it with a larger --sql-queue)"
            )
        try:
            future = self._executor.submit(fn, *args)
        except BaseException:
            self._give_back()
            raise
        future.add_done_callback(self._give_back)
        waiting = asyncio.wrap_future(future)
        limit = None if timeout_s is None else timeout_s + GRACE_S
        try:
            return await asyncio.wait_for(asyncio.shield(waiting), limit)
        except TimeoutError:
            started = not future.cancel()  # still queued: it never runs
            raise QueryTimeoutError(
                f"query ran past its {timeout_s:g} s limit"
                + (" and was abandoned (it could not be interrupted)" if started else "")
                + "; narrow it (WHERE, LIMIT) or raise the time limit"
            ) from None

    def busy(self) -> int:
        """Statements running or waiting now."""
        with self._count_lock:
            return self._taken

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
