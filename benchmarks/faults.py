"""Fault injection: kill -9 graphlake at random moments of ingest, refresh, compact and vacuum,
and check the lake every time.

    python -m benchmarks.faults                 # 60 runs (15 per operation), ~10 minutes
    python -m benchmarks.faults --runs 8        # a quick look
    python -m benchmarks.faults --write-docs    # also rewrite the figures in docs/reliability.md

Each run copies a prepared lake, starts the real ``graphlake`` CLI on it in its own process
group, kills the group with SIGKILL after a random delay between the CLI's start-up time and
the operation's uninterrupted duration, and then asserts what the issue asks:

1. the lake opens and every table and view reads (a fresh sandboxed connection);
2. what it reads is exactly the lake before the operation or exactly the lake after an
   uninterrupted one (row count and an order-free hash of every canonical table, row counts of
   every view); an ingest killed between committing its tables and refreshing the views counts
   as "after" (its views are then computed from their SQL, so they read the same rows);
3. ``graphlake lake repair`` and a rerun of the operation leave no staging folder and give
   exactly the uninterrupted result.

While the operation runs, a reader thread opens the lake and counts rows over and over; any
read that fails is a fault of the lake (readers must never fail during a write).

The tests (``tests/test_faults.py``) run a few of these in CI; this script runs at least 50.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OPERATIONS = ("ingest", "refresh", "compact", "vacuum")


def graphlake_cmd(*args: str, lake: Path) -> list[str]:
    return [sys.executable, "-m", "graphlake", *args, "--lake", str(lake)]


def run_cli(*args: str, lake: Path) -> float:
    """Run the CLI to completion (raising on failure); return its wall time."""
    t0 = time.perf_counter()
    out = subprocess.run(graphlake_cmd(*args, lake=lake), capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(
            f"graphlake {' '.join(args)} failed ({out.returncode}): {out.stderr[-2000:]}"
        )
    return time.perf_counter() - t0


def fingerprint(lake: Path) -> dict[str, list]:
    """What a reader sees: per canonical table its row count and an order-free hash of its
    rows; per view its row count."""
    from graphlake.lake import Lake
    from graphlake.query.connection import Connection
    from graphlake.schema import TABLES

    with Connection(Lake(lake)) as con:
        out = {}
        for name in sorted(con.columns):
            if name in TABLES:
                n, h = (
                    con.execute(
                        f'SELECT count(*), bit_xor(hash(t)) FROM "{name}" t', timeout_s=None
                    )
                    .table.to_pylist()[0]
                    .values()
                )
                out[name] = [n, h]
            else:
                n = con.execute(
                    f'SELECT count(*) AS n FROM "{name}"', timeout_s=None
                ).table.to_pylist()[0]["n"]
                out[name] = [n]
        return out


def leftovers(lake: Path) -> list[str]:
    """Staging folders and data files no lake version reads, still present (a finished,
    repaired lake has none)."""
    from graphlake.lake import Lake

    staging = lake / "_graphlake" / "staging"
    folders = sorted(p.name for p in staging.iterdir()) if staging.is_dir() else []
    return folders + [f"{f.parent.name}/{f.name}" for f in Lake(lake).unread_files()]


@dataclass
class Scenario:
    """An operation, the lake it starts from and what it must end as."""

    name: str
    start: Path  # the prepared lake before the operation (never modified)
    args: tuple[str, ...]  # the CLI command, without --lake
    before: dict = field(default_factory=dict)
    after: dict = field(default_factory=dict)
    seconds: float = 0.0  # uninterrupted wall time
    startup: float = 0.0  # wall time of a command that only starts and opens the lake


def prepare(work: Path, sessions: int = 12, seed: int = 11) -> dict[str, Scenario]:
    """Build the four starting lakes and measure each operation uninterrupted once."""
    from graphlake.demo.corpus import write_demo_corpus

    # no recording: the harness kills lake writes, and encoding a video costs 14 s a build
    corpus = write_demo_corpus(work / "corpus", sessions=sessions, seed=seed, recording=False)
    folders = sorted(p for p in corpus.iterdir() if p.is_dir())
    half_a, half_b = work / "src-a", work / "src-b"
    for i, folder in enumerate(folders):
        shutil.copytree(folder, (half_a if i % 2 == 0 else half_b) / folder.name)

    def lake_after(name: str, *commands: tuple[str, ...]) -> Path:
        lake = work / "start" / name
        for cmd in commands:
            run_cli(*cmd, lake=lake)
        return lake

    scenarios = {
        "ingest": Scenario(
            "ingest",
            lake_after("ingest", ("ingest", "kolab", str(half_a), "-q")),
            ("ingest", "kolab", str(half_b), "-q"),
        ),
        "refresh": Scenario(
            "refresh",
            lake_after(
                "refresh",
                ("ingest", "kolab", str(half_a), "-q", "--no-refresh"),
                ("ingest", "kolab", str(half_b), "-q", "--no-refresh"),
            ),
            ("lake", "refresh"),
        ),
        "compact": Scenario(
            "compact",
            lake_after(
                "compact",
                ("ingest", "kolab", str(half_a), "-q"),
                ("ingest", "kolab", str(half_b), "-q"),
            ),
            ("lake", "compact"),
        ),
    }
    vacuum_start = work / "start" / "vacuum"
    shutil.copytree(scenarios["compact"].start, vacuum_start)
    run_cli("lake", "compact", lake=vacuum_start)
    scenarios["vacuum"] = Scenario(
        "vacuum", vacuum_start, ("lake", "compact", "--vacuum", "--retain-hours", "0")
    )
    for sc in scenarios.values():
        sc.before = fingerprint(sc.start)
        done = work / "uninterrupted" / sc.name
        shutil.copytree(sc.start, done)
        sc.seconds = run_cli(*sc.args, lake=done)
        sc.startup = min(run_cli("lake", "history", lake=done) for _ in range(2))
        sc.after = fingerprint(done)
    return scenarios


class Reader(threading.Thread):
    """Reads the lake over and over while a writer runs; records every failure."""

    def __init__(self, lake: Path):
        super().__init__(daemon=True)
        self.lake, self.reads, self.failures = lake, 0, []
        self.stop = threading.Event()

    def run(self):
        from graphlake.lake import Lake
        from graphlake.query.connection import Connection

        while not self.stop.is_set():
            try:
                with Connection(Lake(self.lake)) as con:
                    con.execute("SELECT count(*) FROM nodes", timeout_s=None)
                    con.execute("SELECT count(*) FROM adoptions", timeout_s=None)
                self.reads += 1
            except Exception as exc:  # noqa: BLE001 - every failure is the finding
                self.failures.append(f"{type(exc).__name__}: {exc}"[:300])


@dataclass
class Outcome:
    operation: str
    delay_s: float
    killed: bool  # False: the operation finished before the kill came
    state: str  # "before", "after" or "other"
    opens: bool
    rerun_ok: bool
    staging_left: list
    reads: int
    read_failures: list
    error: str = ""

    @property
    def ok(self) -> bool:
        return (
            self.opens
            and self.state in ("before", "after")
            and self.rerun_ok
            and not self.staging_left
            and not self.read_failures
        )


def inject(sc: Scenario, work: Path, rng: random.Random, index: int) -> Outcome:
    """One run: copy, start, kill -9 at a random moment, check, repair, rerun, check."""
    lake = work / "runs" / f"{sc.name}-{index:03d}"
    shutil.rmtree(lake, ignore_errors=True)
    shutil.copytree(sc.start, lake)
    # kills during interpreter start-up prove nothing: aim at the operation's own work
    delay = rng.uniform(min(sc.startup, sc.seconds * 0.5), sc.seconds)
    reader = Reader(lake)
    proc = subprocess.Popen(
        graphlake_cmd(*sc.args, lake=lake),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    reader.start()
    try:
        proc.wait(timeout=delay)
        killed = False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        killed = True
    reader.stop.set()
    reader.join()
    out = Outcome(
        sc.name, round(delay, 3), killed, "other", False, False, [], reader.reads, reader.failures
    )
    try:
        seen = fingerprint(lake)
        out.opens = True
        out.state = "before" if seen == sc.before else "after" if seen == sc.after else "other"
        if out.state == "other":
            out.error = json.dumps(
                {
                    k: (v, sc.before.get(k), sc.after.get(k))
                    for k, v in seen.items()
                    if v not in (sc.before.get(k), sc.after.get(k))
                }
            )[:1000]
        run_cli("lake", "repair", lake=lake)
        run_cli(*sc.args, lake=lake)
        out.rerun_ok = fingerprint(lake) == sc.after
        out.staging_left = leftovers(lake)
    except Exception as exc:  # noqa: BLE001 - a lake that does not open is the finding
        out.error = f"{type(exc).__name__}: {exc}"[:1000]
    shutil.rmtree(lake, ignore_errors=True)
    return out


def run(
    runs: int, work: Path, seed: int = 1, sessions: int = 12, progress=print
) -> tuple[dict[str, Scenario], list[Outcome]]:
    rng = random.Random(seed)
    scenarios = prepare(work, sessions=sessions, seed=seed + 10)
    outcomes = []
    for i in range(runs):
        sc = scenarios[OPERATIONS[i % len(OPERATIONS)]]
        outcomes.append(inject(sc, work, rng, i))
        o = outcomes[-1]
        progress(
            f"[{i + 1}/{runs}] {o.operation:8s} kill at {o.delay_s:5.2f}s "
            f"({'killed' if o.killed else 'finished first'}): state {o.state}, "
            f"rerun {'ok' if o.rerun_ok else 'FAILED'}, {o.reads} reads, "
            f"{len(o.read_failures)} failed{'' if o.ok else '  <-- ' + o.error}"
        )
    return scenarios, outcomes


def summary(scenarios: dict[str, Scenario], outcomes: list[Outcome]) -> str:
    """The Markdown table docs/reliability.md carries."""
    lines = [
        "| operation | uninterrupted (s) | runs | killed mid-way | read as before | "
        "read as after | other / unreadable | rerun exact | reads during the run "
        "(failed) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name in OPERATIONS:
        mine = [o for o in outcomes if o.operation == name]
        if not mine:
            continue
        lines.append(
            f"| {name} | {scenarios[name].seconds:.1f} | {len(mine)} | "
            f"{sum(o.killed for o in mine)} | {sum(o.state == 'before' for o in mine)} | "
            f"{sum(o.state == 'after' for o in mine)} | "
            f"{sum(o.state == 'other' or not o.opens for o in mine)} | "
            f"{sum(o.rerun_ok for o in mine)} | {sum(o.reads for o in mine)} "
            f"({sum(len(o.read_failures) for o in mine)}) |"
        )
    return "\n".join(lines)


BEGIN, END = "<!-- faults:begin -->", "<!-- faults:end -->"


def write_docs(table: str, runs: int, took: float) -> Path:
    """Replace the figures between the markers in docs/reliability.md."""
    path = ROOT / "docs" / "reliability.md"
    text = path.read_text()
    stamp = (
        f"{runs} runs, {took / 60:.1f} min, `python -m benchmarks.faults --runs {runs} "
        f"--write-docs`, {time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores"
    )
    block = f"{BEGIN}\n{stamp}\n\n{table}\n{END}"
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    path.write_text(head + block + tail)
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=60, help="kill runs in all (default 60)")
    ap.add_argument("--sessions", type=int, default=12, help="demo sessions in the corpus")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--work", type=Path, default=None, help="scratch folder (default: temp)")
    ap.add_argument(
        "--write-docs", action="store_true", help="rewrite the figures in docs/reliability.md"
    )
    args = ap.parse_args(argv)
    import tempfile

    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="graphlake-faults-") as tmp:
        work = args.work or Path(tmp)
        scenarios, outcomes = run(args.runs, work, args.seed, args.sessions)
    took = time.perf_counter() - t0
    table = summary(scenarios, outcomes)
    print(table)
    bad = [o for o in outcomes if not o.ok]
    delays = [o.delay_s for o in outcomes]
    print(
        f"{len(outcomes)} runs, {sum(o.killed for o in outcomes)} killed mid-way, "
        f"kill delay median {statistics.median(delays):.2f}s, {len(bad)} failed"
    )
    for o in bad:
        print(json.dumps(o.__dict__)[:2000])
    if args.write_docs:
        print(f"wrote {write_docs(table, len(outcomes), took)}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
