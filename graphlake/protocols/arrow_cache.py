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
from typing import TypeAlias

import pyarrow as pa

import graphlake
from graphlake.config import serve_room_bytes
from graphlake.data_cap import room_for_build
from graphlake.lake import Lake

#: Bump when what is written changes without the SQL changing.
FORMAT = 1
#: Lake versions whose tables are kept (the others' folders are removed on a write).
KEEP_VERSIONS = 3

log = logging.getLogger(__name__)

#: A build that streams: it calls its argument with readers of the table's batches (one or
#: several, one after another, all of one schema), which are written to the file as they
#: come: the table is never whole in memory
Streamed: TypeAlias = Callable[[Callable[[pa.RecordBatchReader], None]], None]


def cache_dir(lake: Lake) -> Path:
    return lake.meta_dir / "cache" / "arrow"


def cached_table(
    lake: Lake,
    version: int,
    name: str,
    recipe: str,
    build: Callable[[], pa.Table] | None = None,
    *,
    stream: Streamed | None = None,
) -> pa.Table:
    """``build()``'s table for ``version``, memory-mapped from its file when an earlier build
    (of this process or another) left one; ``recipe`` is everything the table depends on
    besides the version (the SQL and its parameters). With ``stream`` instead of ``build``
    the batches go to the file one by one: a serving process, whose data segment is capped,
    builds a table larger than its cap allows in memory (100,000 Kolab sessions: 1.3 GiB of
    rows, 3.3 GiB at the peak when built whole)."""
    if (build is None) == (stream is None):
        raise TypeError("cached_table takes one of build and stream")
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
        return _in_memory(build, stream)  # a read-only lake: no cache, as before
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one build; the others wait for its file
        table = _mapped(path)
        if table is not None:
            return table
        try:
            with room_for_build(serve_room_bytes()):  # the server's own work, not a statement
                if stream is not None:
                    _write_stream(path, stream)
                    table = None
                else:
                    assert build is not None
                    table = build()
                    _write(path, table)
        except OSError as exc:
            log.warning("could not keep %s in the lake's cache (%s): built in memory", name, exc)
            return table if table is not None else _in_memory(build, stream)
        _prune(cache_dir(lake), keep=version)
        mapped = _mapped(path)
        if mapped is None:
            return table if table is not None else _in_memory(build, stream)
        return mapped


def _in_memory(build: Callable[[], pa.Table] | None, stream: Streamed | None) -> pa.Table:
    if build is not None:
        return build()
    got: list[pa.Table] = []
    assert stream is not None
    stream(lambda reader: got.append(reader.read_all()))
    return pa.concat_tables(got)


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
    """Written beside and renamed into place: a reader sees the whole file or none. A built
    table is written as one batch: an instance index combines its mapped columns into one
    chunk each, which is free for a file of one batch and a private copy in every worker
    process otherwise."""
    one = table.combine_chunks()
    _write_stream(
        path, lambda write: write(pa.RecordBatchReader.from_batches(one.schema, one.to_batches()))
    )


def _write_stream(path: Path, stream: Streamed) -> None:
    """The batches of every reader ``stream`` hands over, in order, into one file written
    beside ``path`` and renamed into place."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with pa.OSFile(str(tmp), "wb") as sink:
            writer: pa.ipc.RecordBatchFileWriter | None = None
            schema: pa.Schema | None = None

            def write(reader: pa.RecordBatchReader) -> None:
                nonlocal writer, schema
                if writer is None:
                    schema = reader.schema
                    writer = pa.ipc.new_file(sink, schema)
                for batch in reader:
                    writer.write_batch(batch if batch.schema == schema else batch.cast(schema))

            try:
                stream(write)
            finally:
                if writer is not None:
                    writer.close()
            if writer is None:
                raise OSError("the build handed over no rows, not even a schema")
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
