"""Scaling: the Ray engine at 1, 2 and 4 worker processes on the same input, ingest and frames.

    python -m benchmarks.scale            # 20,000 Kolab sessions; 4 recordings of 3 minutes
    python -m benchmarks.scale --quick    # 4,000 sessions; 2 recordings of 90 seconds

Each configuration gets a fresh Ray cluster on this machine (``ray.init(num_cpus=N)``; its
start is not timed) and a fresh lake; the local engine runs the same input in the same run
as the anchor. Reported: wall time, throughput (nodes or kept frames a second), speed-up over
one Ray worker and efficiency (speed-up / workers). Every configuration's lake is checked
against the local one (ingest: table fingerprints; frames: frame ids and texts) before its
time counts. Rounds alternate the configurations; the median is reported.

On a machine with C cores, N > C workers cannot go faster than C: the figures past the core
count measure the cost of oversubscription, not of Ray. Results are appended to
docs/scaling.md, which turns them into the plan past one machine.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import random
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from benchmarks.run import publish
from graphlake.demo.corpus import write_demo_corpus, write_graph_corpus
from graphlake.lake import Lake
from graphlake.lake.fingerprint import fingerprint
from graphlake.pipeline import ingest_path

WORK = Path(tempfile.gettempdir()) / "graphlake-bench" / "scale"
WORKERS = (1, 2, 4)


def cluster(engine: str, workers: int):
    """For a Ray configuration, a private cluster of ``workers`` CPUs, started before the
    clock starts; the engine's own ``attached`` then uses it."""
    if engine != "ray":
        return contextlib.nullcontext()
    from graphlake.cluster.runtime import attached

    return attached(None, workers=workers)


def timed_runs(configs: dict[str, Callable[[], float]], rounds: int) -> dict[str, float]:
    """Median seconds of each configuration, the configurations alternating round by round."""
    times: dict[str, list[float]] = {name: [] for name in configs}
    for r in range(rounds):
        order = list(configs) if r % 2 == 0 else list(reversed(configs))
        for name in order:
            times[name].append(configs[name]())
            print(f"  {name}: {times[name][-1]:.2f} s", flush=True)
    return {name: statistics.median(ts) for name, ts in times.items()}


# ------------------------------------------------------------------ ingest
def bench_ingest(work: Path, sessions: int, rounds: int) -> dict:
    src = work / f"kolab-{sessions}"
    if not src.exists():
        write_graph_corpus(src, sessions)
    src = src.resolve()
    want = None

    def run(engine: str, workers: int) -> float:
        nonlocal want
        lake = work / f"lake-{engine}-{workers}"
        shutil.rmtree(lake, ignore_errors=True)
        with cluster(engine, workers):
            t0 = time.perf_counter()
            ingest_path("kolab", src, lake, engine=engine, workers=workers)
            secs = time.perf_counter() - t0
        got = fingerprint(Lake(lake))
        want = want or got
        assert got == want, f"{engine} x{workers} wrote other rows than the first run"
        return secs

    configs = {"local engine, one process per core": lambda: run("local", os.cpu_count() or 1)}
    for n in WORKERS:
        configs[f"ray, {n} worker{'s' if n > 1 else ''}"] = lambda n=n: run("ray", n)
    secs = timed_runs(configs, rounds)
    nodes = want["nodes"].rows if want else 0
    return {"sessions": sessions, "nodes": nodes, "secs": secs}


# ------------------------------------------------------------------ frames
def frames_lake(work: Path, recordings: int, seconds: float) -> Path:
    """A lake of ``recordings`` Kolab sessions, each with a generated screen recording."""
    from benchmarks.frames import hour_recording

    base = work / f"frames-{recordings}x{int(seconds)}"
    lake = base / "lake"
    if lake.exists():
        return lake
    corpus = write_demo_corpus(base / "corpus", sessions=recordings, recording=False)
    for i, folder in enumerate(sorted(p for p in corpus.iterdir() if p.is_dir())):
        # a new screen every 4-10 s: about ten frames a minute to read, as a busy session
        hour_recording(folder / "recording.mp4", seconds, seed=100 + i, gap=(4, 10))
    ingest_path("kolab", corpus, lake)
    return lake


def bench_frames(work: Path, recordings: int, seconds: float, rounds: int) -> dict:
    from graphlake.cluster.frames import on_ray
    from graphlake.vision.indexer import FrameIndexer

    source = frames_lake(work, recordings, seconds)
    want: dict | None = None
    kept = 0

    def run(engine: str, workers: int) -> float:
        nonlocal want, kept
        lake = work / f"frames-{engine}-{workers}"
        shutil.rmtree(lake, ignore_errors=True)
        shutil.copytree(source, lake, ignore=shutil.ignore_patterns("_frames"))
        with cluster(engine, workers):
            t0 = time.perf_counter()
            by = on_ray(workers=workers) if engine == "ray" else None
            rep = FrameIndexer(lake).run(texts=False, recordings_by=by)
            secs = time.perf_counter() - t0
        got = _frame_texts(lake)
        want = want or got
        assert got == want, f"{engine} x{workers} indexed other frames than the first run"
        kept = rep.frames
        return secs

    configs = {"local engine, one process": lambda: run("local", 1)}
    for n in WORKERS:
        configs[f"ray, {n} reader actor{'s' if n > 1 else ''}"] = lambda n=n: run("ray", n)
    secs = timed_runs(configs, rounds)
    return {"recordings": recordings, "seconds": seconds, "frames": kept, "secs": secs}


def _frame_texts(lake: Path) -> dict[str, str]:
    import lancedb

    table = lancedb.connect(str(lake / "_frames")).open_table("frames")
    rows = table.search().select(["frame_id", "text"]).limit(table.count_rows()).to_arrow()
    return dict(zip(*(rows.column(k).to_pylist() for k in ("frame_id", "text")), strict=True))


# ------------------------------------------------------------------ report
def _rows(secs: dict[str, float], amount: float, unit: str) -> list[str]:
    """One table row a configuration; the speed-up is against one Ray worker."""
    one = next(v for k, v in secs.items() if k.startswith("ray, 1 "))
    out = []
    for name, s in secs.items():
        n = int(name.split()[1]) if name.startswith("ray") else None
        speedup = one / s
        eff = f"{speedup / n:.0%}" if n else ""
        rate = amount / s
        digits = 2 if rate < 10 else 0
        out.append(f"| {name} | {s:.1f} s | {rate:,.{digits}f} {unit}/s | {speedup:.2f}x | {eff} |")
    return out


def report(ingest: dict, frames: dict, rounds: dict, quick: bool) -> str:
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    cores = os.cpu_count()
    head = "| configuration | time | throughput | speed-up vs 1 Ray worker | efficiency |"
    rule = "|---|---|---|---|---|"
    lines = [
        f"### {now}, `python -m benchmarks.scale{' --quick' if quick else ''}`",
        "",
        f"Machine: {cores} cores, {platform.machine()}, Python {platform.python_version()}; "
        f"one Ray cluster per configuration on this machine. Medians of {rounds['ingest']} "
        f"interleaved rounds (ingest) and {rounds['frames']} (frames).",
        "",
        f"**Ingest**: {ingest['sessions']:,} generated Kolab sessions, "
        f"{ingest['nodes']:,} nodes (rows checked equal by fingerprint).",
        "",
        head,
        rule,
        *_rows(ingest["secs"], ingest["nodes"], "nodes"),
        "",
        f"**Frames**: {frames['recordings']} generated screen recordings of "
        f"{frames['seconds'] / 60:.1f} min (1280x720, 10 fps), {frames['frames']} frames kept "
        "and read (OCR + MiniLM); texts of every frame checked equal.",
        "",
        head,
        rule,
        *_rows(frames["secs"], frames["frames"], "frames"),
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rounds", type=int, default=None, help="ingest rounds (frames: 1)")
    ap.add_argument("--no-write", action="store_true", help="print, do not append to the doc")
    ap.add_argument("--work", type=Path, default=WORK)
    args = ap.parse_args()
    random.seed(0)
    args.work.mkdir(parents=True, exist_ok=True)
    sessions = 4_000 if args.quick else 20_000
    recordings, seconds = (2, 90.0) if args.quick else (4, 180.0)
    rounds = {"ingest": args.rounds or (1 if args.quick else 3), "frames": 1}
    print(f"ingest: {sessions:,} sessions", flush=True)
    ingest = bench_ingest(args.work, sessions, rounds["ingest"])
    print(f"frames: {recordings} recordings of {seconds:.0f} s", flush=True)
    frames = bench_frames(args.work, recordings, seconds, rounds["frames"])
    publish(report(ingest, frames, rounds, args.quick), not args.no_write, "scaling.md")


if __name__ == "__main__":
    main()
