"""The adoption_chains view, checked by hand on the hand-built Kolab session and against
networkx on random sessions.

seg1a/n1 prompts Claude once (seg1a/n2, two occurrences); its output is modified (seg1a/n3,
20-40 s), adopted (seg1a/n4, 60-100 s) and adopted again in the next step (seg2a/n3,
160-200 s). A separate reject in seg2a has no source, so its chain is rooted at the AI node.
"""

from __future__ import annotations

import networkx as nx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import HAND, examples
from graphlake.lake import Lake, LakeRun
from graphlake.lake.derived import refresh
from graphlake.pipeline import ingest_path
from graphlake.query import run_sql
from graphlake.schema.views import DERIVED_VIEWS


def test_chains_by_hand(tmp_path):
    ingest_path("kolab", HAND, tmp_path / "lake")
    rows = run_sql(
        "SELECT * FROM adoption_chains ORDER BY chain_root", tmp_path / "lake"
    ).table.to_pylist()
    first, second = rows
    assert (first["chain_root"], first["chain_length"], first["labels"], first["final_label"]) == (
        "seg1a/n1",
        3,
        ["modify", "adopt", "adopt"],
        "adopt",
    )
    assert first["response_steps"] == ["seg1a", "seg2a"] and first["crosses_steps"]
    assert (first["t_start"], first["t_end"], first["span_s"]) == (0.0, 200.0, 200.0)
    assert (second["chain_root"], second["rooted_at_ai"], second["labels"]) == (
        "seg2a/n2",
        True,
        ["reject"],
    )
    assert second["span_s"] == 50.0


# ------------------------------------------------------------------- random sessions
# Chains follow a response that became the next request. Checked against networkx on random
# sessions: triples over a handful of nodes, so requests, responses and loops of refinement
# collide often.

N_NODES = 7
#: each random case builds a lake in a fresh folder: slow per example, and the folder fixture
#: is shared by design
_random_lakes = settings(
    max_examples=examples(40),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
_node = st.integers(0, N_NODES - 1)
_triple = st.tuples(
    st.none() | _node, _node, st.none() | _node, st.sampled_from(["adopt", "modify", "reject"])
)


def _lake_with(folder, triples) -> Lake:
    lake = Lake(folder / "lake")
    run = LakeRun(lake, "g", "test")
    em = run.emitter()
    for i in range(N_NODES):
        em.row("nodes", {"session_id": "s", "node_id": f"v{i}", "actor_type": "human"})
        em.row(
            "node_occurrences",
            {
                "session_id": "s",
                "node_id": f"v{i}",
                "seq": 0,
                "t_start": float(i),
                "t_end": float(i) + 0.5,
                "actor_type": "human",
            },
        )
    for k, (src, ai, resp, label) in enumerate(triples):
        em.row(
            "annotations",
            {
                "session_id": "s",
                "annotation_id": f"a{k:02d}",
                "kind": "adoption",
                "source_node": None if src is None else f"v{src}",
                "ai_node": f"v{ai}",
                "response_node": None if resp is None else f"v{resp}",
                "label": label,
                "source_seq": None if src is None else 0,
                "ai_seq": 0,
                "response_seq": None if resp is None else 0,
            },
        )
    run.commit([em.close()])
    return lake


def _expected(triples) -> set:
    """The chains, computed with networkx from the definition in the view's header."""
    g = nx.DiGraph()  # request -> the request whose response it was
    for c_src, _ai, _r, _l in triples:
        for p_src, _ai2, p_resp, _l2 in triples:
            if None not in (c_src, p_src) and p_resp == c_src and p_src != c_src:
                g.add_edge(f"v{c_src}", f"v{p_src}")

    def root(s: str) -> str:
        if s not in g or g.out_degree(s) == 0:
            return s
        ancestors = nx.descendants(g, s) | {s}
        starts = [a for a in ancestors if g.out_degree(a) == 0]
        return min(starts) if starts else min(ancestors)

    chains: dict = {}
    for k, (src, ai, resp, label) in enumerate(triples):
        key = (f"v{ai}", True) if src is None else (root(f"v{src}"), False)
        t = float(resp) if resp is not None else None
        chains.setdefault(key, []).append(((t is None, t or 0.0, f"a{k:02d}"), label, src))
    return {
        (
            root_,
            at_ai,
            len(rows),
            tuple(lab for _o, lab, _s in sorted(rows)),
            len({s for *_x, s in rows if s is not None}),
        )
        for (root_, at_ai), rows in chains.items()
    }


def _got(lake) -> set:
    rows = run_sql("SELECT * FROM adoption_chains", lake).table.to_pylist()
    return {
        (r["chain_root"], r["rooted_at_ai"], r["chain_length"], tuple(r["labels"]), r["n_requests"])
        for r in rows
    }


@_random_lakes
@given(st.lists(_triple, min_size=1, max_size=9))
def test_chains_follow_responses_that_became_requests(tmp_path_factory, triples):
    lake = _lake_with(tmp_path_factory.mktemp("chains"), triples)
    want = _expected(triples)
    assert _got(lake) == want  # computed from the view's SQL
    refresh(lake)
    assert _got(lake) == want  # read from the materialized table


def test_a_modify_then_a_new_prompt_from_it_is_one_chain(tmp_path):
    # v0 asks, v1 answers, v2 modifies and asks again, v3 answers, v4 adopts
    lake = _lake_with(tmp_path, [(0, 1, 2, "modify"), (2, 3, 4, "adopt")])
    (row,) = run_sql("SELECT * FROM adoption_chains", lake).table.to_pylist()
    assert (row["chain_root"], row["labels"], row["n_requests"], row["n_ai_outputs"]) == (
        "v0",
        ["modify", "adopt"],
        2,
        2,
    )


# ------------------------------------------- the views' plans against their plain definitions
# Both views are written for speed: adoptions joins sessions by an integer key and its ends
# one role at a time; adoption_chains answers chains of one triple without aggregating. Here
# they must equal the plain forms, column for column, on random triples in two sessions with
# the cases the shortcuts must keep: ends without a node, an occurrence or a response; NULL
# labels; nodes in two steps; references to a second occurrence.

_end = st.tuples(_node, st.sampled_from([0, 1]))
_rich_triple = st.tuples(
    st.integers(0, 1),  # session
    st.none() | _end,
    _end,
    st.none() | _end,
    st.none() | st.sampled_from(["adopt", "modify", "reject"]),
)


def _plain_adoptions() -> str:
    """The adoptions view as its description reads: each end joined to its node and to the
    occurrence it names, one role after another."""
    joins = "\n".join(
        f"LEFT JOIN nodes n_{r} ON n_{r}.corpus = a.corpus AND n_{r}.session_id = a.session_id"
        f" AND n_{r}.node_id = a.{role}_node\n"
        f"LEFT JOIN node_occurrences o_{r} ON o_{r}.corpus = a.corpus"
        f" AND o_{r}.session_id = a.session_id AND o_{r}.node_id = a.{role}_node"
        f" AND o_{r}.seq = a.{role}_seq"
        for r, role in (("s", "source"), ("a", "ai"), ("r", "response"))
    )
    times = ", ".join(
        f"coalesce(o_{r}.t_{edge}, n_{r}.t_{edge}) AS {role}_t_{edge}"
        for r, role in (("s", "source"), ("a", "ai"), ("r", "response"))
        for edge in ("start", "end")
    )
    return f"""
        SELECT a.corpus, a.session_id, a.annotation_id, a.source_node, a.ai_node,
               a.response_node, a.label, n_a.actor AS ai_actor, n_s.step_id AS source_step,
               n_a.step_id AS ai_step, n_r.step_id AS response_step, {times},
               n_a.step_id IS DISTINCT FROM n_r.step_id AS cross_step
        FROM annotations a
        {joins}
        WHERE a.kind = 'adoption'"""


def _rich_lake(folder, triples) -> Lake:
    lake = Lake(folder / "lake")
    run = LakeRun(lake, "g", "test")
    em = run.emitter()
    for s in ("s0", "s1"):
        for i in range(N_NODES - 1):  # v6 is referenced but never recorded
            node = {"session_id": s, "node_id": f"v{i}", "actor_type": "human"}
            step = {"step_id": f"st{i % 2}", "actor": f"x{i}", "t_start": -float(i)}
            em.row("nodes", {**node, **step})
            for seq in range(i % 3):  # v0 and v3 have no occurrence, v2 and v5 two
                occ = {"seq": seq, "t_start": i + seq / 4, "t_end": i + 0.5 + seq / 4}
                em.row("node_occurrences", {**node, **occ})
    for k, (s, src, ai, resp, label) in enumerate(triples):

        def end(role, e):
            return (
                {f"{role}_node": None, f"{role}_seq": None}
                if e is None
                else {
                    f"{role}_node": f"v{e[0]}",
                    f"{role}_seq": e[1],
                }
            )

        em.row(
            "annotations",
            {
                "session_id": f"s{s}",
                "annotation_id": f"a{k:02d}",
                "kind": "adoption",
                "label": label,
                **end("source", src),
                **end("ai", ai),
                **end("response", resp),
            },
        )
    run.commit([em.close()])
    return lake


def _rows(sql: str, lake) -> list:
    table = run_sql(sql, lake, max_rows=None).table
    return sorted(map(repr, table.to_pylist()))


@_random_lakes
@given(st.lists(_rich_triple, min_size=1, max_size=12))
def test_views_equal_their_plain_forms(tmp_path_factory, triples):
    lake = _rich_lake(tmp_path_factory.mktemp("plain"), triples)
    assert _rows("SELECT * FROM adoptions", lake) == _rows(_plain_adoptions(), lake)

    # every chain through the aggregation: the single-triple shortcut switched off
    view = DERIVED_VIEWS["adoption_chains"][0]
    assert view.count("rows_with_hash = 1") == 1 and view.count("rows_with_hash > 1") == 1
    aggregated = view.replace("rows_with_hash = 1", "false").replace("rows_with_hash > 1", "true")
    assert _rows("SELECT * FROM adoption_chains", lake) == _rows(aggregated, lake)
