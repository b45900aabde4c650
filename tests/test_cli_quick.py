"""The quick path of `graphlake sql` prints exactly what the full CLI prints, and hands over
whatever it cannot vouch for (graphlake/cli_quick.py). Each command runs as a real process
both ways: GRAPHLAKE_QUICK=require (the quick path, or exit 97) and GRAPHLAKE_QUICK=0."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import CLI_ENV

pytestmark = pytest.mark.subprocess

REFUSED = 97


def _sql(lake: Path, *args: str, quick: str, env: dict | None = None):
    return subprocess.run(
        [sys.executable, "-m", "graphlake", "sql", *args, "--lake", str(lake)],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **CLI_ENV, "GRAPHLAKE_QUICK": quick, **(env or {})},
    )


def _same(lake: Path, *args: str) -> subprocess.CompletedProcess:
    quick = _sql(lake, *args, quick="require")
    assert quick.returncode != REFUSED, f"not quick: {args}\n{quick.stderr}"
    full = _sql(lake, *args, quick="0")
    assert (quick.returncode, quick.stdout, quick.stderr) == (
        full.returncode,
        full.stdout,
        full.stderr,
    ), args
    return quick


@pytest.mark.parametrize(
    "args",
    [
        ("SELECT 1",),
        ("SELECT count(*) AS n, sum(out_degree) AS s, avg(out_degree) AS a FROM nodes",),
        ("SELECT * FROM nodes ORDER BY node_id",),  # wide: one block per row
        ("SELECT node_id, label, t_start, attrs FROM nodes ORDER BY node_id",),
        ("SELECT session_id, participants, started_at FROM sessions",),  # a list, a time
        ("SELECT * FROM adoptions ORDER BY annotation_id", "--format", "json"),
        ("SELECT node_id FROM nodes ORDER BY 1", "--max-rows", "3"),  # cut, with the note
        ("SELECT 1.5::DECIMAL(4,1) AS d, 12::DECIMAL(9,0) AS e, NULL AS n, true AS b",),
        ("SELECT 2::DECIMAL(18,3) / 3 AS r", "-f", "json"),
        ("WITH x AS (SELECT * FROM edges) SELECT kind, count(*) FROM x GROUP BY 1 ORDER BY 1",),
        ("SELECT * FROM range(3) r(i)",),
        ("SELECT label, count(*) FROM adoptions GROUP BY 1 ORDER BY 1",),
        # only what a statement names is made, and what that reads: a macro over edges, a
        # view over other views, a kept view read from its files
        ("SELECT * FROM descendants('kolab', 'hand-1', 'seg1a/n1', 3) ORDER BY ALL",),
        ("SELECT * FROM session_metrics ORDER BY ALL", "-f", "json"),
        ("SELECT count(*) AS n FROM adoption_chains",),
        # stopped at its time limit: the same one error line and exit status
        ("SELECT count(*) FROM range(100000000000) t(x)", "--timeout", "1"),
    ],
)
def test_the_quick_path_prints_what_the_full_cli_prints(hand_lake, args):
    done = _same(hand_lake, *args)
    assert done.returncode == (1 if "--timeout" in args else 0), done.stderr


@pytest.mark.parametrize(
    "args",
    [
        ("SELECT nod_id FROM nodes",),  # the guard's "did you mean"
        ("SELECT * FROM read_csv('/etc/passwd')",),  # reads outside the lake
        ("SELECT * FROM nodez",),
        ("SELECT * FROM GRAPH_TABLE (MATCH (p:human)-[:next]->(x:ai)) LIMIT 1",),  # a pattern
        ("CREATE TABLE t AS SELECT 1",),
        ("SELECT 1", "--format", "csv"),
        ("SELECT 1; SELECT 2",),
        ("SELECT 'x'::BLOB AS b",),  # a type the quick path does not print
        ("SELECT 1", "--at", "1"),  # not the newest version
    ],
)
def test_what_the_quick_path_cannot_vouch_for_goes_the_full_way(hand_lake, args):
    assert _sql(hand_lake, *args, quick="require").returncode == REFUSED
    default = _sql(hand_lake, *args, quick="1")
    full = _sql(hand_lake, *args, quick="0")
    assert (default.returncode, default.stdout, default.stderr) == (
        full.returncode,
        full.stdout,
        full.stderr,
    )


def test_a_manifest_behind_the_log_or_its_sources_is_never_read(hand_lake, tmp_path):
    lake = tmp_path / "moved" / "lake"
    shutil.copytree(hand_lake, lake)  # paths in the manifest are relative to the lake
    first = _same(lake, "SELECT count(*) AS n FROM nodes", "-f", "json")
    assert json.loads(first.stdout) == [{"n": 7}]

    manifest = lake / "_graphlake" / "current.json"
    doc = json.loads(manifest.read_text())
    doc["log_version"] += 1  # as if a commit's log entry were newer than the manifest
    manifest.write_text(json.dumps(doc))
    assert _sql(lake, "SELECT 1", quick="require").returncode == REFUSED

    manifest.write_text(json.dumps({**doc, "log_version": doc["log_version"] - 1}))
    assert _sql(lake, "SELECT 1", quick="require").returncode == 0
    # a limit the macros read changes what the catalog is made of: not fresh, not quick
    env = {"GRAPHLAKE_CO_OCCURRENCE_CAP": "17"}
    assert _sql(lake, "SELECT 1", quick="require", env=env).returncode == REFUSED
    # a file of a view gone behind the manifest's back: the full way, which names it
    part = next((lake / "tables" / "nodes").glob("*.parquet"))
    moved = part.with_suffix(".away")
    part.rename(moved)
    assert _sql(lake, "SELECT count(*) FROM nodes", quick="require").returncode == REFUSED
    gone = _sql(lake, "SELECT count(*) FROM nodes", quick="1")
    assert gone.returncode == 1 and "Traceback" not in gone.stderr
    moved.rename(part)
    manifest.unlink()
    assert _sql(lake, "SELECT 1", quick="require").returncode == REFUSED
    assert _sql(lake, "SELECT 1", quick="1").returncode == 0


def test_each_commit_writes_the_manifest_of_its_version(tmp_path):
    from conftest import HAND, cli

    lake = tmp_path / "lake"
    cli("ingest", "kolab", str(HAND), lake=lake)
    before = json.loads(_same(lake, "SELECT count(*) AS n FROM sessions", "-f", "json").stdout)
    extra = tmp_path / "more"
    shutil.copytree(HAND, extra)
    for f in extra.rglob("*.json"):
        f.write_text(f.read_text().replace("hand-1", "hand-2"))
    cli("ingest", "kolab", str(extra), lake=lake)
    after = json.loads(_same(lake, "SELECT count(*) AS n FROM sessions", "-f", "json").stdout)
    assert after[0]["n"] > before[0]["n"]
