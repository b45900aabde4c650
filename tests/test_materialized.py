"""Materialized views (graphlake.lake.derived): the tables ingest keeps must always hold exactly
what the view's SQL computes from the canonical rows of the same snapshot, however the lake got
there: one run, several runs, a run that adds to a session it already has, or a lake written
before the tables existed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import HAND
from graphlake.lake import Lake
from graphlake.pipeline import ingest_path
from graphlake.query.catalog import open_catalog
from graphlake.schema.views import MATERIALIZED, depends_on, standalone_sql


def assert_matches_view(lake: Lake, version: int | None = None) -> dict[str, int]:
    """Every materialized view equals its SQL over the same snapshot (as a bag of rows)."""
    cat = open_catalog(lake, version)
    try:
        counts = {}
        for name in MATERIALIZED:
            stored = f"(SELECT * FROM {name})"
            live = f"({standalone_sql(name)})"
            only_stored, only_live, n_stored, n_live = cat.con.execute(
                f"SELECT (SELECT count(*) FROM ({stored} EXCEPT ALL {live})), "
                f"(SELECT count(*) FROM ({live} EXCEPT ALL {stored})), "
                f"(SELECT count(*) FROM ({stored})), (SELECT count(*) FROM ({live}))"
            ).fetchone()
            assert (only_stored, only_live) == (0, 0), (name, only_stored, only_live)
            assert n_stored == n_live
            counts[name] = n_stored
        return counts
    finally:
        cat.close()


def test_demo_lake_keeps_each_view_as_a_table_equal_to_its_sql(demo_lake):
    lake = Lake(demo_lake)
    snap = lake.snapshot()
    assert set(MATERIALIZED) <= set(snap.table_versions)
    counts = assert_matches_view(lake)
    assert counts["adoptions"] > 100 and counts["adoption_chains"] > 50
    # the refresh only follows the tables the views read
    assert depends_on("adoption_chains") == {"annotations", "nodes", "node_occurrences"}


def test_runs_that_add_sessions_extend_the_tables(tmp_path):
    from graphlake.demo.corpus import write_demo_corpus

    corpus = write_demo_corpus(tmp_path / "corpus", sessions=6, seed=3)
    first, second = tmp_path / "first", tmp_path / "second"
    for i, folder in enumerate(sorted(p for p in corpus.iterdir() if p.is_dir())):
        shutil.copytree(folder, (first if i < 3 else second) / folder.name)
    lake = Lake(tmp_path / "lake")
    stats1, snap1 = ingest_path("kolab", first, lake)
    stats2, snap2 = ingest_path("kolab", second, lake)
    assert stats1.derived["adoptions"] > 0 and stats2.derived["adoptions"] > 0
    at_v1 = assert_matches_view(lake, snap1.lake_version)
    at_v2 = assert_matches_view(lake, snap2.lake_version)
    assert at_v2["adoptions"] == at_v1["adoptions"] + stats2.derived["adoptions"]
    # the same source again adds nothing, so no new version and no refresh
    stats3, snap3 = ingest_path("kolab", second, lake)
    assert snap3 is None and not stats3.derived


def test_a_run_that_adds_to_a_session_replaces_that_sessions_rows(tmp_path):
    src = tmp_path / "hand"
    shutil.copytree(HAND, src)
    lake = Lake(tmp_path / "lake")
    ingest_path("kolab", src, lake)
    before = assert_matches_view(lake)

    def chain_lengths() -> dict[str, int]:
        cat = open_catalog(lake)
        try:
            return dict(cat.con.execute(
                "SELECT chain_root, chain_length FROM adoption_chains").fetchall())
        finally:
            cat.close()

    lengths = chain_lengths()
    # the person reacts once more to the first step's second AI output: one new tuple
    graph = json.loads((src / "graph.json").read_text())
    graph["steps"][0]["nodes"][3]["user_response"].append(
        ["n1", "n2", "reject", "00:00:00-00:00:10", "00:00:50-00:01:00", "00:01:00-00:01:40"])
    (src / "graph.json").write_text(json.dumps(graph))
    stats, snap = ingest_path("kolab", src, lake)
    assert snap is not None and stats.added["annotations"] == 1
    after = assert_matches_view(lake)
    assert after["adoptions"] == before["adoptions"] + 1
    grown = {root: n for root, n in chain_lengths().items() if n != lengths.get(root)}
    assert len(grown) == 1 and list(grown.values())[0] == lengths[next(iter(grown))] + 1


def test_a_lake_from_before_the_tables_catches_up_on_its_next_ingest(tmp_path):
    from graphlake.demo.corpus import write_demo_corpus
    from graphlake.demo.hasbench_gen import write_hasbench_corpus

    lake = Lake(tmp_path / "lake")
    ingest_path("kolab", write_demo_corpus(tmp_path / "corpus", sessions=4, seed=5), lake)
    # what a lake written by graphlake before materialization looks like: a snapshot
    # pinning only the canonical tables, and no table folders for the views
    snap = lake.snapshot()
    for name in MATERIALIZED:
        shutil.rmtree(lake.table_path(name))
    old = lake.commit_snapshot(
        operation="ingest", corpus="kolab", source="before materialization",
        table_versions={t: v for t, v in snap.table_versions.items() if t not in MATERIALIZED},
        rows_added={})
    # reading it computes the views from their SQL
    counts = assert_matches_view(lake)
    assert counts["adoptions"] > 0
    # the next ingest (another corpus entirely) materializes every session
    stats, new = ingest_path("hasbench", write_hasbench_corpus(tmp_path / "corpus", seed=5), lake)
    assert set(MATERIALIZED) <= set(new.table_versions)
    assert stats.derived["adoptions"] == counts["adoptions"]
    assert assert_matches_view(lake) == counts
    # and the old version still reads as it did
    assert assert_matches_view(lake, old.lake_version) == counts


@pytest.mark.parametrize("name", MATERIALIZED)
def test_lake_info_lists_the_materialized_tables(demo_lake, name):
    from graphlake.lake.maintenance import table_info

    lake = Lake(demo_lake)
    info = {i.table: i for i in table_info(lake, lake.snapshot())}
    assert info[name].kind == "materialized" and info[name].rows > 0
    assert Path(lake.table_path(name)).is_dir()
