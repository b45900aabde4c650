"""The forkserver that an ingest's parse workers are forked from (:mod:`graphlake.pipeline`).

Workers are forked from a clean server process, never from the caller: a process that already
ingested holds DuckDB, Arrow and Delta threads, and a plain fork of it hung or crashed its
workers (a notebook that ingests twice). The server imports graphlake's readers, DuckDB and
pandas once (``graphlake.ingest.preload``), so each worker starts warm. Starting it costs
about half a second of imports; :func:`start_early` lets a caller that will parse many files
overlap that with its own start-up (``graphlake ingest`` does, for a folder). Platforms
without forkserver spawn each worker.

This module imports nothing heavy, so that the overlap is real.
"""

from __future__ import annotations

import threading
from multiprocessing import get_all_start_methods, get_context

PRELOAD = ["graphlake.pipeline", "graphlake.ingest.preload"]

_started = False


def worker_context():
    """The multiprocessing context workers start from (forkserver, preloaded)."""
    global _started
    if "forkserver" not in get_all_start_methods():
        return get_context("spawn")
    ctx = get_context("forkserver")
    ctx.set_forkserver_preload(PRELOAD)
    _started = True  # a pool made from it starts the server, if start_early did not
    return ctx


def started() -> bool:
    """Whether this process has started (or is starting) the forkserver: a pool then costs
    a fork a worker, tens of milliseconds."""
    return _started


def start_early() -> None:
    """Start the forkserver now, in a background thread, if it is not running yet. It is
    used by the next parallel ingest of this process; if none comes it ends with the
    process."""
    if _started or "forkserver" not in get_all_start_methods():
        return
    worker_context()
    from multiprocessing import forkserver

    threading.Thread(
        target=forkserver.ensure_running, name="graphlake-forkserver", daemon=True
    ).start()
