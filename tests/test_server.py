"""The HTTP service on a real loopback socket (uvicorn in a thread), over the demo lake."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import httpx
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import LiveServer, ServeProcess, cli
from graphlake.client import Client, ServiceError
from graphlake.server import Settings

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def http(demo_server):
    with httpx.Client(base_url=demo_server.url, timeout=60) as c:
        yield c


def _error(resp, status):
    assert resp.status_code == status, resp.text
    body = resp.json()
    assert set(body) == {"error"} and set(body["error"]) == {"status", "code", "message"}
    assert body["error"]["status"] == status
    return body["error"]["message"]


def _all(http, path, limit, **params):
    items, cursor, pages = [], None, 0
    while True:
        page = http.get(path, params={"limit": limit, "cursor": cursor, **params}).json()
        items += page["items"]
        pages += 1
        cursor = page["next_cursor"]
        if cursor is None:
            return items, pages


def test_health_and_corpora(http):
    assert http.get("/health").json()["status"] == "ok"
    corpora, pages = _all(http, "/corpora", 1)
    names = [c["corpus"] for c in corpora]
    assert names == sorted(names) and {"kolab", "hasbench", "almanac"} <= set(names)
    assert pages == len(names)


def test_sessions_paginate_without_gaps_or_duplicates(http):
    every = http.get("/sessions", params={"limit": 1000}).json()["items"]
    for size in (1, 5, 7):
        got, _ = _all(http, "/sessions", size)
        assert [(s["corpus"], s["session_id"]) for s in got] == [
            (s["corpus"], s["session_id"]) for s in every
        ]
    kolab, _ = _all(http, "/sessions", 4, corpus="kolab")
    assert len(kolab) == 12 and {s["corpus"] for s in kolab} == {"kolab"}
    one = kolab[3]
    assert http.get(f"/sessions/kolab/{one['session_id']}").json() == one
    by_part = http.get("/sessions", params={"participant": one["participants"][0]}).json()
    assert one["session_id"] in [s["session_id"] for s in by_part["items"]]
    _error(http.get("/sessions/kolab/nope"), 404)
    _error(http.get("/sessions", params={"cursor": "!!notacursor"}), 400)


def test_graph_renderings(http):
    sid = "kolab-7-000000"
    full = http.get(f"/sessions/kolab/{sid}/graph").json()
    step = http.get(f"/sessions/kolab/{sid}/graph", params={"step": "seg1a"}).json()
    assert step["nodes"] and {n["step_id"] for n in step["nodes"]} == {"seg1a"}
    assert len(step["nodes"]) < len(full["nodes"])
    text = http.get(f"/sessions/kolab/{sid}/graph", params={"step": "seg1a", "format": "text"}).text
    assert text == step["text"] and text.startswith("[n0](")
    dot = http.get(f"/sessions/kolab/{sid}/graph", params={"format": "dot"}).text
    assert dot.startswith("digraph") and dot.count("->") == len(full["edges"])
    centre = step["nodes"][1]["node_id"]
    hop = http.get(f"/sessions/kolab/{sid}/graph", params={"node": centre, "hops": 1}).json()
    near = (
        {e["dst"] for e in full["edges"] if e["src"] == centre}
        | {e["src"] for e in full["edges"] if e["dst"] == centre}
        | {centre}
    )
    assert {n["node_id"] for n in hop["nodes"]} == near
    win = http.get(f"/sessions/kolab/{sid}/graph", params={"t0": 0, "t1": 400}).json()
    assert all(n["t_start"] < 400 for n in win["nodes"])
    _error(http.get(f"/sessions/kolab/{sid}/graph", params={"step": "seg9z"}), 404)


def test_events_and_chat_in_a_window(http):
    sid = "kolab-7-000000"
    events, _ = _all(http, f"/sessions/kolab/{sid}/events", 3, t0=100, t1=900)
    assert events and all(100 <= e["t"] < 900 for e in events)
    assert len({e["event_id"] for e in events}) == len(events)
    chat = http.get(f"/sessions/kolab/{sid}/chat", params={"t0": 100, "t1": 900}).json()
    assert chat["turns"] and all(100 <= t["t"] < 900 for t in chat["turns"])
    assert chat["text"].splitlines()[0].startswith(("<human> ", "<ai> "))


def _media_id(http):
    return http.get("/sessions/kolab/kolab-7-000000/media").json()["items"][0]["media_id"]


@pytest.mark.frames
def test_media_file_range_and_clip(http):
    av = pytest.importorskip("av", reason="clips need PyAV (the vision extra)")

    mid = _media_id(http)
    meta = http.get(f"/media/{mid}").json()
    assert "uri" not in meta and meta["duration_s"] > 0
    whole = http.get(f"/media/{mid}/file")
    assert whole.status_code == 200 and len(whole.content) == meta["size_bytes"]
    part = http.get(f"/media/{mid}/file", headers={"Range": "bytes=10-99"})
    assert part.status_code == 206 and part.content == whole.content[10:100]
    clip = http.get(f"/media/{mid}/clip", params={"t0": 2, "t1": 5})
    assert clip.status_code == 200
    with av.open(io.BytesIO(clip.content)) as c:
        times = [f.time for f in c.decode(video=0)]
    assert times and max(times) < 5 and len(times) < 8 * meta["fps"]
    rng = http.get(f"/media/{mid}/clip", params={"t0": 2, "t1": 5}, headers={"Range": "bytes=0-15"})
    assert rng.status_code == 206 and rng.content == clip.content[:16]


@pytest.mark.frames
def test_clip_cache_is_bounded_and_concurrent_writers_never_share_a_file(demo_lake, tmp_path):
    import shutil
    from concurrent.futures import ThreadPoolExecutor

    pytest.importorskip("av", reason="clips need PyAV (the vision extra)")
    lake = tmp_path / "lake"
    shutil.copytree(demo_lake, lake)
    budget = 400_000
    with (
        LiveServer(Settings(lake=lake, clip_cache_bytes=budget)) as srv,
        httpx.Client(base_url=srv.url, timeout=120) as c,
    ):
        mid = _media_id(c)
        with ThreadPoolExecutor(6) as pool:
            same = list(
                pool.map(
                    lambda _: c.get(f"/media/{mid}/clip", params={"t0": 10, "t1": 14}), range(6)
                )
            )
        assert all(r.status_code == 200 for r in same)
        assert len({r.content for r in same}) == 1 and len(same[0].content) > 1000
        folder = lake / "_graphlake" / "cache" / "clips"
        for t in range(20, 200, 15):
            assert c.get(f"/media/{mid}/clip", params={"t0": t, "t1": t + 10}).status_code == 200
        clips = list(folder.iterdir())
        assert clips and all(not p.name.startswith(".") for p in clips)  # no partial left
        sizes = sorted(p.stat().st_size for p in clips)
        assert sum(sizes) <= budget + sizes[-1]  # trimmed to the budget (the newest kept)


@pytest.mark.frames
def test_frames_as_jpeg(http):
    av = pytest.importorskip("av", reason="frames need PyAV (the vision extra)")

    mid = _media_id(http)
    frames = http.get(f"/media/{mid}/frames", params={"t0": 0, "t1": 8, "n": 4}).json()
    assert [f["t"] for f in frames["items"]] == [1.0, 3.0, 5.0, 7.0]
    jpg = http.get(frames["items"][0]["url"])
    assert jpg.headers["content-type"] == "image/jpeg" and jpg.content[:2] == b"\xff\xd8"
    with av.open(io.BytesIO(jpg.content), format="mjpeg") as c:
        frame = next(c.decode(video=0))
    assert (frame.width, frame.height) == (1280, 720)  # the demo recording, at full size


@pytest.mark.parametrize(
    "path",
    [
        "/media/..%2F..%2Fetc%2Fpasswd",
        "/media/../../etc/passwd",
        "/media/%2Fetc%2Fpasswd/file",
        "/media/0557ff9eb4f5/file",
        "/media/..%2Fsessions/frame.jpg?t=1",
    ],
)
def test_media_ids_cannot_walk_out(http, path):
    resp = http.get(path)
    assert resp.status_code in (404, 422)
    assert b"root:" not in resp.content


def test_sql(http):
    body = http.post(
        "/sql",
        json={
            "sql": "SELECT corpus, count(*) AS n FROM sessions WHERE corpus = $c GROUP BY corpus",
            "params": {"c": "kolab"},
        },
    ).json()
    assert body["columns"] == ["corpus", "n"] and body["rows"] == [["kolab", 12]]
    assert body["truncated"] is False
    capped = http.post("/sql", json={"sql": "SELECT * FROM events"}).json()
    assert capped["truncated"] is True and len(capped["rows"]) == 50
    arrow = http.post(
        "/sql",
        json={"sql": "SELECT node_id FROM nodes ORDER BY 1 LIMIT 7"},
        headers={"Accept": "application/vnd.apache.arrow.stream"},
    )
    assert pa.ipc.open_stream(arrow.content).read_all().num_rows == 7
    parquet = http.post(
        "/sql", json={"sql": "SELECT 1 AS x"}, headers={"Accept": "application/vnd.apache.parquet"}
    )
    assert pq.read_table(io.BytesIO(parquet.content)).to_pylist() == [{"x": 1}]


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM sessions ORDER BY session_id LIMIT 3",  # lists, times, JSON text
        "SELECT * FROM nodes ORDER BY session_id, node_id LIMIT 20",
        "SELECT corpus, count(*) AS n, sum(out_degree) AS s, max(t_start) AS a FROM nodes "
        "GROUP BY 1 ORDER BY 1",
        "SELECT 1.5::DECIMAL(4,1) AS d, 12::DECIMAL(9,0) AS e, NULL AS n, true AS b, "
        "'nan'::DOUBLE AS f, DATE '2024-01-02' AS day, TIMESTAMP '2024-01-02 03:04:05' AS ts",
        "SELECT {'a': 1, 'b': ['x']} AS s",  # not plain: the Arrow way
        # no JSON type: a decimal in a struct, bytes, an interval (each was a 500)
        "SELECT {'a': 2.5::DECIMAL(4,1)} AS s, 'x'::BLOB AS b, INTERVAL '1 month 2 hours' AS i",
        "SELECT 170141183460469231731687303715884105727::HUGEINT AS big",  # past 64 bits
        "SELECT * FROM events ORDER BY session_id, event_id LIMIT 60",  # cut at the row limit
    ],
)
def test_a_json_answer_from_rows_is_the_answer_from_arrow(demo_server, sql):
    """/sql makes a JSON answer from DuckDB's rows where they hold what Arrow would: the
    body is byte for byte the one the Arrow path makes of the same statement."""
    from graphlake.query.connection import Connection
    from graphlake.server.routers.sql import _encode

    with httpx.Client(base_url=demo_server.url, timeout=60) as c:
        body = c.post("/sql", json={"sql": sql}).content
    with Connection(demo_server.app.state.graphlake.settings.lake) as con:
        want = _encode(con.sql(sql, max_rows=50), "json").body
    assert json.loads(body) == json.loads(want)
    assert body == want
    if "BLOB" in sql:
        assert json.loads(body)["rows"] == [[{"a": 2.5}, "eA==", "P1M0DT7200S"]]


def test_sql_repeats_are_answered_from_the_result_cache(http):
    point = "SELECT session_id, title FROM sessions WHERE corpus = 'kolab' AND session_id = $s"
    ids = [
        r[0]
        for r in http.post(
            "/sql",
            json={"sql": "SELECT session_id FROM sessions WHERE corpus = 'kolab' ORDER BY 1"},
        ).json()["rows"]
    ]
    first = http.post("/sql", json={"sql": point, "params": {"s": ids[0]}})
    again = http.post("/sql", json={"sql": point, "params": {"s": ids[0]}})
    other = http.post("/sql", json={"sql": point, "params": {"s": ids[1]}})
    assert first.headers["x-graphlake-cache"] in ("miss", "hit")  # another test may have run it
    assert again.headers["x-graphlake-cache"] == "hit" and again.content == first.content
    assert other.json()["rows"] == [[ids[1], other.json()["rows"][0][1]]]  # params are the key
    assert again.headers["x-graphlake-lake-version"] == first.headers["x-graphlake-lake-version"]
    arrow = {"Accept": "application/vnd.apache.arrow.stream"}
    as_arrow = http.post("/sql", json={"sql": point, "params": {"s": ids[0]}}, headers=arrow)
    assert as_arrow.headers["content-type"] == "application/vnd.apache.arrow.stream"
    assert pa.ipc.open_stream(as_arrow.content).read_all().num_rows == 1  # formats apart
    # what can change between runs is run every time
    for volatile in (
        "SELECT random() AS r",
        "SELECT now() AS t",
        "SELECT session_id FROM sessions USING SAMPLE 50%",
    ):
        answers = [http.post("/sql", json={"sql": volatile}) for _ in range(2)]
        assert [a.headers["x-graphlake-cache"] for a in answers] == ["off", "off"], volatile
    named = [
        http.post("/queries/collab_metrics", json={"params": {"corpus": "kolab"}}) for _ in range(2)
    ]
    assert named[1].headers["x-graphlake-cache"] == "hit" and named[1].json() == named[0].json()


def test_result_cache_is_bounded_in_bytes():
    from graphlake.server.result_cache import CachedAnswer, ResultCache, answer_key

    cache = ResultCache(800)
    keys = [answer_key(1, "SELECT $x", {"x": i}, 10, "json") for i in range(10)]
    for k in keys:
        assert cache.put(k, CachedAnswer(b"x" * 100, "application/json", ()))
    assert cache.stats()["bytes"] <= 800 and cache.stats()["entries"] == 8
    assert cache.get(keys[0]) is None and cache.get(keys[-1]) is not None  # oldest dropped
    assert not cache.put(keys[0], CachedAnswer(b"x" * 101, "application/json", ()))  # > 1/8
    assert answer_key(1, "s", {"x": 1}, 10, "json") != answer_key(2, "s", {"x": 1}, 10, "json")
    assert ResultCache(0).get(keys[-1]) is None


@pytest.mark.parametrize(
    "sql",
    [
        "DELETE FROM nodes",
        "CREATE TABLE x AS SELECT 1",
        "COPY nodes TO '/tmp/x.csv'",
        "SELECT * FROM read_csv('/etc/passwd')",
        "SELECT * FROM '/etc/passwd'",
        "ATTACH '/tmp/x.db'",
        "SET enable_external_access = true",
        "PRAGMA version",
        "SELECT 1; SELECT 2",
        "SELECT '",
        "'",
        'SELECT f.* FROM "/etc/passwd" f WHERE EXISTS (WITH "/etc/passwd" AS (SELECT 1) SELECT 1)',
    ],
)
def test_sql_refuses_writes_and_files(http, sql):
    msg = _error(http.post("/sql", json={"sql": sql}), 400)
    assert "root:" not in msg


def test_sql_limits(http):
    slow = (
        "SELECT count(*) FROM range(3000000) a, range(3000000) b "
        "WHERE (a.range * b.range) % 1000003 = 7"
    )
    assert "limit" in _error(http.post("/sql", json={"sql": slow}), 408)
    assert "limit" in _error(http.post("/sql", json={"sql": "SELECT 1 -- " + "x" * 30_000}), 413)
    _error(http.post("/sql", json={"nope": 1}), 422)


def test_named_queries(http):
    names = {q["name"] for q in http.get("/queries").json()}
    assert "collab_metrics" in names
    res = http.post("/queries/collab_metrics", json={"params": {"corpus": "kolab"}}).json()
    assert res["rows"] and "burstiness" in " ".join(res["columns"])
    _error(http.post("/queries/nope", json={}), 404)
    # a sum of integers is a HUGEINT (an Arrow decimal): it answers as a JSON integer
    res = http.post("/queries/adoption_summary", json={"params": {}})
    assert res.status_code == 200, res.text
    body = res.json()
    i = body["columns"].index("n_group")
    assert body["rows"] and all(type(r[i]) is int for r in body["rows"])


def test_benchmarks_listed(http):
    items = http.get("/benchmarks").json()["items"]
    ids = [b["id"] for b in items]
    assert ids[:6] == ["kolab-1a", "kolab-1b", "kolab-1c", "kolab-1d", "kolab-2a", "kolab-2b"]
    b1 = items[1]
    assert b1["labels"] == ["ADOPT", "MODIFY", "REJECT"] and len(b1["conditions"]) == 7
    assert len(b1["spec_hash"]) == 16


def test_instances_over_http(http):
    every, _ = _all(http, "/benchmarks/kolab-1c/instances", 1000, condition="graph", k=2)
    paged, pages = _all(http, "/benchmarks/kolab-1c/instances", 7, condition="graph", k=2)
    assert [i["id"] for i in paged] == [i["id"] for i in every] and pages > 1
    one = http.get(
        f"/benchmarks/kolab-1c/instances/{every[0]['id']}", params={"condition": "graph", "k": 2}
    ).json()
    assert one == every[0] and one["params"]["k"] == 2
    _error(http.get("/benchmarks/kolab-1c/instances/deadbeef"), 404)
    _error(http.get("/benchmarks/kolab-1b/instances", params={"condition": "smell"}), 400)
    _error(http.get("/benchmarks/nope/instances"), 404)


def test_score_over_http_lists_every_id(http):
    ids = [
        i["id"]
        for i in http.get("/benchmarks/kolab-2b/instances", params={"limit": 5}).json()["items"]
    ]
    preds = [
        {"id": ids[0], "label": 5},
        {"id": ids[1], "label": "4"},
        {"id": ids[2], "label": "great"},
        {"id": "ghost", "label": 3},
    ]
    res = http.post("/benchmarks/kolab-2b/score", json={"predictions": preds}).json()
    assert res["n"] == 2 and res["unknown"] == ["ghost"] and res["invalid"] == [ids[2]]
    assert len(res["missing"]) == res["n_instances"] - 3
    base = http.post("/benchmarks/kolab-2b/score", params={"baseline": "mode"}).json()
    assert base["n"] == base["n_instances"] and base["missing"] == []


@pytest.mark.subprocess
def test_example_evaluator_end_to_end(demo_server, demo_lake):
    """docs/examples/evaluate_majority.py against the live server, checked by hand: with
    every prediction ADOPT, ADOPT's precision is its share p, its recall 1, its F1 2p/(1+p),
    and the other classes score 0."""
    import graphlake

    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "docs/examples/evaluate_majority.py"),
            "--url",
            demo_server.url,
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    out = json.loads(proc.stdout)
    with graphlake.connect(demo_lake) as gl:
        labels = (
            gl.sql(
                "SELECT label FROM adoptions WHERE corpus = 'kolab' AND label IN "
                "('adopt', 'modify', 'reject')"
            )
            .column("label")
            .to_pylist()
        )
    n, p = len(labels), labels.count("adopt") / len(labels)
    assert out["instances"] == n and out["fetched"] == 7 * n
    score = out["score"]
    assert score["n"] == n and score["missing"] == [] and score["unknown"] == []
    assert score["per_class_f1"] == pytest.approx(
        {"ADOPT": 2 * p / (1 + p), "MODIFY": 0.0, "REJECT": 0.0}
    )
    assert score["macro_f1"] == pytest.approx(2 * p / (1 + p) / 3)
    assert score["macro_precision"] == pytest.approx(p / 3)
    assert score["macro_recall"] == pytest.approx(1 / 3)
    with Client(demo_server.url) as client:
        assert client.score("kolab-1b", baseline="majority") == score


def test_token_required_on_every_request(demo_lake):
    with LiveServer(Settings(lake=demo_lake, token="s3cret")) as srv:
        for path in ("/health", "/openapi.json", "/docs", "/benchmarks"):
            assert _error(httpx.get(srv.url + path), 401)
            wrong = httpx.get(srv.url + path, headers={"Authorization": "Bearer nope"})
            assert wrong.status_code == 401
        with Client(srv.url, token="s3cret") as good:
            assert good.health()["status"] == "ok"
        with Client(srv.url) as bad, pytest.raises(ServiceError) as err:
            bad.health()
        assert err.value.status == 401


def test_serve_refuses_a_public_bind_without_token(demo_lake):
    proc = cli("serve", "--host", "0.0.0.0", "--port", "1", lake=demo_lake, check=False)
    assert proc.returncode != 0 and "token" in proc.stderr and "loopback" in proc.stderr


def test_missing_frames_extra_is_a_clear_501(demo_lake, monkeypatch):
    monkeypatch.setitem(sys.modules, "av", None)  # as if PyAV were not installed
    with LiveServer(Settings(lake=demo_lake)) as srv, httpx.Client(base_url=srv.url) as c:
        mid = _media_id(c)
        msg = _error(c.get(f"/media/{mid}/frame.jpg", params={"t": 1}), 501)
        assert 'pip install "graphlake[frames]"' in msg


def test_openapi_conforms(demo_server):
    """schemathesis over every route of the OpenAPI spec: no request makes the server fail,
    every answer that is not 2xx is the JSON error shape, and every JSON answer matches its
    schema (binary answers, checked above, are only held to the first two)."""
    schemathesis = pytest.importorskip("schemathesis")
    from hypothesis import HealthCheck, given, settings

    from conftest import examples

    schema = schemathesis.openapi.from_url(demo_server.url + "/openapi.json")
    failures = []

    def check(case, binary):
        resp = case.call(base_url=demo_server.url)
        where = (case.method, case.formatted_path, resp.status_code, resp.text[:300])
        assert resp.status_code < 500, where
        if resp.status_code >= 300:
            kind = resp.headers.get("content-type") or [""]
            kind = kind[0] if isinstance(kind, list) else kind
            assert kind.startswith("application/json"), where
            body = resp.json()
            assert set(body) == {"error"} and body["error"]["status"] == resp.status_code
        elif not binary:
            case.validate_response(resp)

    def checker(binary):
        def run(case):
            check(case, binary)

        return run

    for op in schema.get_all_operations():
        operation = op.ok()
        binary = operation.path.endswith(("/clip", "/frame.jpg", "/file"))
        run = settings(
            max_examples=examples(12),
            deadline=None,
            suppress_health_check=list(HealthCheck),
            database=None,
        )(given(case=operation.as_strategy())(checker(binary)))

        try:
            run()
        except Exception as exc:  # schemathesis groups its findings in an ExceptionGroup
            failures.append(f"{operation.method} {operation.path}: {exc}")
    assert not failures, "\n".join(failures[:5])


def test_refresh_moves_to_the_newest_snapshot(tmp_path, hand_lake):
    import shutil

    from conftest import HAND
    from graphlake.pipeline import ingest_path

    lake = tmp_path / "lake"
    shutil.copytree(hand_lake, lake)
    with LiveServer(Settings(lake=lake)) as srv, Client(srv.url) as client:
        before = client.health()["lake_version"]
        n = client.sql("SELECT count(*) FROM sessions").rows[0][0]
        other = tmp_path / "more" / "hand-2"
        shutil.copytree(HAND, other)
        (other / "graph.json").write_text(
            (other / "graph.json").read_text().replace('"hand-1"', '"hand-2"')
        )
        ingest_path("kolab", other.parent, lake)
        assert client.sql("SELECT count(*) FROM sessions").rows[0][0] == n  # still pinned
        moved = client._request("POST", "/refresh").json()
        assert moved["lake_version"] > before
        assert client.sql("SELECT count(*) FROM sessions").rows[0][0] == n + 1
        assert len(list(client.iter_instances("kolab-2a", condition="graph"))) == 4


@pytest.mark.subprocess
def test_graphlake_serve_command(demo_lake):
    """The real command: uvicorn imports graphlake.server.main with the CLI's settings."""
    token = {"Authorization": "Bearer t0k"}
    with ServeProcess(demo_lake, "--token", "t0k", "--max-rows", "3", headers=token) as srv:
        assert srv.ready()["status"] == "ok"
        assert httpx.get(srv.url + "/health").status_code == 401
        # the workbench page and its scripts need no token (they hold no data)
        page = httpx.get(srv.url + "/")
        assert page.status_code == 200 and "graphlake workbench" in page.text
        assert httpx.get(srv.url + "/static/vendor/echarts.min.js").status_code == 200
        with Client(srv.url, token="t0k") as client:
            assert client.sql("SELECT * FROM nodes").truncated is True  # --max-rows 3


@pytest.mark.subprocess
def test_a_refresh_reaches_every_worker(tmp_path, hand_lake):
    """`serve --workers 2`: POST /refresh lands on one worker; the other follows the shared
    version record, so soon every answer, from either process, reads the new version."""
    import shutil
    import time

    from conftest import HAND
    from graphlake.pipeline import ingest_path

    lake = tmp_path / "lake"
    shutil.copytree(hand_lake, lake)
    with ServeProcess(lake, "--workers", "2") as srv:
        deadline = time.monotonic() + 300
        workers: dict[int, int] = {}
        while len(workers) < 2:  # both workers up and answering
            h = srv.ready()
            workers[h["worker"]] = h["lake_version"]
            assert time.monotonic() < deadline, "the second worker never answered"
        assert len(set(workers.values())) == 1
        before = next(iter(workers.values()))
        other = tmp_path / "more" / "hand-2"
        shutil.copytree(HAND, other)
        (other / "graph.json").write_text(
            (other / "graph.json").read_text().replace('"hand-1"', '"hand-2"')
        )
        ingest_path("kolab", other.parent, lake)
        after = httpx.post(srv.url + "/refresh", timeout=60).json()["lake_version"]
        assert after > before
        moved: set[int] = set()
        while len(moved) < 2:  # wait for the event: each worker answers the new version
            h = srv.health()
            if h["lake_version"] == after:
                moved.add(h["worker"])
            assert time.monotonic() < deadline, f"workers still at {before}: {h}"
        assert moved == set(workers)
    assert not list((lake / "_graphlake" / "cache").glob("serve-*.json"))  # cleaned up


def test_responses_are_not_held_back_on_a_socket_shared_by_workers(demo_lake):
    """`serve --workers N` shares a socket uvicorn binds with proto 0, on whose connections
    asyncio does not set TCP_NODELAY: every response waited for Nagle and a delayed ACK
    (two workers at a fixed 44 ms median, a quarter of one worker's rate). Each accepted
    connection gets it now."""
    import socket

    with (
        LiveServer(Settings(lake=demo_lake), shared_socket=True) as srv,
        httpx.Client(base_url=srv.url) as c,
    ):
        assert c.get("/health").status_code == 200  # the connection stays open (keep-alive)
        [conn] = list(srv.server.server_state.connections)
        sock = conn.transport.get_extra_info("socket")
        assert sock.proto == 0  # the shared socket's kind, as the workers get it
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0


def test_instance_indexes_are_built_at_start_not_by_the_first_request(demo_lake):
    """The first kolab-1b request after start waited 2.5-7.7 s for its index. The service
    builds every protocol's default index in the background from the start; a request finds
    it built (or waits for that build) and never builds its own."""
    with LiveServer(Settings(lake=demo_lake)) as srv:
        bench = srv.app.state.graphlake.current.bench
        keys = {
            pid: bench._key(pid, bench.spec(pid)[0].bind(None)) for pid in ("kolab-1a", "kolab-1b")
        }
        srv.app.state.graphlake.warming.join(600)  # no request was made
        assert all(k in bench._indexes for k in keys.values()), "not built in the background"
        built = {pid: bench._indexes[k] for pid, k in keys.items()}
        with httpx.Client(base_url=srv.url) as c:
            for pid in keys:
                r = c.get(f"/benchmarks/{pid}/instances", params={"limit": 1})
                assert r.status_code == 200 and r.json()["items"]
        assert all(bench._indexes[k] is built[pid] for pid, k in keys.items())


def test_a_session_id_with_slashes_is_reachable_on_every_session_route(tmp_path):
    """inspect_ai sessions are ``<eval_id>/<sample id>/<epoch>``: every session route takes
    such an id, its slashes sent as they are or percent-encoded (as the workbench and the
    client send them), and the route's own word after it still picks the route."""
    from urllib.parse import quote

    from graphlake.demo.trace_gen import inspect_log_by_hand
    from graphlake.pipeline import ingest_path

    ingest_path("traces", inspect_log_by_hand(tmp_path / "src"), tmp_path / "lake")
    with LiveServer(Settings(lake=tmp_path / "lake")) as srv, httpx.Client(base_url=srv.url) as c:
        sid = next(
            s["session_id"] for s in c.get("/sessions", params={"corpus": "traces"}).json()["items"]
        )
        assert sid.count("/") == 2
        for written in (sid, quote(sid, safe="")):
            base = f"/sessions/traces/{written}"
            assert c.get(base).json()["session_id"] == sid
            assert c.get(f"{base}/timeline").json()["session_id"] == sid
            assert c.get(f"{base}/graph").json()["nodes"]
            assert c.get(f"{base}/events").json()["items"]
            assert c.get(f"{base}/chat").status_code == 200
            assert c.get(f"{base}/media").json()["items"] == []
        missing = c.get("/sessions/traces/no/such/session/timeline")
        assert (
            missing.status_code == 404 and "no/such/session" in missing.json()["error"]["message"]
        )
