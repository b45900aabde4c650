"""One thread that interrupts statements past their time limit, for every connection.

A ``threading.Timer`` per statement started and stopped a thread for each call: a fifth of
what ``sql("SELECT 1")`` cost through the Python API. Here a statement registers its deadline
in a heap (a lock and a push), and a single daemon thread sleeps until the earliest one,
running the action of each deadline that passes while still armed. Disarming marks the entry
(the thread drops it when it comes up) and waits for an action already running.
"""

from __future__ import annotations

import heapq
import itertools
import os
import threading
import time
from collections.abc import Callable


class _Deadline:
    __slots__ = ("action", "armed", "at", "seq")

    def __init__(self, at: float, seq: int, action: Callable[[], None]):
        self.at, self.seq, self.action, self.armed = at, seq, action, True

    def __lt__(self, other: _Deadline) -> bool:
        return (self.at, self.seq) < (other.at, other.seq)


class Deadlines:
    """``arm(seconds, action)`` -> a token; ``disarm(token)`` before it passes cancels it."""

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._pid = os.getpid()
        self._cv = threading.Condition()
        self._heap: list[_Deadline] = []
        self._seq = itertools.count()
        self._thread: threading.Thread | None = None

    def arm(self, seconds: float, action: Callable[[], None]) -> _Deadline:
        if self._pid != os.getpid():  # a forked child: the parent's thread is not here
            self._reset()
        entry = _Deadline(time.monotonic() + seconds, next(self._seq), action)
        with self._cv:
            heapq.heappush(self._heap, entry)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._watch, name="graphlake-deadlines", daemon=True
                )
                self._thread.start()
            elif self._heap[0] is entry:  # earlier than what the thread sleeps towards
                self._cv.notify()
        return entry

    def disarm(self, entry: _Deadline) -> None:
        """After this returns the action has run or never will (it runs under the same
        lock): an interrupt meant for a statement cannot land on the cursor's next one."""
        with self._cv:
            entry.armed = False

    def _watch(self) -> None:
        while True:
            with self._cv:
                while self._heap and not self._heap[0].armed:
                    heapq.heappop(self._heap)
                if not self._heap:
                    self._cv.wait()
                    continue
                wait = self._heap[0].at - time.monotonic()
                if wait > 0:
                    self._cv.wait(wait)
                    continue
                due = heapq.heappop(self._heap)
                due.armed = False
                try:
                    due.action()  # under the lock: see disarm
                except Exception:  # noqa: BLE001, S110 - the statement may have just ended
                    pass


#: The process's deadlines, shared by every connection.
DEADLINES = Deadlines()
