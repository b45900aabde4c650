"""The serving process's data-segment cap (``RLIMIT_DATA``), and the builds it makes room for.

A statement can allocate memory that DuckDB's memory limit does not count (a 4 GB string from
``repeat``, a sorted list of 200 million numbers), so ``graphlake serve`` caps each serving
process's data segment (:func:`install`; worker processes inherit it): past the cap an
allocation fails, DuckDB stops the statement with an out-of-memory error and the server answers
it and lives on.

The server's own work is not a statement: it holds what it builds from the lake (a corpus's
rows, the instance indexes) and what DuckDB keeps of its buffers after building them. At
100,000 Kolab sessions that is over 2 GiB, and a fixed cap at the memory limit + 1 GiB made
the next thread the server started fail. So a build of the server's own (:func:`room_for_build`)
runs with the cap lifted to the hard limit, and when the last build in progress ends the cap
is set again at the larger of the configured ceiling and what the process now holds plus the
headroom: statements keep the same room above what the server holds, however much it holds.
While a build runs (seconds, at startup and after a refresh) statements run under DuckDB's
memory limit and their time limit only.
"""

from __future__ import annotations

import resource
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_building = 0
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


@contextmanager
def room_for_build(headroom: int) -> Iterator[None]:
    """Run one of the server's own builds with the cap lifted; after the last concurrent one,
    cap again at max(the ceiling, what the process holds + ``headroom``). Nothing happens in
    a process without a cap (the CLI, tests, notebooks)."""
    global _building, _ceiling
    with _lock:
        soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
        if soft == resource.RLIM_INFINITY and _building == 0:
            capped = False
        else:
            capped = True
            if _ceiling is None:  # inherited from the parent (uvicorn's worker processes)
                _ceiling = soft
            if _building == 0:
                resource.setrlimit(resource.RLIMIT_DATA, (hard, hard))
            _building += 1
    if not capped:
        yield
        return
    try:
        yield
    finally:
        with _lock:
            _building -= 1
            if _building == 0:
                hard = resource.getrlimit(resource.RLIMIT_DATA)[1]
                cap = max(_ceiling or 0, data_bytes() + headroom)
                if hard != resource.RLIM_INFINITY:
                    cap = min(cap, hard)
                resource.setrlimit(resource.RLIMIT_DATA, (cap, hard))
