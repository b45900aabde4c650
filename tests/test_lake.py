"""The real lake: idempotent re-ingest, time travel, atomic runs, compaction, info."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from conftest import FIXTURES, HAND, cli
from graphlake.errors import LakeVersionError
from graphlake.lake import Lake, LakeRun
from graphlake.lake.maintenance import compact, table_info
from graphlake.pipeline import ingest_path
from graphlake.query import run_sql


def count(lake, table, version=None) -> int:
    res = run_sql(f"SELECT count(*) AS n FROM {table}", lake, version=version)
    return res.table["n"][0].as_py()


def test_reingest_adds_nothing(lake):
    stats, snap = ingest_path("kolab", HAND, lake)
    assert snap.lake_version == 1 and stats.added["nodes"] == 7
    # read again in full (force): every row is found in the lake already
    stats2, snap2 = ingest_path("kolab", HAND, lake, force=True)
    assert snap2 is None and sum(stats2.added.values()) == 0
    assert stats2.accepted == stats.accepted and stats2.unchanged_units == 0
    # and by default not read at all: the files are as the manifest has them
    stats3, snap3 = ingest_path("kolab", HAND, lake)
    assert snap3 is None and stats3.unchanged_units == stats3.units == 1
    assert sum(stats3.accepted.values()) == 0
    assert lake.snapshot().lake_version == 1
    assert count(lake, "nodes") == 7


def _copy_with_old_times(src: Path, dst: Path) -> None:
    """A copy whose files look written an hour ago: times the manifest can trust."""
    import os
    import time

    shutil.copytree(src, dst)
    old = time.time() - 3600
    for f in dst.rglob("*"):
        os.utime(f, (old, old))


def test_a_file_edited_while_the_ingest_runs_is_read_again(tmp_path, monkeypatch):
    """The manifest's hashes are taken while units are parsed, so a file edited after it was
    read may be hashed as edited (here the hashing waits for the edit): it is not vouched for
    (its stat moved during the run), and the next ingest reads it again and lands the edit."""
    import threading

    from graphlake.demo.public_gen import write_coauthor_corpus
    from graphlake.lake import manifest

    edited = threading.Event()
    real_record = manifest.SourceManifest.record

    def record_after_the_edit(self, files):
        edited.wait(60)
        return real_record(self, files)

    monkeypatch.setattr(manifest.SourceManifest, "record", record_after_the_edit)

    src = tmp_path / "src"
    _copy_with_old_times(write_coauthor_corpus(tmp_path / "gen", sessions=3), src)
    first_log = sorted(src.rglob("*.jsonl"))[0]
    lake = tmp_path / "lake"

    def edit_the_first(done: int, total: int, path: Path) -> None:
        if done == 1:  # the first log has been read: append an event to it
            with first_log.open("a") as fh:
                fh.write(json.dumps({"eventName": "text-insert", "eventSource": "user",
                                     "eventTimestamp": 1_700_000_000_000}) + "\n")  # fmt: skip
            edited.set()

    def late_events() -> int:
        sql = "SELECT count(*) AS n FROM events WHERE timestamp >= '2023-11-14'"
        return run_sql(sql, lake).table.to_pylist()[0]["n"]

    ingest_path("coauthor", src, lake, workers=1, on_unit=edit_the_first)
    assert late_events() == 0  # read before the edit
    again, _ = ingest_path("coauthor", src, lake)
    assert again.unchanged_units == 0 and late_events() == 1
    third, _ = ingest_path("coauthor", src, lake)
    assert third.unchanged_units == third.units == 3  # the manifest holds the files as they are


def test_an_unchanged_source_is_not_read_a_changed_one_is(lake, tmp_path, monkeypatch):
    """Re-ingesting an unchanged folder parsed every byte again (0.9-1.2x of a first ingest).
    The manifest skips it; a file touched but not changed is found unchanged by its hash; an
    edit that keeps the size and sets the time back is still found; a new file, a changed
    reader limit or another source replacing the corpus's rows all read it again."""
    import os

    from graphlake import ingest as ingestors

    src = tmp_path / "runs"
    _copy_with_old_times(FIXTURES / "tau2_runs", src)
    ingest_path("tau2", src, lake)
    parsed: list[str] = []
    real = ingestors.get("tau2").__class__.parse

    def counting(self, unit, out):
        parsed.append(unit.path.name)
        return real(self, unit, out)

    monkeypatch.setattr(ingestors.get("tau2").__class__, "parse", counting)

    def skipped(stats) -> bool:
        return stats.unchanged_units == stats.units > 0

    def again(**kw):
        parsed.clear()
        stats, _snap = ingest_path("tau2", src, lake, workers=1, **kw)
        return stats

    assert skipped(again()) and parsed == []
    sim = src / "voice_run" / "simulations" / "voice-t1-0.json"
    os.utime(sim)  # touched now, same bytes: hashed, found the same, remembered
    assert skipped(again()) and parsed == []
    data = sim.read_bytes()
    st = sim.stat()
    sim.write_bytes(data.replace(b'"reward": 1.0', b'"reward": 0.0', 1))
    assert sim.stat().st_size == st.st_size and data != sim.read_bytes()
    os.utime(sim, ns=(st.st_atime_ns, st.st_mtime_ns))  # the edit hides its time
    stats = again()
    # the racy time is not trusted: hashed, and the run folder holding it read, alone (tau2's
    # units stand alone: its results files are not)
    assert parsed == ["voice_run"] and stats.unchanged_units == stats.units - 1
    assert stats.replaced_sessions == 1
    assert skipped(again())
    (src / "notes.json").write_text("{}")  # a new file: read, alone
    parsed.clear()
    stats = again()
    assert parsed == ["notes.json"] and stats.unchanged_units == stats.units - 1
    assert skipped(again())
    monkeypatch.setenv("GRAPHLAKE_MAX_ATTRS_BYTES", "123456")  # the readers changed
    assert again().unchanged_units == 0
    monkeypatch.delenv("GRAPHLAKE_MAX_ATTRS_BYTES")
    assert again().unchanged_units == 0  # back to the default: the manifest was rewritten
    assert skipped(again())
    other = tmp_path / "other"  # another folder of the corpus replaces one of its sessions
    _copy_with_old_times(src / "voice_run", other / "voice_run")
    sim2 = other / "voice_run" / "simulations" / sim.name
    sim2.write_bytes(sim2.read_bytes().replace(b'"reward": 0.0', b'"reward": 1.0', 1))
    assert ingest_path("tau2", other, lake)[0].replaced_sessions == 1
    assert again().unchanged_units == 0  # the lake no longer holds what src gave


def test_new_sessions_append_and_old_versions_stay_readable(lake, tmp_path):
    ingest_path("kolab", HAND, lake)
    other = tmp_path / "other"
    shutil.copytree(HAND, other)
    g = (other / "graph.json").read_text().replace('"hand-1"', '"hand-2"')
    (other / "graph.json").write_text(g)
    _, snap = ingest_path("kolab", other, lake)
    assert snap.lake_version == 2
    assert count(lake, "sessions") == 2
    assert count(lake, "sessions", version=1) == 1
    assert count(lake, "sessions", version=0) == 0
    with pytest.raises(LakeVersionError, match="versions run from 0 to 2"):
        count(lake, "sessions", version=9)


def test_crash_between_table_commits_and_snapshot_is_invisible(lake, monkeypatch, tmp_path):
    ingest_path("kolab", HAND, lake)
    other = tmp_path / "other"
    shutil.copytree(HAND, other)
    (other / "graph.json").write_text(
        (other / "graph.json").read_text().replace('"hand-1"', '"hand-2"')
    )

    def crash(self, **kwargs):
        raise RuntimeError("power cut")

    monkeypatch.setattr(Lake, "commit_snapshot", crash)
    with pytest.raises(RuntimeError, match="power cut"):
        ingest_path("kolab", other, lake)
    monkeypatch.undo()
    # the data tables did advance, but readers see the last snapshot only
    assert count(lake, "sessions") == 1 and count(lake, "nodes") == 7
    # the next writer rolls the orphaned commits back before committing its own run
    _, snap = ingest_path("kolab", other, lake)
    assert snap.lake_version == 2
    assert count(lake, "sessions") == 2 and count(lake, "nodes") == 14


def test_duplicate_keys_within_a_unit_land_once(lake):
    run = LakeRun(lake, "kolab", "test")
    em = run.emitter(flush_rows=1)  # one Parquet part per row
    for _ in range(3):
        em.row("nodes", {"session_id": "s", "node_id": "n"})
    stats, _ = run.commit([em.close()])
    assert stats.accepted["nodes"] == 3 and stats.added["nodes"] == 1
    assert count(lake, "nodes") == 1


@pytest.mark.parametrize("workers", [1, 2])
def test_same_session_in_two_files_keeps_the_first_and_rejects_the_second(lake, tmp_path, workers):
    folder = tmp_path / "corpus"
    for name, title in (("a.json", "first"), ("b.json", "second")):
        g = (HAND / "graph.json").read_text().replace("Contract review", title)
        (folder / name).parent.mkdir(exist_ok=True)
        (folder / name).write_text(g)
    stats, _ = ingest_path("kolab", folder, lake, workers=workers)
    rows = run_sql("SELECT title FROM sessions", lake).table.to_pylist()
    assert rows == [{"title": "first"}]
    rej = run_sql("SELECT reason, raw FROM rejects", lake).table.to_pylist()
    assert len(rej) == 1 and "already read from" in rej[0]["reason"]
    assert "a.json" in rej[0]["reason"] and '"second"' in rej[0]["raw"]
    assert stats.accepted["nodes"] == 7 and stats.added["nodes"] == 7
    assert stats.rejected["sessions"] == 1


def _three_runs(lake, tmp_path) -> None:
    for i in range(3):
        folder = tmp_path / f"s{i}"
        shutil.copytree(HAND, folder)
        (folder / "graph.json").write_text(
            (folder / "graph.json").read_text().replace('"hand-1"', f'"hand-{i}"')
        )
        ingest_path("kolab", folder, lake)


def test_compact_keeps_rows_and_history(lake, tmp_path):
    _three_runs(lake, tmp_path)
    before = {t.table: (t.rows, t.files) for t in table_info(lake, lake.snapshot())}
    assert before["nodes"] == (21, 3)
    snap, report = compact(lake)
    assert snap.lake_version == 4 and report["nodes"]["files_removed"] == 3
    after = {t.table: (t.rows, t.files) for t in table_info(lake, lake.snapshot())}
    assert after["nodes"] == (21, 1)
    assert count(lake, "nodes") == 21 and count(lake, "nodes", version=2) == 14


def test_schema_version_is_stored_and_checked(lake):
    import json

    from graphlake.errors import LakeError
    from graphlake.schema import SCHEMA_VERSION

    ingest_path("kolab", HAND, lake)
    marker = lake.meta_dir / "lake.json"
    assert json.loads(marker.read_text())["schema_version"] == SCHEMA_VERSION
    marker.write_text(json.dumps({"schema_version": SCHEMA_VERSION + 1}))
    with pytest.raises(LakeError, match="ingest into a new --lake"):
        ingest_path("kolab", HAND, lake)


def _hold_write_lock(lake: Path):
    """A real process holding the lake's write lock until its stdin is closed: the test
    releases it when the event it waits for has happened, never after a fixed time."""
    import subprocess
    import sys

    hold = subprocess.Popen(
        [
            sys.executable,
            "-c",
            (
                "import sys; from graphlake.lake import Lake\n"
                f"with Lake({str(lake)!r}).write_lock():\n"
                "    print('locked', flush=True); sys.stdin.read()"
            ),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert hold.stdout.readline().strip() == "locked"
    return hold


@pytest.mark.subprocess
def test_concurrent_writers_wait_and_both_land(tmp_path):
    """Two ingests into one lake at once: the second waits for the first's commit instead of
    failing, and both runs land (real processes, real lock)."""
    import os
    import subprocess
    import sys

    from conftest import FIXTURES

    lake = tmp_path / "lake"
    Lake(lake).init()
    hold = _hold_write_lock(lake)
    jobs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "graphlake.cli",
                "ingest",
                corpus,
                str(FIXTURES / src),
                "--lake",
                str(lake),
                "--quiet",
                "--no-refresh",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for corpus, src in (("hasbench", "hasbench"), ("tau2", "tau2_runs"))
    ]
    # each writer says it waits before the lock is let go (a writer that failed instead ends
    # its stderr, so this loop cannot hang)
    said = []
    for job in jobs:
        lines = []
        for line in job.stderr:
            lines.append(line)
            if "waiting for it" in line:
                break
        said.append("".join(lines))
    hold.stdin.close()
    hold.wait(timeout=300)
    for job, before in zip(jobs, said, strict=True):
        _out, err = job.communicate(timeout=600)
        assert job.returncode == 0, before + err
        assert "waiting for it" in before
    snaps = Lake(lake).snapshots()
    assert sorted(s.corpus for s in snaps) == ["hasbench", "tau2"]
    # and a writer that cannot get the lock in time says so and how to wait longer
    hold = _hold_write_lock(lake)
    try:
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "graphlake.cli",
                "ingest",
                "tau2",
                str(FIXTURES / "tau2_runs"),
                "--lake",
                str(lake),
                "--quiet",
            ],
            capture_output=True,
            text=True,
            timeout=600,
            env={**os.environ, "GRAPHLAKE_LOCK_TIMEOUT": "1"},
        )
    finally:
        hold.stdin.close()
        hold.wait(timeout=300)
    assert out.returncode == 1 and "GRAPHLAKE_LOCK_TIMEOUT" in out.stderr


def test_vacuum_keeps_the_retention_window_readable(lake, tmp_path):
    _three_runs(lake, tmp_path)
    compact(lake, vacuum=True)  # the default window: every version is recent
    assert count(lake, "nodes", version=1) == 7 and count(lake, "nodes") == 21
    compact(lake, vacuum=True, retain_hours=0)
    assert lake.snapshot().operation == "vacuum"  # Delta's vacuum commits, pinned
    latest = lake.snapshot().lake_version
    assert count(lake, "nodes") == 21
    with pytest.raises(
        LakeVersionError,
        match=r"version 2 .* can no longer be read.*"
        rf"versions \d+ to {latest} can be read",
    ):
        count(lake, "nodes", version=2)
    history = {
        r["version"]: r["readable"]
        for r in json.loads(cli("lake", "history", "--format", "json", lake=lake.root).stdout)
    }
    assert history[latest] and not history[1] and not history[2]
    # the next writer takes the lake as it is: no roll-back of the vacuum's commits
    folder = tmp_path / "s9"
    shutil.copytree(HAND, folder)
    (folder / "graph.json").write_text(
        (folder / "graph.json").read_text().replace('"hand-1"', '"hand-9"')
    )
    ingest_path("kolab", folder, lake)
    assert count(lake, "nodes") == 28


@pytest.mark.subprocess
@pytest.mark.parametrize("kill_at", [1, 4])
def test_a_vacuum_killed_part_way_leaves_a_readable_lake(lake, tmp_path, kill_at):
    """kill -9 (os._exit) after the kill_at-th table's vacuum: the lake opens, its current
    version reads every row, and the next writer and compact work."""
    import subprocess
    import sys

    _three_runs(lake, tmp_path)
    code = (
        "import os, deltalake\n"
        "from graphlake.lake import Lake\n"
        "from graphlake.lake.maintenance import compact\n"
        "orig, n = deltalake.DeltaTable.vacuum, [0]\n"
        "def vacuum(self, *a, **k):\n"
        "    out = orig(self, *a, **k); n[0] += 1\n"
        f"    if n[0] == {kill_at}: os._exit(9)\n"
        "    return out\n"
        "deltalake.DeltaTable.vacuum = vacuum\n"
        f"compact(Lake({str(lake.root)!r}), vacuum=True, retain_hours=0)\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=300)
    assert res.returncode == 9
    assert count(lake, "nodes") == 21 and count(lake, "edges") > 0
    compact(lake, vacuum=True, retain_hours=0)
    assert count(lake, "nodes") == 21


@pytest.mark.subprocess
def test_repair_removes_the_files_of_a_compaction_killed_before_its_lake_version(lake, tmp_path):
    """A compaction killed after its table commits, before the lake version that pins them:
    the roll-back restores the pinned files, and the compacted ones stayed on disk (57 in one
    run of benchmarks/faults.py). `lake repair` now deletes every data file no lake version
    reads, and every version still reads."""
    import subprocess
    import sys

    _three_runs(lake, tmp_path)
    # and a reader killed with its DuckDB spill folder in the lake
    reader = (
        "import os, sys\n"
        "from graphlake.query.connection import Connection\n"
        "con = Connection(sys.argv[1])\n"
        "os._exit(9)\n"
    )
    subprocess.run([sys.executable, "-c", reader, str(lake.root)], timeout=300)
    assert list((lake.meta_dir / "tmp").glob("duckdb-*"))
    code = (
        "import os\n"
        "from graphlake.lake import Lake\n"
        "from graphlake.lake.maintenance import compact\n"
        "Lake.commit_snapshot = lambda self, **kw: os._exit(9)\n"
        f"compact(Lake({str(lake.root)!r}))\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=300)
    assert res.returncode == 9, res.stderr[-2000:]
    out = cli("lake", "repair", lake=lake.root)
    assert out.returncode == 0, out.stderr
    assert lake.unread_files() == []
    assert len(list(lake.table_path("nodes").glob("*.parquet"))) == 3  # one per run, no more
    assert not list((lake.meta_dir / "tmp").glob("duckdb-*"))  # cleaned by the next writer
    assert [count(lake, "nodes", version=v) for v in (1, 2, 3)] == [7, 14, 21]
    compact(lake)
    assert count(lake, "nodes") == 21 and lake.unread_files() == []


def test_the_next_writer_cleans_what_a_killed_one_left(lake, tmp_path):
    """A staging folder whose process is gone, and a data file moved into a table whose
    commit never happened, are removed by the next writer (and by `lake repair`); a live
    run's staging folder is left alone."""
    import json as json_
    import os
    import subprocess
    import sys

    ingest_path("kolab", HAND, lake)
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    ).stdout.strip()
    import socket

    for name, pid in (("dead", int(dead)), ("live", os.getpid())):
        run = lake.staging_dir / name
        run.mkdir(parents=True)
        (run / "owner.json").write_text(json_.dumps({"pid": pid, "host": socket.gethostname()}))
        (run / "x.parquet").write_bytes(b"staged")
    nodes = lake.table_path("nodes")
    stray = nodes / "part-00000-killed-commit.parquet"
    shutil.copy(next(nodes.glob("*.parquet")), stray)
    out = cli("lake", "repair", lake=lake.root).stdout
    assert "1 staging folders, 1 unreferenced files" in out
    assert not (lake.staging_dir / "dead").exists() and (lake.staging_dir / "live").exists()
    assert not stray.exists() and count(lake, "nodes") == 7
    # an ingest does the same on its own once it finds a dead run's staging folder
    shutil.copy(next(nodes.glob("*.parquet")), stray)
    (lake.staging_dir / "dead").mkdir()
    (lake.staging_dir / "dead" / "owner.json").write_text(
        json_.dumps({"pid": int(dead), "host": socket.gethostname()})
    )
    ingest_path("kolab", HAND, lake)
    assert not stray.exists() and not (lake.staging_dir / "dead").exists()


def test_a_staging_folder_killed_while_being_made_is_still_cleaned(lake):
    """Staging folders get their owner file before they take their name; one killed before
    that names its process, so the next writer can tell it is dead."""
    import os
    import subprocess

    lake.init()
    made = lake.new_staging("ingest")
    assert json.loads((made / "owner.json").read_text())["pid"] == os.getpid()
    gone = subprocess.Popen(["true"])  # a process id that is surely gone
    gone.wait()
    dead = lake.staging_dir / f".{gone.pid}-ingest-half-made"
    alive = lake.staging_dir / f".{os.getpid()}-ingest-half-made"
    dead.mkdir()
    alive.mkdir()
    assert sorted(lake.clean_staging()) == [dead.name]
    assert alive.exists() and made.exists()


def test_a_staging_folder_killed_while_being_removed_is_still_cleaned(lake, monkeypatch):
    """Removing a staging folder deletes its owner file at some point; a run killed after that
    (CI caught one, a kill -9 just after an ingest's commit) must not leave a folder the next
    writer keeps for a day as one it cannot attribute."""
    import shutil

    lake.init()
    made = lake.new_staging("ingest")
    (made / "nodes").mkdir()
    (made / "nodes" / "part.parquet").write_bytes(b"staged rows")

    def killed_mid_removal(path, ignore_errors=False):
        (Path(path) / "owner.json").unlink()  # what rmtree got through before the kill
        raise SystemExit("killed")

    monkeypatch.setattr(shutil, "rmtree", killed_mid_removal)
    with pytest.raises(SystemExit):
        lake.remove_staging(made)
    monkeypatch.undo()
    assert len(list(lake.staging_dir.iterdir())) == 1  # the half-removed folder
    assert lake.clean_staging()
    assert not list(lake.staging_dir.iterdir())


# ------------------------------------------------------------------ readers across a vacuum


def _vacuum_all_but_newest(lake) -> None:
    """What `graphlake lake compact --vacuum --retain-hours 0` does: one file per table,
    and every other version's files deleted."""
    compact(lake, vacuum=True, retain_hours=0)


def test_a_connection_follows_the_lake_past_a_vacuum_of_its_version(lake, tmp_path):
    """A reader opened on the newest version lost its files to a retain-0 vacuum: it failed
    102 of 118 reads until reopened. It now reopens at the newest version, saying so once."""
    import warnings

    from graphlake.errors import SnapshotMovedWarning
    from graphlake.query.connection import Connection

    _three_runs(lake, tmp_path)
    with Connection(lake) as con:
        read_at = con.version
        assert con.sql("SELECT count(*) FROM nodes").table.column(0)[0].as_py() == 21
        _vacuum_all_but_newest(lake)
        with pytest.warns(SnapshotMovedWarning, match=f"lake version {read_at} were deleted"):
            assert con.sql("SELECT count(*) FROM nodes").table.column(0)[0].as_py() == 21
        assert con.version == lake.snapshot().lake_version > read_at
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # said once; later reads are plain reads
            assert con.rows("SELECT count(*) AS n FROM edges")[0]["n"] > 0


def test_a_connection_pinned_to_a_vacuumed_version_says_what_to_do(lake, tmp_path):
    from graphlake.errors import SnapshotGoneError
    from graphlake.query.connection import Connection

    _three_runs(lake, tmp_path)
    with Connection(lake, lake.snapshot().lake_version) as con:
        pinned = con.version
        _vacuum_all_but_newest(lake)
        with pytest.raises(SnapshotGoneError, match=f"version {pinned} .* can no longer be read"):
            con.sql("SELECT count(*) FROM nodes")
        assert con.version == pinned  # pinned on purpose: it does not move by itself


def test_opening_a_connection_while_a_vacuum_deletes_its_version(lake, tmp_path, monkeypatch):
    """The newest version was resolved, then its files went before the views were made: the
    connection opens at the newer version instead of failing with DuckDB's raw error."""
    from graphlake.query import connection

    _three_runs(lake, tmp_path)
    real, calls = connection.open_catalog, []

    def vacuum_in_between(lk, version, **kw):
        calls.append(version)
        if len(calls) == 1:
            _vacuum_all_but_newest(lake)
        return real(lk, version, **kw)

    monkeypatch.setattr(connection, "open_catalog", vacuum_in_between)
    with connection.Connection(lake) as con:
        assert con.version == lake.snapshot().lake_version == calls[-1] > calls[0]
        assert con.rows("SELECT count(*) AS n FROM nodes")[0]["n"] == 21


def test_a_server_moves_past_a_vacuum_of_the_version_it_serves(lake, tmp_path):
    """A running server answered 400 on /sql, /sessions and /workbench/sessions after a
    retain-0 vacuum until POST /refresh. It now moves to the newest version before the next
    request; one already reading when the files went gets 503 `lake_moved` and can retry."""
    import httpx

    from conftest import LiveServer
    from graphlake.server import Settings

    _three_runs(lake, tmp_path)
    count_sql = {"sql": "SELECT count(*) AS n FROM nodes"}
    with (
        # hold_bytes=0: the statements read the files (a small table held in memory, or an
        # answer in the result cache, still answers for the vacuumed version, correctly)
        LiveServer(Settings(lake=lake.root, preload_rows=0, hold_bytes=0)) as srv,
        httpx.Client(base_url=srv.url, timeout=120) as c,
    ):
        served = c.get("/health").json()["lake_version"]
        _vacuum_all_but_newest(lake)
        assert c.post("/sql", json=count_sql).json()["rows"] == [[21]]
        assert c.get("/sessions").status_code == 200
        assert c.get("/workbench/sessions").status_code == 200
        assert c.get("/health").json()["lake_version"] == lake.snapshot().lake_version > served

        # a request already reading when the files go: hide the vacuum from the check the
        # next request makes, as if it had started before the vacuum record was written
        state = srv.app.state.graphlake
        before = state.current.con.version
        folder = tmp_path / "more"
        shutil.copytree(HAND, folder)
        (folder / "graph.json").write_text(
            (folder / "graph.json").read_text().replace('"hand-1"', '"hand-7"')
        )
        ingest_path("kolab", folder, lake)  # the server stays on its version until told
        _vacuum_all_but_newest(lake)
        state._vacuum_seen = state._vacuum_mtime()
        gone = c.post("/sql", json={"sql": "SELECT count(*) AS n FROM edges"})  # not cached
        assert gone.status_code == 503 and gone.headers["retry-after"] == "0"
        assert gone.json()["error"]["code"] == "lake_moved"
        assert c.post("/sql", json=count_sql).json()["rows"] == [[28]]
        assert state.current.con.version == lake.snapshot().lake_version > before


_INGEST_TWICE = """
import json, sys
from pathlib import Path
from graphlake.demo.kolab_gen import KolabGenerator
from graphlake.pipeline import ingest_path
print("top level ran", flush=True)  # no __main__ guard, as in a notebook or a quick script
root = Path(sys.argv[1])
for part, seed in (("a", 3), ("b", 4)):
    (root / part).mkdir(parents=True)
    gen = KolabGenerator(seed)
    for i in range(80):
        (root / part / f"{i}.json").write_text(json.dumps(gen.session(i).graph))
first, _ = ingest_path("kolab", root / "a", root / "lake", workers=1)
second, _ = ingest_path("kolab", root / "b", root / "lake", workers=2)
print(first.accepted["sessions"], second.accepted["sessions"], flush=True)
# the workers' server started with the environment of that moment; a limit set since
# must still reach them
import os
os.environ["GRAPHLAKE_MAX_REJECT_RAW"] = "50"
(root / "c").mkdir()
for i in range(4):
    (root / "c" / f"{i}.json").write_text(json.dumps(gen.session(100 + i).graph))
(root / "c" / "zz-bad.json").write_text("{" + "x" * 500)
ingest_path("kolab", root / "c", root / "lake", workers=2)
from graphlake.query import run_sql
raw = run_sql("SELECT raw FROM rejects WHERE source_file LIKE '%zz-bad.json'", root / "lake")
print(len(raw.table.column(0)[0].as_py()) < 400, flush=True)
"""


@pytest.mark.subprocess
def test_a_parallel_ingest_after_an_in_process_one_in_the_same_process(tmp_path):
    """Workers were forked from the caller: after an in-process ingest (DuckDB, Arrow and
    Delta threads in the parent) the forked workers hung or crashed. They start from a clean
    server now, and a script without a main guard is not run again in them."""
    import subprocess
    import sys

    script = tmp_path / "twice.py"
    script.write_text(_INGEST_TWICE)
    proc = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "work")],
        capture_output=True,
        text=True,
        timeout=600,  # a backstop for the hang this guards against, not a measure
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split("\n")[:3] == ["top level ran", "80 80", "True"]


def test_a_kolab_reingest_reads_only_the_units_that_changed(lake, tmp_path, monkeypatch):
    """Kolab units stand alone (a graph file, a session folder), so a corpus that grew by one
    session, or had one graph edited, reads that unit only; the lake ends as a full read
    would leave it. A unit read now that claims the session of one not read makes the run
    read everything, so the first of the two wins as before."""
    from graphlake import ingest as ingestors
    from graphlake.demo.corpus import write_graph_corpus

    corpus = tmp_path / "corpus"
    write_graph_corpus(corpus, sessions=12, seed=3)
    graphs = sorted(corpus.rglob("*.json"))
    assert len(graphs) == 12
    for f in graphs:  # written an hour ago: times the manifest can trust
        os.utime(f, (time.time() - 3600,) * 2)
    ingest_path("kolab", corpus, lake)
    kolab = ingestors.get("kolab").__class__
    read: list[str] = []
    real = kolab.parse_many

    def counting(self, units, start, out, tick=None):
        read.extend(u.path.name for u in units)
        return real(self, units, start, out, tick)

    monkeypatch.setattr(kolab, "parse_many", counting)
    extra = corpus / "extra.json"  # a new session
    g = json.loads(graphs[0].read_text())
    g["session_id"] = "grown-1"
    extra.write_text(json.dumps(g))
    edited = json.loads(graphs[1].read_text())  # an edited one
    edited["title"] = "edited title"
    graphs[1].write_text(json.dumps(edited))
    stats, snap = ingest_path("kolab", corpus, lake, workers=1)
    assert sorted(read) == sorted([extra.name, graphs[1].name])
    assert stats.unchanged_units == 11 and stats.units == 13
    assert snap is not None and stats.replaced_sessions == 1
    full = Lake(tmp_path / "full")
    ingest_path("kolab", corpus, full, workers=1)
    for table in ("sessions", "nodes", "edges", "annotations"):
        cols = "* EXCLUDE (source_file)" if table == "sessions" else "*"
        assert (
            run_sql(f"SELECT {cols} FROM {table} ORDER BY ALL", lake).table
            == run_sql(f"SELECT {cols} FROM {table} ORDER BY ALL", full).table
        ), table
    read.clear()
    clash = corpus / "aaa-clash.json"  # sorts first: claims an unchanged file's session
    clash.write_text(
        json.dumps({**g, "session_id": json.loads(graphs[5].read_text())["session_id"]})
    )
    stats, _ = ingest_path("kolab", corpus, lake, workers=1)
    # read alone first, the clash found, then the whole source read as one
    assert stats.unchanged_units == 0 and read.count(clash.name) == 2 and len(read) == 1 + 14


def test_fingerprints_depend_on_the_rows_alone(tmp_path):
    """Two lakes of the same source, one read by two workers and compacted, print the same
    fingerprint; a lake with one session more differs in exactly the tables it adds to."""
    from graphlake.lake.fingerprint import fingerprint

    _three_runs(Lake(tmp_path / "a"), tmp_path / "src")
    b = Lake(tmp_path / "b")
    for i in (2, 1, 0):  # another order, other files, another history: the same rows
        ingest_path("kolab", tmp_path / "src" / f"s{i}", b, workers=2)
    compact(b)
    want = fingerprint(Lake(tmp_path / "a"))
    assert fingerprint(b) == want and want["nodes"].rows == 21
    assert fingerprint(b, 2)["nodes"].rows == 14  # a version of the lake, as for SQL
    out = cli("lake", "fingerprint", "--format", "json", lake=b.root).stdout
    assert {r["table"]: r["sha256"] for r in json.loads(out)} == {
        name: p.sha256 for name, p in want.items()
    }
    folder = tmp_path / "s3"
    shutil.copytree(HAND, folder)
    (folder / "graph.json").write_text(
        (folder / "graph.json").read_text().replace('"hand-1"', '"hand-3"')
    )
    ingest_path("kolab", folder, b)
    changed = {name for name, p in fingerprint(b).items() if p != want[name]}
    assert "nodes" in changed and "sessions" in changed and "rejects" not in changed
