"""One trace file at the default span limit, under the 2 GiB watchdog: just under it the file
lands, just past it the file is one reject; both within the documented ceiling.

    python -m benchmarks.span_limit                  # 290,000 and 310,000 spans
    python -m benchmarks.span_limit 1000000          # any counts

Each file is OTLP JSON Lines as a collector's file exporter writes it: one export request a
line, 1,000 spans each (about 300 KB a line, past the sniffed prefix), every span a child of
the one before it in its trace. The 64 MiB file limit would refuse these files before their
spans are counted, so it is raised to 200 MB here: the span limit is what is measured. The
ingest runs in a child process under ``RLIMIT_DATA`` (tests/watchdog.py); the figure is its own
peak (VmHWM). Prints a Markdown table for docs/reliability.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from watchdog import run_bounded  # noqa: E402

_CHILD = """
import json, sys, time
from pathlib import Path
from graphlake.pipeline import ingest_path
source, lake = Path(sys.argv[1]), Path(sys.argv[2])
t = time.perf_counter()
stats, _ = ingest_path("otel", source, lake, workers=1)
print(json.dumps({"nodes": stats.accepted.get("nodes", 0), "rejected": dict(stats.rejected),
                  "s": time.perf_counter() - t}))
"""


def write_spans(path: Path, n: int) -> None:
    """``n`` spans as OTLP JSON Lines, 1,000 a request (and a trace)."""
    resource = {"attributes": [{"key": "service.name", "value": {"stringValue": "svc"}}]}
    with path.open("w") as fh:
        for k in range(0, n, 1000):
            spans = [
                {
                    "traceId": f"{i // 1000 + 1:032x}",
                    "spanId": f"{i + 1:016x}",
                    "parentSpanId": f"{i:016x}" if i % 1000 else "",
                    "name": "llm.call",
                    "startTimeUnixNano": str(1_700_000_000_000_000_000 + i),
                    "endTimeUnixNano": str(1_700_000_000_000_001_000 + i),
                    "attributes": [{"key": "gen_ai.request.model", "value": {"stringValue": "m"}}],
                }
                for i in range(k, min(n, k + 1000))
            ]
            request = {
                "resource": resource,
                "scopeSpans": [{"scope": {"name": "t"}, "spans": spans}],
            }
            fh.write(json.dumps({"resourceSpans": [request]}) + "\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("counts", nargs="*", type=int, default=[290_000, 310_000])
    args = ap.parse_args(argv)
    os.environ["GRAPHLAKE_MAX_FILE_BYTES"] = str(200_000_000)  # inherited by the child
    print("| spans in the file | file | result | peak memory | time |")
    print("|---:|---:|---|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        child = Path(tmp) / "child.py"
        child.write_text(_CHILD)
        for n in args.counts:
            source = Path(tmp) / f"in{n}" / "spans.otlp.jsonl"
            source.parent.mkdir()
            write_spans(source, n)
            r = run_bounded(child, str(source.parent), str(Path(tmp) / f"lake{n}"), timeout=1800)
            if r.returncode != 0:
                print(f"| {n:,} | - | failed: {r.stderr.strip()[-300:]} | - | - |")
                continue
            got = json.loads(r.stdout.strip().splitlines()[-1])
            result = (
                f"{got['nodes']:,} spans land" if not got["rejected"] else "one reject (the file)"
            )
            print(
                f"| {n:,} | {source.stat().st_size / 1e6:.0f} MB | {result} | "
                f"{r.peak_bytes / 2**20:,.0f} MiB | {got['s']:.1f} s |"
            )
            source.unlink()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
