"""What the browser workbench reads, checked over HTTP on the demo lake: the page and its
vendored scripts (no CDN), the session overview with metrics, the timeline payload (against
the lake's own tables), the named queries' charts, and the token rules for a page and media.
The page itself is driven in real Chromium by tests/test_workbench_browser.py."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

import httpx
import pytest

from conftest import LiveServer
from graphlake.query import named
from graphlake.query.connection import Connection
from graphlake.server import Settings
from graphlake.server.routers.workbench import OVERVIEW_COLUMNS, STATIC

SID = "kolab-7-000000"


@pytest.fixture(scope="module")
def http(demo_server):
    with httpx.Client(base_url=demo_server.url, timeout=60) as c:
        yield c


@pytest.fixture(scope="module")
def con(demo_lake):
    c = Connection(demo_lake)
    yield c
    c.close()


class _Refs(HTMLParser):
    def __init__(self):
        super().__init__()
        self.refs = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for key in ("src", "href"):
            if a.get(key) and tag in ("script", "link", "img"):
                self.refs.append(a[key])


def test_page_and_every_asset_it_loads_come_from_the_service(http):
    page = http.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    parser = _Refs()
    parser.feed(page.text)
    assert any(r.endswith("echarts.min.js") for r in parser.refs)
    # scripts the modules load themselves (Vega-Lite, on the first chart)
    lazy = [
        f"/static/vendor/{name}"
        for name in re.findall(r'"([\w.-]+\.min\.js)"', (STATIC / "charts.js").read_text())
    ]
    assert "/static/vendor/vega-lite.min.js" in lazy
    for ref in parser.refs + lazy:
        assert ref.startswith("/static/"), f"{ref} is not served by graphlake (no CDN)"
        assert http.get(ref).status_code == 200, ref
    # the ES modules import each other by relative path only
    for js in STATIC.glob("*.js"):
        for target in re.findall(r'^import .* from "([^"]+)";', js.read_text(), re.M):
            assert target.startswith("./") and (STATIC / target[2:]).is_file(), (js.name, target)
            assert http.get(f"/static/{target[2:]}").status_code == 200


def test_no_script_fetches_from_the_network(http):
    """Nothing the workbench ships points a request at another host."""
    for js in STATIC.glob("*.js"):
        text = js.read_text()
        assert not re.search(r"(fetch|import)\(\s*[\"']https?://", text), js.name
        assert "cdn" not in text.lower(), js.name


def test_overview_sorts_filters_and_pages(http, con):
    total = con.rows("SELECT count(*) AS n FROM sessions")[0]["n"]
    seen, cursor = [], None
    while True:
        page = http.get("/workbench/sessions", params={"limit": 7, "cursor": cursor}).json()
        assert page["total"] == total and page["offset"] == len(seen)
        seen += [(r["corpus"], r["session_id"]) for r in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert len(seen) == len(set(seen)) == total

    rows = http.get(
        "/workbench/sessions", params={"sort": "burstiness", "order": "desc", "limit": 500}
    ).json()["items"]
    values = [r["burstiness"] for r in rows]
    known = [v for v in values if v is not None]
    assert known == sorted(known, reverse=True) and known
    assert all(v is None for v in values[len(known) :]), "NULLs sort last"

    kolab = http.get("/workbench/sessions", params={"corpus": "kolab", "limit": 500}).json()
    assert (
        kolab["total"]
        == con.rows("SELECT count(*) AS n FROM sessions WHERE corpus = 'kolab'")[0]["n"]
    )
    one = kolab["items"][0]
    metrics = con.rows(
        "SELECT * FROM session_metrics WHERE corpus = 'kolab' AND session_id = $s",
        {"s": one["session_id"]},
    )[0]
    for k in ("burstiness", "topology_w", "retention_adopt", "collaboration_rating", "n_nodes"):
        assert one[k] == pytest.approx(metrics[k]), k

    passed = http.get("/workbench/sessions", params={"success": "true", "limit": 500}).json()
    expect = con.rows("SELECT count(*) AS n FROM run_outcomes WHERE success")[0]["n"]
    assert passed["total"] == expect > 0 and all(r["success"] for r in passed["items"])
    found = http.get("/workbench/sessions", params={"q": SID.upper()}).json()["items"]
    assert [r["session_id"] for r in found] == [SID]
    # an exact id: one session, and a prefix of it none (the session page's metrics line)
    one = http.get("/workbench/sessions", params={"session": SID}).json()
    assert [r["session_id"] for r in one["items"]] == [SID] and one["total"] == 1
    assert http.get("/workbench/sessions", params={"session": SID[:-1]}).json()["total"] == 0


def test_overview_refuses_unknown_sort_columns(http):
    resp = http.get("/workbench/sessions", params={"sort": "1; DROP TABLE sessions"})
    assert resp.status_code == 422
    assert "burstiness" in resp.text  # the message lists what may be sorted by
    assert set(OVERVIEW_COLUMNS) >= {"success", "retention_adopt", "n_nodes"}


def test_timeline_matches_the_lake(http, con):
    tl = http.get(f"/sessions/kolab/{SID}/timeline").json()
    p = {"s": SID}
    occ = con.rows(
        "SELECT o.node_id, o.t_start, n.actor_type, n.actor FROM node_occurrences o "
        "JOIN nodes n USING (corpus, session_id, node_id) WHERE o.corpus = 'kolab' "
        "AND o.session_id = $s AND o.t_start IS NOT NULL",
        p,
    )
    o = tl["occurrences"]
    assert len(o["node_id"]) == len(occ) > 50
    assert sorted(zip(o["node_id"], o["t_start"], strict=True)) == sorted(
        (r["node_id"], r["t_start"]) for r in occ
    )
    # a loop (a node that occurs more than once) is several bars
    looped = con.rows(
        "SELECT node_id, count(*) AS k FROM node_occurrences WHERE corpus = "
        "'kolab' AND session_id = $s GROUP BY 1 HAVING count(*) > 1",
        p,
    )
    for r in looped:
        assert o["node_id"].count(r["node_id"]) == r["k"]
    # lanes: one per participant, though the person's nodes say "user" and their chat
    # turns "P000": every bar and tick of the person in the participant's lane
    lanes = tl["lanes"]
    assert [x["index"] for x in lanes] == list(range(len(lanes)))
    [person] = con.rows(
        "SELECT participant_id FROM participants WHERE corpus = 'kolab' AND session_id = $s "
        "AND kind = 'human'",
        p,
    )
    human_lanes = {
        lanes[lane]["id"]
        for lane, kind in zip(
            o["lane"] + tl["events"]["lane"],
            o["actor_type"] + tl["events"]["actor_type"],
            strict=True,
        )
        if kind == "human"
    }
    assert human_lanes == {f"participant:{person['participant_id']}"}
    assert {o["actor"][i] for i in range(len(o["actor"])) if o["actor_type"][i] == "human"} == {
        "user"
    }
    assert lanes[0]["actor_type"] == "human" and lanes[0]["label"].startswith("user (P")
    assert len({x["label"] for x in lanes}) == len(lanes)
    adoptions = con.rows(
        "SELECT annotation_id, label FROM annotations WHERE kind = "
        "'adoption' AND corpus = 'kolab' AND session_id = $s",
        p,
    )
    assert sorted((a["annotation_id"], a["label"]) for a in tl["adoptions"]) == sorted(
        (a["annotation_id"], a["label"]) for a in adoptions
    )
    rated = con.rows(
        "SELECT step_id, value FROM annotations WHERE kind = 'rating' AND "
        "label = 'collaboration' AND corpus = 'kolab' AND session_id = $s",
        p,
    )
    by_step = {s["step_id"]: s["ratings"] for s in tl["steps"]}
    assert rated and all(by_step[r["step_id"]]["collaboration"] == r["value"] for r in rated)
    chat = con.rows(
        "SELECT count(*) AS n FROM events WHERE corpus = 'kolab' AND session_id = "
        "$s AND node_id IS NULL AND t IS NOT NULL",
        p,
    )[0]["n"]
    assert len(tl["events"]["t"]) == chat
    assert tl["media"] and tl["media"][0]["media_id"]
    assert tl["outcome"] is None


def test_timeline_of_an_agent_trace_has_its_outcome_and_lanes(http, con):
    row = con.rows(
        "SELECT session_id, success FROM run_outcomes WHERE corpus = 'hasbench' "
        "ORDER BY session_id LIMIT 1"
    )[0]
    tl = http.get(f"/sessions/hasbench/{row['session_id']}/timeline").json()
    assert tl["outcome"]["success"] == row["success"]
    kinds = {x["actor_type"] for x in tl["lanes"]}
    assert {"human", "ai"} <= kinds and len(tl["events"]["t"]) > 0
    assert http.get("/sessions/hasbench/nope/timeline").status_code == 404


def test_every_named_query_chart_plots_columns_its_query_returns(con):
    charted = {q.name: q for q in named.load_all().values() if q.chart}
    assert {"adoption_summary", "collab_metrics", "almanac_alignment_progress"} <= set(charted)
    for q in charted.values():
        cols = set(con.sql(q.sql, q.bind({})).table.column_names)
        for t in q.chart.get("transform", []):  # fields a transform makes: "as" is a name
            made = t.get("as", [])  # (calculate) or a list of them (fold)
            cols |= {made} if isinstance(made, str) else set(made)
        fields = {enc["field"] for enc in _encodings(q.chart) if "field" in enc}
        assert fields <= cols, (q.name, fields - cols)


def _encodings(spec):
    for enc in (spec.get("encoding") or {}).values():
        yield from (enc if isinstance(enc, list) else [enc])
    for layer in spec.get("layer", []):
        yield from _encodings(layer)


def test_named_query_listing_carries_the_chart(http):
    info = http.get("/queries/adoption_summary").json()
    assert info["chart"]["mark"] == "bar" and "data" not in info["chart"]
    assert http.get("/queries/corpus_overview").json()["chart"] is None


def test_a_chart_with_its_own_data_is_refused(tmp_path):
    (tmp_path / "charts").mkdir()
    (tmp_path / "q.sql").write_text("-- name: q\nSELECT 1 AS x\n")
    (tmp_path / "charts" / "q.vl.json").write_text(
        json.dumps({"mark": "bar", "data": {"url": "https://example.org/x.csv"}})
    )
    with pytest.raises(Exception, match="leave 'data' out"):
        named.load_all(tmp_path)


def test_with_a_token_the_page_is_public_and_data_is_not(demo_lake):
    with (
        LiveServer(Settings(lake=demo_lake, token="s3cret")) as srv,
        httpx.Client(base_url=srv.url, timeout=60) as c,
    ):
        assert c.get("/").status_code == 200
        assert c.get("/static/app.js").status_code == 200
        refused = c.get("/workbench/sessions")
        assert refused.status_code == 401 and "?token=" in refused.json()["error"]["message"]
        assert c.get("/workbench/sessions", params={"token": "wrong"}).status_code == 401
        assert c.get("/workbench/sessions", params={"token": "s3cret"}).status_code == 200
        # a query-string token is for what cannot send a header (GET), never for writes
        assert (
            c.post("/sql", params={"token": "s3cret"}, json={"sql": "SELECT 1"}).status_code == 401
        )
        assert (
            c.post(
                "/sql", json={"sql": "SELECT 1"}, headers={"Authorization": "Bearer s3cret"}
            ).status_code
            == 200
        )


def test_an_event_a_node_stands_for_is_drawn_once(http, con):
    """Almanac records every action as a node and an event: the bar is the node's."""
    sid = con.rows("SELECT session_id FROM sessions WHERE corpus = 'almanac' LIMIT 1")[0][
        "session_id"
    ]
    counts = con.rows(
        "SELECT count(*) FILTER (WHERE node_id IS NULL AND t IS NOT NULL) AS bare,"
        " count(*) AS n FROM events WHERE corpus = 'almanac' AND session_id = $s",
        {"s": sid},
    )[0]
    assert counts["n"] > counts["bare"]
    tl = http.get(f"/sessions/almanac/{sid}/timeline").json()
    assert len(tl["events"]["t"]) == counts["bare"]
    assert len(tl["occurrences"]["node_id"]) > 0
