"""Ingest runs: an ingestor's units parsed into staging (in parallel when there are many) and
committed as one lake version."""

from __future__ import annotations

import gc
import os
import sys
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor, as_completed
from contextlib import contextmanager
from pathlib import Path
from stat import S_ISDIR, S_ISREG

import pyarrow as pa

from graphlake import ingest
from graphlake.errors import WrongCorpusError
from graphlake.ingest.base import IngestStats, SourceUnit, data_files, path_order
from graphlake.ingest.sniff import is_non_data, sniff, votes
from graphlake.lake import Lake, Snapshot
from graphlake.lake.manifest import SourceManifest, reader_fingerprint
from graphlake.lake.writer import LakeRun, StagingEmitter, StagingSummary
from graphlake.schema import emit
from graphlake.workers import started as forkserver_started
from graphlake.workers import worker_context

#: Below this many units, or this many bytes in a few big files, starting worker processes
#: costs more than it saves: the first pool of a process starts the forkserver, which imports
#: graphlake, DuckDB and every reader again (about 0.3-0.5 s on 2 cores).
PARALLEL_MIN_UNITS = 400
PARALLEL_MIN_BYTES = 32 << 20
#: bytes from which an ingestor that parses in threads (Ingestor.parse_in_threads) uses them
THREADS_MIN_BYTES = 4 << 20
#: bytes a thread parses before its input is cut into more runs than threads (thread_chunks)
THREAD_CHUNK_BYTES = 64 << 20

#: where units are parsed: worker processes on this machine, or Ray tasks
ENGINES = ("local", "ray")


def default_workers(units: list[SourceUnit], threads: bool = False) -> int:
    """Parsers for ``units``: one per core for large inputs (``threads``: the ingestor
    parses in threads, which start in microseconds, so two files of a few MiB are enough)."""
    cores = max(1, min(os.cpu_count() or 1, 8))
    if threads:
        big = len(units) >= 2 and sum(_bytes(u) for u in units) >= THREADS_MIN_BYTES
        return cores if big else 1
    if len(units) >= PARALLEL_MIN_UNITS:
        return cores
    if len(units) < 4:
        return 1
    if forkserver_started() and any(u.span for u in units):
        # a file large enough that its reader sliced it, and this process's forkserver runs
        # (a notebook or server that ingests again): a pool costs a fork a worker
        return cores
    size = sum(_bytes(u) for u in units)
    return cores if size >= PARALLEL_MIN_BYTES else 1


def chunk_size(units: int, workers: int) -> int:
    """Units per parse task: about four tasks a worker, so a slow chunk does not leave the
    others idle at the end, and at most 4,000 units a task."""
    return max(1, min(4000, -(-units // (workers * 4))))


def _bytes(unit: SourceUnit) -> int:
    if unit.span is not None:
        return unit.span[1] - unit.span[0]
    return unit.path.stat().st_size if unit.path.is_file() else 0


def _parse_units(
    corpus: str,
    em: StagingEmitter,
    start: int,
    units: list[SourceUnit],
    tick: Callable[[SourceUnit, int], None] | None = None,
) -> StagingSummary:
    ingestor = ingest.get(corpus)
    with _gc_paused():
        ingestor.parse_many(units, start, em, tick)
    return em.close()


@contextmanager
def _gc_paused():
    """An ingest allocates many short-lived, acyclic objects (paths, units, rows): the cyclic
    GC only slows it, the more the larger the caller's heap (a re-ingest of 6,666 unchanged
    files spent a third of its time in it after a pandas job). What cycles it leaves are
    collected when it ends."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _parse_in_threads(
    corpus: str,
    run: LakeRun,
    units: list[SourceUnit],
    threads: int,
    flush_rows: int,
    tick: Callable[[SourceUnit, int], None],
) -> list[StagingSummary]:
    """``units`` in chunks over ``threads`` threads of this process, each chunk staged by its
    own emitter (as a worker process would stage it); for ingestors whose parse releases the
    GIL (Ingestor.parse_in_threads). Progress is told as each batch of a chunk is done."""
    lock = threading.Lock()

    def told(unit: SourceUnit, n: int) -> None:
        with lock:
            tick(unit, n)

    with ThreadPoolExecutor(threads, thread_name_prefix="graphlake-parse") as pool:
        futures = [
            pool.submit(
                _parse_units,
                corpus,
                run.emitter(f"u{start:09d}", flush_rows),
                start,
                units[start:end],
                told,
            )
            for start, end in thread_chunks(units, threads)
        ]
        return [fut.result() for fut in futures]


def thread_chunks(units: list[SourceUnit], threads: int) -> list[tuple[int, int]]:
    """(start, end) of contiguous runs of ``units`` with about equal bytes: ``threads`` of
    them, or a multiple (up to four each) for inputs past THREAD_CHUNK_BYTES a thread, so that
    one slow run does not leave the other threads idle. Fewer, larger runs than a process
    pool's: each run pays the plan's fixed cost once per batch, and threads start at once."""
    sizes = [_bytes(u) for u in units]
    total = sum(sizes) or 1
    pieces = min(len(units), threads * max(1, min(4, total // (threads * THREAD_CHUNK_BYTES))))
    bounds: list[tuple[int, int]] = []
    start = acc = 0
    for i, size in enumerate(sizes):
        acc += size
        if i + 1 < len(units) and acc * pieces >= total * (len(bounds) + 1):
            bounds.append((start, i + 1))
            start = i + 1
    bounds.append((start, len(units)))
    return bounds


def _worker(
    corpus: str,
    staging: str,
    start: int,
    units: list[SourceUnit],
    flush_rows: int,
    default_run: dict,
    settings: dict[str, str] | None = None,
) -> StagingSummary:
    if settings is not None:
        _adopt_settings(settings)
    em = StagingEmitter(corpus, Path(staging), f"u{start:09d}", flush_rows, default_run)
    return _parse_units(corpus, em, start, units)


def _settings() -> dict[str, str]:
    """The caller's GRAPHLAKE_* variables (the readers' limits): workers started from the
    forkserver have its environment, not the caller's as it is now."""
    return {k: v for k, v in os.environ.items() if k.startswith("GRAPHLAKE_")}


def _adopt_settings(settings: dict[str, str]) -> None:
    for k in [k for k in os.environ if k.startswith("GRAPHLAKE_") and k not in settings]:
        del os.environ[k]
    os.environ.update(settings)


@contextmanager
def _main_not_rerun():
    """While workers start, the caller's ``__main__`` looks like an interactive one, so the
    workers do not run it again (what spawn and forkserver do with a script's path): a script
    that ingests without an ``if __name__ == "__main__":`` guard would ingest again in every
    worker. The workers need nothing from it: their function lives in this module."""
    main = sys.modules.get("__main__")
    if main is None:
        yield
        return
    saved = {k: main.__dict__[k] for k in ("__file__", "__spec__") if k in main.__dict__}
    main.__dict__.pop("__file__", None)
    main.__dict__["__spec__"] = None
    try:
        yield
    finally:
        main.__dict__.pop("__spec__", None)
        main.__dict__.update(saved)


def ingest_path(
    corpus: str,
    path: str | Path,
    lake: Lake | str | Path,
    *,
    on_unit: Callable[[int, int, Path], None] | None = None,
    workers: int | None = None,
    flush_rows: int = 50_000,
    prune: bool = False,
    force: bool = False,
    engine: str = "local",
    address: str | None = None,
    only: list[Path] | None = None,
) -> tuple[IngestStats, Snapshot | None]:
    """Ingest everything under ``path`` with the ``corpus`` ingestor as one lake version
    (with ``only``, just the units of those files: what ``graphlake ingest auto`` picked).

    ``workers`` processes parse units in parallel (default: one per core for large inputs).
    ``engine="ray"`` parses them in Ray tasks instead (:mod:`graphlake.cluster.ingest`), on
    the cluster at ``address`` or on one started here with ``workers`` CPUs; the commit, and
    so the lake version, is the same.
    ``on_unit(done, total, path)`` reports progress. A session already in the lake whose
    source changed is replaced; with ``prune``, sessions read earlier from files under
    ``path`` that are gone now are deleted (both in the same lake version, and older
    versions keep them). Returns the counts and the new snapshot
    (None when nothing was new). The materialized views are not refreshed here (a run stays
    one version): call :func:`graphlake.lake.derived.refresh` after, as ``graphlake ingest``
    does; until then queries compute those views from their SQL.

    A source whose files are all as the last ingest of the same path read them is not read
    at all (:mod:`graphlake.lake.manifest`; ``stats.unchanged_units``); ``force`` reads it
    anyway.
    """
    with _gc_paused():
        return _ingest(
            corpus, path, lake, on_unit=on_unit, workers=workers, flush_rows=flush_rows,
            prune=prune, force=force, engine=engine, address=address, only=only,
        )  # fmt: skip


def _ingest(
    corpus: str,
    path: str | Path,
    lake: Lake | str | Path,
    *,
    on_unit: Callable[[int, int, Path], None] | None,
    workers: int | None,
    flush_rows: int,
    prune: bool,
    force: bool,
    engine: str = "local",
    address: str | None = None,
    only: list[Path] | None = None,
) -> tuple[IngestStats, Snapshot | None]:
    """:func:`ingest_path`, with the cyclic GC paused by its caller."""
    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}: use one of {', '.join(ENGINES)}")
    lake = lake if isinstance(lake, Lake) else Lake(lake)
    if engine == "ray":  # tasks run in other folders, maybe on other machines
        path = Path(path).resolve()
    ingestor = ingest.get(corpus)
    units = ingestor.units(Path(path))
    if only is not None:
        chosen = {Path(p).resolve() for p in only}
        units = [u for u in units if u.path.resolve() in chosen]
    data = [not is_non_data(u.path) for u in units]
    skipped = [u.path for u, d in zip(units, data, strict=True) if not d]  # README, LICENSE, ...
    units = [u for u, d in zip(units, data, strict=True) if d]
    file_stats: dict[Path, os.stat_result] = {}
    unit_files: dict[int, list[Path]] = {}

    def files_of(unit: SourceUnit) -> list[Path]:  # each unit's files, listed once a run
        return _files_of(unit, file_stats, unit_files)

    files = _files_in(sorted({p for u in units for p in u.files()}, key=path_order), file_stats)
    total = len(units)
    source = str(Path(path).resolve())
    manifest = SourceManifest.open(lake.root, corpus, source, _readers())
    kept: list[SourceUnit] = []  # units not read: as the last ingest of the path read them
    if lake.exists():
        lake.init()  # checks the lake's schema version before anything else
        if not (force or prune) and manifest.holds_for(lake.snapshots(), corpus, source):
            if manifest.unchanged(files, stats=file_stats):
                return _nothing_read(lake, manifest, files, skipped, total)
            if ingestor.independent_units:
                kept = [
                    u
                    for u in units
                    if manifest.unchanged(files_of(u), every=False, stats=file_stats)
                ]
                if len(kept) == total:  # only files of the source are gone (--prune removes them)
                    return _nothing_read(lake, manifest, files, skipped, total)
                kept_set = set(map(id, kept))
                units = [u for u in units if id(u) not in kept_set]
    # each file as it was before the parse (the listing's stats where it took one)
    before = {
        f: (st.st_size, st.st_mtime_ns) if (st := file_stats.get(f)) else _stat(f) for f in files
    }
    # the manifest's content hashes are taken while the units are parsed (hashing releases
    # the GIL); a file that changes meanwhile shows in its stat and is not vouched for
    hasher = ThreadPoolExecutor(1, thread_name_prefix="graphlake-manifest")
    fingerprints = hasher.submit(manifest.record, files)
    run = LakeRun(lake, corpus, source, replace=True, prune=prune)
    threads = ingestor.parse_in_threads
    local_workers = default_workers(units, threads) if workers is None else workers
    done, reading = 0, len(units)

    def tick(unit: SourceUnit, n: int = 1) -> None:
        nonlocal done
        done += n
        if on_unit:
            on_unit(done, reading, unit.path)

    try:
        if engine == "ray" and reading:
            from graphlake.cluster.ingest import parse_on_ray

            summaries = parse_on_ray(
                _worker, chunk_size, corpus, run.staging, units, flush_rows, run.default_run,
                _settings(),
                address=address, workers=workers,
                on_chunk=lambda chunk: tick(chunk[-1], len(chunk)),
            )  # fmt: skip
        elif local_workers <= 1 or reading < 2:
            summaries = [_parse_units(corpus, run.emitter("u0", flush_rows), 0, units, tick)]
        elif threads:
            summaries = _parse_in_threads(corpus, run, units, local_workers, flush_rows, tick)
        else:
            summaries = []
            chunk = chunk_size(reading, local_workers)
            settings = _settings()
            with ProcessPoolExecutor(local_workers, mp_context=worker_context()) as pool:
                with _main_not_rerun():  # the workers start as tasks are submitted
                    futures = {
                        pool.submit(
                            _worker,
                            corpus,
                            str(run.staging),
                            start,
                            units[start : start + chunk],
                            flush_rows,
                            run.default_run,
                            settings,
                        ): units[start : start + chunk]
                        for start in range(0, reading, chunk)
                    }
                for fut in as_completed(futures):
                    summaries.append(fut.result())
                    tick(futures[fut][-1], len(futures[fut]))
        if only is None and not kept and not any(sum(s.accepted.values()) for s in summaries):
            guess = sniff(Path(path))
            if guess and guess != corpus:  # wrong ingestor: commit nothing, say which
                rejected = sum(sum(s.rejected.values()) for s in summaries)
                raise WrongCorpusError(
                    f"nothing in {path} reads as {corpus} ({rejected} records would be "
                    f"rejected); its files look like {guess} data: try `graphlake ingest "
                    f"{guess} {path}`"
                )
        if kept and _collides(lake, corpus, summaries, kept, run.staging, files_of, units):
            run.abort()  # a read unit claims a session of one not read: decide as a whole
            return ingest_path(
                corpus, path, lake, on_unit=on_unit, workers=workers, flush_rows=flush_rows,
                prune=prune, force=True, engine=engine, address=address, only=only,
            )  # fmt: skip
        # whether the files are still as before the parse, checked while the commit runs
        unchanged = hasher.submit(_unchanged_since, files, before)
        run.read_files = {str(p) for u in units for p in (u.path, *files_of(u))}
        run.found_files = {str(p) for u in (*units, *kept) for p in (u.path, *files_of(u))}
        stats, snap = run.commit(summaries)
        stats.skipped = [str(p) for p in skipped]
        if only is None and any(sum(s.rejected.values()) for s in summaries):
            stats.elsewhere = {
                other: n for other, n in votes(Path(path)).items() if other != corpus
            }
    except BaseException:
        run.abort()
        raise
    finally:
        hasher.shutdown(wait=False)
    stats.units = total
    stats.unchanged_units = len(kept)
    # a unit that failed is read again; a file that changed while it was read is not
    # vouched for (the next ingest reads the source again)
    if not any(s.failed_units for s in summaries) and unchanged.result():
        manifest.save(fingerprints.result(), lake.snapshot().lake_version)
    return stats, snap


def _stat(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


def _readers() -> str:
    return reader_fingerprint([*Path(ingest.__file__).parent.glob("*.py"), Path(emit.__file__)])


def _nothing_read(
    lake: Lake, manifest: SourceManifest, files: list[Path], skipped: list[Path], total: int
) -> tuple[IngestStats, None]:
    """The run of a source whose every unit is as the last ingest read it: its manifest is
    rewritten when files were touched but not changed, or gone (so the next check is a stat
    again), and the lake is cleaned of what killed writers left, as every ingest does."""
    if manifest.rehashed or len(files) != len(manifest.files):
        manifest.save(manifest.record(files), manifest.lake_version or 0)
    with lake.write_lock():
        lake.repair(lake.snapshot())
    stats = IngestStats(units=total, unchanged_units=total)
    stats.skipped = [str(p) for p in skipped]
    return stats, None


def _files_in(paths: list[Path], stats: dict[Path, os.stat_result] | None = None) -> list[Path]:
    """The files the manifest fingerprints: each path, or every file below a folder, walked
    as the ingestors walk it (links that leave the folder are not read, nor hashed). One
    stat a path, kept in ``stats`` for the manifest's check: a re-ingest of thousands of
    unchanged files spends its time on stats."""
    out: list[Path] = []
    for p in paths:
        if stats is not None and p in stats:  # a file the listing took already
            out.append(p)
            continue
        try:
            st = os.stat(p)
        except OSError:
            continue
        if S_ISDIR(st.st_mode):
            out.extend(data_files(p))
        elif S_ISREG(st.st_mode):
            out.append(p)
            if stats is not None:
                stats[p] = st
    return out


def _files_of(
    unit: SourceUnit,
    stats: dict[Path, os.stat_result] | None = None,
    memo: dict[int, list[Path]] | None = None,
) -> list[Path]:
    """A unit's files (:func:`_files_in`); with ``memo``, listed once a run."""
    if memo is None:
        return _files_in(list(unit.files()), stats)
    found = memo.get(id(unit))
    if found is None:
        found = memo[id(unit)] = _files_in(list(unit.files()), stats)
    return found


def _collides(
    lake: Lake,
    corpus: str,
    summaries,
    kept: list[SourceUnit],
    staging: Path,
    files_of=_files_of,
    read: Sequence[SourceUnit] = (),
) -> bool:
    """Whether a session (or a scenario) read now has the id of one the lake holds from a
    unit that was not read (two files with one id: only a whole read decides which is
    first), or one the lake holds from a unit read again is gone from it while a unit not
    read holds a copy that lost to it (a session's losing copy is a reject that names it; a
    scenario's leaves none, so any counts): that copy wins now, and only a whole read finds
    it."""
    import duckdb

    from graphlake.schema.duckdb_views import string_list

    snap = lake.snapshot()
    kept_files = sorted({str(f) for u in kept for f in files_of(u)})
    read_files = sorted({str(f) for u in read for f in files_of(u)})
    sids = sorted({sid for s in summaries for sid, _unit, _src in s.sessions})
    con = duckdb.connect()
    try:
        con.register("_kept", pa.table({"f": kept_files}))
        con.register("_read", pa.table({"f": read_files}))
        con.register("_sids", pa.table({"s": sids}, schema=pa.schema([("s", pa.string())])))
        staged_scen = [str(p) for p in sorted(Path(staging, "scenarios").glob("*.parquet"))]
        # a session's losing copies are rejects that name it (record_kind 'session'); a
        # scenario's leave no trace, so any scenario gone from a file read again counts
        rejects = lake.files("rejects", snap)
        dup = (
            f" AND EXISTS (SELECT 1 FROM read_parquet({string_list(rejects)}, "
            "union_by_name=true) r WHERE r.corpus = $c AND r.record_kind = 'session' AND "
            "r.session_id = h.session_id AND r.source_file IN (SELECT f FROM _kept))"
        )
        for table, key, staged, copies in (
            ("sessions", "session_id", "SELECT s FROM _sids", dup if rejects else None),
            (
                "scenarios",
                "scenario_id",
                f"SELECT scenario_id FROM read_parquet({string_list(staged_scen)})"
                if staged_scen
                else "SELECT NULL::VARCHAR",
                "",
            ),
        ):
            held = lake.files(table, snap)
            if not held or not read_files or copies is None:
                continue
            [(gone,)] = con.execute(
                f"SELECT count(*) FROM read_parquet({string_list(held)}, union_by_name=true) h "
                f"WHERE h.corpus = $c AND h.source_file IN (SELECT f FROM _read) AND h.{key} "
                f"NOT IN ({staged}){copies}",
                {"c": corpus},
            ).fetchall()
            if gone:
                return True
        # a scenario is claimed by its id, as a session is; but tau2 results files each
        # carry the tasks they ran: the same scenario, as it was, from a file that comes
        # first is what a whole read keeps too, so only a different or an earlier one collides
        scen = [str(p) for p in sorted(Path(staging, "scenarios").glob("*.parquet"))]
        lake_scen = lake.files("scenarios", snap)
        if scen and lake_scen:
            from graphlake.lake.writer import WHERE_FROM
            from graphlake.schema import TABLES

            cols = [c for c in TABLES["scenarios"].columns if c not in WHERE_FROM]
            same = " AND ".join(f"l.{c} IS NOT DISTINCT FROM s.{c}" for c in cols)
            for lake_file, staged_file, equal in con.execute(
                f"SELECT l.source_file, s.source_file, {same} FROM read_parquet("
                f"{string_list(scen)}, union_by_name=true) s JOIN read_parquet("
                f"{string_list(lake_scen)}, union_by_name=true) l USING (corpus, scenario_id) "
                "WHERE l.corpus = $c AND l.source_file IN (SELECT f FROM _kept)",
                {"c": corpus},
            ).fetchall():
                if not equal or Path(staged_file).parts < Path(lake_file).parts:
                    return True
        files = lake.files("sessions", snap)
        if not sids or not files:
            return False
        [(n,)] = con.execute(
            f"SELECT count(*) FROM read_parquet({string_list(files)}, union_by_name=true) "
            "WHERE corpus = $c AND session_id IN (SELECT s FROM _sids) "
            "AND source_file IN (SELECT f FROM _kept)",
            {"c": corpus},
        ).fetchall()
    finally:
        con.close()
    return n > 0


def _unchanged_since(files: list[Path], before: dict) -> bool:
    """Whether every file has the size and time it had before the parse."""
    return all(_stat(f) == before.get(f) for f in files)
