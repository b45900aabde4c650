"""The serving process's data-segment cap (``RLIMIT_DATA``), and the room it leaves.

A statement can allocate memory that DuckDB's memory limit does not count (a 4 GB string from
``repeat``, a sorted list of 200 million numbers), so ``graphlake serve`` caps each serving
process's data segment (:func:`install`; worker processes inherit it): past the cap an
allocation fails, DuckDB stops the statement with an out-of-memory error and the server answers
it and lives on.

What the server itself holds is not a statement's: the corpora and indexes it reads in, the
buffers DuckDB keeps after its own queries, its threads' stacks. At 100,000 Kolab sessions that
alone passed a fixed cap at the memory limit + 1 GiB: first the preload failed, then the next
thread, then every read of a socket (the process died of ``MemoryError``). So the cap is set
relative to what the server holds: when it is ready to serve (:func:`settle`) and after each of
its own builds (:func:`room_for_build`, which runs with the cap lifted), the cap becomes the
larger of the configured ceiling and what the process holds + the room (the memory limit + 1
GiB): a statement always has that room above the server's own memory, and no more. A build and
a user's statement never overlap (:func:`statement`): a statement that arrives while a build
has the cap lifted waits for it (at most its own time limit, then it is refused as busy), and a
build waits for the statements already running (at most :data:`BUILD_WAIT_S`), so that no
statement ever runs uncapped (before, the statements sent while the server warmed its indexes
at startup ran under DuckDB's memory limit only, and a 4 GB string was built).
"""

from __future__ import annotations

import resource
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_turns = threading.Condition(_lock)  # builds and statements take turns
_building = 0
_statements = 0  # users' statements running under the cap
_waiting_builds = 0  # builds waiting for them: new statements wait behind these
_local = threading.local()
#: Seconds a build waits for the statements already running (they stop at their own time
#: limit; one stuck in an uninterruptible call may run on: the build goes ahead after this)
BUILD_WAIT_S = 60.0


class BuildUnderWay(RuntimeError):
    """A build held the cap lifted for longer than a statement may wait."""


@contextmanager
def statement(wait_s: float | None) -> Iterator[None]:
    """Run one user statement under the cap: first wait (at most ``wait_s``) while a build
    has the cap lifted or waits to lift it. Raises :class:`BuildUnderWay` past the wait."""
    global _statements
    with _turns:
        if not _turns.wait_for(lambda: _building == 0 and _waiting_builds == 0, wait_s):
            raise BuildUnderWay(
                "the server is building its indexes (its memory cap is lifted meanwhile); "
                "try again in a moment"
            )
        _statements += 1
    _local.in_statement = True
    try:
        yield
    finally:
        _local.in_statement = False
        with _turns:
            _statements -= 1
            _turns.notify_all()


_ceiling: int | None = None  # the configured cap, in this process (None: never installed)


def _soft() -> int:
    return resource.getrlimit(resource.RLIMIT_DATA)[0]


def data_bytes() -> int:
    """This process's data segment now (``VmData``), in bytes; 0 where /proc is missing."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmData:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def install(ceiling: int) -> int:
    """Cap this process's data segment at ``ceiling`` bytes, never raising a cap already lower
    (nor past the hard limit); returns the cap in force."""
    global _ceiling
    soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    if soft != resource.RLIM_INFINITY and soft <= ceiling:
        _ceiling = soft
        return soft
    if hard != resource.RLIM_INFINITY:
        ceiling = min(ceiling, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (ceiling, hard))
    _ceiling = ceiling
    return ceiling


def settle(room: int) -> None:
    """Cap at max(the cap in force, what the process holds + ``room``): the server calls it
    when it is ready to serve. Nothing happens in a process without a cap."""
    with _lock:
        if _building == 0 and _soft() != resource.RLIM_INFINITY:
            _recap(room)


def _recap(room: int) -> None:
    global _ceiling
    soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    if _ceiling is None:  # inherited from the parent (uvicorn's worker processes)
        _ceiling = soft
    cap = max(_ceiling, data_bytes() + room)
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (cap, hard))
    _ceiling = cap  # never lower after: what the server held once, it may hold again


@contextmanager
def room_for_build(room: int) -> Iterator[None]:
    """Run one of the server's own builds with the cap lifted; after the last concurrent one,
    cap again at max(the cap before, what the process holds + ``room``). Nothing happens in
    a process without a cap (the CLI, tests, notebooks)."""
    global _building, _ceiling, _waiting_builds
    with _turns:
        soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
        capped = soft != resource.RLIM_INFINITY or _building > 0
        if capped:
            if _ceiling is None:
                _ceiling = soft
            if _building == 0:  # the statements running finish under the cap first
                mine = 1 if getattr(_local, "in_statement", False) else 0
                _waiting_builds += 1
                try:
                    _turns.wait_for(lambda: _statements <= mine, BUILD_WAIT_S)
                finally:
                    _waiting_builds -= 1
                resource.setrlimit(resource.RLIMIT_DATA, (hard, hard))
            _building += 1
    if not capped:
        yield
        return
    try:
        yield
    finally:
        with _turns:
            _building -= 1
            if _building == 0:
                _recap(room)
                _turns.notify_all()
