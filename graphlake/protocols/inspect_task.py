"""graphlake's benchmark protocols as an inspect_ai task: dataset, gold, scorer and metrics.

    inspect eval graphlake/bench -T lake=./graphlake-lake -T protocol=kolab-1b \\
        -T condition=graph-chat --model openai/gpt-4o --limit 50

(or ``from graphlake.protocols.inspect_task import bench`` in Python). graphlake registers the
task with inspect through the ``inspect_ai`` entry point, so ``graphlake/bench`` resolves once
graphlake is installed; inspect_ai itself is optional (``pip install inspect-ai``).

* **Dataset**: every instance the protocol lists in ``condition`` at one lake version (video
  conditions: the instances whose session has a recording), with the instance id as the
  sample id, the prompt as the input and the gold label (or rating) as ``target``. The
  instance's inputs, protocol, condition, spec hash and lake version ride in ``metadata``, so a
  log can be matched back to the instances it was run on.
* **Video conditions** hand the model the sampled frames as images: each frame is decoded
  from the recording in the lake (PyAV, the ``frames`` extra) and sent as a JPEG data URI
  after the prompt; no server is needed.
* **Scorer** ``protocol_scorer``: the model's answer is read with the protocol's label
  parsing (:func:`graphlake.protocols.scoring.parse_label` / ``parse_rating``), and each sample
  scores 1 when it equals the gold. **Metrics**: inspect's ``accuracy`` plus
  ``protocol_metrics``, the paper's own (macro P/R/F1 and per-class F1 for labels; MAE, exact,
  within-1 and Spearman's rho for ratings), computed by the same code as ``bench score``.

Ingesting the log back (``graphlake ingest inspect LOG``) keeps it as trace sessions and, for a
log of this task, as an evaluation run beside ``bench score --save`` runs (``eval_runs``).
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from graphlake.errors import MissingExtraError
from graphlake.protocols import scoring

try:
    from inspect_ai import Task, task
    from inspect_ai.dataset import MemoryDataset, Sample
    from inspect_ai.model import ChatMessageUser, ContentImage, ContentText
    from inspect_ai.scorer import SampleScore, Score, Target, accuracy, metric, scorer
    from inspect_ai.solver import TaskState, generate
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise MissingExtraError(
        "inspect_ai is not installed; install it with: pip install inspect-ai"
    ) from exc

#: The task's name in inspect's registry (``graphlake/bench`` once installed).
TASK = "bench"


def frame_images(con, video: dict, width: int) -> list[ContentImage]:
    """The frames of a video condition as JPEG data URIs, decoded from the lake's copy of
    the recording (the ``media`` table names its file)."""
    from graphlake.vision.video import frame_jpeg

    if not video.get("available"):
        return []
    rows = con.rows("SELECT uri FROM media WHERE media_id = $m LIMIT 1", {"m": video["media_id"]})
    if not rows or not Path(rows[0]["uri"]).is_file():
        raise FileNotFoundError(
            f"recording {video['media_id']} is in the lake but its file is gone; re-ingest "
            "the session folder that holds it"
        )
    path = rows[0]["uri"]
    out = []
    for frame in video.get("frames") or []:
        jpeg = base64.b64encode(frame_jpeg(path, frame["t"], max_width=width)).decode()
        out.append(ContentImage(image=f"data:image/jpeg;base64,{jpeg}", detail="low"))
    return out


def samples(
    lake: str | Path | None,
    protocol: str,
    condition: str | None = None,
    *,
    version: int | None = None,
    params: dict | None = None,
    frame_width: int = 512,
) -> list[Sample]:
    """The protocol's instances in ``condition`` as inspect Samples with their gold."""
    from graphlake.config import default_lake_dir
    from graphlake.lake import Lake
    from graphlake.protocols.service import Benchmarks
    from graphlake.protocols.spec import needs_recording
    from graphlake.query.connection import Connection

    with Connection(Lake(lake or default_lake_dir()), version) as con:
        bench = Benchmarks(con)
        spec, _m = bench.spec(protocol)
        condition = spec.check_condition(condition)
        gold = bench.gold(protocol, params)
        out, cursor = [], None
        while True:
            page = bench.instances(
                protocol, condition=condition, params=params, limit=500, cursor=cursor
            )
            for item in page.items:
                prompt: Any = item["prompt"]
                if needs_recording(condition):
                    images = frame_images(con, item["inputs"].get("video") or {}, frame_width)
                    prompt = [ChatMessageUser(content=[ContentText(text=prompt), *images])]
                out.append(
                    Sample(
                        input=prompt,
                        target=str(gold[item["id"]]["gold"]),
                        id=item["id"],
                        metadata={
                            k: item[k]
                            for k in (
                                "protocol",
                                "condition",
                                "spec_hash",
                                "corpus",
                                "session_id",
                                "lake_version",
                                "params",
                            )
                        },
                    )
                )
            cursor = page.next_cursor
            if cursor is None:
                return out


def _classes(protocol: str) -> tuple[tuple[str, ...], bool]:
    from graphlake.protocols import REGISTRY

    spec, _m = REGISTRY[protocol]
    return tuple(spec.labels), spec.task == "rating"


@metric
def protocol_metrics(protocol: str):
    """The paper's metrics over the run's samples, as ``graphlake bench score`` reports
    them (per-class F1 as ``f1:<class>``; an open label set takes the gold labels seen)."""
    labels, rating = _classes(protocol)

    def compute(scores: list[SampleScore]) -> dict:
        meta = [s.score.metadata or {} for s in scores]
        valid = [m for m in meta if m.get("parsed") is not None]
        out: dict[str, float | int | None] = {"invalid": len(meta) - len(valid)}
        if rating:
            report = scoring.ratings(
                [int(m["gold"]) for m in valid], [int(m["parsed"]) for m in valid]
            )
            for key in ("mae", "exact", "within_1", "spearman"):
                out[key] = report[key]
            return out
        classes = labels or tuple(sorted({str(m["gold"]) for m in meta}))
        report = scoring.classification(
            [str(m["gold"]) for m in valid], [str(m["parsed"]) for m in valid], classes
        )
        for key in ("macro_f1", "macro_precision", "macro_recall"):
            out[key] = report[key]
        for cls, f1 in report["per_class_f1"].items():
            out[f"f1:{cls}"] = f1
        return out

    return compute


@scorer(metrics=[accuracy()])
def protocol_scorer(protocol: str):
    """Read the answer with the protocol's label parsing; 1 when it equals the gold."""
    labels, rating = _classes(protocol)

    async def score(state: TaskState, target: Target) -> Score:
        answer = state.output.completion
        gold = target.text
        if rating:
            parsed: Any = scoring.parse_rating(answer)
        else:
            parsed = scoring.parse_label(answer, labels or (gold,))
        correct = parsed is not None and str(parsed) == str(gold)
        return Score(
            value=1.0 if correct else 0.0,
            answer=None if parsed is None else str(parsed),
            explanation=None if parsed is not None else "no label could be read from the answer",
            metadata={"gold": gold, "parsed": parsed},
        )

    return score


@task(name=TASK)
def bench(
    lake: str | None = None,
    protocol: str = "kolab-1b",
    condition: str | None = None,
    version: int | None = None,
    params: dict | None = None,
    frame_width: int = 512,
) -> Task:
    """Any graphlake benchmark protocol as an inspect task (see the module docstring).

    Args:
        lake: the lake folder (default: $GRAPHLAKE_LAKE, then ./graphlake-lake).
        protocol: the protocol id (``graphlake bench list``).
        condition: the input condition (default: the protocol's first).
        version: the lake version to cut instances from (default: the newest).
        params: the protocol's parameters, e.g. ``{"k": 2}``.
        frame_width: the width, in pixels, frames of video conditions are scaled to.
    """
    dataset = samples(
        lake, protocol, condition, version=version, params=params, frame_width=frame_width
    )
    return Task(
        dataset=MemoryDataset(dataset, name=protocol),
        solver=generate(),
        scorer=protocol_scorer(protocol),
        metrics=[accuracy(), protocol_metrics(protocol)],
        name=f"graphlake-{protocol}",
        metadata={"graphlake_protocol": protocol},
    )
