"""Re-ingesting a changed source: its sessions are replaced in one lake version, older versions
still read them as they were, and a source that is gone stays unless ``--prune``."""

from __future__ import annotations

import json
import shutil

from conftest import FIXTURES, cli
from graphlake.lake import Lake
from graphlake.lake.derived import refresh
from graphlake.pipeline import ingest_path
from graphlake.query import run_sql

RUNS = FIXTURES / "tau2_runs"
COAUTHOR = FIXTURES / "coauthor" / "reopen_0123456789abcdef0123456789abcdef.jsonl"


def q(lake, sql, version=None):
    return run_sql(sql, lake, version=version, max_rows=None).table.to_pylist()


def test_changed_tau2_file_replaces_its_sessions_and_time_travel_keeps_the_old(tmp_path):
    src = tmp_path / "runs"
    shutil.copytree(RUNS, src)
    lake = tmp_path / "lake"
    ingest_path("tau2", src, lake)
    v1 = Lake(lake).snapshot().lake_version
    before = q(lake, "SELECT count(*) AS n FROM events")[0]["n"]

    # edit one simulation: a new reward, one message fewer, a changed message text
    path = src / "voice_run" / "simulations" / "voice-t2-1.json"
    sim = json.loads(path.read_text())
    sim["reward_info"]["reward"] = 1.0
    sim["ticks"] = sim["ticks"][:6]  # the user's last utterance and the tool call are gone
    sim["ticks"][0]["agent_chunk"]["content"] = "Good morning, "
    path.write_text(json.dumps(sim))
    stats, snap = ingest_path("tau2", src, lake)
    assert snap is not None and stats.replaced_sessions == 1 and stats.pruned_sessions == 0
    assert snap.lake_version == v1 + 1  # deletes and appends in one version
    assert stats.removed["events"] == 5 and stats.added["events"] == 2
    history = json.loads(cli("lake", "history", "--format", "json", lake=lake).stdout)
    assert history[-1]["rows_removed"] == sum(stats.removed.values()) > 0
    now = q(lake, "SELECT text FROM events WHERE session_id = 'voice-t2-1' ORDER BY seq")
    assert [r["text"] for r in now] == [
        "Good morning, how can I help you today?",
        "Hi, I need to check my order.",
    ]
    assert q(
        lake, "SELECT value FROM annotations WHERE session_id = 'voice-t2-1' AND label = 'reward'"
    ) == [{"value": 1.0}]
    assert q(lake, "SELECT count(*) AS n FROM events")[0]["n"] == before - 3
    # the other sessions are untouched, and the old version still reads the old rows
    old = q(
        lake, "SELECT text FROM events WHERE session_id = 'voice-t2-1' ORDER BY seq", version=v1
    )
    assert len(old) == 5 and old[0]["text"] == "Hello, how can I help you today?"
    assert q(
        lake,
        "SELECT value FROM annotations WHERE session_id = 'voice-t2-1' AND label = 'reward'",
        version=v1,
    ) == [{"value": 0.0}]
    # the same source once more: nothing changes
    stats, snap = ingest_path("tau2", src, lake)
    assert snap is None and not stats.removed and stats.replaced_sessions == 0


def test_a_gone_source_stays_unless_pruned(tmp_path):
    src = tmp_path / "runs"
    shutil.copytree(RUNS, src)
    lake = tmp_path / "lake"
    ingest_path("tau2", src, lake)
    n = q(lake, "SELECT count(*) AS n FROM sessions")[0]["n"]
    (src / "mock_llm_agent_retry_2trials.json").unlink()
    stats, snap = ingest_path("tau2", src, lake)
    assert snap is None and q(lake, "SELECT count(*) AS n FROM sessions")[0]["n"] == n
    out = cli("ingest", "tau2", str(src), "--prune", "--quiet", lake=lake)
    assert "6 sessions pruned" in out.stdout
    assert q(lake, "SELECT count(*) AS n FROM sessions")[0]["n"] == n - 6
    assert q(lake, "SELECT name FROM runs ORDER BY name") == [
        {"name": "mock_llm_agent_3trials"},
        {"name": "voice_run"},
    ]
    assert q(lake, "SELECT count(*) AS n FROM annotations WHERE session_id LIKE 'sim-b%'") == [
        {"n": 0}
    ]
    assert q(lake, "SELECT count(*) AS n FROM sessions", version=1)[0]["n"] == n


def test_materialized_views_follow_a_replaced_session(tmp_path):
    src = tmp_path / "coauthor"
    src.mkdir()
    log = src / COAUTHOR.name
    shutil.copy(COAUTHOR, log)
    lake = tmp_path / "lake"
    ingest_path("coauthor", src, lake)
    refresh(Lake(lake))
    labels = [r["label"] for r in q(lake, "SELECT label FROM adoptions ORDER BY ai_node")]
    assert labels == ["adopt", "adopt", "adopt", "modify", "reject"]
    # the writer's edit inside the fourth suggestion is gone from the log: now an adopt
    lines = log.read_text().splitlines()
    log.write_text("\n".join(ln for ln in lines if '"very "' not in ln) + "\n")
    stats, snap = ingest_path("coauthor", src, lake)
    assert stats.replaced_sessions == 1
    refresh(Lake(lake))
    labels = [r["label"] for r in q(lake, "SELECT label FROM adoptions ORDER BY ai_node")]
    assert labels == ["adopt", "adopt", "adopt", "adopt", "reject"]
    # read from the materialized table, not recomputed: it is current
    info = cli("lake", "info", lake=lake).stdout
    assert "stale" not in info


def test_an_append_only_writer_never_replaces_a_session(tmp_path):
    """The frames index adds one recording's frames at a time: frames of a second recording
    must not read as a "changed" session and wipe the first recording's frames (or the rest
    of the session)."""
    from graphlake.lake import LakeRun

    lake = tmp_path / "lake"
    src = tmp_path / "voice_run"
    shutil.copytree(RUNS / "voice_run", src)
    ingest_path("tau2", src, lake)
    events = q(lake, "SELECT count(*) AS n FROM events")[0]["n"]
    for media in ("m1", "m2"):
        run = LakeRun(Lake(lake), "tau2", "frames index (test)")
        em = run.emitter("frames")
        em.row(
            "frames",
            {
                "session_id": "voice-t1-0",
                "frame_id": f"{media}-0",
                "media_id": media,
                "t": 0.0,
                "kind": "grid",
            },
        )
        stats, snap = run.commit([em.close()])
        assert snap is not None and stats.added["frames"] == 1 and not stats.removed
    assert q(lake, "SELECT media_id FROM frames ORDER BY 1") == [
        {"media_id": "m1"},
        {"media_id": "m2"},
    ]
    assert q(lake, "SELECT count(*) AS n FROM events")[0]["n"] == events
    # re-ingesting a changed source replaces the session's rows, but keeps its frames
    path = src / "simulations" / "voice-t1-0.json"
    sim = json.loads(path.read_text())
    sim["reward_info"]["reward"] = 0.5
    path.write_text(json.dumps(sim))
    stats, _snap = ingest_path("tau2", src, lake)
    assert stats.replaced_sessions == 1
    assert len(q(lake, "SELECT * FROM frames")) == 2


def test_a_fixed_record_lands_and_its_reject_goes(tmp_path):
    """The fix only adds a row (nothing of the session changes), so the session is not
    replaced; its reject, which would now mislead, is removed."""
    src = tmp_path / "runs"
    src.mkdir()
    msgs = [
        {"role": "user", "content": "hi", "timestamp": "2025-01-01T00:00:01"},
        {"role": "narrator", "content": "ok", "timestamp": "2025-01-01T00:00:02"},
    ]
    doc = {
        "timestamp": "2025-01-01T00:00:00",
        "info": {"environment_info": {"domain_name": "mock"}},
        "tasks": [],
        "simulations": [
            {"id": "s1", "task_id": "t", "start_time": "2025-01-01T00:00:00", "messages": msgs}
        ],
    }
    (src / "r.json").write_text(json.dumps(doc))
    lake = tmp_path / "lake"
    ingest_path("tau2", src, lake)
    assert len(q(lake, "SELECT * FROM rejects")) == 1
    msgs[1]["role"] = "assistant"
    (src / "r.json").write_text(json.dumps(doc))
    stats, snap = ingest_path("tau2", src, lake)
    assert snap is not None and stats.replaced_sessions == 0
    assert stats.removed["rejects"] == 1 and stats.added["events"] == 1
    assert q(lake, "SELECT * FROM rejects") == []
    assert q(lake, "SELECT text FROM events ORDER BY seq") == [{"text": "hi"}, {"text": "ok"}]


def test_a_moved_corpus_is_not_a_changed_one(tmp_path):
    lake = tmp_path / "lake"
    first, moved = tmp_path / "a" / "hasbench", tmp_path / "b" / "hasbench"
    shutil.copytree(FIXTURES / "hasbench", first)
    ingest_path("hasbench", first, lake)
    shutil.move(first, moved)
    stats, snap = ingest_path("hasbench", moved, lake)
    assert snap is None and not stats.added and not stats.removed
    assert stats.replaced_sessions == 0


def test_an_edited_scenario_replaces_its_row(tmp_path):
    """A scenario is a session-less row, keyed by its own id: edited in its source, the lake
    holds the new row alone, as a fresh ingest of the edited source does."""
    src = tmp_path / "runs"
    shutil.copytree(RUNS, src)
    lake = tmp_path / "lake"
    ingest_path("tau2", src, lake)
    path = src / "voice_run" / "results.json"
    doc = json.loads(path.read_text())
    doc["tasks"][0]["user_scenario"]["instructions"] = "Ask about order W9 instead."
    path.write_text(json.dumps(doc))
    ingest_path("tau2", src, lake)
    ingest_path("tau2", src, tmp_path / "fresh")
    rows = "SELECT * EXCLUDE (attrs), attrs::VARCHAR AS attrs FROM scenarios ORDER BY ALL"
    assert q(lake, rows) == q(tmp_path / "fresh", rows)
    goal = "SELECT goal FROM scenarios WHERE scenario_id = 'mock/t1'"
    assert q(lake, goal) == [{"goal": "Ask about order W9 instead."}]
