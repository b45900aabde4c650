"""Inputs built to break a reader: every one becomes rows or rejects, never a crashed run."""

from __future__ import annotations

import json
import shutil

import pytest

from conftest import FIXTURES, cli
from graphlake.lake import Lake
from graphlake.pipeline import ingest_path
from graphlake.query import run_sql

pytestmark = pytest.mark.fuzz

DEEP = "[" * 10_000 + "]" * 10_000


def q(lake, sql):
    return run_sql(sql, lake, max_rows=None).table.to_pylist()


def test_deep_nesting_and_null_documents_are_rejects(tmp_path):
    cases = {
        "kolab": {
            "s1/graph.json": "null",
            "s2/graph.json": '{"session_id": "x", "steps": ' + DEEP + "}",
        },
        "tau2": {"deep.json": '{"info": {}, "simulations": ' + DEEP + "}"},
        "coauthor": {
            "deep_0123456789abcdef0123456789abcdef.jsonl": '{"eventName": "x", '
            + '"eventTimestamp": 1, "a": '
            + DEEP
            + "}\n"
        },
        "hasbench": {"t.jsonl": '{"type": "run", "run_id": "r", "x": ' + DEEP + "}\n"},
    }
    for corpus, files in cases.items():
        src = tmp_path / corpus
        for name, text in files.items():
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            (src / name).write_text(text)
        lake = tmp_path / f"lake-{corpus}"
        out = cli("ingest", corpus, str(src), "--quiet", lake=lake, check=False)
        assert out.returncode == 0 and "Traceback" not in out.stderr, (corpus, out.stderr)
        rejects = q(lake, "SELECT source_file, reason FROM rejects")
        assert {r["source_file"] for r in rejects} >= {str(src / n) for n in files}, corpus


def test_a_reader_that_fails_loses_only_its_file(tmp_path, monkeypatch):
    """Whatever a reader raises on one file (here: a RecursionError half-way, after it has
    emitted rows), that file's rows are dropped, one reject names it, and the rest lands."""
    from graphlake.ingest.tau2 import Tau2Ingestor

    src = tmp_path / "runs"
    shutil.copytree(FIXTURES / "tau2_runs", src)
    real = Tau2Ingestor.parse

    def parse(self, unit, out):
        real(self, unit, out)
        if unit.path.name.startswith("mock_llm_agent_retry"):
            raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(Tau2Ingestor, "parse", parse)
    stats, _snap = ingest_path("tau2", src, tmp_path / "lake", workers=1)
    names = {r["name"] for r in q(tmp_path / "lake", "SELECT name FROM runs")}
    assert names == {"mock_llm_agent_3trials", "voice_run"}
    assert q(
        tmp_path / "lake", "SELECT count(*) AS n FROM sessions WHERE session_id LIKE 'sim-b%'"
    ) == [{"n": 0}]
    (rej,) = q(tmp_path / "lake", "SELECT source_file, reason, raw FROM rejects")
    assert rej["source_file"].endswith("mock_llm_agent_retry_2trials.json")
    assert "RecursionError" in rej["reason"] and "nothing of it was ingested" in rej["reason"]
    assert json.loads(rej["raw"])["info"]["agent_info"]["implementation"] == "llm_agent_retry"
    assert stats.accepted["sessions"] == 16  # 12 + 4: the failed file's 6 are not counted


def test_a_repeated_simulation_id_keeps_the_first_and_says_so(tmp_path):
    sims = [
        {
            "id": f"s{i}",
            "task_id": "t",
            "start_time": "2025-01-01T00:00:00",
            "messages": [
                {"role": "user", "content": f"hi {i}", "timestamp": "2025-01-01T00:00:01"}
            ],
        }
        for i in range(6)
    ]
    sims[4]["id"] = "s1"  # the same id twice
    (tmp_path / "r.json").write_text(
        json.dumps({"timestamp": "t", "info": {}, "tasks": [], "simulations": sims})
    )
    ingest_path("tau2", tmp_path / "r.json", tmp_path / "lake")
    lake = tmp_path / "lake"
    assert [r["session_id"] for r in q(lake, "SELECT session_id FROM sessions ORDER BY 1")] == [
        "s0",
        "s1",
        "s2",
        "s3",
        "s5",
    ]
    assert q(lake, "SELECT text FROM events WHERE session_id = 's1'") == [{"text": "hi 1"}]
    (rej,) = q(lake, "SELECT record_ref, reason FROM rejects")
    assert rej["record_ref"] == "$.simulations[4]"
    assert "the one at $.simulations[1] was ingested and this one was not" in rej["reason"]


def test_symlinks_are_not_followed_out_of_the_input_folder(tmp_path):
    """A link to a system file, a dangling link and a link loop: none is read (the system
    file's bytes must not reach the lake, not even as a reject's raw payload)."""
    import os

    src = tmp_path / "in"
    (src / "sub").mkdir(parents=True)
    shutil.copy(FIXTURES / "tau2_runs" / "mock_llm_agent_3trials.json", src)
    secret = tmp_path / "secret.json"
    secret.write_text('{"password": "hunter2"}')
    os.symlink(secret, src / "secret.json")
    os.symlink(tmp_path / "nowhere", src / "dangling.json")
    os.symlink(src, src / "sub" / "loop")
    inside = src / "alias.json"  # a link that stays inside is fine
    os.symlink(src / "mock_llm_agent_3trials.json", inside)
    for corpus in ("tau2", "coauthor", "maptask", "kolab"):
        lake = tmp_path / f"lake-{corpus}"
        out = cli("ingest", corpus, str(src), "--quiet", lake=lake, check=False)
        # tau2 files under another ingestor: refused with a suggestion, nothing committed
        assert out.returncode == 0 or "look like tau2 data" in out.stderr, out.stderr
        assert "Traceback" not in out.stderr and "hunter2" not in out.stderr
        if (lake / "_graphlake").exists() and Lake(lake).snapshots():
            raws = q(lake, "SELECT raw FROM rejects")
            assert all("hunter2" not in (r["raw"] or "") for r in raws), corpus
            assert "hunter2" not in json.dumps(q(lake, "SELECT * FROM sessions"), default=str)


def test_kolab_fast_reader_never_sees_a_top_level_non_object(tmp_path):
    """A top-level null in a batch used to crash PyArrow's JSON reader and with it the whole
    run (exit 139); such files now go to the record path, which rejects them."""
    from conftest import HAND

    src = tmp_path / "k"
    src.mkdir()
    shutil.copy(HAND / "graph.json", src / "a.json")
    for name, text in {
        "b": "null",
        "c": "[1, 2]",
        "d": '"s"',
        "e": "3",
        "f": "",
        "g": "  null  \n",
    }.items():
        (src / f"{name}.json").write_text(text)
    out = cli("ingest", "kolab", str(src), "--quiet", lake=tmp_path / "lake", check=False)
    assert out.returncode == 0, out.stderr
    lake = tmp_path / "lake"
    assert q(lake, "SELECT session_id FROM sessions") == [{"session_id": "hand-1"}]
    assert len(q(lake, "SELECT * FROM rejects")) == 6


def test_odd_values_where_records_expect_others(tmp_path):
    """Numbers where texts belong, a string where an object belongs, a truncated file,
    invalid UTF-8, timestamps of 1e20 / year 10000 / NaN: rejects with reasons, no crash."""
    src = tmp_path / "t"
    src.mkdir()
    sim = {"id": "s", "task_id": "t", "start_time": "2025-01-01T00:00:00", "messages": []}
    full = json.dumps(
        {"timestamp": "x", "info": {}, "tasks": [], "simulations": [sim, {**sim, "id": "s2"}]}
    )
    (src / "trunc.json").write_text(full[:-30])
    (src / "utf.json").write_bytes(b'{"info":{},"simulations":[{"id":"\xff","messages":[]}]}')
    (src / "strobj.json").write_text(json.dumps({"info": "oops", "simulations": ["x"]}))
    (src / "numid.json").write_text(json.dumps({"info": {}, "simulations": [{**sim, "id": 5}]}))
    out = cli("ingest", "tau2", str(src), "--quiet", lake=tmp_path / "lt", check=False)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    reasons = {
        r["source_file"].rsplit("/", 1)[1]: r["reason"]
        for r in q(tmp_path / "lt", "SELECT source_file, reason FROM rejects")
    }
    assert set(reasons) == {"trunc.json", "utf.json", "strobj.json", "numid.json"}
    assert "must be a text" in reasons["numid.json"]
    assert "not a str" in reasons["strobj.json"]
    csrc = tmp_path / "c"
    csrc.mkdir()
    init = {
        "eventName": "system-initialize",
        "eventSource": "api",
        "eventTimestamp": 1650000000000,
        "currentDoc": "",
    }
    for k, ts in enumerate(("1e20", "253402301800000", "NaN", "-1e18")):
        bad = (
            '{"eventName": "text-insert", "eventSource": "user", "eventTimestamp": '
            f'{ts}, "textDelta": {{"ops": [{{"insert": "a"}}]}}}}'
        )
        (csrc / f"w_{k:032x}.jsonl").write_text(json.dumps(init) + "\n" + bad + "\n")
    out = cli("ingest", "coauthor", str(csrc), "--quiet", lake=tmp_path / "lc", check=False)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    rejects = q(tmp_path / "lc", "SELECT record_ref, reason FROM rejects")
    assert len(rejects) == 4 and all(r["record_ref"] == "line 2" for r in rejects)
    assert all("between 1970 and 2100" in r["reason"] for r in rejects)
    assert len(q(tmp_path / "lc", "SELECT * FROM sessions")) == 4  # the rest of each landed


def test_the_wrong_ingestor_commits_nothing_and_names_the_right_one(tmp_path):
    src = tmp_path / "runs"
    shutil.copytree(FIXTURES / "tau2_runs", src)
    (src / "LICENSE").write_text("MIT License")
    (src / "README.md").write_text("# runs")
    lake = tmp_path / "lake"
    out = cli("ingest", "kolab", str(src), "--quiet", lake=lake, check=False)
    assert out.returncode != 0 and "Traceback" not in out.stderr
    assert "look like tau2 data: try `graphlake ingest tau2" in " ".join(out.stderr.split())
    assert Lake(lake).snapshots() == []  # nothing committed
    # the right one: README and LICENSE are skipped and counted, not rejected
    out = cli("ingest", "tau2", str(src), "--quiet", lake=lake)
    assert "2 non-data files skipped (LICENSE, README.md)" in out.stdout
    assert q(lake, "SELECT * FROM rejects") == []
    # an ingest that finds only bad data of its own kind still records the rejects
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "x.json").write_text('{"timestamp": "t", "info": {}, "simulations": [{"id": 1}]}')
    ingest_path("tau2", bad, tmp_path / "lake2")
    assert len(q(tmp_path / "lake2", "SELECT * FROM rejects")) == 1


def test_a_tau2_file_truncated_mid_array_keeps_the_simulations_before_the_cut(tmp_path):
    src = FIXTURES / "tau2_runs" / "mock_llm_agent_3trials.json"
    text = src.read_text()
    doc = json.loads(text)
    sims = doc["simulations"]
    assert len(sims) >= 3
    # cut inside the third simulation
    third = text.index(json.dumps(sims[2]["id"]))
    for name, body in (
        ("cut.json", text[: third + 5]),
        ("nan.json", text[:third] + text[third:].replace("0.0", "NaN", 1)),
    ):
        folder = tmp_path / name.split(".")[0]
        folder.mkdir()
        (folder / name).write_text(body)
        lake = tmp_path / f"lake-{name}"
        out = cli("ingest", "tau2", str(folder), "--quiet", lake=lake, check=False)
        assert out.returncode == 0, out.stderr
        landed = {r["session_id"] for r in q(lake, "SELECT session_id FROM sessions")}
        assert {sims[0]["id"], sims[1]["id"]} <= landed, name
        (reject,) = q(lake, "SELECT record_ref, reason FROM rejects WHERE record_kind = 'file'")
        assert reject["record_ref"] == "$.simulations"
        assert "stops being valid JSON" in reject["reason"]
        assert f"the {len(landed)} simulation(s) before that point landed" in reject["reason"]


def test_times_that_look_wrong_are_flagged_not_dropped(tmp_path):
    """Events that go backwards, start before the session or lie months in are kept as the
    source gave them and listed in the time_flags view."""
    src = FIXTURES / "almanac"
    shutil.copytree(src, tmp_path / "almanac")
    path = tmp_path / "almanac" / "s01.jsonl"
    lines = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    actions = [i for i, rec in enumerate(lines) if rec.get("type") == "action"]
    assert len(actions) >= 4
    lines[actions[2]]["t"] = lines[actions[1]]["t"] - 5  # goes backwards
    lines[actions[3]]["t"] = 40 * 86400.0  # 40 days in
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    lake = tmp_path / "lake"
    ingest_path("almanac", tmp_path / "almanac", lake)
    flags = q(lake, "SELECT flag, t FROM time_flags ORDER BY flag")
    assert {f["flag"] for f in flags} >= {"backwards", "over_30_days_in"}, flags
    assert 40 * 86400.0 in {f["t"] for f in flags}
    # nothing was dropped for its time: as many events as from the unmodified source
    clean = tmp_path / "clean"
    ingest_path("almanac", src, clean)
    count = "SELECT count(*) AS n FROM events"
    assert q(lake, count) == q(clean, count)
    assert q(clean, "SELECT count(*) AS n FROM time_flags") == [{"n": 0}]


def test_a_value_that_does_not_fit_its_column_is_a_reject_and_the_rest_lands(tmp_path):
    """`false` where CoAuthor's event number belongs used to crash the whole run at the
    Parquet write; now that row is a reject naming column, type and value."""
    src = FIXTURES / "coauthor"
    name = next(src.glob("*.jsonl")).name
    lines = (src / name).read_text().splitlines()
    first = json.loads(lines[0])
    first["eventNum"] = False
    lines[0] = json.dumps(first)
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / name).write_text("\n".join(lines) + "\n")
    lake, clean = tmp_path / "lake", tmp_path / "clean"
    ingest_path("coauthor", tmp_path / "in", lake)
    ingest_path("coauthor", src, clean)
    (reject,) = q(lake, "SELECT target_table, record_ref, reason FROM rejects")
    assert reject["target_table"] == "events" and reject["record_ref"] == "events.seq"
    assert reject["reason"].startswith("column seq holds int64, and False is not one")
    count = "SELECT count(*) AS n FROM events"
    assert q(lake, count)[0]["n"] == q(clean, count)[0]["n"] - 1
    assert q(lake, "SELECT count(*) AS n FROM nodes") == q(clean, "SELECT count(*) AS n FROM nodes")
