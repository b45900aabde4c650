"""graphlake benchmarks: one command, baselines measured in the same run, results appended to
docs/benchmarks.md.

    python -m benchmarks.run              # full size: 1M-node ingest, 100k-session metrics
    python -m benchmarks.run --quick      # a few minutes: 100k nodes, 10k sessions

What is measured (see docs/benchmarks.md for the goals):

* ingest: ``graphlake.pipeline.ingest_path`` on a generated Kolab corpus of about N nodes
  (wall time, peak RSS of the whole process tree) against ``baseline.ingest_baseline``
  (json + pandas + networkx per session, writing Parquet); then, on its own row, the refresh
  of the materialized views that ``graphlake ingest`` runs next (the baseline builds nothing
  like them);
* metrics: the ``collab_metrics`` named query over a lake of S sessions (median of 5 runs,
  catalog opening included) against ``baseline.metrics_baseline`` (pandas + networkx per
  session) reading the same rows exported to Parquet; the two must agree on every session.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import psutil

from benchmarks.baseline import duckdb_ingest_baseline, ingest_baseline, metrics_baseline
from graphlake.demo.corpus import write_graph_corpus
from graphlake.lake import Lake
from graphlake.lake.derived import refresh
from graphlake.pipeline import ingest_path
from graphlake.query import named, run_sql

ROOT = Path(__file__).resolve().parent.parent
NODES_PER_SESSION = 37.7  # measured mean of the benchmark generator shape


class PeakRss:
    """Samples the RSS of this process and all its children; keeps the peak of the sum."""

    def __init__(self, interval: float = 0.05):
        self.interval = interval
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        me = psutil.Process()
        while not self._stop.is_set():
            total = 0
            for p in [me, *me.children(recursive=True)]:
                try:
                    total += p.memory_info().rss
                except psutil.Error:
                    pass
            self.peak = max(self.peak, total)
            time.sleep(self.interval)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def publish(text: str, write: bool = True, doc: str = "benchmarks.md") -> None:
    """Print a report and, unless told not to, append it to ``docs/<doc>``."""
    print(text)
    if write:
        with (ROOT / "docs" / doc).open("a") as fh:
            fh.write("\n" + text)


def timed(fn, *args, **kwargs):
    with PeakRss() as rss:
        t0 = time.perf_counter()
        out = fn(*args, **kwargs)
        secs = time.perf_counter() - t0
    return out, secs, rss.peak


def corpus(work: Path, sessions: int, seed: int) -> Path:
    path = work / f"kolab-{sessions}-s{seed}"
    marker = path / ".complete"
    if not marker.exists():
        shutil.rmtree(path, ignore_errors=True)
        print(f"generating {sessions} sessions into {path} ...", flush=True)
        write_graph_corpus(path, sessions, seed=seed)
        marker.write_text("ok")
    return path


def bench_ingest(work: Path, nodes: int, rounds: int = 3) -> dict:
    """``rounds`` interleaved rounds of graphlake's ingest into a new lake, the pandas
    baseline and the DuckDB baseline; medians reported, each round's graphlake time kept
    (the first pays for starting the parse workers' forkserver)."""
    sessions = int(nodes / NODES_PER_SESSION)
    src = corpus(work, sessions, seed=11)
    lake_dir = work / "lake-ingest"
    runs = []
    for _ in range(rounds):
        shutil.rmtree(lake_dir, ignore_errors=True)
        (stats, _snap), secs, peak = timed(ingest_path, "kolab", src, lake_dir)
        base_dir = work / "baseline-ingest"
        shutil.rmtree(base_dir, ignore_errors=True)
        base_nodes, base_secs, base_peak = timed(ingest_baseline, src, base_dir)
        assert base_nodes == stats.added["nodes"], (base_nodes, stats.added["nodes"])
        duck_dir = work / "duckdb-ingest"
        shutil.rmtree(duck_dir, ignore_errors=True)
        duck_nodes, duck_secs, duck_peak = timed(duckdb_ingest_baseline, src, duck_dir)
        assert duck_nodes == stats.added["nodes"], (duck_nodes, stats.added["nodes"])
        runs.append((secs, peak, base_secs, base_peak, duck_secs, duck_peak))
    # what `graphlake ingest` does next: the materialized views, as a version of their own
    rep, refresh_secs, _ = timed(refresh, Lake(lake_dir))
    assert rep.sessions is None and rep.rows["adoptions"] > 0
    # idempotence costs too: re-ingesting the same corpus must add nothing
    (stats2, snap2), re_secs, _ = timed(ingest_path, "kolab", src, lake_dir)
    assert snap2 is None and not stats2.added
    return {
        "sessions": sessions,
        "nodes": stats.added["nodes"],
        "rows": sum(stats.added.values()),
        "secs": statistics.median(r[0] for r in runs),
        # peaks from the first round: later ones count what the baselines left in the heap
        "peak_rss": runs[0][1],
        "base_secs": statistics.median(r[2] for r in runs),
        "base_peak_rss": runs[0][3],
        "duck_secs": statistics.median(r[4] for r in runs),
        "duck_peak_rss": runs[0][5],
        "rounds": [r[0] for r in runs],
        "reingest_secs": re_secs,
        "refresh_secs": refresh_secs,
    }


def bench_metrics(work: Path, sessions: int) -> dict:
    src = corpus(work, sessions, seed=23)
    lake_dir = work / f"lake-metrics-{sessions}"
    if not (lake_dir / ".complete").exists():
        shutil.rmtree(lake_dir, ignore_errors=True)
        ingest_path("kolab", src, lake_dir)
        (lake_dir / ".complete").write_text("ok")
    lake = Lake(lake_dir)
    refresh(lake)  # as `graphlake ingest` leaves a lake (a no-op when already current)
    base_dir = work / f"baseline-metrics-{sessions}"
    export_baseline_tables(lake, base_dir)
    q = named.get("collab_metrics")
    runs = []
    for _ in range(5):
        t0 = time.perf_counter()
        res = run_sql(q.sql, lake, params=q.bind({}), max_rows=None, timeout_s=None)
        runs.append(time.perf_counter() - t0)
    base, base_secs, _ = timed(metrics_baseline, base_dir)
    _check_agreement(res.table, base)
    n_nodes = run_sql("SELECT count(*) AS n FROM nodes", lake).table["n"][0].as_py()
    return {
        "sessions": res.table.num_rows,
        "nodes": n_nodes,
        "secs": statistics.median(runs),
        "base_secs": base_secs,
    }


def export_baseline_tables(lake: Lake, out: Path) -> None:
    """The tables the metrics baseline reads, exported from the lake (the same rows graphlake
    queries), in the shape ``baseline.ingest_baseline`` writes them."""
    from graphlake.query.catalog import open_catalog

    out.mkdir(parents=True, exist_ok=True)
    cat = open_catalog(lake)
    try:
        for name, sql in {
            "steps": "SELECT session_id, step_id, t_start, t_end FROM steps",
            "nodes": "SELECT session_id, node_id, step_id, actor_type, actor, label, t_start, "
            "t_end FROM nodes",
            "occ": "SELECT session_id, node_id, seq, t_start, t_end FROM node_occurrences",
            "edges": "SELECT session_id, src, dst, kind FROM edges",
            "adopt": "SELECT session_id, source_node, ai_node, response_node, label "
            "FROM annotations WHERE kind = 'adoption'",
        }.items():
            cat.con.execute(f"COPY ({sql}) TO '{out / (name + '.parquet')}' (FORMAT parquet)")
    finally:
        cat.close()


def _check_agreement(table, base) -> None:
    """graphlake and the baseline must compute the same metrics before speed means anything."""
    ours = table.to_pandas().set_index("session_id")
    theirs = base.set_index("session_id")
    for col in ("burstiness", "topology_w", "retention_adopt", "retention_modify", "solo_lead_in"):
        a, b = ours[col].astype(float), theirs[col].reindex(ours.index).astype(float)
        both = a.notna() & b.notna()
        assert (a.isna() == b.isna()).all(), f"{col}: missing values differ"
        assert ((a[both] - b[both]).abs() < 1e-9).all(), f"{col}: values differ"


def report(ingest: dict, metrics: dict, quick: bool) -> str:
    gib = 1 << 30
    i_ratio = ingest["base_secs"] / ingest["secs"]
    m_ratio = metrics["base_secs"] / metrics["secs"]

    def verdict(ok: bool) -> str:
        return "met" if ok else "**not met**"

    full = not quick
    lines = [
        f"## {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {'quick' if quick else 'full'} run",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, "
        f"{psutil.virtual_memory().total / gib:.0f} GiB, Python {platform.python_version()}. "
        "Command: `python -m benchmarks.run" + (" --quick`" if quick else "`"),
        "",
        "| benchmark | size | graphlake | baseline | ratio | goal |",
        "|---|---|---|---|---|---|",
        f"| ingest Kolab graph JSON (median of {len(ingest['rounds'])} interleaved rounds: "
        "peak RSS of the first, in a process that had run nothing else; times "
        f"{', '.join(f'{x:.1f}' for x in ingest['rounds'])} s) | {ingest['sessions']:,} "
        f"sessions, {ingest['nodes']:,} nodes, {ingest['rows']:,} rows | {ingest['secs']:.1f} s, "
        "peak RSS "
        f"{ingest['peak_rss'] / gib:.2f} GiB | {ingest['base_secs']:.1f} s, peak RSS "
        f"{ingest['base_peak_rss'] / gib:.2f} GiB | {i_ratio:.1f}x | "
        + (
            "< 60 s: "
            + verdict(ingest["secs"] < 60)
            + "; < 2 GiB: "
            + verdict(ingest["peak_rss"] < 2 * gib)
            + "; >= 15x: "
            + verdict(i_ratio >= 15)
            if full
            else "(goals apply to the full run)"
        )
        + " |",
        f"| the same files by DuckDB (`read_json` + `unnest` into nodes and edges, no "
        f"validation) | same | {ingest['secs']:.1f} s | {ingest['duck_secs']:.1f} s, peak RSS "
        f"{ingest['duck_peak_rss'] / gib:.2f} GiB | "
        f"{ingest['duck_secs'] / ingest['secs']:.2f}x | "
        + (
            "no slower than DuckDB: " + verdict(ingest["secs"] <= ingest["duck_secs"])
            if full
            else "(goals apply to the full run)"
        )
        + " |",
        f"| then refresh the materialized views (`graphlake ingest` does; `--no-refresh` "
        f"defers it) | same | {ingest['refresh_secs']:.1f} s | | ingest + refresh "
        f"{ingest['base_secs'] / (ingest['secs'] + ingest['refresh_secs']):.1f}x | |",
        f"| re-ingest same corpus (adds nothing) | same | {ingest['reingest_secs']:.1f} s | | | |",
        f"| `collab_metrics`, whole lake | {metrics['sessions']:,} sessions, "
        f"{metrics['nodes']:,} nodes | {metrics['secs']:.2f} s (median of 5) | "
        f"{metrics['base_secs']:.1f} s | {m_ratio:.0f}x | "
        + (
            "< 2 s: " + verdict(metrics["secs"] < 2) + "; >= 25x: " + verdict(m_ratio >= 25)
            if full
            else "(goals apply to the full run)"
        )
        + " |",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (a few minutes)")
    ap.add_argument("--nodes", type=int, help="ingest size in nodes [1,000,000]")
    ap.add_argument("--sessions", type=int, help="metrics size in sessions [100,000]")
    ap.add_argument(
        "--work",
        type=Path,
        default=ROOT / "bench-data",
        help="where generated corpora and lakes live (reused between runs)",
    )
    ap.add_argument("--no-write", action="store_true", help="print, do not append to docs")
    args = ap.parse_args(argv)
    nodes = args.nodes or (100_000 if args.quick else 1_000_000)
    sessions = args.sessions or (10_000 if args.quick else 100_000)
    args.work.mkdir(parents=True, exist_ok=True)
    ing = bench_ingest(args.work, nodes)
    print(f"ingest: {ing}", flush=True)
    met = bench_metrics(args.work, sessions)
    print(f"metrics: {met}", flush=True)
    text = report(ing, met, args.quick and not (args.nodes or args.sessions))
    print(text)
    if not args.no_write:
        doc = ROOT / "docs" / "benchmarks.md"
        with doc.open("a") as fh:
            fh.write("\n" + text)
        print(f"appended to {doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
