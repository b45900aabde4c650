"""Benchmark protocols on the hand-checked Kolab session: golden rendered contexts for every
protocol and condition, scoring against hand-computed values, pagination.

Regenerate the goldens with ``GRAPHLAKE_REGEN_GOLDEN=1 pytest tests/test_protocols.py`` and
review the diff.
"""

from __future__ import annotations

import json
import os

import pytest

from conftest import FIXTURES
from graphlake.protocols import KOLAB_CONDITIONS, Benchmarks, ProtocolError
from graphlake.protocols.scoring import chebyshev_score, classification, ratings
from graphlake.query.connection import Connection

GOLDEN = FIXTURES / "golden" / "contexts"
KOLAB = ("kolab-1a", "kolab-1b", "kolab-1c", "kolab-1d", "kolab-2a", "kolab-2b")


@pytest.fixture(scope="module")
def bench(hand_lake):
    con = Connection(hand_lake)
    yield Benchmarks(con)
    con.close()


@pytest.mark.parametrize("protocol", KOLAB)
def test_golden_contexts(bench, protocol):
    got = {}
    # fetched by id: the session has no recording, so video conditions do not list it, and
    # its video prompt (which says so) is part of the golden
    ids = [i["id"] for i in bench.instances(protocol, condition="graph", limit=1000).items]
    for condition in KOLAB_CONDITIONS:
        for iid in ids:
            item = bench.instance(protocol, iid, condition=condition)
            got[f"{item['id']}/{condition}"] = {"prompt": item["prompt"], "inputs": item["inputs"]}
    path = GOLDEN / f"{protocol}.json"
    if os.environ.get("GRAPHLAKE_REGEN_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(got, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    assert got == json.loads(path.read_text())


def test_1b_graph_prompt_is_the_papers(bench):
    """Kolab A.6.2, graph-only, on the hand session's first triple (the AI node seg1a/n2 in
    its first occurrence, 10-20 s, modified by n3 at 30-40 s)."""
    (item,) = [
        i
        for i in bench.instances("kolab-1b", condition="graph", limit=10).items
        if i["inputs"]["target"]["t_end"] == 20.0
    ]
    prompt = item["prompt"]
    assert prompt.startswith("You are given the workflow graph of ")
    assert "(no video is provided for this task – rely only on the workflow graph below)" in prompt
    assert "AI Action Step: " in prompt and "User Action Step" not in prompt
    graph = item["inputs"]["graph"]
    # nodes that started before the AI output's end (20 s): the source n1 and the AI node
    # n2; the response n3 (30 s) would leak the label
    assert graph["node_ids"] == ["seg1a/n1", "seg1a/n2"]
    assert graph["text"].splitlines()[-1] == "n0 -> n1"
    assert prompt.endswith("Output exactly one label: `ADOPT`, `MODIFY`, or `REJECT/BYPASS`")


def test_gold_never_in_an_instance(bench):
    for protocol in KOLAB:
        gold = bench.gold(protocol)
        for ref in bench.instances(protocol, condition="graph").items:
            item = bench.instance(protocol, ref["id"], condition="video-graph-chat")
            assert "gold" not in json.dumps(item)
            assert gold[item["id"]]["id"] == item["id"]


def test_ids_are_deterministic_and_condition_free(bench, hand_lake):
    a = [i["id"] for i in bench.instances("kolab-1a", condition="graph").items]
    b = [i["id"] for i in bench.instances("kolab-1a", condition="graph-chat").items]
    with Connection(hand_lake) as con:
        c = [i["id"] for i in Benchmarks(con).instances("kolab-1a", condition="chat").items]
    assert a == b == c == sorted(a) and len(set(a)) == len(a)


def test_pagination_no_gaps_no_duplicates(bench):
    everything = [i["id"] for i in bench.instances("kolab-1a", limit=1000).items]
    for size in (1, 2, 3):
        seen, cursor = [], None
        while True:
            page = bench.instances("kolab-1a", limit=size, cursor=cursor)
            seen += [i["id"] for i in page.items]
            cursor = page.next_cursor
            if cursor is None:
                break
        assert seen == everything


def test_score_by_hand(bench):
    """Four triples: gold ADOPT, REJECT, ... Predictions chosen so every metric differs from
    its neighbours; the expected numbers are worked out below."""
    gold = {iid: r["gold"] for iid, r in bench.gold("kolab-1b").items()}
    ids = sorted(gold)
    assert sorted(gold.values()) == ["ADOPT", "ADOPT", "MODIFY", "REJECT"]
    want = {"ADOPT": "adopt", "MODIFY": "ADOPT", "REJECT": "REJECT/BYPASS"}
    preds = [{"id": i, "label": want[gold[i]]} for i in ids]
    preds += [{"id": "nope", "label": "ADOPT"}]
    res = bench.score("kolab-1b", preds)
    # ADOPT: tp 2, predicted 3, gold 2 -> P 2/3, R 1, F1 0.8
    # MODIFY: tp 0 -> 0;  REJECT: tp 1, predicted 1, gold 1 -> 1
    assert res["n"] == 4 and res["unknown"] == ["nope"] and res["missing"] == []
    assert res["per_class_f1"] == pytest.approx({"ADOPT": 0.8, "MODIFY": 0.0, "REJECT": 1.0})
    assert res["macro_precision"] == pytest.approx((2 / 3 + 0 + 1) / 3)
    assert res["macro_recall"] == pytest.approx((1 + 0 + 1) / 3)
    assert res["macro_f1"] == pytest.approx(1.8 / 3)
    # one answer left out, one unreadable: listed, not scored
    res = bench.score("kolab-1b", [{"id": ids[0], "label": "maybe"}])
    assert res["invalid"] == [ids[0]] and len(res["missing"]) == 3 and res["n"] == 0


def test_majority_baseline(bench):
    res = bench.score("kolab-1b", bench.baseline("kolab-1b", "majority"))
    # everything ADOPT: ADOPT P 2/4 R 1 F1 2/3; the others 0
    assert res["per_class_f1"] == pytest.approx({"ADOPT": 2 / 3, "MODIFY": 0, "REJECT": 0})
    assert res["macro_f1"] == pytest.approx(2 / 9)


def test_rating_scores_by_hand():
    res = ratings([1, 2, 3, 4, 5, 5], [2, 2, 5, 4, 3, 4])
    assert res["mae"] == pytest.approx((1 + 0 + 2 + 0 + 2 + 1) / 6)
    assert res["exact"] == pytest.approx(2 / 6)
    assert res["within_1"] == pytest.approx(4 / 6)
    assert res["mae_by_band"] == pytest.approx({"1-2": 0.5, "3": 2.0, "4": 0.0, "5": 1.5})
    # Spearman by hand: Pearson of the ranks, gold [1,2,3,4,5.5,5.5], pred [1.5,1.5,6,4.5,3,4.5]
    from scipy.stats import pearsonr

    assert res["spearman"] == pytest.approx(
        pearsonr([1, 2, 3, 4, 5.5, 5.5], [1.5, 1.5, 6, 4.5, 3, 4.5]).statistic
    )


def test_rating_protocol_mode_baseline(bench):
    gold = [r["gold"] for r in bench.gold("kolab-2a").values()]
    res = bench.score("kolab-2a", bench.baseline("kolab-2a", "mode"))
    mode = min(gold)  # two steps, one rating each: a tie, broken towards the smaller
    assert res["mae"] == pytest.approx(sum(abs(g - mode) for g in gold) / len(gold))


def test_classification_counts_unpredicted_classes_as_zero():
    res = classification(["A", "B"], ["A", "A"], ("A", "B", "C"))
    assert res["per_class_f1"]["C"] == 0.0
    assert res["macro_f1"] == pytest.approx((2 / 3 + 0 + 0) / 3)


def test_chebyshev_drawing_score():
    total, n = chebyshev_score([[0, 0], [1, 1], [2, 3], [9, 9]], [[0, 0], [0, 1]])
    assert n == 4 and total == pytest.approx(1 + 2 / 3 + 1 / 3 + 0)


def test_errors_say_what_to_do(bench):
    with pytest.raises(ProtocolError, match="kolab-1b"):
        bench.instances("kolab-9")
    with pytest.raises(ProtocolError, match="graph-chat"):
        bench.instances("kolab-1b", condition="smell")
    with pytest.raises(ProtocolError, match="k"):
        bench.instances("kolab-1c", params={"k": 7})
    with pytest.raises(ProtocolError, match="parameters"):
        bench.instances("kolab-1b", params={"bogus": 1})


@pytest.mark.parametrize("per_read", [10_000, 7])
def test_corpus_slices_equal_point_queries(demo_lake, monkeypatch, per_read):
    """A session read from the whole-corpus tables is the session read by its own queries,
    whether the tables were read in one statement or range by range (7 sessions a read:
    every range boundary falls inside the corpus)."""
    from graphlake.protocols.session import CorpusRows, SessionCache

    monkeypatch.setattr(CorpusRows, "SESSIONS_PER_READ", per_read)
    with Connection(demo_lake) as con:
        whole, point = SessionCache(con), SessionCache(con, preload_rows=0)
        sessions = con.rows("SELECT corpus, session_id FROM sessions ORDER BY ALL")
        assert len(sessions) > 50
        for s in sessions:
            a, b = whole.get(s["corpus"], s["session_id"]), point.get(s["corpus"], s["session_id"])
            assert a == b and a is not None
        assert point._corpora and all(v is None for v in point._corpora.values())
        assert whole.get("kolab", "no-such-session") is None


def test_a_corpus_that_cannot_be_held_is_served_by_point_queries(demo_lake, monkeypatch, caplog):
    """Holding a corpus that runs past the connection's memory limit (a large corpus in a
    capped serving process) leaves the corpus to point queries, with one warning; the
    server starts and answers."""
    from graphlake.errors import QueryMemoryError
    from graphlake.protocols import session

    def too_large(con, corpus):
        raise QueryMemoryError("query needed more than its memory limit (2.0 GiB)")

    monkeypatch.setattr(session, "CorpusRows", too_large)
    with Connection(demo_lake) as con:
        cache = session.SessionCache(con)
        assert cache.preload() == []
        sid = con.rows("SELECT session_id FROM sessions WHERE corpus = 'kolab' LIMIT 1")[0]
        got = cache.get("kolab", sid["session_id"])
        assert got is not None and got == session.load_session(con, "kolab", sid["session_id"])
    assert "served one session at a time" in caplog.text


@pytest.fixture(scope="module")
def trace_bench(tmp_path_factory):
    """Almanac, HAS-Bench and tau2 fixtures in one lake (the golden-corpora inputs)."""
    from test_golden_corpora import CORPORA

    from graphlake.pipeline import ingest_path

    root = tmp_path_factory.mktemp("traces")
    for corpus in ("almanac", "hasbench", "tau2"):
        ingest_path(corpus, CORPORA[corpus](root), root / "lake")
    con = Connection(root / "lake")
    yield Benchmarks(con)
    con.close()


@pytest.mark.parametrize(
    "protocol", ["almanac-next-action", "almanac-mental-model", "hasbench-prefix", "tau2-prefix"]
)
def test_golden_trace_contexts(trace_bench, protocol):
    from graphlake.protocols import SPECS

    got = {}
    for condition in SPECS[protocol].conditions:
        items = trace_bench.instances(protocol, condition=condition, limit=1000).items
        assert items, (protocol, condition)
        for item in items:
            got[f"{item['id']}/{condition}"] = {"prompt": item["prompt"], "inputs": item["inputs"]}
    path = GOLDEN / f"{protocol}.json"
    if os.environ.get("GRAPHLAKE_REGEN_GOLDEN"):
        path.write_text(json.dumps(got, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    assert got == json.loads(path.read_text())


def test_prefix_cut_at_a_chosen_event(trace_bench):
    (item,) = trace_bench.instances("tau2-prefix", limit=5).items
    events = [e["event_id"] for e in trace_bench.sessions.get("tau2", item["session_id"]).events]
    chosen = trace_bench.instances("tau2-prefix", params={"event": events[2]}).items[0]
    assert chosen["inputs"]["cutoff_event"] == events[2]
    assert [e["event_id"] for e in chosen["inputs"]["trace"]] == events[:2]
    assert trace_bench.instances("tau2-prefix", params={"event": "nope"}).items == []


def test_almanac_scoring_by_hand(trace_bench):
    gold = trace_bench.gold("almanac-next-action")
    ids = sorted(gold)
    kinds = [gold[i]["gold"] for i in ids]
    assert sorted(kinds) == ["draw", "draw", "erase", "undo"]
    preds = [{"id": i, "label": "draw"} for i in ids]
    res = trace_bench.score("almanac-next-action", preds)
    # draw: P 2/4, R 1, F1 2/3; the four other action types 0
    assert res["accuracy"] == pytest.approx(0.5)
    assert res["per_class_recall"] == pytest.approx(
        {"message": 0, "draw": 1, "erase": 0, "undo": 0, "reset": 0}
    )
    assert res["macro_f1"] == pytest.approx(2 / 3 / 5)
    draws = [i for i in ids if gold[i]["gold"] == "draw" and gold[i]["gold_cells"]]
    assert draws
    cell = gold[draws[0]]["gold_cells"][0]
    res = trace_bench.score(
        "almanac-next-action",
        [{"id": draws[0], "label": "DRAW", "cells": [cell, [cell[0] + 2, cell[1]]]}],
    )
    # one cell on the route (1) and one two rows away, whose nearest gold cell is at
    # distance 1 or 2 depending on the route: checked against the definition
    from graphlake.protocols.scoring import chebyshev_score

    total, n = chebyshev_score([cell, [cell[0] + 2, cell[1]]], gold[draws[0]]["gold_cells"])
    assert n == 2 and res["drawing_score"] == pytest.approx(total / 2) and total >= 1


@pytest.mark.parametrize("protocol", ["kolab-1a", "kolab-1b", "kolab-2a", "kolab-2b"])
def test_sql_contexts_equal_the_python_slices(demo_lake, protocol):
    """The rows kolab_sql picks for every instance (of the protocols it precomputes) are the
    rows SessionData.graph and .chat pick for the same window, as 1c and 1d use them."""
    from graphlake.protocols.kolab_sql import ordered_context
    from graphlake.protocols.render import render_chat, render_graph
    from graphlake.protocols.session import SessionCache

    with Connection(demo_lake) as con:
        bench, sessions = Benchmarks(con), SessionCache(con)
        params = {"k": 2} if protocol == "kolab-1c" else {}
        rows = bench.gold(protocol, params).values()
        assert rows
        for ref in rows:
            data = sessions.get(ref["corpus"], ref["session_id"])
            keep = frozenset([ref["ai_node"]]) if protocol < "kolab-2" else frozenset()
            nodes, edges = data.graph(ref["t0"], ref["cutoff"], keep)
            sql_nodes, sql_edges, sql_turns = ordered_context(ref)
            assert render_graph(sql_nodes, sql_edges) == render_graph(nodes, edges), (
                protocol,
                ref["target"],
            )
            assert sql_edges == [{k: e[k] for k in ("src", "dst", "kind")} for e in edges]
            turns = data.chat(ref["t0"], ref["cutoff"])
            assert [t["event_id"] for t in turns] == [t["event_id"] for t in sql_turns]
            assert render_chat(turns) == render_chat(sql_turns)
            assert ref["goal"] == data.goal and ref["profession"] == data.profession


def test_video_conditions_list_only_instances_with_a_recording(recorded_lake):
    """A video condition lists (and exports, and counts) only the instances whose session
    has a recording, so none promises frames it does not have; the others stay listed
    without video and can still be fetched by id, flagged as having no recording."""
    with Connection(recorded_lake) as con:
        b = Benchmarks(con)
        every = b.instances("kolab-1b", condition="graph-chat", limit=1000).items
        video = b.instances("kolab-1b", condition="video-graph", limit=1000).items
        assert {i["session_id"] for i in every} == {"hand-1", "hand-2"}
        assert {i["session_id"] for i in video} == {"hand-1"}
        assert all(i["inputs"]["video"]["available"] for i in video)
        assert len(video) == len(every) // 2 == b.count("kolab-1b", condition="video")
        assert b.recorded("kolab-1b") == len(video) and b.recorded("almanac-next-action") is None
        hidden = next(i for i in every if i["session_id"] == "hand-2")
        fetched = b.instance("kolab-1b", hidden["id"], condition="video")
        assert fetched["inputs"]["video"] == {"t0": fetched["inputs"]["window"]["t0"],
                                              "t1": fetched["inputs"]["cutoff"],
                                              "available": False}  # fmt: skip
