"""Where a researcher waits on graphlake (issue 44), in one interleaved run; appended to
docs/benchmarks.md.

    python -m benchmarks.waits            # 1,000 Kolab sessions, 9 rounds
    python -m benchmarks.waits --quick    # 200 sessions, 5 rounds

* **A cold `graphlake sql`**, each a new process as a user types it: the console script on a
  count over ``nodes`` and on ``select 1``; the same commands the full way
  (``GRAPHLAKE_QUICK=0``: Typer, the guard, the catalog from the Delta logs, as before the
  quick path); and the anchor, a bare Python process that imports DuckDB, makes one view over
  the same Parquet files and runs the same count. Goal: under 0.4 s.
* **The Python API per call**: ``graphlake.connect(lake).sql("SELECT 1 AS one")`` against raw
  DuckDB's ``execute().to_arrow_table()`` on one connection (as ``benchmarks.api``, which
  covers more statements). Goal: within 1.2x.
* **An edit**: per format, a first ingest of about 100,000 actions (``benchmarks.formats``'
  corpora, Kolab's generated one), then one letter of one file changed and the folder ingested
  again, three times. Goal: the re-ingest within 5% of the first ingest.

Every case runs once before timing (files in the page cache); rounds shuffle the cases, and
each figure is the median.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import re
import shutil
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from benchmarks.api import lake_for, per_call
from benchmarks.run import ROOT, publish

_SCRIPT = Path(sys.executable).parent / "graphlake"
GRAPHLAKE = [str(_SCRIPT)] if _SCRIPT.is_file() else [sys.executable, "-m", "graphlake"]
COUNT = "SELECT count(*) AS n FROM nodes"
CLI_GOAL_S = 0.4
API_GOAL = 1.2
EDIT_GOAL = 0.05


def _wall(cmd: list[str], env: dict) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, env=env)
    return time.perf_counter() - t0


def cold_cli(lake: Path, rounds: int) -> dict[str, float]:
    from graphlake.lake import Lake

    store = Lake(lake)
    files = store.files("nodes", store.snapshot())
    view = f"CREATE VIEW nodes AS SELECT * FROM read_parquet({files!r})"
    raw = (
        "import duckdb\n"
        "con = duckdb.connect()\n"
        f"con.execute({view!r})\n"
        f"print(con.execute({COUNT!r}).fetchall())\n"
    )
    # as an installed graphlake starts: its modules compiled once (the warm-up run writes
    # them), not compiled again by every process as PYTHONDONTWRITEBYTECODE=1 would have it
    base = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    base["COLUMNS"] = "120"
    quick, full = {**base, "GRAPHLAKE_QUICK": "require"}, {**base, "GRAPHLAKE_QUICK": "0"}
    cases = {
        f'`graphlake sql "{COUNT}"`': ([*GRAPHLAKE, "sql", COUNT, "--lake", str(lake)], quick),
        '`graphlake sql "select 1"`': ([*GRAPHLAKE, "sql", "select 1", "--lake", str(lake)], quick),
        "the same count the full way (`GRAPHLAKE_QUICK=0`, before)": (
            [*GRAPHLAKE, "sql", COUNT, "--lake", str(lake)],
            full,
        ),
        "anchor: `python -c` importing DuckDB, one view, the same count": (
            [sys.executable, "-c", raw],
            base,
        ),
    }
    for cmd, env in cases.values():  # once each: page cache, and the quick path must hold
        _wall(cmd, env)
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(rounds):
        for name in random.sample(list(cases), len(cases)):
            times[name].append(_wall(*cases[name]))
    return {name: statistics.median(ts) for name, ts in times.items()}


def api_select_one(lake: Path, rounds: int, calls: int = 2000) -> tuple[float, float]:
    import duckdb

    import graphlake

    gl = graphlake.connect(lake)
    con = duckdb.connect()
    mine, theirs = [], []
    for _ in range(rounds):
        mine.append(per_call(lambda: gl.sql("SELECT 1 AS one"), calls))
        theirs.append(per_call(lambda: con.execute("SELECT 1 AS one").to_arrow_table(), calls))
    gl.close()
    return statistics.median(mine), statistics.median(theirs)


_WORD = re.compile(rb'"([a-z]{4,})"')


def _edit_one(files: list[Path], rng: random.Random) -> Path:
    """One letter of a quoted word changed in one of ``files`` (valid JSON or YAML after)."""
    for path in rng.sample(files, len(files)):
        data = path.read_bytes()
        words = list(_WORD.finditer(data))
        if words:
            m = rng.choice(words)
            at = m.start(1)
            letter = bytes([ord("a") + (data[at] - ord("a") + 1) % 26])
            path.write_bytes(data[:at] + letter + data[at + 1 :])
            return path
    raise ValueError("no file to edit")


def one_file_changed(work: Path, actions: int, rounds: int) -> list[dict]:
    """Per format: a first ingest of about ``actions`` actions, then ``rounds`` re-ingests
    each after one letter of one file changed (median); the goal is <= 5% of the first."""
    from benchmarks import formats
    from benchmarks.run import corpus as kolab_corpus

    gens = {
        "kolab": lambda w, a: kolab_corpus(w, max(1, a // 40), seed=9),
        "hasbench": formats.gen_hasbench,
        "almanac": formats.gen_almanac,
        "tau2": formats.gen_tau2,
        "coauthor": formats.gen_coauthor,
        "maptask": formats.gen_maptask,
        "marble": formats.gen_marble,
    }
    from graphlake.pipeline import ingest_path

    rng = random.Random(5)
    out = []
    for fmt, gen in gens.items():
        src = gen(work / "edits", actions)
        if src is None:
            continue
        formats._age(src)
        lake = work / "edits" / f"lake-{fmt}"
        shutil.rmtree(lake, ignore_errors=True)
        t0 = time.perf_counter()
        ingest_path(fmt, src, lake)
        first = time.perf_counter() - t0
        files = sorted(
            p for p in src.rglob("*") if p.suffix in (".json", ".jsonl", ".yaml") and p.is_file()
        )
        times, read = [], []
        for _ in range(rounds):
            _edit_one(files, rng)
            t0 = time.perf_counter()
            stats, _ = ingest_path(fmt, src, lake)
            times.append(time.perf_counter() - t0)
            read.append(stats.units - stats.unchanged_units)
        again = statistics.median(times)
        out.append(
            {"format": fmt, "units": stats.units, "read": max(read), "first": first, "again": again}
        )
        print(out[-1], flush=True)
    return out


def report(cli: dict[str, float], api: tuple[float, float], sessions: int, rounds: int) -> str:
    anchor = next(v for k, v in cli.items() if k.startswith("anchor"))
    lines = [
        f"## {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, where a researcher waits (issue 44)",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}. Command: `python -m benchmarks.waits`. Lake: "
        f"{sessions:,} Kolab sessions; {rounds} interleaved rounds, medians, each command a "
        "new process.",
        "",
        "| cold command | median | ratio to the anchor | goal |",
        "|---|---|---|---|",
    ]
    for name, secs in cli.items():
        goal = f"< {CLI_GOAL_S} s" if name.startswith("`graphlake sql") else ""
        met = "" if not goal else (" (met)" if secs < CLI_GOAL_S else " (**not met**)")
        lines.append(f"| {name} | {secs:.3f} s | {secs / anchor:.2f}x | {goal}{met} |")
    ours, raw = api
    ratio = ours / raw
    lines += [
        "",
        "| Python API per call | graphlake | raw DuckDB | ratio | goal |",
        "|---|---|---|---|---|",
        f'| `sql("SELECT 1 AS one")` | {ours * 1e6:,.0f} us | {raw * 1e6:,.0f} us | '
        f"{ratio:.2f}x | <= {API_GOAL}x ({'met' if ratio <= API_GOAL else '**not met**'}) |",
        "",
    ]
    return "\n".join(lines)


def edits_report(rows: list[dict], actions: int, rounds: int) -> str:
    lines = [
        "",
        f"One file changed (one letter), then the same folder ingested again: about "
        f"{actions:,} actions per format, median of {rounds} edits. Goal: <= 5% of a first "
        "ingest.",
        "",
        "| format | units | units read again | first ingest | after one edit | share | goal |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        share = r["again"] / r["first"]
        met = "met" if share <= EDIT_GOAL else "**not met**"
        lines.append(
            f"| {r['format']} | {r['units']:,} | {r['read']} | {r['first']:.2f} s | "
            f"{r['again']:.2f} s | {share:.0%} | {met} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="200 sessions, 5 rounds")
    ap.add_argument("--work", type=Path, default=ROOT / "bench-data" / "waits")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args(argv)
    sessions, rounds = (200, 5) if args.quick else (1_000, 9)
    actions = 10_000 if args.quick else 100_000
    args.work.mkdir(parents=True, exist_ok=True)
    lake = lake_for(args.work, sessions)
    text = report(cold_cli(lake, rounds), api_select_one(lake, rounds), sessions, rounds)
    text += edits_report(one_file_changed(args.work, actions, 3), actions, 3)
    publish(text, write=not args.no_write)
    return 0


if __name__ == "__main__":
    sys.exit(main())
