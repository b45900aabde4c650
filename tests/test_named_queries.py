"""Named queries: loader checks, and metric values checked by hand on the hand session.

The hand session (fixtures/kolab/hand) was designed so every metric is easy to verify:

* AI occurrence starts 10, 50, 150 s -> intervals 40, 100: mu = 70, sigma = 30,
  B = (30 - 70) / (30 + 70) = -0.4
* edges: seg1a n1->n2, n2->n3, n3->n2 (loop), n2->n4; seg2a n1->n2, n2->n3: |E| = 6;
  only seg1a/n2 has two distinct successors: W = 1/6
* responses: modify, adopt, reject, adopt (cross-step): R_A = 0.5, R_M = 0.25
* solo lead-in: seg1a first AI at 10 of [0, 100] -> 0.1; seg2a first AI at 150 of
  [100, 200] -> 0.5; mean 0.3
* collaboration rating: Step-1 = 4, seg2a = 2 -> 3.0
"""

from __future__ import annotations

import pytest

from conftest import HAND
from graphlake.errors import NamedQueryError
from graphlake.lake import Lake
from graphlake.pipeline import ingest_path
from graphlake.query import named, run_sql


@pytest.fixture(scope="module")
def hand_lake(tmp_path_factory):
    lake = tmp_path_factory.mktemp("named") / "lake"
    ingest_path("kolab", HAND, lake)
    return lake


def run_named(name, lake, **params):
    q = named.get(name)
    return run_sql(q.sql, lake, params=q.bind(params), max_rows=None).table.to_pylist()


def test_collab_metrics_by_hand(hand_lake):
    (row,) = run_named("collab_metrics", hand_lake)
    assert row["session_id"] == "hand-1" and row["domain"] == "Legal"
    assert row["burstiness"] == pytest.approx(-0.4)
    assert row["topology_w"] == pytest.approx(1 / 6)
    assert row["retention_adopt"] == pytest.approx(0.5)
    assert row["retention_modify"] == pytest.approx(0.25)
    assert row["solo_lead_in"] == pytest.approx(0.3)
    assert row["collaboration_rating"] == pytest.approx(3.0)
    assert row["output_quality_rating"] == pytest.approx(3.0)
    assert (
        row["n_steps"],
        row["n_nodes"],
        row["n_ai_nodes"],
        row["n_edges"],
        row["n_branch_nodes"],
        row["n_interactions"],
    ) == (2, 7, 2, 6, 1, 3)
    assert (row["n_responses"], row["n_adopt"], row["n_modify"], row["n_reject"]) == (4, 2, 1, 1)


def test_collab_metrics_corpus_filter(hand_lake):
    assert run_named("collab_metrics", hand_lake, corpus="almanac") == []
    assert len(run_named("collab_metrics", hand_lake, corpus="kolab")) == 1


def test_adoption_summary_by_hand(hand_lake):
    rows = {r["label"]: r for r in run_named("adoption_summary", hand_lake)}
    assert {k: (v["n"], v["rate"]) for k, v in rows.items()} == {
        "adopt": (2, 0.5),
        "modify": (1, 0.25),
        "reject": (1, 0.25),
    }
    assert {r["domain"] for r in rows.values()} == {"Legal"}


def test_retention_by_domain_by_hand(hand_lake):
    (row,) = run_named("retention_by_domain", hand_lake)
    assert (
        row["n_responses"],
        row["retention_adopt"],
        row["retention_modify"],
        row["reject_rate"],
    ) == (4, 0.5, 0.25, 0.25)
    # adopt delays: 60 - 60 = 0 and 160 - 60 = 100 -> median 50; modify 20 - 20 = 0
    assert row["median_delay_adopt_s"] == 50 and row["median_delay_modify_s"] == 0


def test_every_shipped_query_loads_and_runs_on_an_empty_lake(tmp_path):
    samples = {"text": "x", "int": "1", "float": "1.0", "bool": "true"}
    Lake(tmp_path / "empty").init()  # a lake that exists but holds nothing yet
    for q in named.load_all().values():
        required = {p.name: samples[p.type] for p in q.params if p.required}
        run_sql(q.sql, tmp_path / "empty", params=q.bind(required))


def test_loader_reports_file_and_problem(tmp_path):
    bad = tmp_path / "q.sql"
    bad.write_text("-- name: q\n-- param: x text\nSELECT $y FROM nodes\n")
    with pytest.raises(NamedQueryError, match=r"placeholders \['y'\] have no '-- param:' line"):
        named.parse_file(bad)
    bad.write_text("-- name: q\n-- param: x banana\nSELECT $x\n")
    with pytest.raises(NamedQueryError, match=r"q.sql:2: bad param line"):
        named.parse_file(bad)
    bad.write_text("SELECT 1\n")
    with pytest.raises(NamedQueryError, match="missing '-- name:"):
        named.parse_file(bad)
    bad.write_text("-- name: q\nDELETE FROM nodes\n")
    with pytest.raises(NamedQueryError, match="exactly one SELECT"):
        named.parse_file(bad)


def test_bind_converts_types_and_names_unknown_params(tmp_path):
    f = tmp_path / "q.sql"
    f.write_text(
        "-- name: q\n-- param: n int | how many\n-- param: on bool = true\n"
        "SELECT $n + 1 AS m, $on AS b\n"
    )
    q = named.parse_file(f)
    assert q.bind({"n": "4"}) == {"n": 4, "on": True}
    with pytest.raises(NamedQueryError, match="needs --param n=<int>"):
        q.bind({})
    with pytest.raises(NamedQueryError, match="no parameter 'nn'. Did you mean 'n'"):
        q.bind({"nn": "1"})
    with pytest.raises(NamedQueryError, match="expects int"):
        q.bind({"n": "four"})


def test_kolab_findings_match_scipy(demo_lake):
    """The SQL Spearman (Pearson over average ranks) equals scipy's, ties included."""
    import pyarrow as pa

    from graphlake.demo.analyses import spearman

    metrics = pa.Table.from_pylist(run_named("collab_metrics", demo_lake, corpus="kolab"))
    got = {r["finding"]: r for r in run_named("kolab_findings", demo_lake)}
    for finding, x, y in (
        ("burstiness vs solo lead-in", "burstiness", "solo_lead_in"),
        ("branching W vs collaboration rating", "topology_w", "collaboration_rating"),
        ("adoption R_A vs collaboration rating", "retention_adopt", "collaboration_rating"),
    ):
        ref = spearman(metrics, x, y)
        assert got[finding]["n"] == ref.n
        assert got[finding]["spearman_rho"] == pytest.approx(ref.rho, abs=1e-6)


def test_response_timing_by_hand(hand_lake):
    rows = {r["label"]: r for r in run_named("response_timing", hand_lake)}
    assert {k: r["n_responses"] for k, r in rows.items()} == {"adopt": 2, "modify": 1, "reject": 1}
    assert rows["adopt"]["cross_step_share"] == 0.5  # one of the two adoptions is cross-step


#: Values for named queries' required parameters (as in the Spark conformance test).
_EXAMPLE_PARAMS = {
    "has_rescue": {"from_condition": "A1", "to_condition": "A3"},
    "eval_predictions": {"run": "no such run"},  # the demo lake keeps no run: typed, empty
}


@pytest.mark.parametrize("name", sorted(named.load_all()))
def test_json_output_is_typed(demo_lake, name):
    """Every numeric column of every named query is a JSON number (counts integers), never a
    string: DuckDB's sum of integers is a HUGEINT, which Arrow carries as a decimal."""
    import json

    import pyarrow as pa

    from graphlake.query.output import to_json_bytes

    q = named.get(name)
    table = run_sql(
        q.sql, demo_lake, params=q.bind(_EXAMPLE_PARAMS.get(name, {})), max_rows=None
    ).table
    rows = json.loads(to_json_bytes(table))
    for field in table.schema:
        values = [r[field.name] for r in rows if r[field.name] is not None]
        if pa.types.is_integer(field.type) or (
            pa.types.is_decimal(field.type) and field.type.scale == 0
        ):
            assert all(type(v) is int for v in values), (name, field.name, values[:3])
        elif pa.types.is_floating(field.type) or pa.types.is_decimal(field.type):
            assert all(isinstance(v, int | float) for v in values), (name, field.name)


def test_parquet_and_arrow_answers_carry_counts_as_integers(demo_lake, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from graphlake.query.output import write

    q = named.get("adoption_summary")
    table = run_sql(q.sql, demo_lake, params=q.bind({}), max_rows=None).table
    assert pa.types.is_decimal(table.schema.field("n_group").type)  # what DuckDB hands over
    write(table, "parquet", tmp_path / "out.parquet")
    assert pq.read_schema(tmp_path / "out.parquet").field("n_group").type == pa.int64()


def test_a_folder_is_parsed_once_until_a_file_changes(tmp_path, monkeypatch):
    import os

    (tmp_path / "one.sql").write_text("-- name: one\nSELECT 1 AS x\n")
    parsed = []
    real = named.parse_file
    monkeypatch.setattr(
        named, "parse_file", lambda path, text=None: (parsed.append(path.name), real(path, text))[1]
    )
    first = named.load_all(tmp_path)
    again = named.load_all(tmp_path)
    assert parsed == ["one.sql"] and again["one"] is first["one"]
    path = tmp_path / "one.sql"
    path.write_text("-- name: one\n-- title: edited\nSELECT 2 AS x\n")
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 1_000_000))
    assert named.load_all(tmp_path)["one"].title == "edited" and parsed == ["one.sql"] * 2
