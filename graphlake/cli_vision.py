"""``graphlake frames`` and ``graphlake search``: recordings indexed, then searched.

Kept apart from :mod:`graphlake.cli` so the heavy vision imports (torch, LanceDB, ONNX
Runtime) happen only when one of these commands runs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal

import typer
from rich.table import Table

from graphlake.cli_common import (
    AddressOpt,
    LakeOpt,
    ParallelEngineOpt,
    WorkersOpt,
    _lake,
    _progress,
    console,
    err_console,
    exit_when_done,
)

frames_app = typer.Typer(
    help="Screen recordings as data: sample, OCR and embed their frames "
    "into LanceDB beside the lake (vision extra).",
    no_args_is_help=True,
)
search_app = typer.Typer(
    help="Search frames by what the screen showed, or node labels and "
    "chat by what was said, with the workflow around each hit.",
    no_args_is_help=True,
)

SEARCH_FORMATS = ("table", "json")


def _clock(t: float | None) -> str:
    if t is None:
        return ""
    t = float(t)
    return f"{int(t // 3600):d}:{int(t % 3600 // 60):02d}:{t % 60:04.1f}"


@frames_app.command("index")
def frames_index(
    lake: LakeOpt = None,
    session: Annotated[
        str | None, typer.Option("--session", help="Index only this session's recordings.")
    ] = None,
    every: Annotated[
        float,
        typer.Option(
            "--every",
            help="Seconds between grid samples; scene changes in between are caught as well.",
        ),
    ] = 2.0,
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            help="OpenCLIP model for image vectors, as ARCH:TAG (e.g. "
            "ViT-B-32:laion2b_s34b_b79k, downloaded once) or ARCH:/path/checkpoint.pt; ARCH may "
            "be a model-config .json. Default: text vectors only.",
        ),
    ] = None,
    rebuild: Annotated[
        bool,
        typer.Option(
            "--rebuild", help="Forget every indexed frame and start over (e.g. for a new model)."
        ),
    ] = False,
    no_texts: Annotated[
        bool,
        typer.Option("--no-texts", help="Skip embedding node labels and chat for `search text`."),
    ] = False,
    batch: Annotated[
        int,
        typer.Option(
            "--batch",
            min=1,
            help="Frames read and written together; a kill loses at most one batch.",
        ),
    ] = 16,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
    engine: ParallelEngineOpt = "local",
    address: AddressOpt = None,
    workers: WorkersOpt = None,
):
    """Sample, read (OCR) and embed the frames of every recording in the lake.

    Frames are taken every --every seconds and when the screen changes, near-duplicates of
    the last kept frame are skipped, each kept frame is read by OCR (RapidOCR), its text
    embedded with MiniLM (and its picture with OpenCLIP given --model), and everything is
    written to LanceDB in <lake>/_frames; the frames (no vectors) also become the lake's
    `frames` table for SQL. Resumable and idempotent: rerun after a kill to continue, rerun
    on an indexed lake and nothing is added.

    --engine ray samples recordings in Ray tasks and reads frames in a pool of actors (one
    per CPU of the cluster, or --workers), each loading the models once; this process
    writes the same rows in the same order, so the index equals a local one.

    Example: graphlake frames index --lake demo/lake && graphlake search frames "churn"
    """
    from graphlake.vision.indexer import FrameIndexer

    lk = _lake(lake)
    progress = None if quiet else _progress()
    tasks: dict[str, int] = {}

    def report(what: str, done: float, total: float) -> None:
        if progress is None:
            return
        key = "texts" if what == "texts" else "video"
        if key not in tasks:
            tasks[key] = progress.add_task(
                what if key == "texts" else "frames", total=total or None
            )
        desc = "texts (label, chat)" if key == "texts" else f"frames {what}"
        progress.update(tasks[key], completed=done, total=total or None, description=desc)

    indexer = FrameIndexer(lk, every=every, model=model, batch=batch, on_progress=report)
    parallel: dict[str, Any] = {}
    if engine == "ray":
        from graphlake.cluster.frames import on_ray

        parallel["recordings_by"] = on_ray(address, workers)
    if rebuild:
        indexer.store.drop()
    if progress is not None:
        with progress:
            rep = indexer.run(session, texts=not no_texts, **parallel)
    else:
        rep = indexer.run(session, texts=not no_texts, **parallel)
    for uri in rep.missing:
        err_console.print(f"skipped: recording {uri} is not on disk", style="yellow")
    if rep.recordings == 0 and rep.texts == 0 and rep.lake_rows == 0:
        console.print(
            f"nothing new: {rep.already} recording(s) indexed already ({rep.seconds:.1f} s)"
        )
        return
    console.print(
        f"indexed {rep.recordings} recording(s) ({rep.already} already done): "
        f"{rep.frames} frames kept of {rep.checked} checked ({rep.skipped_share:.0%} skipped "
        f"as duplicates, {rep.decoded} decoded), {rep.texts} texts embedded, "
        f"{rep.lake_rows} rows added to the lake's frames table in {rep.seconds:.1f} s"
    )
    if rep.indexes:
        console.print("indexes: " + ", ".join(rep.indexes))


@frames_app.command("info")
def frames_info(lake: LakeOpt = None):
    """What is indexed: rows per table and the models that made the vectors."""
    from graphlake.vision.store import FrameStore

    store = FrameStore(_lake(lake).root)
    table = Table("table", "rows", "metadata")
    for name in ("frames", "frame_progress", "texts"):
        t = store.table(name)
        if t is None:
            continue
        meta = store.metadata(name)
        table.add_row(
            name,
            str(t.count_rows()),
            "\n".join(f"{k.removeprefix('graphlake.')}: {v}" for k, v in meta.items()),
        )
    if not table.rows:
        console.print(f"no frames indexed in {store.path}; run `graphlake frames index`")
        return
    console.print(table)


def _filters(corpus, session, t0, t1, step, actor, during_ai):
    from graphlake.search import SearchFilters

    return SearchFilters(
        corpus=corpus, session=session, t0=t0, t1=t1, step=step, actor=actor, during_ai=during_ai
    )


CorpusOpt = Annotated[str | None, typer.Option("--corpus", help="Only this corpus.")]
SessionOpt = Annotated[str | None, typer.Option("--session", help="Only this session.")]
T0Opt = Annotated[float | None, typer.Option("--t0", help="From this time (seconds).")]
T1Opt = Annotated[float | None, typer.Option("--t1", help="Before this time (seconds).")]
StepOpt = Annotated[str | None, typer.Option("--step", help="Only in this step (step_id).")]
ActorOpt = Annotated[
    Literal["human", "ai"] | None,
    typer.Option("--actor", help="Only while a node of this actor type was running."),
]
KOpt = Annotated[int, typer.Option("--k", help="How many hits.")]
SearchFormatOpt = Annotated[
    Literal[SEARCH_FORMATS], typer.Option("--format", "-f", help="json is an array of hit objects.")
]
HitsOutputOpt = Annotated[
    Path | None,
    typer.Option(
        "--output", "-o", help="Write the hits as JSON to this file instead of printing them."
    ),
]


def _print_hits(hits: list[dict], fmt: str, kind: str, output: Path | None = None) -> None:
    if output is not None:
        output.write_text(json.dumps(hits, default=str, indent=2) + "\n")
        err_console.print(f"wrote {len(hits)} {kind} hit(s) to {output}")
        return
    if fmt == "json":
        console.print_json(json.dumps(hits, default=str))
        return
    table = Table(
        "#",
        "session",
        "t",
        "score",
        "step",
        "nodes active",
        "text",
        title=f"{len(hits)} {kind} hit(s)",
    )
    for i, h in enumerate(hits, 1):
        first = (h.get("text") or "").strip().splitlines()
        table.add_row(
            str(i),
            h["session_id"],
            _clock(h.get("t")),
            f"{h['score']:.4f}",
            h.get("step_id") or "",
            "; ".join(h.get("nodes") or []),
            " / ".join(first[:3])[:100],
        )
    console.print(table)


@search_app.command("frames")
def search_frames_cmd(
    query: Annotated[str | None, typer.Argument(help="What the screen showed, in words.")] = None,
    image: Annotated[
        Path | None,
        typer.Option("--image", help="Find frames like this picture instead (a screenshot)."),
    ] = None,
    lake: LakeOpt = None,
    corpus: CorpusOpt = None,
    session: SessionOpt = None,
    t0: T0Opt = None,
    t1: T1Opt = None,
    step: StepOpt = None,
    actor: ActorOpt = None,
    during_ai: Annotated[
        bool,
        typer.Option(
            "--during-ai",
            help="Only inside an AI episode: from the prompt to the human's response.",
        ),
    ] = False,
    k: KOpt = 10,
    fmt: SearchFormatOpt = "table",
    output: HitsOutputOpt = None,
):
    """Frames whose screen matches the words (full text + meaning) or the picture.

    Each hit names its session, media, time, score, OCR text, step, the nodes running at
    that moment and the chat turn before it.

    Example: graphlake search frames "summary of sources" --actor ai --k 5 --format json
    """
    from graphlake.query.connection import Connection
    from graphlake.search import search_frames

    lk = _lake(lake)
    filters = _filters(corpus, session, t0, t1, step, actor, during_ai)
    with Connection(lk) as con:
        hits = search_frames(lk.root, con, query, image=image, filters=filters, k=k)
    _print_hits(hits, fmt, "frame", output)
    exit_when_done()


@search_app.command("text")
def search_text_cmd(
    query: Annotated[str, typer.Argument(help="Words or a paraphrase.")],
    lake: LakeOpt = None,
    corpus: CorpusOpt = None,
    session: SessionOpt = None,
    t0: T0Opt = None,
    t1: T1Opt = None,
    step: StepOpt = None,
    actor: ActorOpt = None,
    k: KOpt = 10,
    fmt: SearchFormatOpt = "table",
    output: HitsOutputOpt = None,
):
    """Node labels, node details and chat turns matching the words or their meaning.

    Example: graphlake search text "the agent summarised the sources" --corpus kolab
    """
    from graphlake.query.connection import Connection
    from graphlake.search import search_text

    lk = _lake(lake)
    filters = _filters(corpus, session, t0, t1, step, actor, False)
    with Connection(lk) as con:
        hits = search_text(lk.root, con, query, filters=filters, k=k)
    _print_hits(hits, fmt, "text", output)
    exit_when_done()
