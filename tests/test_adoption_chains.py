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


@settings(
    max_examples=examples(40),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
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
