"""Materialized views (graphlake.lake.derived): what a query reads as a view must always be
exactly what the view's SQL computes from the canonical rows of the same snapshot, however the
lake got there: refreshed after one run or several, a run that adds to a session it already
has, a run not yet refreshed, a table of an older definition, a compaction."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pytest

from conftest import FIXTURES, HAND, cli
from graphlake.lake import Lake
from graphlake.lake.derived import current_files, refresh
from graphlake.pipeline import ingest_path
from graphlake.query.catalog import derived_schema, files_select, open_catalog
from graphlake.schema.views import MATERIALIZED, depends_on, standalone_sql


def assert_matches_view(
    lake: Lake, version: int | None = None, *, current: bool | None = None
) -> dict[str, int]:
    """Every materialized view, as a query reads it, equals its SQL over the same snapshot (as
    a bag of rows); where the snapshot holds a current table, the table's own files (read
    directly, not through the catalog) equal the SQL too and the catalog's view reads them.

    ``current`` asserts that the snapshot's tables are all current (True) or all stale/absent
    (False)."""
    cat = open_catalog(lake, version)
    try:
        counts = {}
        for name in MATERIALIZED:
            files = current_files(lake, name, cat.snapshot)
            if current is not None:
                assert (files is not None) == current, (name, "current" if files else "stale")
            live = f"({standalone_sql(name)})"
            sides = [f"(SELECT * FROM {name})"]
            if files is not None:
                sides.append(f"({files_select(files, derived_schema(name))})")
                (body,) = cat.con.execute(
                    "SELECT sql FROM duckdb_views() WHERE view_name = $n", {"n": name}
                ).fetchone()
                assert all(f in body for f in files) and ("read_parquet" in body or not files)
            for stored in sides:
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


def test_a_query_reads_the_current_table_not_the_sql(tmp_path):
    """Tamper with a current table's file: a query must see the tampered rows (it reads the
    table); once the table is stale it must not (it computes the SQL)."""
    import pyarrow.parquet as pq

    from graphlake.query import run_sql

    lake = Lake(tmp_path / "lake")
    ingest_path("kolab", HAND, lake)
    refresh(lake)
    files = current_files(lake, "adoptions", lake.snapshot())
    assert files
    for uri in files:
        path = uri.removeprefix("file://")
        table = pq.read_table(path)
        label = table.schema.get_field_index("label")
        pq.write_table(table.set_column(label, "label", pa.array(["TAMPERED"] * len(table))), path)
    labels = {
        r["label"]
        for r in run_sql(
            "SELECT DISTINCT label FROM adoptions", lake, max_rows=None
        ).table.to_pylist()
    }
    assert labels == {"TAMPERED"}
    # a new version makes the table stale until refreshed: then the view computes its SQL
    assert ingest_path("coauthor", FIXTURES / "coauthor", lake)[1] is not None
    labels = {
        r["label"]
        for r in run_sql(
            "SELECT DISTINCT label FROM adoptions", lake, max_rows=None
        ).table.to_pylist()
    }
    assert "TAMPERED" not in labels and labels


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

    corpus = write_demo_corpus(tmp_path / "corpus", sessions=6, seed=3, recording=False)
    first, second = tmp_path / "first", tmp_path / "second"
    for i, folder in enumerate(sorted(p for p in corpus.iterdir() if p.is_dir())):
        shutil.copytree(folder, (first if i < 3 else second) / folder.name)
    lake = Lake(tmp_path / "lake")
    ingest_path("kolab", first, lake)
    rep1 = refresh(lake)
    assert rep1.sessions is None and rep1.rows["adoptions"] > 0  # new tables: every session
    _stats, snap2 = ingest_path("kolab", second, lake)
    # not refreshed yet: the tables are stale for this version and are not read
    assert current_files(lake, "adoptions", snap2) is None
    not_yet = assert_matches_view(lake)
    rep2 = refresh(lake)
    assert rep2.sessions == 3 and rep2.snapshot.lake_version == snap2.lake_version + 1
    at_v1 = assert_matches_view(lake, rep1.snapshot.lake_version)
    at_v2 = assert_matches_view(lake)
    assert at_v2 == not_yet
    assert at_v2["adoptions"] == at_v1["adoptions"] + rep2.rows["adoptions"]
    # nothing changed since: no new version
    assert refresh(lake).snapshot is None
    # the same source again adds nothing either
    assert ingest_path("kolab", second, lake)[1] is None


def test_small_groups_of_sessions_give_the_same_rows(tmp_path, monkeypatch):
    from graphlake.demo.corpus import write_demo_corpus
    from graphlake.lake import derived

    lake = Lake(tmp_path / "lake")
    ingest_path(
        "kolab", write_demo_corpus(tmp_path / "corpus", sessions=5, seed=8, recording=False), lake
    )
    monkeypatch.setattr(derived, "CHUNK_ROWS", 100)  # a group per session or two
    assert len(refresh(lake).rows) == len(MATERIALIZED)
    assert assert_matches_view(lake)["co_occurrences"] > 0


def test_a_run_that_adds_to_a_session_replaces_that_sessions_rows(tmp_path):
    src = tmp_path / "hand"
    shutil.copytree(HAND, src)
    lake = Lake(tmp_path / "lake")
    ingest_path("kolab", src, lake)
    refresh(lake)
    before = assert_matches_view(lake)

    def chain_lengths() -> dict[str, int]:
        cat = open_catalog(lake)
        try:
            return dict(
                cat.con.execute("SELECT chain_root, chain_length FROM adoption_chains").fetchall()
            )
        finally:
            cat.close()

    lengths = chain_lengths()
    # the person reacts once more to the first step's second AI output: one new tuple
    graph = json.loads((src / "graph.json").read_text())
    graph["steps"][0]["nodes"][3]["user_response"].append(
        ["n1", "n2", "reject", "00:00:00-00:00:10", "00:00:50-00:01:00", "00:01:00-00:01:40"]
    )
    (src / "graph.json").write_text(json.dumps(graph))
    stats, snap = ingest_path("kolab", src, lake)
    assert snap is not None and stats.added["annotations"] == 1
    assert refresh(lake).sessions == 1
    after = assert_matches_view(lake)
    assert after["adoptions"] == before["adoptions"] + 1
    grown = {root: n for root, n in chain_lengths().items() if n != lengths.get(root)}
    assert len(grown) == 1 and list(grown.values())[0] == lengths[next(iter(grown))] + 1


def test_a_lake_from_before_the_tables_catches_up_on_refresh(tmp_path):
    from graphlake.demo.corpus import write_demo_corpus

    lake = Lake(tmp_path / "lake")
    _stats, old = ingest_path(
        "kolab", write_demo_corpus(tmp_path / "corpus", sessions=4, seed=5, recording=False), lake
    )
    assert not set(MATERIALIZED) & set(old.table_versions)
    counts = assert_matches_view(lake)  # computed from the SQL
    assert counts["adoptions"] > 0
    rep = refresh(lake)
    assert rep.sessions is None and rep.rows == counts
    assert set(MATERIALIZED) <= set(rep.snapshot.table_versions)
    assert assert_matches_view(lake) == counts
    assert assert_matches_view(lake, old.lake_version) == counts


def test_compaction_keeps_the_tables_current(tmp_path):
    from graphlake.demo.corpus import write_demo_corpus
    from graphlake.lake.maintenance import compact

    corpus = write_demo_corpus(tmp_path / "corpus", sessions=4, seed=6, recording=False)
    lake = Lake(tmp_path / "lake")
    for folder in sorted(p for p in corpus.iterdir() if p.is_dir()):
        ingest_path("kolab", folder, lake)  # a file per run: something to compact
    refresh(lake)
    counts = assert_matches_view(lake)
    snap, report = compact(lake)
    assert snap is not None and report["node_occurrences"]["files_removed"] > 1
    for name in MATERIALIZED:
        assert current_files(lake, name, snap) is not None, name
    assert assert_matches_view(lake) == counts
    assert refresh(lake).snapshot is None


@pytest.mark.parametrize("name", MATERIALIZED)
def test_lake_info_lists_the_materialized_tables(demo_lake, name):
    from graphlake.lake.maintenance import table_info

    lake = Lake(demo_lake)
    info = {i.table: i for i in table_info(lake, lake.snapshot())}
    assert info[name].kind == "materialized" and info[name].rows > 0
    assert Path(lake.table_path(name)).is_dir()


def test_co_occurrences_are_exactly_the_overlapping_pairs(demo_lake):
    """Checked against a plain Python double loop over each session's occurrences."""
    from collections import defaultdict

    cat = open_catalog(Lake(demo_lake))
    try:
        occ = cat.con.execute(
            "SELECT corpus, session_id, node_id, seq, actor_type, t_start, "
            "t_end FROM node_occurrences WHERE t_start IS NOT NULL "
            "AND t_end IS NOT NULL"
        ).fetchall()
        got = cat.con.execute(
            "SELECT corpus, session_id, node_id, seq, other_node_id, other_seq, relation, "
            "actor_type || '/' || other_actor_type FROM co_occurrences"
        ).fetchall()
    finally:
        cat.close()
    by_session = defaultdict(list)
    for c, s, n, q, _kind, t0, t1 in occ:
        by_session[c, s].append((n, q, t0, t1))
    want = set()
    for (c, s), rows in by_session.items():
        for n, q, t0, t1 in rows:
            for m, r, u0, u1 in rows:
                if (n, q) != (m, r) and u0 < t1 and t0 < u1:
                    want.add((c, s, n, q, m, r))
    assert len(got) == len(want) > 0
    assert {row[:6] for row in got} == want
    # every pair strictly overlaps, so none of Allen's disjoint or touching relations appear
    assert {row[6] for row in got} <= {
        "overlaps",
        "overlapped_by",
        "starts",
        "started_by",
        "during",
        "contains",
        "finishes",
        "finished_by",
        "equals",
    }
    # what the human did while the agent worked is there on the demo corpus
    assert {"ai/human", "human/ai"} <= {row[7] for row in got}


def _make_stale(lake: Lake, name: str):
    """What an older graphlake, whose view SQL read differently, would have left: a table with
    other rows (here: none) computed under another definition. Returns that lake version."""
    from deltalake import DeltaTable

    from graphlake.lake.derived import DEFINITION_KEY

    path = str(lake.table_path(name))
    DeltaTable(path).delete()
    DeltaTable(path).alter.set_table_properties(
        {DEFINITION_KEY: "an-older-definition"}, raise_if_not_exists=False
    )
    snap = lake.snapshot()
    return lake.commit_snapshot(
        operation="ingest",
        corpus="kolab",
        source="older graphlake",
        table_versions={**snap.table_versions, name: DeltaTable(path).version()},
        rows_added={},
    )


def test_a_table_computed_with_another_definition_is_never_read_and_is_recomputed(tmp_path):
    from deltalake import DeltaTable

    from graphlake.demo.corpus import write_demo_corpus
    from graphlake.demo.hasbench_gen import write_hasbench_corpus
    from graphlake.lake.derived import DEFINITION_KEY, definition
    from graphlake.lake.maintenance import table_info

    lake = Lake(tmp_path / "lake")
    ingest_path(
        "kolab", write_demo_corpus(tmp_path / "corpus", sessions=4, seed=9, recording=False), lake
    )
    refresh(lake)
    counts = assert_matches_view(lake)
    stale = _make_stale(lake, "adoption_chains")
    assert current_files(lake, "adoption_chains", stale) is None
    assert current_files(lake, "adoptions", stale) is not None
    kinds = {i.table: i.kind for i in table_info(lake, stale)}
    assert kinds["adoption_chains"] == "materialized (stale)"
    assert kinds["adoptions"] == "materialized"
    assert assert_matches_view(lake) == counts  # computed from the SQL, not read
    # the next refresh (here after another corpus's ingest) recomputes every table under
    # today's definitions
    ingest_path("hasbench", write_hasbench_corpus(tmp_path / "corpus", seed=9), lake)
    rep = refresh(lake)
    assert rep.sessions is None and rep.rows == counts
    new = rep.snapshot
    for name in MATERIALIZED:
        dt = DeltaTable(str(lake.table_path(name)), version=new.table_versions[name])
        assert dt.metadata().configuration[DEFINITION_KEY] == definition(name)
    assert assert_matches_view(lake) == counts
    assert assert_matches_view(lake, stale.lake_version) == counts


def test_cli_ingest_refreshes_and_lake_refresh_mends_a_stale_table(tmp_path):
    from graphlake.demo.corpus import write_demo_corpus

    lake = Lake(tmp_path / "lake")
    src = write_demo_corpus(tmp_path / "corpus", sessions=3, seed=4, recording=False)
    out = cli("ingest", "kolab", str(src), lake=lake.root).stdout
    assert "materialized views refreshed for every session" in out
    counts = assert_matches_view(lake)
    stale = _make_stale(lake, "co_occurrences")
    out = cli("lake", "refresh", lake=lake.root).stdout
    assert f"co_occurrences {counts['co_occurrences']:,} rows" in out
    assert f"committed lake version {stale.lake_version + 1}" in out
    snap = lake.snapshot()
    assert snap.operation == "refresh" and current_files(lake, "co_occurrences", snap)
    assert assert_matches_view(lake) == counts
    info = cli("lake", "info", "--format", "json", lake=lake.root).stdout
    assert "stale" not in info and '"materialized"' in info
    # --no-refresh leaves it for later, and says nothing about it
    more = write_demo_corpus(tmp_path / "more", sessions=4, seed=4, recording=False)
    out = cli("ingest", "kolab", str(more), "--no-refresh", lake=lake.root).stdout
    assert "materialized" not in out
    assert "materialized (stale)" in cli("lake", "info", lake=lake.root).stdout
    assert "for 1 session " in cli("lake", "refresh", lake=lake.root).stdout
