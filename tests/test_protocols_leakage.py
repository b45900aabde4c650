"""No instance holds anything from after its cut-off, and nothing inside its window is left
out: checked on generated sessions for every protocol and condition, against cut-offs and
node sets computed here independently from the lake's own views."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graphlake.demo.corpus import write_demo_corpus
from graphlake.lake import Lake
from graphlake.lake.derived import refresh
from graphlake.pipeline import ingest_path
from graphlake.protocols import KOLAB_CONDITIONS, SPECS, Benchmarks
from graphlake.query.connection import Connection

pytestmark = pytest.mark.fuzz

_CUTOFF = {
    "kolab-1a": "SELECT annotation_id AS target, session_id, coalesce(response_t_end, "
    "ai_t_end) AS cutoff, coalesce(source_t_start, ai_t_start) AS t0, ai_node "
    "FROM adoptions",
    **{
        p: "SELECT annotation_id AS target, session_id, ai_t_end AS cutoff, "
        "coalesce(source_t_start, ai_t_start) AS t0, ai_node FROM adoptions"
        for p in ("kolab-1b", "kolab-1c", "kolab-1d")
    },
    **{
        p: "SELECT step_id AS target, session_id, t_end AS cutoff, t_start AS t0, "
        "NULL AS ai_node FROM steps"
        for p in ("kolab-2a", "kolab-2b")
    },
}


def check_kolab(con: Connection, bench: Benchmarks) -> int:
    checked = 0
    occ = {}
    for r in con.rows("SELECT session_id, node_id, t_start, t_end FROM node_occurrences"):
        occ.setdefault((r["session_id"], r["node_id"]), []).append(r)
    for pid, sql in _CUTOFF.items():
        truth = {(r["session_id"], r["target"]): r for r in con.rows(sql)}
        gold = bench.gold(pid)
        for condition in KOLAB_CONDITIONS:
            for item in bench.instances(pid, condition=condition, limit=1000).items:
                ref = gold[item["id"]]
                want = truth[(ref["session_id"], ref["target"])]
                cutoff, inputs = want["cutoff"], item["inputs"]
                assert inputs["cutoff"] == cutoff and inputs["window"]["t1"] == cutoff
                assert inputs["window"]["t0"] <= want["t0"]
                if "graph" in inputs:
                    got = set(inputs["graph"]["node_ids"])
                    t0 = inputs["window"]["t0"]
                    expect = {
                        n
                        for (s, n), os in occ.items()
                        if s == ref["session_id"]
                        and any(o["t_start"] < cutoff and o["t_end"] >= t0 for o in os)
                    }
                    for n in got - expect:  # only the target may sit exactly at the cut-off
                        assert n == want["ai_node"], (pid, condition, n)
                        assert min(o["t_start"] for o in occ[(ref["session_id"], n)]) <= cutoff
                    assert expect <= got, (pid, condition, expect - got)
                for turn in inputs.get("chat", {}).get("turns", []):
                    assert turn["t"] < cutoff
                video = inputs.get("video")
                if video:
                    assert video["t1"] <= cutoff
                    assert all(f["t"] < cutoff for f in video.get("frames", []))
                    if "clip_url" in video:
                        assert float(video["clip_url"].rsplit("t1=", 1)[1]) <= cutoff
                checked += 1
    return checked


@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 10_000))
def test_no_kolab_context_leaks(tmp_path_factory, seed):
    root = tmp_path_factory.mktemp("leak")
    ingest_path(
        "kolab",
        write_demo_corpus(root / "corpus", sessions=3, seed=seed, recording=False),
        root / "lake",
    )
    refresh(Lake(root / "lake"))
    with Connection(root / "lake") as con:
        assert check_kolab(con, Benchmarks(con)) > 0


def test_demo_lake_contexts_do_not_leak(demo_lake):
    """The same checks on the demo lake, which also has a recording (frames and clip)."""
    with Connection(demo_lake) as con:
        assert check_kolab(con, Benchmarks(con)) > 100


def test_trace_prefixes_hold_only_earlier_events(demo_lake):
    with Connection(demo_lake) as con:
        bench = Benchmarks(con)
        seqs = {
            (r["session_id"], r["event_id"]): r["seq"]
            for r in con.rows("SELECT session_id, event_id, seq FROM events")
        }
        for pid in ("almanac-next-action", "almanac-mental-model"):
            for cond in SPECS[pid].conditions:
                items = bench.instances(pid, condition=cond, limit=1000).items
                assert items
                for item in items:
                    cut = item["inputs"]["cutoff_seq"]
                    assert all(e["seq"] < cut for e in item["inputs"]["history"])
                    for m in item["inputs"].get("mental_models", []):
                        assert seqs[(item["session_id"], m["target_id"])] < cut
        for item in bench.instances("hasbench-prefix", params={"fraction": 0.3}).items:
            trace = item["inputs"]["trace"]
            events = [
                r
                for r in con.rows(
                    "SELECT event_id FROM events WHERE corpus = 'hasbench' AND session_id = $s "
                    "ORDER BY t NULLS LAST, seq, event_id",
                    {"s": item["session_id"]},
                )
            ]
            k = item["inputs"]["cutoff_index"]
            assert [e["event_id"] for e in trace] == [e["event_id"] for e in events[:k]]
            assert item["inputs"]["cutoff_event"] == events[k]["event_id"]
