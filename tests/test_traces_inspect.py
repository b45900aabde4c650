"""inspect_ai evaluation logs, written by inspect itself (a task run against its mockllm
model), land as sessions: through inspect's own reader and through the fallback that reads
the archive (Zstandard entries) directly, with the same rows."""

from __future__ import annotations

import json
import sys
import zipfile
from datetime import datetime
from pathlib import Path

import pytest

pytest.importorskip("inspect_ai")

from graphlake.api import connect  # noqa: E402
from graphlake.demo.trace_gen import write_inspect_log  # noqa: E402
from graphlake.ingest.inspect_log import read_log  # noqa: E402
from graphlake.pipeline import ingest_path  # noqa: E402

_TABLES = {
    "sessions": "SELECT session_id, title, goal, scenario_id, run_id, duration_s, attrs "
    "FROM sessions",
    "nodes": "SELECT session_id, node_id, actor_type, actor, label, detail, t_start, t_end, "
    "out_degree, in_degree FROM nodes",
    "edges": "SELECT session_id, src, dst, kind FROM edges",
    "events": "SELECT session_id, seq, kind, actor, request_id, text, payload FROM events",
    "annotations": "SELECT session_id, kind, label, value, text FROM annotations",
    "runs": "SELECT run_id, name, agent, agent_model FROM runs",
}


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("inspect")
    return {fmt: write_inspect_log(folder / fmt, fmt) for fmt in ("eval", "json")}


def _rows(lake):
    con = connect(lake)
    return {t: sorted(map(json.dumps, con.sql(q).to_pylist())) for t, q in _TABLES.items()}


def test_an_eval_run_lands_with_messages_tools_scores_and_usage(logs, tmp_path):
    stats, _ = ingest_path("traces", logs["eval"], tmp_path / "lake")
    assert not stats.rejected
    con = connect(tmp_path / "lake")
    [run] = con.sql("SELECT * FROM runs").to_pylist()
    assert run["name"] == "arithmetic" and run["agent_model"] == "mockllm/model"
    sessions = con.sql("SELECT * FROM sessions ORDER BY scenario_id").to_pylist()
    assert [s["scenario_id"] for s in sessions] == ["s1", "s2"]
    assert sessions[0]["goal"] == "What is 1+1?"
    assert json.loads(sessions[0]["attrs"])["target"] == "2"
    nodes = con.sql(
        "SELECT label, actor_type, actor FROM nodes WHERE session_id = ? ORDER BY t_start, label",
        params=[sessions[0]["session_id"]],
    ).to_pylist()
    assert [n["actor_type"] for n in nodes] == ["system", "human", "ai", "tool", "ai"]
    assert nodes[3]["actor"] == "tool:add"
    calls = con.sql(
        "SELECT kind, request_id, text, payload FROM events WHERE kind IN ('tool_call', "
        "'tool_result') ORDER BY session_id, seq"
    ).to_pylist()
    assert [c["kind"] for c in calls] == ["tool_call", "tool_result"] * 2
    assert calls[0]["request_id"] == calls[1]["request_id"]  # the call and its result
    assert json.loads(calls[0]["payload"]) == {"x": 1, "y": 1}
    assert con.sql("SELECT count(*) AS n FROM edges WHERE kind = 'calls'").to_pylist()[0]["n"] == 2
    scores = con.sql(
        "SELECT s.scenario_id, a.value, a.text FROM annotations a JOIN sessions s USING "
        "(session_id) WHERE a.kind = 'score' ORDER BY 1"
    ).to_pylist()
    assert scores == [
        {"scenario_id": "s1", "value": 1.0, "text": "C"},
        {"scenario_id": "s2", "value": 0.0, "text": "I"},
    ]
    usage = con.sql(
        "SELECT sum(value) AS n FROM annotations WHERE kind = 'usage' AND label = 'input_tokens'"
    ).to_pylist()[0]["n"]
    assert usage == 2 * (30 + 45)


def test_the_fallback_reader_lands_the_same_rows_as_inspects_own(logs, tmp_path, monkeypatch):
    """Without inspect_ai the archive is read directly (its entries are Zstandard), and a
    .json log as the document it is: the same rows either way."""
    with zipfile.ZipFile(logs["eval"]) as zf:
        assert {i.compress_type for i in zf.infolist()} == {93}  # what inspect writes
    ingest_path("inspect", logs["eval"], tmp_path / "own")
    monkeypatch.setitem(sys.modules, "inspect_ai.log", None)  # import fails: the fallback
    with pytest.raises(ImportError):
        import inspect_ai.log  # noqa: F401
    ingest_path("inspect", logs["eval"], tmp_path / "fallback")
    ingest_path("inspect", logs["json"], tmp_path / "json")
    own = _rows(tmp_path / "own")
    assert own["nodes"] and own == _rows(tmp_path / "fallback")
    assert {t: len(r) for t, r in own.items()} == {
        t: len(r) for t, r in _rows(tmp_path / "json").items()
    }


def test_a_truncated_archive_and_an_inflating_entry_are_rejects(logs, tmp_path, monkeypatch):
    data = logs["eval"].read_bytes()
    cut = tmp_path / "cut.eval"
    cut.write_bytes(data[: len(data) // 2])
    ingest_path("inspect", cut, tmp_path / "lake")
    [reject] = connect(tmp_path / "lake").sql("SELECT reason FROM rejects").to_pylist()
    assert "cannot be read" in reject["reason"] or "could not read" in reject["reason"]

    monkeypatch.setitem(sys.modules, "inspect_ai.log", None)
    monkeypatch.setenv("GRAPHLAKE_MAX_FILE_BYTES", "10000")  # the samples inflate past it
    with pytest.raises(Exception, match="limit"):
        read_log(logs["eval"])
    ingest_path("inspect", logs["eval"], tmp_path / "lake2")
    [reject] = connect(tmp_path / "lake2").sql("SELECT reason FROM rejects").to_pylist()
    assert "GRAPHLAKE_MAX_FILE_BYTES" in reject["reason"] or "limit" in reject["reason"]


def test_the_demos_log_without_inspect_reads_as_inspects_own_log(logs, tmp_path):
    """A default install has no inspect_ai; the demo then writes the same evaluation as a
    .json log itself. Read by the fallback reader, it gives the rows inspect's own log
    gives (ids and timings aside: inspect makes them anew on every run)."""
    from graphlake.demo.trace_gen import inspect_log_by_hand

    shape = {
        "sessions": "SELECT title, goal, scenario_id FROM sessions",
        "nodes": "SELECT actor_type, actor, label, detail, out_degree, in_degree FROM nodes",
        "edges": "SELECT kind, count(*) AS n FROM edges GROUP BY kind",
        "events": "SELECT kind, actor, text, if(kind = 'message', payload::JSON->>'content',"
        " payload) AS payload FROM events",  # a message's payload holds its id
        "annotations": "SELECT kind, label, value, text FROM annotations",
        "runs": "SELECT name, agent, agent_model FROM runs",
    }

    def rows(path, lake):
        stats, _ = ingest_path("inspect", path, lake)
        assert not stats.rejected
        con = connect(lake)
        return {t: sorted(map(json.dumps, con.sql(q).to_pylist())) for t, q in shape.items()}

    own = rows(logs["json"], tmp_path / "own")
    hand = rows(inspect_log_by_hand(tmp_path / "hand"), tmp_path / "hand-lake")
    assert hand == own


def test_score_values_are_read_as_inspect_ai_reads_them():
    """Scores written as text ("10", "8.5"), yes/no and grade letters get the number
    inspect_ai's own value_to_float gives; what it cannot read stays NULL (text kept)."""
    from inspect_ai.scorer import value_to_float

    from graphlake.ingest.inspect_log import score_value

    theirs = value_to_float()
    for v in ["10", "8", "8.5", "1e3", "-5", "C", "I", "P", "N", "yes", "No", "TRUE", True, 3, 2.5]:
        assert score_value(v) == theirs(v), v
    assert score_value("excellent") is None and score_value([1, 2]) is None


def _zstd_member(archive, name: str, payload: bytes, declared: int) -> None:
    """Add ``name`` to the .eval zip ``archive`` as inspect writes its entries (Zstandard,
    zip method 93), declaring ``declared`` inflated bytes: stored first, then the method and
    size fields of its two headers rewritten (zipfile cannot write method 93)."""
    import struct

    import zstandard

    packed = zstandard.ZstdCompressor(level=19).compress(payload)
    with zipfile.ZipFile(archive, "a", compression=zipfile.ZIP_STORED) as zf:
        zf.writestr(name, packed)
    data = bytearray(archive.read_bytes())
    key = name.encode()
    local = max(i for i in range(len(data)) if data.startswith(b"PK\x03\x04", i)
                and data[i + 30 : i + 30 + len(key)] == key)  # fmt: skip
    central = max(i for i in range(len(data)) if data.startswith(b"PK\x01\x02", i)
                  and data[i + 46 : i + 46 + len(key)] == key)  # fmt: skip
    struct.pack_into("<H", data, local + 8, 93)
    struct.pack_into("<I", data, local + 22, declared)
    struct.pack_into("<H", data, central + 10, 93)
    struct.pack_into("<I", data, central + 24, declared)
    archive.write_bytes(bytes(data))


_READ_ONE = """
import sys
from pathlib import Path
from graphlake.ingest.inspect_log import read_log
try:
    read_log(Path(sys.argv[1]), own_reader=sys.argv[2] == "inspect")
    print("read whole")
except Exception as exc:
    print(type(exc).__name__, exc)
"""


@pytest.mark.parametrize("reader", ["inspect", "fallback"])
def test_a_zstd_member_that_inflates_past_its_header_is_refused_by_either_reader(
    logs, tmp_path, reader
):
    """A 20 KB archive whose sample entry declares 200 bytes and inflates to a 300 MB JSON
    list: read whole it takes gigabytes (inspect_ai's own reader skipped graphlake's limits).
    Under a 1.5 GiB ceiling, each reader refuses it naming the limit, having held no more
    than a chunk of it."""
    from watchdog import run_bounded

    bomb = tmp_path / "bomb.eval"
    bomb.write_bytes(logs["eval"].read_bytes())
    _zstd_member(bomb, "samples/9_epoch_1.json", b"[" + b"0," * 150_000_000 + b"0]", 200)
    assert bomb.stat().st_size < 200_000
    script = tmp_path / "read_one.py"
    script.write_text(_READ_ONE)
    run = run_bounded(script, str(bomb), reader, ceiling=3 << 29)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.startswith("InputLimitError") and "GRAPHLAKE_MAX_FILE_BYTES" in run.stdout
    assert run.peak_bytes < 1 << 30


def test_members_each_under_the_limit_but_past_it_together_are_refused(logs, tmp_path, monkeypatch):
    """The limit is for the archive, all members together: 120 members of 50 MB each reached
    3 GiB, each one alone under the limit."""
    monkeypatch.setenv("GRAPHLAKE_MAX_FILE_BYTES", str(1 << 20))
    many = tmp_path / "many.eval"
    many.write_bytes(logs["eval"].read_bytes())
    for k in range(3):
        _zstd_member(many, f"samples/x{k}_epoch_1.json", b"[" + b"0," * 200_000 + b"0]", 400_001)
    for own in (True, False):
        with pytest.raises(Exception, match="limit"):
            read_log(many, own_reader=own)
    stats, _ = ingest_path("traces", many, tmp_path / "lake")
    [reject] = connect(tmp_path / "lake").sql("SELECT reason FROM rejects").to_pylist()
    assert "GRAPHLAKE_MAX_FILE_BYTES" in reject["reason"]


REAL_LOG = (
    Path(__file__).parent
    / "fixtures"
    / "samples"
    / "inspect"
    / "2024-11-05T13-31-45-05-00_input-task_8zXjbRzCWrL9GXiXo2vus9.json"
)


def _ingest_real_log(path: Path, reader: str, tmp_path: Path, monkeypatch):
    """``path`` ingested alone through ``reader`` (inspect's own, or the fallback with
    inspect_ai's log module hidden), with no reject: (its json parse, a connection)."""
    if reader == "fallback":
        monkeypatch.setitem(sys.modules, "inspect_ai.log", None)
    log = json.loads(path.read_text(encoding="utf-8"))
    stats, _ = ingest_path("inspect", path, tmp_path / "lake")
    assert not stats.rejected
    return log, connect(tmp_path / "lake")


@pytest.mark.parametrize("reader", ["inspect_ai", "fallback"])
def test_a_real_log_from_inspect_s_own_tests(reader, tmp_path, monkeypatch):
    """A log inspect itself wrote (its tests' fixture; JSON, ``version`` 2): a person typing
    the question at an ``input_solver`` prompt, a model-graded ``C``. Its messages, score
    (value_to_float: "C" is 1.0, as the log's own reduction says) and usage land, through
    inspect's reader and through the fallback alike, against the json module's parse."""
    log, con = _ingest_real_log(REAL_LOG, reader, tmp_path, monkeypatch)
    [sample] = log["samples"]
    events = con.sql("SELECT kind, actor_type, text FROM events ORDER BY seq").to_pylist()
    roles = {"user": "human", "assistant": "ai"}
    assert [(e["actor_type"], e["text"]) for e in events] == [
        (roles[m["role"]], m["content"]) for m in sample["messages"]
    ]
    scores = con.sql("SELECT label, value FROM annotations WHERE kind = 'score'").to_pylist()
    [reduced] = log["reductions"][0]["samples"]
    assert scores == [{"label": "model_graded_fact", "value": reduced["value"]}]
    usage = {
        r["label"]: r["value"]
        for r in con.sql("SELECT label, value FROM annotations WHERE kind = 'usage'").to_pylist()
    }
    assert usage == sample["model_usage"]["openai/gpt-4o-mini"]


OLD_LOG = REAL_LOG.parent / "2024-09-25_hello_world_length_stop_reason.json"


@pytest.mark.parametrize("reader", ["inspect_ai", "fallback"])
def test_a_log_of_an_older_inspect_reads_alike_through_both_readers(reader, tmp_path, monkeypatch):
    """A log inspect 0.3.25 wrote (September 2024; one of inspect's own test fixtures): no
    ``eval_id``, the sample's events under ``transcript``. inspect's reader names the
    evaluation by a hash of its run id, task id and time and promotes the events; the
    fallback did neither, so the same file landed as another session (the task id for a
    name) with no message times. Both now give the rows inspect's own parse implies."""
    from inspect_ai._util.hash import base57_id_hash

    log, con = _ingest_real_log(OLD_LOG, reader, tmp_path, monkeypatch)
    ev, [sample] = log["eval"], log["samples"]
    [session] = con.sql("SELECT session_id, goal FROM sessions").to_pylist()
    eval_id = base57_id_hash(ev["run_id"] + ev["task_id"] + ev["created"])
    assert session == {"session_id": f"{eval_id}/1/1", "goal": sample["input"]}

    def text(content) -> str:
        return content if isinstance(content, str) else "".join(p["text"] for p in content)

    roles = {"user": "human", "assistant": "ai"}
    nodes = con.sql("SELECT actor_type, detail, t_start FROM nodes ORDER BY t_start").to_pylist()
    events = sample["transcript"]["events"]
    start = datetime.fromisoformat(events[0]["timestamp"])
    [made] = [e for e in events if e["event"] == "model"]  # the call that wrote the answer
    answered = (datetime.fromisoformat(made["timestamp"]) - start).total_seconds()
    assert [(n["actor_type"], n["detail"], n["t_start"]) for n in nodes] == [
        (roles[m["role"]], text(m["content"]), t)
        for m, t in zip(sample["messages"], [0.0, answered], strict=True)
    ]
    [score] = con.sql("SELECT label, value, text FROM annotations").to_pylist()
    assert score == {"label": "exact", "value": 0.0, "text": "I"}  # value_to_float: I is 0


TOOL_ERRORS_LOG = REAL_LOG.parent / "log_tool_call_error.json"


@pytest.mark.parametrize("reader", ["inspect_ai", "fallback"])
def test_tool_call_errors_of_a_log_from_inspect_s_own_tests(reader, tmp_path, monkeypatch):
    """inspect's own fixture of tool-call errors (JSON, ``version`` 2, inspect 0.3.58): one
    sample, epoch 4, of eleven ``tool`` messages, each with an ``error`` of another type
    (parsing, timeout, ..., output_limit) and no assistant message that made the calls.
    Against the json module's parse, through either reader: a message event and a
    ``tool_result`` event per message, the result ``error`` and answering its call id, the
    error's type and message kept whole in the message's payload."""
    log, con = _ingest_real_log(TOOL_ERRORS_LOG, reader, tmp_path, monkeypatch)
    [sample] = log["samples"]
    [session] = con.sql("SELECT session_id, title FROM sessions").to_pylist()
    assert session["title"] == f"sample {sample['id']} (epoch {sample['epoch']})"
    results = con.sql(
        "SELECT request_id, status, actor FROM events WHERE kind = 'tool_result' ORDER BY seq"
    ).to_pylist()
    assert results == [
        {"request_id": m["tool_call_id"], "status": "error", "actor": f"tool:{m['function']}"}
        for m in sample["messages"]
    ]
    payloads = con.sql("SELECT payload FROM events WHERE kind = 'message' ORDER BY seq").to_pylist()
    assert [json.loads(p["payload"])["error"] for p in payloads] == [
        m["error"] for m in sample["messages"]
    ]
    texts = con.sql("SELECT text FROM events WHERE kind = 'message' ORDER BY seq").to_pylist()
    assert [t["text"] for t in texts] == [m["content"] for m in sample["messages"]]
