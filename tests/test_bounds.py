"""Bounded inputs: a bomb is a reject that names its limit, its siblings land, and the attack
runs under a memory ceiling (tests/watchdog.py), never unguarded on the machine."""

from __future__ import annotations

import json
import shutil
import textwrap
import time
from pathlib import Path

import pytest
import yaml
from watchdog import run_bounded

from conftest import FIXTURES
from graphlake.ingest import yaml_bounded
from graphlake.ingest.yaml_bounded import (
    YamlLimitError,
    check_expansion,
    load_yaml,
    load_yaml_items,
)
from graphlake.lake import Lake


def alias_bomb(levels: int = 10, width: int = 9) -> str:
    """The billion-laughs shape: each level lists the previous one ``width`` times."""
    lines = ["a0: &a0 [lol]"]
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * width)}]")
    return "\n".join(lines) + "\n"


def test_an_alias_bomb_is_refused_before_it_is_expanded():
    bomb = alias_bomb()
    assert len(bomb) < 600
    with pytest.raises(YamlLimitError, match="GRAPHLAKE_YAML_MAX_NODES"):
        load_yaml(bomb)
    # the same shape, small enough, loads whole
    assert load_yaml(alias_bomb(levels=3, width=3))["a2"] == [[["lol"]] * 3] * 3


def test_a_circular_alias_and_deep_nesting_are_refused():
    with pytest.raises(YamlLimitError, match="circular"):
        load_yaml("loop: &r [1, *r]\n")
    with pytest.raises(YamlLimitError, match="GRAPHLAKE_YAML_MAX_DEPTH"):
        load_yaml("[" * 600 + "]" * 600)


def test_a_document_without_anchors_is_counted_as_a_tree_within_the_same_limits(monkeypatch):
    """Without an ``&`` no node is shared, so a cheaper walk counts it (the full check cost a
    fifth of a HAS-Bench ingest); its limits are the same."""
    text = "tasks: [" + ", ".join(f"{{id: {i}, v: [1, 2]}}" for i in range(400)) + "]\n"
    node = yaml.compose(text, Loader=yaml.SafeLoader)
    assert check_expansion(node, tree=True) == check_expansion(node) == 3 + 400 * 7
    assert len(load_yaml(text)["tasks"]) == 400
    monkeypatch.setenv("GRAPHLAKE_YAML_MAX_NODES", "2000")
    with pytest.raises(YamlLimitError, match="GRAPHLAKE_YAML_MAX_NODES"):
        load_yaml(text)
    monkeypatch.setenv("GRAPHLAKE_YAML_MAX_DEPTH", "3")
    monkeypatch.delenv("GRAPHLAKE_YAML_MAX_NODES")
    with pytest.raises(YamlLimitError, match="GRAPHLAKE_YAML_MAX_DEPTH"):
        load_yaml(text)


def test_expansion_counts_shared_nodes_at_every_use(monkeypatch):
    node = yaml.compose("a: &x [1, 2]\nb: [*x, *x]\n", Loader=yaml.SafeLoader)
    # mapping + 2 keys + a's list (3) + b's list holding it twice (1 + 3 + 3)
    assert check_expansion(node) == 1 + 2 + 3 + 7
    monkeypatch.setenv("GRAPHLAKE_YAML_MAX_NODES", "12")
    with pytest.raises(YamlLimitError):
        check_expansion(node)


def test_one_bad_item_of_a_list_is_one_error_and_its_siblings_load():
    text = "- {id: 1}\n- &r [1, *r]\n- {id: 3}\n"
    items = load_yaml_items(text)
    assert [i.value for i in items] == [{"id": 1}, None, {"id": 3}]
    assert "circular" in items[1].error and items[1].source == "&r [1, *r]"


_TRICKY_YAML = [
    "",
    "---\n",
    "plain scalar\n",
    "- 1\n- '1'\n- [2, 3]\n- {a: b}\n- ''\n- ~\n",
    "- yes\n- no\n- 1e3\n- 0x1F\n- 0o17\n- 1:20\n- .inf\n",
    "- 2001-12-14\n- 2001-12-14 21:59:43.10 -5\n",
    "a: 1\na: 2\nb: {c: [x, {d: null}]}\n",
    "x: &a 1\ny: *a\n",
    "a: !!binary aGk=\n",
    "<<: {a: 1}\nb: 2\n",
    "? [a]\n: 1\n",
    "a: =\n",
    "--- 1\n--- 2\n",
    "[1, 2",
    "- R&D\n- x\n",
    "- !foo x\n",
    "!!set {a, b}\n",
    "%YAML 1.1\n--- a\n",
    "[" * 600 + "]" * 600,
    "- " + "[" * 199 + "]" * 199 + "\n- ok\n",
    "- &a x\n- " + "[" * 199 + "]" * 199 + "\n- " + "[" * 201 + "]" * 201 + "\n",
]


def _outcome(fn, text):
    try:
        got = fn(text)
    except yaml.YAMLError as exc:
        return "error", str(exc)
    if isinstance(got, list) and got and hasattr(got[0], "source"):
        return [(repr(i.value), i.error, i.source) for i in got]
    return repr(got)


@pytest.mark.parametrize(
    "text", _TRICKY_YAML + [(FIXTURES / "hasbench" / "tasks.yaml").read_text()]
)
def test_the_event_builder_reads_yaml_exactly_as_the_composer_path(monkeypatch, text):
    """Tasks are built straight from libyaml's events (seven times faster than composing a
    node graph); what it leaves to the composer path and what it reads itself must come out
    the same, values, types, item sources and errors alike."""
    fast = [_outcome(load_yaml, text), _outcome(load_yaml_items, text)]
    monkeypatch.setattr(yaml_bounded, "_fast_items", lambda *a, **k: None)
    assert fast == [_outcome(load_yaml, text), _outcome(load_yaml_items, text)]


def test_ordinary_task_yaml_takes_the_event_builder():
    text = (FIXTURES / "hasbench" / "tasks.yaml").read_text()
    assert yaml_bounded._fast_items(text, split=True) is not None
    assert yaml_bounded._fast_items("x: &a 1\ny: *a\n", split=True) is None


def _tasks_with(bad: str) -> str:
    good = (FIXTURES / "hasbench" / "tasks.yaml").read_text()
    return good + textwrap.indent(bad, "  ").replace("  ", "- ", 1)


_INGEST = """
import sys
from graphlake.pipeline import ingest_path
from graphlake.query import run_sql
ingest_path("hasbench", sys.argv[1], sys.argv[2])
ids = run_sql("SELECT scenario_id FROM scenarios ORDER BY 1", sys.argv[2]).table.column(0)
rejects = run_sql("SELECT record_ref, reason, length(raw) AS n FROM rejects", sys.argv[2])
print(__import__("json").dumps({"ids": ids.to_pylist(), "rejects": rejects.table.to_pylist()}))
"""


@pytest.mark.subprocess
@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        ("task_id: bomb\n" + alias_bomb(), "expands to over"),
        ("task_id: loop\nloop: &r [1, *r]\n", "circular"),
    ],
    ids=["alias-bomb", "circular-alias"],
)
def test_a_hasbench_task_bomb_is_a_reject_and_its_siblings_land(tmp_path: Path, bad, reason):
    """Ingest under a 2 GiB ceiling: before the bound, the 505-byte bomb took 8-23 GiB."""
    src = tmp_path / "tasks"
    src.mkdir()
    (src / "tasks.yaml").write_text(_tasks_with(bad))
    script = tmp_path / "ingest.py"
    script.write_text(_INGEST)
    run = run_bounded(script, str(src), str(tmp_path / "lake"))
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["ids"] == ["retail_A_001", "retail_B_002"]  # the file's good tasks landed
    (rej,) = out["rejects"]
    assert rej["record_ref"] == "$[2]" and reason in rej["reason"]
    assert rej["n"] < 1000  # the reject keeps the item's source text, not an expansion
    assert run.peak_bytes < 1 << 30


# ------------------------------------------------------------------ statements

_BOMB_SQL = """
import json, sys, time
from graphlake.errors import QueryMemoryError
from graphlake.query.connection import Connection
with Connection(sys.argv[1]) as con:
    start = time.monotonic()
    try:
        con.sql("SELECT length(list(x)::VARCHAR) FROM range(3000000000) t(x)")
        outcome = "ran"
    except QueryMemoryError as exc:
        outcome = str(exc)
    settings = con.execute(
        "SELECT current_setting('memory_limit') AS m, current_setting('temp_directory') AS t"
    ).table.to_pylist()[0]
    print(json.dumps({"outcome": outcome, "s": time.monotonic() - start, **settings}))
"""


@pytest.mark.subprocess
def test_a_statement_that_grows_past_the_memory_limit_is_stopped(tmp_path, hand_lake):
    """Before the limit this statement grew a server to 8 GiB in 25 s (DuckDB's default is
    80% of RAM); now the connection stops it at 2 GiB, under a 4 GiB watchdog."""
    script = tmp_path / "bomb.py"
    script.write_text(_BOMB_SQL)
    run = run_bounded(script, str(hand_lake), ceiling=4 << 30)
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert "memory limit (2.0 GiB)" in out["outcome"] and "GRAPHLAKE_MEMORY_LIMIT" in out["outcome"]
    # DuckDB spills into a folder the lake owns, not `.tmp` wherever the process started
    assert out["t"].startswith(str(hand_lake.resolve() / "_graphlake" / "tmp"))


def test_the_sandbox_allows_only_the_snapshots_files(hand_lake, tmp_path):
    """A statement past the guard (``execute``) can neither read beside the lake's files nor
    write into the lake's folder (COPY, ATTACH)."""
    import shutil

    from graphlake.errors import SqlError
    from graphlake.query.connection import Connection

    hand_lake = shutil.copytree(hand_lake, tmp_path / "lake")
    (hand_lake / "beside.csv").write_text("a\n1\n")
    with Connection(hand_lake) as con:
        for statement in (
            f"SELECT * FROM read_csv('{hand_lake}/beside.csv')",
            f"COPY (SELECT 1) TO '{hand_lake}/written.csv'",
            f"ATTACH '{hand_lake}/new.duckdb' AS x",
        ):
            with pytest.raises(SqlError, match="disabled by configuration|not run on a lake"):
                con.execute(statement)
        assert con.sql("SELECT count(*) AS n FROM nodes").table.to_pylist()[0]["n"] > 0
    assert not (hand_lake / "written.csv").exists() and not (hand_lake / "new.duckdb").exists()
    assert not list((hand_lake / "_graphlake" / "tmp").iterdir())  # spill folders removed


def test_no_statement_past_the_guard_writes_into_the_connections_temp_folder(hand_lake, tmp_path):
    """DuckDB lets a sandboxed connection write its own temporary folder, and the spill cap
    does not count COPY, ATTACH or EXPORT: 349 MB went past a 100 MiB cap. Statements that
    write files are refused before they run, even past the guard, and nothing is written."""
    import shutil

    from graphlake.errors import SqlError
    from graphlake.query.connection import Connection

    lake = shutil.copytree(hand_lake, tmp_path / "lake")
    with Connection(lake) as con:
        temp = con.execute("SELECT current_setting('temp_directory') AS t").table.to_pylist()
        folder = temp[0]["t"]
        for statement in (
            f"COPY (SELECT range AS x FROM range(1000000)) TO '{folder}/out.parquet'",
            f"ATTACH '{folder}/x.duckdb' AS x",
            f"EXPORT DATABASE '{folder}/dump'",
            "SELECT 1; COPY (SELECT 1) TO 'elsewhere.csv'",
            "LOAD json",
        ):
            with pytest.raises(SqlError, match="not run on a lake connection"):
                con.execute(statement)
        written = [p for p in Path(folder).rglob("*") if p.is_file()]
        assert written == []
        assert con.execute("SELECT 42 AS n").table.to_pylist() == [{"n": 42}]


# ------------------------------------------------------------------ clients


def test_a_chunked_body_over_the_limit_is_a_413_and_one_under_it_is_read(hand_lake):
    """A chunked body states no length: it is counted as it arrives (FastAPI answered 400)."""
    import httpx

    from conftest import LiveServer
    from graphlake.server import Settings

    def chunks(total: int):
        statement = b'{"sql": "SELECT 1 AS one", "pad": "'
        yield statement
        for _ in range(total // 1000):
            yield b"x" * 1000
        yield b'"}'

    with (
        LiveServer(Settings(lake=hand_lake, max_body_bytes=20_000)) as srv,
        httpx.Client(base_url=srv.url, timeout=60) as c,
    ):
        headers = {"content-type": "application/json"}
        big = c.post("/sql", content=chunks(50_000), headers=headers)
        assert big.status_code == 413 and big.json()["error"]["code"] == "too_large"
        small = c.post("/sql", content=chunks(5_000), headers=headers)
        assert small.status_code == 200 and small.json()["rows"] == [[1]]


def _slow_clients(url: str, count: int) -> list:
    """``count`` connections that each send half a request's headers and then nothing."""
    import socket

    port = int(url.rsplit(":", 1)[1])
    socks = []
    for _ in range(count):
        sock = socket.create_connection(("127.0.0.1", port), timeout=60)
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: attacker\r\nX-Pad: ")
        socks.append(sock)
    return socks


def _closed_by_server(sock, deadline: float) -> bool:
    """True once the server has closed ``sock`` (EOF, or a reset); waits until ``deadline``."""
    import select

    while time.monotonic() < deadline:
        readable, _, _ = select.select([sock], [], [], 0.5)
        if readable:
            try:
                return sock.recv(4096) == b"" or sock.recv(4096) == b""
            except ConnectionResetError:
                return True
    return False


def test_slow_clients_are_closed_and_health_gets_in_past_the_connection_cap(hand_lake):
    """Slowloris: half-sent headers held 1,100 sockets until descriptors ran out. Past the cap
    the client waiting longest for its headers is evicted, so /health still gets in; every
    slow client is closed at the headers deadline; the open connections never pass the cap."""
    import httpx

    from conftest import LiveServer
    from graphlake.server import Settings

    settings = Settings(lake=hand_lake, max_connections=32, client_timeout_s=3.0)
    with LiveServer(settings) as srv:
        open_now = srv.server.server_state.connections
        attackers = _slow_clients(srv.url, 200)
        try:
            # read from this thread while the server's loop admits connections: a new one is
            # in the set for the instant before it evicts the oldest waiting one
            assert len(open_now) <= 32 + 1
            with httpx.Client(base_url=srv.url, timeout=60) as c:
                assert c.get("/health").json()["status"] == "ok"
            deadline = time.monotonic() + 120
            assert all(_closed_by_server(s, deadline) for s in attackers)
            while open_now:  # every slow client gone, none left holding a socket
                assert time.monotonic() < deadline, f"{len(open_now)} connections stay open"
                time.sleep(0.05)
        finally:
            for sock in attackers:
                sock.close()


def test_a_trickled_body_is_a_408_and_a_full_house_of_running_requests_a_503(hand_lake):
    import socket

    import httpx

    from conftest import Gate, LiveServer
    from graphlake.server import Settings

    settings = Settings(lake=hand_lake, max_connections=2, client_timeout_s=1.0)
    with LiveServer(settings, wrap=Gate) as srv:
        gate = srv.server.config.app
        with socket.create_connection(("127.0.0.1", srv.port), timeout=60) as slow:
            slow.sendall(
                b"POST /sql HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\n"
                b'content-length: 100\r\n\r\n{"sql": '
            )  # the headers, then a body that never comes
            answer = slow.makefile("rb").read()
        assert answer.startswith(b"HTTP/1.1 408") and b"--client-timeout" in answer

        gate.hold("^/health")  # two requests in progress fill the cap of two
        import concurrent.futures

        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            held = [pool.submit(httpx.get, srv.url + "/health", timeout=120) for _ in range(2)]
            deadline = time.monotonic() + 120
            while gate.pending < 2:
                assert time.monotonic() < deadline, "the held requests never arrived"
                time.sleep(0.01)
            refused = httpx.get(srv.url + "/openapi.json", timeout=60)
            assert refused.status_code == 503 and refused.headers["retry-after"] == "1"
            assert "--max-connections" in refused.json()["error"]["message"]
            gate.release()
            assert [h.result().status_code for h in held] == [200, 200]


def test_the_sql_pool_refuses_past_its_queue_and_abandons_what_it_cannot_interrupt(monkeypatch):
    import asyncio
    import threading

    from graphlake.errors import QueryTimeoutError
    from graphlake.server import sql_pool
    from graphlake.server.sql_pool import ServiceBusyError, SqlPool

    monkeypatch.setattr(sql_pool, "GRACE_S", 0.0)
    release = threading.Event()
    pool = SqlPool(workers=1, queue=1)

    async def scenario():
        stuck = asyncio.ensure_future(pool.run(release.wait, timeout_s=0.2))
        queued = asyncio.ensure_future(pool.run(lambda: "ran", timeout_s=0.1))
        deadline = time.monotonic() + 60
        while pool.busy() < 2:  # both admitted: one running, one waiting
            assert time.monotonic() < deadline and not stuck.done() and not queued.done()
            await asyncio.sleep(0.01)
        with pytest.raises(ServiceBusyError, match="try again"):
            await pool.run(lambda: "never", timeout_s=1)
        with pytest.raises(QueryTimeoutError) as waited:
            await queued
        assert "abandoned" not in str(waited.value)  # cancelled before it started
        with pytest.raises(QueryTimeoutError, match="abandoned"):
            await stuck
        assert pool.busy() == 1  # the abandoned call still holds its slot
        release.set()
        while pool.busy():
            assert time.monotonic() < deadline
            await asyncio.sleep(0.01)
        assert await pool.run(lambda: "ran", timeout_s=1) == "ran"

    try:
        asyncio.run(scenario())
    finally:
        release.set()
        pool.close()


def test_health_answers_while_long_statements_fill_the_sql_pool(hand_lake):
    import concurrent.futures

    import httpx

    from conftest import LiveServer
    from graphlake.server import Settings

    settings = Settings(lake=hand_lake, sql_workers=1, sql_queue=1, query_timeout_s=10.0)
    long_sql = {"sql": "SELECT count(*) AS n FROM range(100000000000) t(x) WHERE x % 7 = 3"}
    with (
        LiveServer(settings) as srv,
        httpx.Client(base_url=srv.url, timeout=120) as c,
        concurrent.futures.ThreadPoolExecutor(2) as clients,
    ):
        pool = srv.app.state.sql_pool
        running = [clients.submit(c.post, "/sql", json=long_sql) for _ in range(2)]
        deadline = time.monotonic() + 120
        while pool.busy() < 2:  # both admitted: one running, one waiting
            assert time.monotonic() < deadline, "the statements never started"
            time.sleep(0.01)
        busy = c.post("/sql", json={"sql": "SELECT 1"})
        assert busy.status_code == 503 and busy.headers["retry-after"] == "1"
        assert busy.json()["error"]["code"] == "busy"
        assert c.get("/health").json()["status"] == "ok"  # not queued behind the statements
        assert [r.result().status_code for r in running] == [408, 408]


@pytest.mark.subprocess
def test_statements_whose_memory_duckdb_does_not_count_are_stopped_and_the_server_lives(
    hand_lake,
):
    """A 4 GB string from repeat() and a sorted list of 200 million numbers passed the 2 GiB
    memory limit (DuckDB does not count them) and grew a server to 3 GiB in 7 s, over /sql,
    until it died. `graphlake serve` caps its data segment (memory limit + 1 GiB): the
    allocation fails, the statement is an out-of-memory answer, and the server goes on.
    The test's backstop is its own 8 GiB cap on the process, set before it starts (without
    the server's cap the string is built, past the time limit: a 408). The list is twice what
    made the server grow then (400 million numbers, 3.2 GB): past the room the cap leaves
    above what the server holds (the memory limit + 1 GiB) wherever the server's own data
    segment starts, so that it fails at the cap, not near it."""
    import httpx

    from conftest import ServeProcess
    from graphlake.config import serve_room_bytes

    with ServeProcess(hand_lake, backstop=8 << 30) as srv:
        srv.ready()
        held = _status_bytes(srv.proc.pid, "RssAnon") + _status_bytes(srv.proc.pid, "RssFile")
        peak = 0
        with httpx.Client(base_url=srv.url, timeout=300) as c:
            for sql in (
                "SELECT length(repeat('x', 4000000000)) AS n",
                "SELECT len(list_sort(range(400000000))) AS n",
            ):
                r = c.post("/sql", json={"sql": sql})
                assert r.status_code in (400, 413, 507), (sql, r.status_code, r.text[:300])
                assert r.json()["error"]["code"] == "memory_limit", r.text[:300]
                assert srv.proc.poll() is None  # alive
                peak = max(peak, _vm_hwm(srv.proc.pid))
            assert c.get("/health").json()["status"] == "ok"
            ok = c.post("/sql", json={"sql": "SELECT count(*) AS n FROM nodes"})
            assert ok.status_code == 200 and ok.json()["rows"][0][0] > 0
        # a statement has the room (the memory limit + 1 GiB) above what the server held when
        # ready, and no more (256 MiB for the server's own index builds of this small lake):
        # not the 4 GB the string wanted, nor the test's 8 GiB backstop
        assert peak < held + serve_room_bytes() + (256 << 20), (peak, held)


def _status_bytes(pid: int, field: str) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) << 10 for line in f if line.startswith(field + ":"))


def _vm_hwm(pid: int) -> int:
    return _status_bytes(pid, "VmHWM")


# ------------------------------------------------------------------ serialised payloads


def test_a_record_whose_attrs_pass_the_limit_is_a_reject_naming_it(tmp_path, monkeypatch):
    """Attributes were serialised whatever their size. Past $GRAPHLAKE_MAX_ATTRS_BYTES the
    record is a reject that names the limit, on the bulk path (Kolab's Arrow batches) and
    the row path alike; its siblings land; the reject's raw text is cut with a note."""
    import pyarrow as pa

    from conftest import HAND
    from graphlake.pipeline import ingest_path
    from graphlake.query.connection import Connection
    from graphlake.schema.emit import CollectingEmitter

    monkeypatch.setenv("GRAPHLAKE_MAX_ATTRS_BYTES", "5000")
    monkeypatch.setenv("GRAPHLAKE_MAX_REJECT_RAW", "3000")
    folder = tmp_path / "hand"
    shutil.copytree(HAND, folder)
    graph = json.loads((folder / "graph.json").read_text())
    graph["steps"][0]["nodes"][1]["transcript"] = "word " * 2_000  # 10 KB without a column
    (folder / "graph.json").write_text(json.dumps(graph))
    lake = tmp_path / "lake"
    ingest_path("kolab", folder, lake)
    with Connection(lake) as con:
        nodes = {r["node_id"] for r in con.rows("SELECT node_id FROM nodes")}
        timed = {r["node_id"] for r in con.rows("SELECT node_id FROM node_occurrences")}
        (reject,) = con.rows("SELECT * FROM rejects WHERE target_table = 'nodes'")
    assert "seg1a/n2" not in timed  # no occurrences of a node that is not there
    assert nodes == {"seg1a/n1", "seg1a/n3", "seg1a/n4", "seg2a/n1", "seg2a/n2", "seg2a/n3"}
    assert reject["record_ref"] == "steps[0].nodes[1]"  # the record path names the node
    assert "GRAPHLAKE_MAX_ATTRS_BYTES" in reject["reason"]
    assert len(reject["raw"]) < 3_300 and "$GRAPHLAKE_MAX_REJECT_RAW" in reject["raw"]

    em = CollectingEmitter("kolab")
    em.row("events", {"event_id": "e1", "session_id": "s", "attrs": json.dumps({"x": "y" * 6000})})
    em.row("events", {"event_id": "e2", "session_id": "s", "attrs": '{"x": 1}'})
    # the limit is in bytes: 1,300 characters of 4 bytes each pass it
    em.row("events", {"event_id": "e5", "session_id": "s", "attrs": "\U0001f600" * 1_300})
    em.rows(
        "events",
        pa.table({"event_id": ["e3", "e4"], "attrs": ["z" * 6000, None], "_unit": [0, 0]}),
    )
    assert [r["event_id"] for r in em.tables["events"]] == ["e2", "e4"]
    assert [r["record_ref"] for r in em.tables["rejects"]] == [
        "event_id=e1",
        "event_id=e5",
        "event_id=e3",
    ]


def test_a_kolab_graph_too_large_to_read_whole_is_streamed_a_side_file_is_a_reject(
    tmp_path, monkeypatch
):
    """Whole-document readers held any file: a 0.73 GiB Kolab graph needed over 8 GiB. Past
    $GRAPHLAKE_MAX_FILE_BYTES a graph (a graph file and a session folder's graph.json alike)
    is streamed and lands; any other file read whole (here meta.json) is a reject naming the
    limit, never read, and costs only itself."""
    from graphlake.pipeline import ingest_path
    from graphlake.query.connection import Connection

    corpus = tmp_path / "corpus"
    _crowded_session(corpus / "small", "small-1", 5)
    _crowded_session(corpus / "big", "big-1", 300)
    _crowded_session(corpus / "meta", "meta-1", 5)  # its meta.json is too large to read
    big_file = corpus / "loose-big.json"
    big_file.write_text((corpus / "big" / "graph.json").read_text().replace("big-1", "big-2"))
    size = big_file.stat().st_size
    (corpus / "meta" / "meta.json").write_text(json.dumps({"pad": "x" * size}))
    monkeypatch.setenv("GRAPHLAKE_MAX_FILE_BYTES", str(size - 1))
    lake = tmp_path / "lake"
    ingest_path("kolab", corpus, lake)
    with Connection(lake) as con:
        counts = con.rows("SELECT session_id, count(*) AS n FROM nodes GROUP BY 1")
        rejects = con.rows("SELECT source_file, reason, length(raw) AS n FROM rejects")
    assert {r["session_id"]: r["n"] for r in counts} == {
        "big-1": 300,
        "big-2": 300,
        "meta-1": 5,
        "small-1": 5,
    }
    [r] = rejects
    assert Path(r["source_file"]).relative_to(corpus) == Path("meta/meta.json")
    assert f"over the {size - 1:,}-byte limit" in r["reason"]
    assert "GRAPHLAKE_MAX_FILE_BYTES" in r["reason"]
    assert r["n"] <= Path(r["source_file"]).stat().st_size  # its head, no more


_HUGE_KOLAB = """
import sys
from graphlake.pipeline import ingest_path
from graphlake.query import run_sql
ingest_path("kolab", sys.argv[1], sys.argv[2])
print(run_sql("SELECT count(*) FROM nodes", sys.argv[2]).table.column(0).to_pylist())
print(run_sql("SELECT count(*) FROM rejects", sys.argv[2]).table.column(0).to_pylist())
"""


def _write_tiled_graph(path: Path, copies: int) -> int:
    """A generated session's steps written ``copies`` times with fresh step keys and node
    ids, as one graph file; returns its node count."""
    import re

    from graphlake.demo.kolab_gen import KolabGenerator

    g = KolabGenerator(seed=5, steps=(6, 6), interactions=(60, 60)).session(0).graph
    steps = g.pop("steps")
    with open(path, "w") as fh:
        fh.write(json.dumps(g)[:-1] + ', "steps": [')
        for c in range(copies):
            for i, step in enumerate(steps):
                text = json.dumps({**step, "key": f"{step['key']}-{c}"})
                fh.write(("," if c or i else "") + re.sub(r'"n(\d+)"', rf'"c{c}n\1"', text))
        fh.write("]}")
    return copies * sum(len(s["nodes"]) for s in steps)


@pytest.mark.subprocess
def test_a_kolab_graph_past_the_default_limit_streams_in_bounded_memory(tmp_path):
    """A 110 MB graph of 270,000 nodes (the default limit is 64 MiB) under a 1 GiB ceiling:
    read whole it needs about 25 times its size; streamed, every node lands (about 600 MiB
    peak here whatever the file's size: a 400 MB graph peaked at 550 MiB)."""
    folder = tmp_path / "corpus" / "s1"
    folder.mkdir(parents=True)
    n = _write_tiled_graph(folder / "graph.json", 190)
    assert (folder / "graph.json").stat().st_size > 100 << 20
    script = tmp_path / "huge.py"
    script.write_text(_HUGE_KOLAB)
    run = run_bounded(script, str(tmp_path / "corpus"), str(tmp_path / "lake"), ceiling=1 << 30)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.split() == [f"[{n}]", "[0]"]


# ------------------------------------------------------------------ one bad record


def test_one_bad_map_task_unit_is_a_reject_and_its_siblings_land(tmp_path):
    """``start="inf"`` overflowed the sequence number and a unit nesting 2,000 elements broke
    its own reject: each cost the whole file ("nothing of it was ingested")."""
    import shutil

    from graphlake.pipeline import ingest_path
    from graphlake.query import run_sql

    def event_ids(lake):
        sql = "SELECT event_id FROM events WHERE session_id = 'q8y' ORDER BY 1"
        return set(run_sql(sql, lake, max_rows=None).table.column(0).to_pylist())

    ingest_path("maptask", FIXTURES / "maptask_release", tmp_path / "clean")
    src = shutil.copytree(FIXTURES / "maptask_release", tmp_path / "src")
    units = src / "Data" / "timed-units" / "q8y.g.timed-units.xml"
    text = units.read_text(encoding="latin-1")
    text = text.replace('id="q8yg.4" start="1.61"', 'id="q8yg.4" start="inf"')
    deep = "<w>" * 2000 + "</w>" * 2000
    text = text.replace(
        '<tu id="q8yg.5" start="1.80" end="1.92" utt="2">the</tu>',
        f'<tu id="q8yg.5" start="1.92" end="1.80" utt="2">the{deep}</tu>',
    )
    units.write_text(text, encoding="latin-1")
    ingest_path("maptask", src, tmp_path / "bad")
    assert event_ids(tmp_path / "bad") == event_ids(tmp_path / "clean") - {"q8yg.4", "q8yg.5"}
    rejects = run_sql("SELECT record_ref, raw FROM rejects", tmp_path / "bad").table.to_pylist()
    refs = {r["record_ref"]: r["raw"] for r in rejects}
    assert {"id(q8yg.4)", "id(q8yg.5)"} <= set(refs)
    assert "nested too deep" in refs["id(q8yg.5)"]


_MAPTASK = """
import json, sys
from graphlake.pipeline import ingest_path
from graphlake.query import run_sql
ingest_path("maptask", sys.argv[1], sys.argv[2])
counts = run_sql("SELECT kind, count(*) AS n FROM events GROUP BY ALL ORDER BY ALL", sys.argv[2])
rejects = run_sql("SELECT count(*) AS n, max(reason) AS reason FROM rejects", sys.argv[2])
print(json.dumps({"events": counts.table.to_pylist(), **rejects.table.to_pylist()[0]}))
"""


@pytest.mark.subprocess
def test_map_task_moves_that_all_span_the_dialogue_stay_linear(tmp_path):
    """Every move copied its span's unit ids and words: 10,000 moves over 40,000 units (3.1 MB
    of XML) needed over 8 GiB. The moves of a dialogue may span four times its units in all;
    past that a move is a reject naming the limit, and the units and other moves land."""
    units, moves = 8_000, 3_000
    data = tmp_path / "src" / "Data"
    (data / "timed-units").mkdir(parents=True)
    (data / "moves").mkdir()
    root = '<nite:root xmlns:nite="http://nite.sourceforge.net/">'
    (data / "timed-units" / "q1x.g.timed-units.xml").write_text(
        root
        + "".join(f'<tu id="u{i}" start="{i}" end="{i + 0.5}">w{i}</tu>' for i in range(units))
        + "</nite:root>"
    )
    span = '<nite:child href="q1x.g.timed-units.xml#id(u0)..id(u7999)"/>'
    (data / "moves" / "q1x.g.moves.xml").write_text(
        root
        + "".join(f'<move id="m{i}" label="explain">{span}</move>' for i in range(moves))
        + "</nite:root>"
    )
    script = tmp_path / "maptask.py"
    script.write_text(_MAPTASK)
    run = run_bounded(script, str(tmp_path / "src"), str(tmp_path / "lake"), ceiling=1 << 30)
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    kept = (4 * units + 10_000) // units  # whole spans within the budget
    assert out["events"] == [{"kind": "move", "n": kept}, {"kind": "word", "n": units}]
    assert out["n"] == moves - kept and "GRAPHLAKE_MOVE_SPAN_FACTOR" in out["reason"]


def test_an_xml_entity_bomb_is_a_reject_and_the_other_dialogues_land(tmp_path):
    """A billion-laughs DTD in one Map Task layer: expat's amplification limit stops it at
    once (no entity is expanded past it), that file is a reject, the other dialogue lands."""
    from graphlake.pipeline import ingest_path
    from graphlake.query import run_sql

    src = shutil.copytree(FIXTURES / "maptask_release", tmp_path / "src")
    entities = '<!ENTITY a0 "xxxxxxxxxx">' + "".join(
        f'<!ENTITY a{i} "{f"&a{i - 1};" * 10}">' for i in range(1, 10)
    )
    (src / "Data" / "timed-units" / "q9x.f.timed-units.xml").write_text(
        f'<?xml version="1.0"?><!DOCTYPE r [{entities}]>'
        '<r><tu id="q9xf.1" start="0" end="1">&a9;</tu></r>'
    )
    ingest_path("maptask", src, tmp_path / "lake")
    sessions = run_sql("SELECT DISTINCT session_id FROM events ORDER BY 1", tmp_path / "lake")
    assert "q8y" in sessions.table.column(0).to_pylist()
    reasons = run_sql("SELECT reason FROM rejects", tmp_path / "lake").table.column(0)
    assert any("amplification" in r for r in reasons.to_pylist())


def test_a_byte_that_is_not_utf8_costs_no_tau2_simulation(tmp_path):
    """One invalid byte in one simulation dropped every simulation of the file; now each such
    byte reads as U+FFFD, every simulation lands, and one reject says where the bytes were."""
    from graphlake.pipeline import ingest_path
    from graphlake.query import run_sql

    def sessions(lake):
        sql = "SELECT session_id FROM sessions ORDER BY 1"
        return run_sql(sql, lake, max_rows=None).table.column(0).to_pylist()

    clean = FIXTURES / "tau2_runs" / "mock_llm_agent_3trials.json"
    ingest_path("tau2", clean, tmp_path / "clean")
    data = clean.read_bytes()
    at = data.index(b'"termination_reason": "') + len(b'"termination_reason": "')
    bad = tmp_path / "results.json"
    bad.write_bytes(data[:at] + b"\xff\xfe" + data[at:])
    ingest_path("tau2", bad, tmp_path / "bad")
    assert sessions(tmp_path / "bad") == sessions(tmp_path / "clean")
    (rej,) = run_sql("SELECT record_kind, reason FROM rejects", tmp_path / "bad").table.to_pylist()
    assert rej["record_kind"] == "encoding" and f"first at byte {at}" in rej["reason"]


# ------------------------------------------------------------------ derived data


def _crowded_session(folder: Path, session: str, nodes: int) -> Path:
    """A Kolab session whose ``nodes`` nodes all run over the same ten minutes."""
    folder.mkdir(parents=True)
    graph = {
        "session_id": session,
        "steps": [
            {
                "key": "s1",
                "step_name": "everything at once",
                "start_seconds": 0,
                "end_seconds": 600,
                "edges": [],
                "nodes": [
                    {
                        "id": f"n{i}",
                        "actor_type": "user",
                        "label": f"node {i}",
                        "time": [f"00:00:{i % 60:02d}-00:10:00"],
                    }
                    for i in range(nodes)
                ],
            }
        ],
    }
    (folder / "graph.json").write_text(json.dumps(graph))
    return folder


def test_a_crowded_session_is_left_out_of_co_occurrences_and_listed(tmp_path):
    """15,000 mutually overlapping Kolab nodes gave 225 million co_occurrences rows and a
    130 s refresh. A session past the pair cap is left out and listed with its exact count;
    the other sessions of the lake keep their rows."""
    from graphlake.lake.derived import refresh
    from graphlake.pipeline import ingest_path
    from graphlake.query.connection import Connection

    corpus = tmp_path / "corpus"
    _crowded_session(corpus / "small", "small-1", 10)  # 90 pairs
    _crowded_session(corpus / "crowd", "crowd-1", 1_200)  # 1,438,800 ordered pairs
    lake = tmp_path / "lake"
    ingest_path("kolab", corpus, lake)
    report = refresh(Lake(lake))
    with Connection(lake) as con:
        listed = con.rows("SELECT * FROM co_occurrence_overflow")
        kept = con.rows(
            "SELECT session_id, count(*) AS n FROM co_occurrences GROUP BY ALL ORDER BY ALL"
        )
    assert listed == [
        {
            "corpus": "kolab",
            "session_id": "crowd-1",
            "occurrences": 1_200,
            "overlapping_pairs": 1_200 * 1_199,
            "cap": 1_000_000,
            "limit_kind": "session",
        }
    ]
    assert kept == [{"session_id": "small-1", "n": 90}]
    assert report.rows["co_occurrences"] == 90 and report.crowded == 1


_LAKE_CAP = """
import json, sys
from pathlib import Path
sys.path.insert(0, sys.argv[2])
from test_bounds import _crowded_session
from graphlake.lake import Lake
from graphlake.lake.derived import refresh
from graphlake.pipeline import ingest_path
from graphlake.query.connection import Connection
root = Path(sys.argv[1])
for n in (5, 8, 10, 12, 15):  # 20, 56, 90, 132 and 210 ordered pairs: 508 in all
    _crowded_session(root / "corpus" / f"s{n}", f"s{n:02d}", n)
ingest_path("kolab", root / "corpus", root / "lake")
refresh(Lake(root / "lake"))
with Connection(root / "lake") as con:
    print(json.dumps({
        "listed": con.rows("SELECT session_id, overlapping_pairs, cap, limit_kind "
                           "FROM co_occurrence_overflow ORDER BY session_id"),
        "kept": con.rows("SELECT session_id, count(*) AS n FROM co_occurrences "
                         "GROUP BY ALL ORDER BY ALL"),
    }))
"""


def test_sessions_each_under_their_cap_are_bounded_for_the_lake_as_a_whole(tmp_path):
    """150 trace files, each under the per-session cap, gave 23.9 million co_occurrences
    rows. With a lake cap of 300 rows and sessions of 20, 56, 90, 132 and 210 pairs, the
    largest is left out and listed; the four others (298 rows) stay."""
    import os
    import subprocess
    import sys

    script = tmp_path / "lake_cap.py"
    script.write_text(_LAKE_CAP)
    env = {**os.environ, "GRAPHLAKE_CO_OCCURRENCE_LAKE_CAP": "300"}
    out = subprocess.run(
        [sys.executable, str(script), str(tmp_path), str(Path(__file__).parent)],
        capture_output=True, text=True, env=env, timeout=600,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["listed"] == [
        {"session_id": "s15", "overlapping_pairs": 210, "cap": 300, "limit_kind": "lake"}
    ]
    assert got["kept"] == [
        {"session_id": "s05", "n": 20},
        {"session_id": "s08", "n": 56},
        {"session_id": "s10", "n": 90},
        {"session_id": "s12", "n": 132},
    ]


def test_the_pair_count_matches_the_pairs_co_occurrences_forms(demo_lake):
    """The sweep counts pairs without forming them; with no cap it must give, for every
    session, exactly the rows co_occurrences has."""
    from graphlake.query.connection import Connection
    from graphlake.schema.views import DERIVED_VIEWS

    uncapped = DERIVED_VIEWS["co_occurrence_overflow"][0].replace("co_occurrence_cap()", "-1")
    with Connection(demo_lake) as con:
        counted = {
            (r["corpus"], r["session_id"]): r["overlapping_pairs"]
            for r in con.execute(uncapped, max_rows=None, timeout_s=None).table.to_pylist()
        }
        formed = {
            (r["corpus"], r["session_id"]): r["n"]
            for r in con.rows(
                "SELECT corpus, session_id, count(*) AS n FROM co_occurrences GROUP BY ALL"
            )
        }
    assert formed and len(counted) >= len(formed)
    assert {k: v for k, v in counted.items() if v} == formed


# ------------------------------------------------------------------ nesting depth


def test_json_depth_counts_brackets_outside_strings_in_linear_time():
    from graphlake.ingest.base import json_depth

    cases = {
        "[]": 1,
        "[[]]": 2,
        '{"a": "[[[", "b": [{}]}': 3,
        r'["\"["]': 1,  # an escaped quote does not end the string
        r'{"a": "x\\", "b": [[1]]}': 3,  # an escaped backslash does not escape the quote
        '"no brackets"': 0,
        "[" * 50_000 + "]" * 50_000: 50_000,
    }
    for text, depth in cases.items():
        assert json_depth(text) == depth, text[:40]
        assert json_depth(text.encode()) == depth


_DEEP_LOAD = """
import sys
from graphlake.ingest.base import load_json
depth = int(sys.argv[1])
try:
    load_json('{"a": [1, ' + '[' * depth + ']' * depth + ']}')
    print("loaded")
except ValueError as exc:
    print("refused", exc)
"""


def test_a_document_nested_past_the_depth_limit_is_refused_before_it_is_built(tmp_path):
    """ijson, which builds what the recursive parsers cannot, is quadratic in depth: 30,000
    levels in 60 KB took 2.1 GiB. Past $GRAPHLAKE_JSON_MAX_DEPTH (10,000) the document is
    refused after one linear scan; below it, it still loads."""
    from watchdog import run_bounded

    script = tmp_path / "deep.py"
    script.write_text(_DEEP_LOAD)
    deep = run_bounded(script, "30000", ceiling=1 << 30)
    assert deep.returncode == 0, deep.stderr[-2000:]
    assert deep.stdout.startswith("refused") and "GRAPHLAKE_JSON_MAX_DEPTH" in deep.stdout
    assert deep.peak_bytes < 400 << 20
    ok = run_bounded(script, "3000", ceiling=1 << 30)
    assert ok.stdout.startswith("loaded"), ok.stderr[-2000:]


_DEEP_KOLAB = """
import json, sys
from pathlib import Path
from graphlake.demo.corpus import write_graph_corpus
from graphlake.pipeline import ingest_path
src, lake = Path(sys.argv[1]), Path(sys.argv[2])
write_graph_corpus(src, 2, seed=1)
f = sorted(src.rglob("*.json"))[0]
text = f.read_text()
cut = text.rfind("}")
f.write_text(text[:cut] + ', "deep": ' + "[" * 100_000 + "]" * 100_000 + text[cut:])
stats, _ = ingest_path("kolab", src, lake, workers=1)
print(json.dumps({"sessions": stats.accepted.get("sessions", 0), "rejected": stats.rejected}))
"""


_DEEP_OTHERS = """
import json, sys
from pathlib import Path
from graphlake.pipeline import ingest_path
kind, root = sys.argv[1], Path(sys.argv[2])
deep = "[" * 100_000 + "]" * 100_000
if kind == "coauthor":  # one event line of a session holds the deep value
    from graphlake.demo.public_gen import write_coauthor_corpus
    src = write_coauthor_corpus(root / "src", sessions=2, episodes=2, seed=1)
    f = sorted(src.rglob("*.jsonl"))[0]
    lines = f.read_text().splitlines()
    lines[3] = lines[3][:-1] + ', "deep": ' + deep + "}"
    f.write_text("\\n".join(lines) + "\\n")
    stats, _ = ingest_path("coauthor", src, root / "lake", workers=1)
else:  # a Langfuse export (one trace) holds it, beside the demo's other trace files
    from graphlake.demo.traces import write_demo_traces
    write_demo_traces(root / "src", seed=1)
    f = sorted((root / "src").rglob("lf-trace-1.json"))[0]
    text = f.read_text()
    cut = text.rfind("}")
    f.write_text(text[:cut] + ', "deep": ' + deep + text[cut:])
    stats, _ = ingest_path("traces", root / "src", root / "lake", workers=1)
print(json.dumps({"sessions": stats.accepted.get("sessions", 0), "rejected": stats.rejected}))
"""


@pytest.mark.parametrize("kind", ["coauthor", "langfuse"])
def test_a_100000_deep_value_in_a_coauthor_line_or_a_langfuse_export_is_bounded(tmp_path, kind):
    """100,000-deep CoAuthor and Langfuse inputs reached 3 GiB. Under a 2 GiB ceiling: the
    CoAuthor line holding it is a reject and both sessions land; the Langfuse export is one
    reject and the demo's other trace files land."""
    from watchdog import run_bounded

    script = tmp_path / "deep_other.py"
    script.write_text(_DEEP_OTHERS)
    run = run_bounded(script, kind, str(tmp_path))
    assert run.returncode == 0, run.stderr[-3000:]
    got = json.loads(run.stdout.strip().splitlines()[-1])
    assert sum(got["rejected"].values()) >= 1
    if kind == "coauthor":
        assert got["sessions"] == 2
    else:  # the other demo traces: OTel, OpenInference, SWE-agent, OpenHands, inspect
        assert got["sessions"] >= 4


def test_a_kolab_graph_holding_a_100000_deep_value_is_one_reject_and_its_sibling_lands(tmp_path):
    """The structure sniffer streamed the file with ijson.parse, whose event prefixes grow
    with the depth: a 100,000-deep value took the ingest past its memory. Under a 2 GiB
    ceiling: the graph that holds it is one reject, the other session lands."""
    from watchdog import run_bounded

    script = tmp_path / "deep_kolab.py"
    script.write_text(_DEEP_KOLAB)
    run = run_bounded(script, str(tmp_path / "src"), str(tmp_path / "lake"))
    assert run.returncode == 0, run.stderr[-3000:]
    got = json.loads(run.stdout.strip().splitlines()[-1])
    assert got["sessions"] == 1 and sum(got["rejected"].values()) == 1
