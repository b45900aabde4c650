"""The demo's agent traces: one of each family ``graphlake ingest traces`` reads.

OpenTelemetry GenAI and OpenInference spans are recorded by the OpenTelemetry SDK and
inspect_ai's evaluation is run by inspect itself against its mock model, where those
libraries are installed (the dev extra); a default install writes the same traces
directly (:mod:`graphlake.demo.trace_gen`). Langfuse, SWE-agent and OpenHands do not run
here: their files follow the shapes those projects document
(:mod:`graphlake.demo.trace_shapes`).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from graphlake.demo.trace_gen import (
    genai_traces,
    have_inspect,
    inspect_log_by_hand,
    openinference_traces,
    write_inspect_log,
    write_otlp_json,
)
from graphlake.demo.trace_shapes import EVENTS, OBSERVATIONS, SCORES, TRACE, TRAJ

_DOCUMENTED = "graphlake, after the format's documented shape"


def write_demo_traces(out: Path, seed: int = 7) -> tuple[Path, list[tuple[str, Path, str]]]:
    """Write the traces under ``out/traces``; the folder and (family, file, writer) rows.

    The inspect log is kept from an earlier run (inspect names each run anew: a fresh log
    on every demo would add its samples again)."""
    root = Path(out) / "traces"
    kept = sorted((root / "inspect").glob("*.eval")) if root.exists() else []
    for sub in ("otel", "openinference", "langfuse", "swe-agent", "openhands"):
        shutil.rmtree(root / sub, ignore_errors=True)
    written = []
    path, writer = write_otlp_json(root / "otel" / "floorplan-agent.otlp.json", genai_traces(seed))
    written.append(("OpenTelemetry GenAI", path, writer))
    path, writer = write_otlp_json(
        root / "openinference" / "rag-agent.otlp.json", openinference_traces(seed)
    )
    written.append(("OpenInference", path, writer))
    if kept:
        written.append(("inspect_ai", kept[-1], "inspect_ai (kept from an earlier demo)"))
    elif have_inspect():
        shutil.rmtree(root / "inspect", ignore_errors=True)
        path = write_inspect_log(root / "inspect", "eval")
        written.append(("inspect_ai", path, "inspect_ai, against its mockllm model"))
    else:
        shutil.rmtree(root / "inspect", ignore_errors=True)
        path = inspect_log_by_hand(root / "inspect")
        written.append(("inspect_ai", path, "graphlake, as inspect writes a .json log"))
    for family, rel, obj in (
        ("Langfuse", "langfuse/lf-trace-1.json", {**TRACE, "observations": OBSERVATIONS,
                                                   "scores": SCORES}),
        ("SWE-agent", "swe-agent/astropy__astropy-12907.traj", TRAJ),
        ("OpenHands", "openhands/events.json", EVENTS),
    ):  # fmt: skip
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(obj, indent=1))
        written.append((family, path, _DOCUMENTED))
    return root, written
