"""The real lake: idempotent re-ingest, time travel, atomic runs, compaction, info."""

from __future__ import annotations

import shutil

import pytest

from conftest import HAND
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
    stats2, snap2 = ingest_path("kolab", HAND, lake)
    assert snap2 is None and sum(stats2.added.values()) == 0
    assert stats2.accepted == stats.accepted
    assert lake.snapshot().lake_version == 1
    assert count(lake, "nodes") == 7


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
        (other / "graph.json").read_text().replace('"hand-1"', '"hand-2"'))

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
def test_same_session_in_two_files_keeps_the_first_and_rejects_the_second(lake, tmp_path,
                                                                          workers):
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


def test_compact_keeps_rows_and_history(lake, tmp_path):
    for i in range(3):
        folder = tmp_path / f"s{i}"
        shutil.copytree(HAND, folder)
        (folder / "graph.json").write_text(
            (folder / "graph.json").read_text().replace('"hand-1"', f'"hand-{i}"'))
        ingest_path("kolab", folder, lake)
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
