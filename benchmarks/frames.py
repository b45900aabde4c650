"""Frames benchmark: sampling against the ffmpeg command line, OCR, embedding, vector search.

    python -m benchmarks.frames            # hour-long recording, 1M vectors (~20 min)
    python -m benchmarks.frames --quick    # 10-minute recording, 100k vectors (~3 min)

1. **Decode and sample** a generated screen recording (1280x720, 10 fps, H.264, a screen change
   every 20-90 s, a mouse pointer drifting all the time) with ``sample_frames`` (grid every 2 s
   plus scene checks 4x a second, near-duplicates skipped), against the ``ffmpeg`` command line
   doing the same sampling: decode every frame, keep one every 2 s and at scene changes
   (``select`` with ``scene``), scale and hand over raw RGB. Goal: within 1.5x of ffmpeg.
2. **OCR**: frames read per second (RapidOCR on the kept frames) and the share of checked
   frames skipped as near-duplicates.
3. **Text embedding**: MiniLM sentences per second on OCR-like text.
4. **Vector search** on 1M clustered vectors (384-d as MiniLM, 512-d as CLIP ViT-B-32) in
   LanceDB: p50 / p99 latency and recall@10 against exact search (ground truth computed with
   numpy), for the ANN index graphlake builds (and IVF_PQ with ``--compare-pq``), unfiltered
   and with a filter that leaves one session's 1% of the rows (which graphlake answers by
   exact search over the rows a B-tree index finds). Goal: p50 under 20 ms at
   recall@10 of at least 0.95 unfiltered; recall 1.0 when a filter leaves few rows.
5. **Search quality on a recording nobody tuned for**: dark IDE-like screens in a monospace
   font at 1920x1080, indexed, then queried with a line of each screen, a paraphrase, and a
   screenshot; counted when the top hit falls in that screen's time range.

Results are appended to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import shutil
import subprocess
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pyarrow as pa

from graphlake.vision.sampler import SamplerStats, sample_frames
from graphlake.vision.screens import Screen, write_screen_recording

ROOT = Path(__file__).resolve().parent.parent
WORK = Path(tempfile.gettempdir()) / "graphlake-bench" / "frames"
APPS = (
    "Excel - churn.xlsx",
    "Revit - Level 2",
    "Slack - #design",
    "Chrome - Analytics",
    "Word - Report draft",
    "Figma - Landing page",
    "Terminal - build",
    "Outlook - Inbox",
)
WORDS = (
    "revenue churn customers quarterly budget design review floor plan wall door meeting "
    "notes launch campaign draft summary chart interview market report price rise "
    "option export render model layer sheet"
).split()


def hour_recording(
    path: Path, seconds: float, seed: int = 5, gap: tuple[float, float] = (20, 90)
) -> Path:
    """A screen recording of ``seconds`` with a new screen every ``gap`` seconds (cached)."""
    if path.exists():
        return path
    rng = random.Random(seed)
    screens, t = [], 0.0
    while t < seconds:
        doc = [
            " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 8))).capitalize()
            for _ in range(rng.randint(3, 9))
        ]
        chat = [
            f"{rng.choice(['me', 'AI'])}: " + " ".join(rng.choice(WORDS) for _ in range(5))
            for _ in range(rng.randint(0, 4))
        ]
        screens.append(
            Screen(
                round(t, 1),
                rng.choice(APPS),
                doc,
                chat,
                shade=rng.choice((240, 245, 250)),
                chart=rng.random() < 0.3,
            )
        )
        t += rng.uniform(*gap)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".part.mp4")
    write_screen_recording(tmp, screens, seconds, fps=10, gop_seconds=10)
    tmp.replace(path)
    return path


def bench_sampling(video: Path, every: float = 2.0) -> dict:
    stats = SamplerStats()
    t0 = time.perf_counter()
    frames = [(f.t, f.image.shape) for f in sample_frames(video, every, stats=stats)]
    ours = time.perf_counter() - t0
    out = {
        "frames_kept": len(frames),
        "checked": stats.checked,
        "decoded": stats.decoded,
        "ours_s": ours,
        "skipped_share": 1 - len(frames) / max(stats.checked, 1),
    }
    ffmpeg = shutil.which("ffmpeg")
    if ffmpeg:
        select = (
            f"select='isnan(prev_selected_t)+gte(t-prev_selected_t\\,{every})+gt(scene\\,0.01)'"
        )
        cmd = [
            ffmpeg,
            "-hide_banner",
            "-loglevel",
            "error",
            "-i",
            str(video),
            "-vf",
            f"{select},scale=1280:-2",
            "-fps_mode",
            "vfr",
            "-pix_fmt",
            "rgb24",
            "-f",
            "rawvideo",
            "-y",
            os.devnull,
        ]
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True)
        out["ffmpeg_s"] = time.perf_counter() - t0
    return out


def bench_ocr(video: Path, n: int) -> dict:
    from graphlake.vision.ocr import ScreenReader

    reader = ScreenReader()
    images = [f.image for _, f in zip(range(n), sample_frames(video, 2.0), strict=False)]
    reader.read(images[0])  # warm-up
    t0 = time.perf_counter()
    chars = sum(len(reader.read(img)[0]) for img in images)
    dt = time.perf_counter() - t0
    return {"ocr_frames": len(images), "ocr_fps": len(images) / dt, "chars": chars}


def bench_embedding(n: int) -> dict:
    from graphlake.vision.embed import text_embedder

    rng = random.Random(3)
    texts = [
        "\n".join(
            " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 8)))
            for _ in range(rng.randint(3, 9))
        )
        for _ in range(n)
    ]
    emb = text_embedder()
    emb.encode(texts[:64])
    t0 = time.perf_counter()
    emb.encode(texts)
    return {"texts": n, "texts_per_s": n / (time.perf_counter() - t0)}


#: A recording graphlake was not tuned on: dark IDE-like screens, a monospace font, 1920x1080
#: (scaled to 1280 for OCR), a sidebar, line numbers. (title, lines, paraphrase or None)
UNTUNED = [
    (
        "train.py - models",
        [
            "for epoch in range(num_epochs):",
            "    outputs = model(batch)",
            "    loss = criterion(outputs, labels)",
            "    optimizer.step()",
        ],
        "neural network training code",
    ),
    (
        "bash - tests",
        [
            "$ pytest tests/ -q",
            "12 passed, 3 failed in 4.21s",
            "AssertionError: expected 42 but got 41",
        ],
        "the unit tests did not pass",
    ),
    (
        "Mail - Inbox",
        [
            "Subject: Invoice overdue for October",
            "Dear team, payment for invoice 4471 is late.",
            "Please settle by Friday.",
        ],
        "a bill that has not been paid",
    ),
    (
        "Calendar - Week 48",
        ["Monday 9:30 Standup meeting", "Thursday 14:00 Dentist", "Friday 17:00 Team dinner"],
        None,
    ),
    (
        "Slack - #travel",
        ["Can you book a flight to Tokyo next Monday?", "Sure, looking at morning departures now."],
        "reserve plane tickets to Japan",
    ),
    (
        "README.md - docs",
        [
            "Installation guide",
            "Run pip install graphlake",
            "Then start the demo with graphlake demo",
        ],
        "how to set up the software",
    ),
    (
        "Weather - Oslo",
        ["Heavy rain expected tonight", "Wind from the north at 40 km/h"],
        "a storm is coming",
    ),
    (
        "Sheets - Q3 sales",
        ["Region North 1200 units", "Region South 860 units", "Total 2060 units shipped"],
        None,
    ),
    (
        "Jira - BUG-311",
        ["Login page crashes on Safari", "Priority: critical", "Assignee: Maria"],
        "the website breaks in Apple's browser",
    ),
    (
        "Notes - groceries",
        ["Buy milk, eggs and bread", "Pick up the dry cleaning"],
        "shopping list",
    ),
]


def render_untuned(screen: Screen, size: tuple[int, int]) -> np.ndarray:
    from PIL import Image, ImageDraw, ImageFont

    w, h = size
    mono = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf"
    font = ImageFont.truetype(mono, 30) if Path(mono).exists() else ImageFont.load_default(size=30)
    img = Image.new("RGB", size, (30, 32, 38))
    d = ImageDraw.Draw(img)
    d.rectangle([0, 0, 300, h], fill=(22, 24, 28))
    for i, name in enumerate(("src", "tests", "docs", "notes.txt")):
        d.text((20, 90 + 44 * i), name, fill=(140, 150, 160), font=font)
    d.rectangle([300, 0, w, 56], fill=(45, 48, 56))
    d.text((330, 12), screen.title, fill=(220, 220, 220), font=font)
    for i, line in enumerate(screen.document):
        y = 120 + 52 * i
        d.text((320, y), f"{i + 1:>3}", fill=(90, 95, 105), font=font)
        d.text((420, y), line, fill=(212, 215, 205), font=font)
    return np.asarray(img)


def bench_quality() -> dict:
    """Index the untuned recording and check where text, paraphrase and image queries land."""
    from graphlake.lake import Lake, LakeRun
    from graphlake.query.connection import Connection
    from graphlake.search import search_frames
    from graphlake.vision.indexer import FrameIndexer

    folder = WORK / "untuned"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    span = 30.0
    screens = [Screen(i * span, title, lines) for i, (title, lines, _) in enumerate(UNTUNED)]
    video = write_screen_recording(
        folder / "ide.mp4",
        screens,
        span * len(screens),
        fps=5,
        size=(1920, 1080),
        render=render_untuned,
    )
    import hashlib

    sha = hashlib.sha256(video.read_bytes()).hexdigest()
    lake = Lake(folder / "lake")
    run = LakeRun(lake, "untuned", "benchmark")
    em = run.emitter()
    em.row("sessions", {"session_id": "ide"})
    em.row(
        "media",
        {
            "session_id": "ide",
            "media_id": sha,
            "uri": str(video),
            "kind": "screen_recording",
            "duration_s": span * len(screens),
        },
    )
    run.commit([em.close()])
    FrameIndexer(lake).run(texts=False)
    scores = {"text": [], "paraphrase": [], "image": []}
    with Connection(lake) as con:
        for i, (_title, lines, para) in enumerate(UNTUNED):
            lo, hi = i * span, (i + 1) * span

            def lands(hits, lo=lo, hi=hi):
                return bool(hits) and lo <= hits[0]["t"] < hi

            scores["text"].append(lands(search_frames(lake.root, con, lines[-1], k=1)))
            if para:
                scores["paraphrase"].append(lands(search_frames(lake.root, con, para, k=1)))
            shot = render_untuned(screens[i], (1920, 1080))
            scores["image"].append(lands(search_frames(lake.root, con, image=shot, k=1)))
    return {k: (sum(v), len(v)) for k, v in scores.items()}


def clustered(n: int, dim: int, seed: int, clusters: int = 1000) -> np.ndarray:
    """Unit vectors around ``clusters`` random centres (how real embeddings bunch up)."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((clusters, dim)).astype(np.float32)
    out = np.empty((n, dim), np.float32)
    step = 100_000
    for i in range(0, n, step):
        m = min(step, n - i)
        out[i : i + m] = centres[rng.integers(0, clusters, m)] + 0.35 * rng.standard_normal(
            (m, dim)
        ).astype(np.float32)
    out /= np.linalg.norm(out, axis=1, keepdims=True)
    return out


def exact_top(
    data: np.ndarray, queries: np.ndarray, k: int, mask: np.ndarray | None = None
) -> list[set[int]]:
    out = []
    for q in queries:
        d = data @ q
        if mask is not None:
            d = np.where(mask, d, -np.inf)
        out.append(set(np.argpartition(-d, k)[:k].tolist()))
    return out


def bench_vectors(
    n: int, dim: int, queries: int = 200, k: int = 10, compare_pq: bool = False
) -> list[dict]:
    import lancedb
    from lancedb.index import BTree, IvfPq

    from graphlake.search.frames import NPROBES, REFINE
    from graphlake.vision.store import build_ann_index

    data = clustered(n, dim, seed=dim)
    rng = np.random.default_rng(1)
    qs = data[rng.integers(0, n, queries)] + 0.1 * rng.standard_normal((queries, dim)).astype(
        np.float32
    )
    qs /= np.linalg.norm(qs, axis=1, keepdims=True)
    # frames are appended recording by recording, so one session's rows sit together: the
    # filter `session_id = 's050'` keeps 1% of the rows, found through a B-tree index
    session = np.arange(n) * 100 // n
    folder = WORK / f"vectors-{n}-{dim}"
    shutil.rmtree(folder, ignore_errors=True)
    db = lancedb.connect(str(folder))
    table = db.create_table(
        "v",
        pa.table(
            {
                "id": pa.array(np.arange(n), pa.int64()),
                "session_id": pa.array([f"s{s:03d}" for s in session]),
                "vector": pa.FixedSizeListArray.from_arrays(pa.array(data.ravel()), dim),
            }
        ),
    )
    table.create_index("session_id", config=BTree())
    truth = exact_top(data, qs, k)
    truth_f = exact_top(data, qs, k, mask=session == 50)
    results = []

    def run(label, make_query, expected, limit=None):
        lat, hits, total = [], 0, 0
        for q, want in list(zip(qs, expected, strict=True))[:limit]:
            t0 = time.perf_counter()
            got = make_query(q).to_arrow().column("id").to_pylist()
            lat.append((time.perf_counter() - t0) * 1000)
            hits += len(set(got) & want)
            total += k
        lat.sort()
        results.append(
            {
                "dim": dim,
                "n": n,
                "index": label,
                "p50_ms": lat[len(lat) // 2],
                "p99_ms": lat[max(0, int(len(lat) * 0.99) - 1)],
                "recall": hits / total,
                "queries": len(lat),
            }
        )

    def q(vec):
        return table.search(vec).distance_type("cosine").select(["id", "_distance"]).limit(k)

    filt = "session_id = 's050'"
    run("exact scan, no filter (baseline)", lambda v: q(v).bypass_vector_index(), truth, limit=10)
    run(
        "exact, 1% filter (graphlake's filtered path)",
        lambda v: q(v).where(filt, prefilter=True).bypass_vector_index(),
        truth_f,
    )
    builds = [("IVF_HNSW_SQ (graphlake)", lambda: build_ann_index(table, "vector", n))]
    if compare_pq:
        builds.append(
            (
                "IVF_PQ",
                lambda: table.create_index(
                    "vector",
                    config=IvfPq(distance_type="cosine", num_sub_vectors=dim // 8),
                    replace=True,
                ),
            )
        )
    for name, build in builds:
        t0 = time.perf_counter()
        build()
        build_s = time.perf_counter() - t0
        run(
            f"{name}, nprobes {NPROBES}, refine {REFINE}",
            lambda v: q(v).nprobes(NPROBES).refine_factor(REFINE),
            truth,
        )
        results[-1]["build_s"] = build_s
        run(
            f"{name}, 1% filter through the index",
            lambda v: q(v).where(filt, prefilter=True).nprobes(NPROBES).refine_factor(REFINE),
            truth_f,
        )
    shutil.rmtree(folder, ignore_errors=True)
    return results


def report(
    samp: dict, ocr: dict, emb: dict, quality: dict, vec: list[dict], seconds: float, label: str
) -> str:
    lines = [
        f"## {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, frames benchmark ({label})",
        "",
        f"Machine: {os.cpu_count()} cores, {platform.machine()}, Python "
        f"{platform.python_version()}.",
    ]
    if samp:
        lines += [
            f"Recording: {seconds / 60:.0f} min, 1280x720, 10 fps, H.264.",
            "",
            "| stage | graphlake | baseline | ratio |",
            "|---|---|---|---|",
        ]
        if "ffmpeg_s" in samp:
            lines.append(
                f"| decode + sample (every 2 s + scene changes) | {samp['ours_s']:.1f} s | "
                f"ffmpeg CLI {samp['ffmpeg_s']:.1f} s | "
                f"{samp['ours_s'] / samp['ffmpeg_s']:.2f}x ffmpeg's time |"
            )
        else:
            lines.append(f"| decode + sample | {samp['ours_s']:.1f} s | ffmpeg not installed | |")
        lines += [
            f"| near-duplicates skipped | {samp['skipped_share']:.1%} of {samp['checked']:,} "
            f"checked frames ({samp['frames_kept']} kept) | | |",
            f"| OCR (RapidOCR, kept frames) | {ocr['ocr_fps']:.2f} frames/s over "
            f"{ocr['ocr_frames']} frames | | |",
            f"| MiniLM text embedding | {emb['texts_per_s']:.0f} texts/s ({emb['texts']:,} "
            "OCR-like texts) | | |",
            "",
            "Search on a recording graphlake was not tuned on (dark IDE-like screens, monospace, "
            "1920x1080, 10 screens of 30 s; top hit in the right screen's time range): "
            + ", ".join(f"{k} queries {a}/{b}" for k, (a, b) in quality.items())
            + ".",
        ]
    if not vec:
        return "\n".join(lines) + "\n"
    lines += [
        "",
        "| vectors | search | queries | p50 ms | p99 ms | recall@10 | index build s |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in vec:
        build = f"{r['build_s']:.0f}" if "build_s" in r else ""
        lines.append(
            f"| {r['n']:,} x {r['dim']} | {r['index']} | {r['queries']} | "
            f"{r['p50_ms']:.1f} | {r['p99_ms']:.1f} | {r['recall']:.3f} | {build} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="10-minute recording, 100k vectors")
    ap.add_argument("--no-write", action="store_true", help="print, don't append to the docs")
    ap.add_argument("--only", choices=("video", "vectors"), help="run one half")
    ap.add_argument("--compare-pq", action="store_true", help="also build and query IVF_PQ")
    args = ap.parse_args()
    seconds = 600 if args.quick else 3600
    n = 100_000 if args.quick else 1_000_000
    samp = ocr = emb = quality = {}
    vec: list[dict] = []
    if args.only != "vectors":
        video = hour_recording(WORK / f"recording-{seconds}.mp4", seconds)
        samp = bench_sampling(video)
        print(samp, flush=True)
        ocr = bench_ocr(video, 10 if args.quick else 30)
        print(ocr, flush=True)
        emb = bench_embedding(2000 if args.quick else 10_000)
        print(emb, flush=True)
        quality = bench_quality()
        print(quality, flush=True)
    if args.only != "video":
        for dim in (384, 512):
            vec += bench_vectors(n, dim, compare_pq=args.compare_pq)
            print(vec[-6:], flush=True)
    label = ("quick" if args.quick else "full") + (f", {args.only} only" if args.only else "")
    text = report(samp, ocr, emb, quality, vec, seconds, label)
    print(text)
    if not args.no_write:
        with (ROOT / "docs" / "benchmarks.md").open("a") as fh:
            fh.write("\n" + text)


if __name__ == "__main__":
    main()
