"""Tables the service derives from one lake version, built once and memory-mapped after.

The instance index of a protocol and the rows of a preloaded corpus are pure functions of a lake
version and the SQL that reads them. Built in every worker process, and again at every start,
they cost seconds each (``kolab-1b`` at 100,000 sessions: about 6 s) and their memory once per
worker (6.2 GiB for two workers at 30,000 sessions). Kept here as Arrow IPC files, they are
built by the first process that needs them (an exclusive file lock makes the others wait for
that build, not start their own) and memory-mapped by every process after, including after a
restart: the pages are the kernel's page cache, shared between the workers, read when touched
and given back under memory pressure, not private memory of each.

Files live under ``<lake>/_graphlake/cache/arrow/v<version>/``, named by a digest of what built
them (graphlake's version, the cache format, the SQL and its parameters), so a change of any
of them builds anew. The folders of all but the newest :data:`KEEP_VERSIONS` versions are
removed when a table is written. A lake that cannot be written (a read-only mount) is not an
error: the table is built in memory, as without the cache.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa

import graphlake
from graphlake.lake import Lake

#: Bump when what is written changes without the SQL changing.
FORMAT = 1
#: Lake versions whose tables are kept (the others' folders are removed on a write).
KEEP_VERSIONS = 3

log = logging.getLogger(__name__)


def cache_dir(lake: Lake) -> Path:
    return lake.meta_dir / "cache" / "arrow"


def cached_table(
    lake: Lake, version: int, name: str, recipe: str, build: Callable[[], pa.Table]
) -> pa.Table:
    """``build()``'s table for ``version``, memory-mapped from its file when an earlier build
    (of this process or another) left one; ``recipe`` is everything the table depends on
    besides the version (the SQL and its parameters)."""
    digest = hashlib.blake2b(
        f"{graphlake.__version__}\0{FORMAT}\0{recipe}".encode(), digest_size=12
    ).hexdigest()
    folder = cache_dir(lake) / f"v{version}"
    path = folder / f"{name}-{digest}.arrow"
    table = _mapped(path)
    if table is not None:
        return table
    try:
        folder.mkdir(parents=True, exist_ok=True)
        lock = open(folder / f".{name}-{digest}.lock", "w")  # noqa: SIM115 - held below
    except OSError:
        return build()  # a read-only lake: no cache, as before
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one build; the others wait for its file
        table = _mapped(path)
        if table is not None:
            return table
        table = build()
        try:
            _write(path, table)
        except OSError as exc:
            log.warning("could not keep %s in the lake's cache (%s): built in memory", name, exc)
            return table
        _prune(cache_dir(lake), keep=version)
        mapped = _mapped(path)
        return mapped if mapped is not None else table


def _mapped(path: Path) -> pa.Table | None:
    """The table in ``path``, its buffers mapped, not read; None when there is none (or a
    file that cannot be read, which is removed so that it is built again)."""
    try:
        source = pa.memory_map(str(path), "r")
    except OSError:  # none yet (or unreadable: built in memory)
        return None
    try:
        return pa.ipc.open_file(source).read_all()
    except (pa.ArrowInvalid, OSError):
        log.warning("unreadable cache file %s: building it again", path)
        path.unlink(missing_ok=True)
        return None


def _write(path: Path, table: pa.Table) -> None:
    """Written beside and renamed into place: a reader sees the whole file or none."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with pa.OSFile(str(tmp), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table.combine_chunks())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _prune(root: Path, keep: int) -> None:
    """Remove the folders of all but the newest :data:`KEEP_VERSIONS` versions (and never
    ``keep``, the one just written)."""
    try:
        versions = sorted(
            (int(p.name[1:]) for p in root.iterdir() if p.name[:1] == "v" and p.name[1:].isdigit()),
            reverse=True,
        )
    except OSError:
        return
    for v in versions[KEEP_VERSIONS:]:
        if v != keep:
            shutil.rmtree(root / f"v{v}", ignore_errors=True)
