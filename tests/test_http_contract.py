"""The HTTP error contract: every answer that is not 2xx is ``{"error": {status, code,
message}}`` with a stable code; cursors are validated in one place (a foreign or malformed one is
400, one from another lake version 409); unknown resources are 404; a bug is a JSON 500, never a
404 or a text/plain page. Real server on a loopback socket, real lakes."""

from __future__ import annotations

import base64
import json
import shutil

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import HAND, LiveServer, examples
from graphlake.cursors import KeyCursor, OffsetCursor
from graphlake.server import Settings

SID = "kolab-7-000000"


@pytest.fixture(scope="module")
def http(demo_server):
    with httpx.Client(base_url=demo_server.url, timeout=120) as c:
        yield c


def error_of(resp: httpx.Response, status: int) -> dict:
    """The error body, after checking the status, the content type and the exact shape."""
    assert resp.status_code == status, resp.text
    assert resp.headers["content-type"].startswith("application/json"), resp.headers
    body = resp.json()
    assert set(body) == {"error"} and set(body["error"]) == {"status", "code", "message"}
    assert body["error"]["status"] == status and body["error"]["message"]
    return body["error"]


def paginated_routes(http) -> list[str]:
    """Every GET route whose OpenAPI operation takes a ``cursor``, with path parameters filled
    in from the demo lake: the property test below covers routes added later too."""
    spec = http.get("/openapi.json").json()
    fill = {"{corpus}": "kolab", "{session_id}": SID, "{protocol}": "kolab-1b"}
    routes = []
    for path, ops in spec["paths"].items():
        params = ops.get("get", {}).get("parameters", [])
        if any(p["name"] == "cursor" and p["in"] == "query" for p in params):
            for key, value in fill.items():
                path = path.replace(key, value)
            assert "{" not in path, f"fill in a demo value for {path}"
            routes.append(path)
    return sorted(routes)


def _b64(obj) -> str:
    raw = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def test_every_paginated_route_is_covered(http):
    """The property test below knows every route that takes a cursor."""
    assert paginated_routes(http) == sorted(ISSUERS)


# A cursor of any other shape: text that is not base64, base64 of bytes that are not JSON,
# JSON of every other type, objects naming no list or another list, and the issued shape with
# keys of the wrong type or arity.
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=3), c, max_size=3),
    max_leaves=6,
)
wrong_cursors = st.one_of(
    st.text(min_size=1, max_size=40),
    st.binary(min_size=1, max_size=30).map(_b64),
    _json.map(_b64),
    st.builds(
        lambda r, k: _b64({"r": r, "k": k}),
        st.sampled_from(["GET /sessions", "GET /corpora", "instances of kolab-1b"]),
        _json,
    ),
    st.builds(
        lambda r, o, v: _b64({"r": r, "o": o, "v": v}),
        st.sampled_from(["GET /workbench/sessions", "GET /sessions/{corpus}/{session_id}/events"]),
        _json,
        _json,
    ),
)


#: The list name each paginated route puts in its cursors, and its cursor's kind.
ISSUERS = {
    "/sessions": ("GET /sessions", "key", 2),
    "/corpora": ("GET /corpora", "key", 1),
    "/benchmarks/kolab-1b/instances": ("instances of kolab-1b", "key", 1),
    "/workbench/sessions": ("GET /workbench/sessions", "offset", 0),
    f"/sessions/kolab/{SID}/events": ("GET /sessions/{corpus}/{session_id}/events", "offset", 0),
}


def _could_issue(route: str, cursor: str) -> bool:
    """Whether ``route`` could have issued ``cursor`` (hypothesis may build a real one)."""
    try:
        obj = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except ValueError:
        return False
    name, kind, arity = ISSUERS[route]
    if not isinstance(obj, dict) or obj.get("r") != name:
        return False
    if kind == "key":
        k = obj.get("k")
        return isinstance(k, list) and len(k) == arity and all(isinstance(x, str) for x in k)
    return type(obj.get("o")) is int and obj["o"] >= 0 and type(obj.get("v")) is int


@settings(
    max_examples=examples(150),
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)
@given(cursor=wrong_cursors, pick=st.integers(min_value=0, max_value=100))
def test_wrong_shaped_cursors_are_a_400_on_every_paginated_route(http, cursor, pick):
    route = sorted(ISSUERS)[pick % len(ISSUERS)]
    resp = http.get(route, params={"cursor": cursor, "limit": 2})
    if resp.status_code == 200:
        assert _could_issue(route, cursor), f"{route} accepted the foreign cursor {cursor!r}"
        return
    code = error_of(resp, resp.status_code)["code"]
    assert (resp.status_code, code) in {(400, "bad_cursor"), (409, "stale_cursor")}, resp.text
    if resp.status_code == 409:
        assert _could_issue(route, cursor)


def test_a_cursor_of_one_list_is_refused_by_another(http):
    sessions = http.get("/sessions", params={"limit": 1}).json()["next_cursor"]
    corpora = http.get("/corpora", params={"limit": 1}).json()["next_cursor"]
    overview = http.get("/workbench/sessions", params={"limit": 1}).json()["next_cursor"]
    inst = http.get("/benchmarks/kolab-1b/instances", params={"limit": 1}).json()["next_cursor"]
    assert all((sessions, corpora, overview, inst))
    for route, foreign in (
        ("/sessions", corpora),
        ("/corpora", sessions),
        ("/workbench/sessions", sessions),
        ("/sessions", overview),
        ("/benchmarks/kolab-1b/instances", sessions),
        ("/benchmarks/kolab-1a/instances", inst),
    ):
        msg = error_of(http.get(route, params={"cursor": foreign}), 400)["message"]
        assert "next_cursor" in msg
    # and each list takes its own
    assert http.get("/sessions", params={"cursor": sessions}).status_code == 200


def test_unknown_resources_of_every_kind_are_404(http):
    for path in (
        "/sessions/kolab/nope",
        "/sessions/nope/nope/events",
        "/benchmarks/nope",
        "/benchmarks/nope/instances",
        "/benchmarks/kolab-1b/instances/nope",
        "/media/0123456789abcdef",
        "/no/such/route",
    ):
        error_of(http.get(path), 404)
    error_of(http.post("/queries/nope", json={}), 404)
    error_of(http.post("/benchmarks/nope/score", json={"predictions": []}), 404)


def test_pattern_variables_that_are_not_plain_names_are_a_400_with_a_position(http):
    for var in ('"My Var"', '"p.node_id AS x, 1 AS y FROM nodes p --"', "_n1"):
        resp = http.post(
            "/sql", json={"sql": f"SELECT * FROM GRAPH_TABLE (kolab MATCH ({var}:human)) g"}
        )
        msg = error_of(resp, 400)["message"]
        assert "line 1, column" in msg, msg


def test_a_bug_is_a_json_500_not_a_404(demo_lake):
    """A KeyError raised by a bug inside a route is the server's fault: a JSON 500 (with the
    traceback in the log), not the 404 a blanket LookupError mapping gave."""
    with (
        LiveServer(Settings(lake=demo_lake)) as srv,
        httpx.Client(base_url=srv.url, timeout=120) as c,
    ):
        state = srv.app.state.graphlake.current

        def broken(corpus, session_id):
            raise KeyError("a column the code expected")

        state.bench.sessions.get = broken
        err = error_of(c.get(f"/sessions/kolab/{SID}/events"), 500)
        assert err["code"] == "internal" and "column" not in err["message"]


def test_an_offset_cursor_from_an_older_lake_version_is_a_409(tmp_path, hand_lake):
    from graphlake.pipeline import ingest_path

    lake = tmp_path / "lake"
    shutil.copytree(hand_lake, lake)
    with LiveServer(Settings(lake=lake)) as srv, httpx.Client(base_url=srv.url, timeout=120) as c:
        sid = c.get("/sessions").json()["items"][0]["session_id"]
        events = c.get(f"/sessions/kolab/{sid}/events", params={"limit": 1}).json()
        overview = c.get("/workbench/sessions", params={"limit": 1})
        assert events["next_cursor"]
        other = tmp_path / "more" / "hand-2"
        shutil.copytree(HAND, other)
        (other / "graph.json").write_text(
            (other / "graph.json").read_text().replace('"hand-1"', '"hand-2"')
        )
        ingest_path("kolab", other.parent, lake)
        assert c.post("/refresh").status_code == 200
        err = error_of(
            c.get(f"/sessions/kolab/{sid}/events", params={"cursor": events["next_cursor"]}), 409
        )
        assert err["code"] == "stale_cursor" and "first page" in err["message"]
        stale = OffsetCursor("GET /workbench/sessions").encode(0, 1)
        assert overview.status_code == 200
        error_of(c.get("/workbench/sessions", params={"cursor": stale}), 409)
        # keyset cursors name the last item: they stay good across versions
        key = KeyCursor("GET /sessions", arity=2).encode(["kolab", ""])
        assert c.get("/sessions", params={"cursor": key}).status_code == 200


def test_caches_hold_only_what_exists_and_stay_bounded(demo_lake):
    """Requests for made-up corpora cache nothing; distinct parameter values evict the
    least recently used index instead of growing memory; concurrent first requests for one
    index build it once."""
    from concurrent.futures import ThreadPoolExecutor

    from graphlake.protocols.service import MAX_INDEXES

    with (
        LiveServer(Settings(lake=demo_lake, preload_rows=0)) as srv,
        httpx.Client(base_url=srv.url, timeout=120) as c,
    ):
        state = srv.app.state.graphlake
        state.warming.join(600)  # the start-up builds done: only this test's builds count
        bench = state.current.bench
        for i in range(50):
            error_of(c.get(f"/sessions/madeup{i}/x/events"), 404)
            error_of(c.get(f"/sessions/madeup{i}/x/chat"), 404)
        assert not any(k.startswith("madeup") for k in bench.sessions._corpora)
        assert not any(k[0].startswith("madeup") for k in bench.sessions._items)
        built = []
        original = bench._build_index

        def counting(*args, **kwargs):
            built.append(args[0])
            return original(*args, **kwargs)

        bench._build_index = counting
        with ThreadPoolExecutor(8) as pool:
            pages = list(
                pool.map(
                    lambda _: c.get(
                        "/benchmarks/hasbench-prefix/instances",
                        params={"fraction": 0.25, "limit": 1},
                    ),
                    range(8),
                )
            )
        assert all(p.status_code == 200 for p in pages) and len(built) == 1
        for i in range(MAX_INDEXES + 8):
            r = c.get(
                "/benchmarks/hasbench-prefix/instances",
                params={"fraction": round(0.01 + i / 100, 2), "limit": 1},
            )
            assert r.status_code == 200, r.text
        assert len(bench._indexes) == MAX_INDEXES


def test_api_docs_work_offline(http):
    """/docs loads Swagger UI from the package, never from a CDN, and the spec lists the error
    answers every route may give."""
    import re

    page = http.get("/docs")
    assert page.status_code == 200 and "swagger-ui" in page.text
    urls = re.findall(r"""(?:src|href|url)\s*[:=]\s*['"]([^'"]+)['"]""", page.text)
    assert urls and all(u.startswith("/") for u in urls), urls
    for u in urls:
        assert http.get(u).status_code == 200, u
    spec = http.get("/openapi.json").json()
    listed = spec["paths"]["/sessions"]["get"]["responses"]
    assert {"404", "409", "500"} <= set(listed)
