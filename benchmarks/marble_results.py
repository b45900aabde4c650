"""MARBLE result logs read by the mapping (``ingest/marble_results.yaml``,
``GRAPHLAKE_MARBLE_READER=mapping``) against the Python reader of ``ingest/marble.py``;
appended to docs/benchmarks.md.

    python -m benchmarks.marble_results            # 8 files of 1,000 runs
    python -m benchmarks.marble_results --quick    # 2 files of 500 runs

Each run is a line as MARBLE's engine writes it: five iterations of three agents (task
assignments, results, two communications of "From A to B:" lines under an "In Session"
header, the planner's summary), planning and communication scores, a code_quality object,
KPIs. Both sides are the whole ``ingest_path`` into a fresh lake (parse, stage, commit),
interleaved over rounds; the medians are reported with the tables checked equal.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from statistics import median

from benchmarks.run import publish
from graphlake.pipeline import ingest_path
from graphlake.query import run_sql

AGENTS = ("agent1", "agent2", "agent3")


def write_corpus(root: Path, files: int, runs: int, seed: int = 11) -> Path:
    rng = random.Random(seed)
    words = "parser tests edge case review merge draft idea baseline list tokens".split()

    def said(n: int) -> str:
        return " ".join(rng.choice(words) for _ in range(n))

    root.mkdir(parents=True, exist_ok=True)
    for f in range(files):
        with (root / f"result_{f:02d}.jsonl").open("w") as fh:
            for _ in range(runs):
                iterations = []
                for k in range(5):
                    comms = [
                        f"In Session {rng.getrandbits(64):016x}\n"
                        + "\n".join(
                            f"From {rng.choice(AGENTS)} to {rng.choice(AGENTS)}: {said(12)}"
                            for _ in range(3)
                        )
                        for _ in range(2)
                    ]
                    iterations.append(
                        {
                            "iteration": k + 1,
                            "task_assignments": {a: said(8) for a in AGENTS},
                            "task_results": [{a: said(20)} for a in AGENTS],
                            "summary": said(15),
                            "continue_simulation": k < 4,
                            "total_milestones": k,
                            "agent_kpis": {AGENTS[k % 3]: 1},
                            "communications": comms,
                        }
                    )
                run = {
                    "task": said(30),
                    "coordination_mode": rng.choice(["star", "graph", "chain"]),
                    "iterations": iterations,
                    "planning_scores": [rng.randint(1, 5) for _ in range(5)],
                    "communication_scores": [rng.randint(-1, 5) for _ in range(5)],
                    "token_usage": rng.randint(100, 9000),
                    "agent_kpis": {a: rng.randint(0, 3) for a in AGENTS},
                    "total_milestones": rng.randint(0, 5),
                    "code_quality": {"quality": 3, "executability": 4, "rationale": said(6)},
                }
                fh.write(json.dumps(run) + "\n")
    return root


def _ingest(reader: str, corpus: Path, lake: Path) -> float:
    shutil.rmtree(lake, ignore_errors=True)
    os.environ["GRAPHLAKE_MARBLE_READER"] = reader
    try:
        t0 = time.perf_counter()
        ingest_path("marble", corpus, lake, workers=1)
        return time.perf_counter() - t0
    finally:
        os.environ.pop("GRAPHLAKE_MARBLE_READER", None)


def _tables(lake: Path) -> dict[str, list]:
    out = {}
    for table, key in (
        ("sessions", "session_id"),
        ("events", "session_id, event_id"),
        ("annotations", "session_id, annotation_id"),
        ("participants", "session_id, participant_id"),
    ):
        drop = "corpus, run_id" if table == "sessions" else "corpus"
        rows = run_sql(
            f"SELECT * EXCLUDE ({drop}) FROM {table} ORDER BY {key}",
            lake,
            max_rows=None,
        ).table.to_pylist()
        out[table] = rows
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="2 files of 500 runs, 3 rounds")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--no-write", action="store_true", help="print only")
    args = ap.parse_args(argv)
    files, runs = (2, 500) if args.quick else (8, 1000)
    rounds = 3 if args.quick else args.rounds
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        corpus = write_corpus(work / "corpus", files, runs)
        times: dict[str, list[float]] = {"mapping": [], "python": []}
        for r in range(rounds):
            for name in ("mapping", "python") if r % 2 == 0 else ("python", "mapping"):
                times[name].append(_ingest(name, corpus, work / f"lake_{name}"))
                print(f"round {r + 1}: {name} {times[name][-1]:.2f} s", flush=True)
        a, b = _tables(work / "lake_mapping"), _tables(work / "lake_python")
        for table in a:
            for row in a[table] + b[table]:
                row.pop("source_file", None)
        same = a == b
    new, old = median(times["mapping"]), median(times["python"])
    events = files * runs * 5
    text = (
        f"## MARBLE result logs: the mapping against the Python reader "
        f"({datetime.now(UTC):%Y-%m-%d})\n\n"
        f"`python -m benchmarks.marble_results{' --quick' if args.quick else ''}` on "
        f"{platform.machine()} ({platform.python_version()}), {files * runs:,} runs "
        f"({events:,} iterations) in {files} files, whole ingest into a fresh lake, one worker, "
        f"median of {rounds} interleaved rounds. Tables equal: {'yes' if same else 'NO'}.\n\n"
        "| reader | seconds | ratio (Python / this) |\n|---|---|---|\n"
        f"| `ingest/marble_results.yaml` (mapping, DuckDB) | {new:.2f} | {old / new:.2f}x |\n"
        f"| Python reader (`ingest/marble.py`, the default) | {old:.2f} | 1.00x |\n\n"
        "Goal (issue 42): the mapping within 1.2x of the Python reader's time "
        f"(ratio >= 0.83): {'met' if old / new >= 1 / 1.2 else 'not met'}.\n"
    )
    publish(text, write=not args.no_write)
    if not same:
        sys.exit("the two readers' tables differ")


if __name__ == "__main__":
    main()
