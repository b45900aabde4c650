"""What the Python API adds per call over raw DuckDB on the same files; results appended to
docs/benchmarks.md.

    python -m benchmarks.api            # 10,000 Kolab sessions, 7 interleaved rounds
    python -m benchmarks.api --quick    # 1,000 sessions, 3 rounds

graphlake's side is ``graphlake.connect(lake).sql(statement, params)`` as a notebook calls it:
the guard's checks (cached per statement), the pinned catalog, the row cap and the time limit
armed and disarmed, an Arrow table back. The anchor is what an expert would write without
graphlake: one DuckDB connection with a view per table over the very same Parquet files of the
same lake version (``read_parquet([...], union_by_name=true)``), ``execute(sql, params)`` and
``to_arrow_table()``. Both answer the same statements with the same rows (checked before
anything is timed); rounds alternate between the two, and each figure is the median per-call
time over the rounds. Goal (issue 22): the API within 1.2x of raw DuckDB per call.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import duckdb

import graphlake
from benchmarks.run import ROOT, corpus, publish
from graphlake.lake import Lake
from graphlake.pipeline import ingest_path
from graphlake.schema import TABLES
from graphlake.schema.duckdb_views import create_table_views

GOAL = 1.2


def lake_for(work: Path, sessions: int) -> Path:
    """A lake of ``sessions`` generated Kolab sessions, reused while its corpus is unchanged."""
    src = corpus(work, sessions, seed=5)
    lake = work / f"lake-api-{sessions}"
    if not (lake / ".complete").exists():
        shutil.rmtree(lake, ignore_errors=True)
        print(f"ingesting {sessions:,} sessions into {lake} ...", flush=True)
        ingest_path("kolab", src, lake)
        (lake / ".complete").write_text("ok")
    return lake


def statements(gl) -> list[tuple[str, str, dict | None]]:
    """(what, SQL, parameters): the calls a notebook makes most, from trivial to a scan."""
    sid = gl.sql("SELECT session_id FROM sessions ORDER BY session_id LIMIT 1 OFFSET 17")
    sid = sid.column(0)[0].as_py()
    return [
        ("`select 1`", "SELECT 1 AS one", None),
        (
            "a session by id",
            "SELECT * FROM sessions WHERE session_id = $id",
            {"id": sid},
        ),
        (
            "a session's nodes (about 38 rows)",
            "SELECT node_id, actor_type, label, t_start FROM nodes WHERE session_id = $id "
            "ORDER BY node_id",
            {"id": sid},
        ),
        (
            "nodes per actor type over the lake",
            "SELECT actor_type, count(*) AS n FROM nodes GROUP BY 1 ORDER BY 1",
            None,
        ),
    ]


def raw_connection(lake: Lake) -> duckdb.DuckDBPyConnection:
    snap = lake.snapshot()
    con = duckdb.connect()
    create_table_views(con, {t: lake.files(t, snap) for t in TABLES})
    return con


def per_call(fn, calls: int) -> float:
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t0) / calls


def bench(lake_dir: Path, rounds: int, calls: int) -> list[dict]:
    lake = Lake(lake_dir)
    gl = graphlake.connect(lake_dir)
    con = raw_connection(lake)
    results = []
    for what, sql, params in statements(gl):

        def ours(sql=sql, params=params):
            return gl.sql(sql, params)

        def raw(sql=sql, params=params):
            return con.execute(sql, params).to_arrow_table()

        a, b = ours(), raw()
        assert a.to_pylist() == b.to_pylist(), f"{what}: the two answers differ"
        n = calls if "over the lake" not in what else max(1, calls // 20)
        mine, theirs = [], []
        for _ in range(rounds):  # interleaved: a slow moment of the machine hits both
            mine.append(per_call(ours, n))
            theirs.append(per_call(raw, n))
        ours_s, raw_s = statistics.median(mine), statistics.median(theirs)
        results.append({"what": what, "rows": a.num_rows, "ours": ours_s, "raw": raw_s, "calls": n})
        print(results[-1], flush=True)
    gl.close()
    con.close()
    return results


def report(results: list[dict], sessions: int, rounds: int) -> str:
    lines = [
        f"## {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, Python API per call against raw DuckDB",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}. Command: `python -m benchmarks.api`. Lake: "
        f"{sessions:,} Kolab sessions; {rounds} interleaved rounds, median per call.",
        "",
        "| statement | rows | `graphlake.connect(lake).sql` | raw DuckDB, same files | ratio |",
        "|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r['what']} | {r['rows']:,} | {r['ours'] * 1e6:,.0f} us | "
            f"{r['raw'] * 1e6:,.0f} us | {r['ours'] / r['raw']:.2f}x |"
        )
    worst = max(r["ours"] / r["raw"] for r in results)
    lines += [
        "",
        f"Goal: within {GOAL}x of raw DuckDB per call: "
        f"{'met' if worst <= GOAL else 'not met'} (worst {worst:.2f}x).",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="1,000 sessions, 3 rounds")
    ap.add_argument("--sessions", type=int)
    ap.add_argument("--work", type=Path, default=ROOT / "bench-data" / "api")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args(argv)
    sessions = args.sessions or (1_000 if args.quick else 10_000)
    rounds = 3 if args.quick else 7
    args.work.mkdir(parents=True, exist_ok=True)
    text = report(bench(lake_for(args.work, sessions), rounds, calls=200), sessions, rounds)
    publish(text, write=not args.no_write)
    return 0


if __name__ == "__main__":
    sys.exit(main())
