"""`graphlake demo`: generate the demo corpus, ingest it, print the headline analyses."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from graphlake.config import samples_dir
from graphlake.demo.almanac_gen import write_almanac_corpus
from graphlake.demo.analyses import headline, run_named
from graphlake.demo.corpus import write_demo_corpus
from graphlake.demo.hasbench_gen import write_hasbench_corpus
from graphlake.lake import Lake
from graphlake.query.output import rich_table
from graphlake.vision import FRAMES_INSTALL


def run_demo(
    lake: Lake,
    corpus_dir: Path,
    *,
    sessions: int,
    seed: int,
    console: Console,
    ingest,
    frames: bool | None = None,
) -> dict:
    """Generate, ingest (with ``ingest(corpus, path)``, which also reports), and print;
    return the analyses. ``frames``: index and search the demo recording (None: when the
    vision extra is installed; it is most of the demo's time)."""
    console.rule("graphlake demo")
    if frames is None:
        frames = vision_available()
    # the recording is rendered only to be indexed: without frames it is skipped too
    kolab_dir = write_demo_corpus(corpus_dir, sessions=sessions, seed=seed, recording=frames)
    console.print(f"generated {sessions} Kolab sessions (seed {seed}) in {kolab_dir}")
    ingest("kolab", kolab_dir)
    res = headline(lake)
    console.rule("AI retention by sector (Kolab Figure 3c)")
    ret = res["retention"].select(
        [
            "domain",
            "n_responses",
            "retention_adopt",
            "retention_modify",
            "reject_rate",
            "median_delay_adopt_s",
            "median_delay_modify_s",
            "median_delay_reject_s",
        ]
    )
    console.print(
        rich_table(
            ret.rename_columns(
                [
                    "domain",
                    "n",
                    "R_A",
                    "R_M",
                    "rejected",
                    "delay adopt s",
                    "delay modify s",
                    "delay reject s",
                ]
            )
        )
    )
    console.rule("Collaboration dynamics (Kolab 4.3)")
    console.print("#1 " + res["burst_vs_lead"].describe())
    console.print("#2 " + res["w_vs_rating"].describe())
    cols = [
        "session_id",
        "burstiness",
        "solo_lead_in",
        "topology_w",
        "collaboration_rating",
        "retention_adopt",
        "retention_modify",
    ]
    table = (
        res["metrics"]
        .select(cols)
        .slice(0, 8)
        .rename_columns(["session", "B", "solo lead-in", "W", "collab rating", "R_A", "R_M"])
    )
    console.print(rich_table(table, title="collab_metrics (first 8 sessions)"))
    console.rule("Generated HAS-Bench and Almanac corpora")
    for corpus, folder in (
        ("hasbench", write_hasbench_corpus(corpus_dir, seed=seed)),
        ("almanac", write_almanac_corpus(corpus_dir, seed=seed)),
    ):
        ingest(corpus, folder)
    rescue = run_named("has_rescue", lake, from_condition="A1", to_condition="A3")
    console.print(
        rich_table(
            rescue.select(["domain", "failed_before", "rescued", "broken", "rescue_rate"]),
            title="HAS rescue rate, A1 -> A3 (HAS-Bench Table 4)",
        )
    )
    progress = run_named("almanac_alignment_progress", lake)
    console.print(rich_table(progress, title="Almanac alignment over task progress (Fig. 4)"))
    show_traces(corpus_dir, seed, console, ingest)
    samples = shared_samples()
    if samples:
        console.rule("Real public samples")
        for corpus, path in samples:
            ingest(corpus, path)
    if frames:
        search_recording(lake, console)
    elif not vision_available():
        console.print(
            f"frames: install the frames extra ({FRAMES_INSTALL}) to "
            "index and search the demo recording",
            style="dim",
        )
    else:
        console.print(
            "frames: skipped (--no-frames), and with them the demo's screen "
            "recording; run the demo again without --no-frames for both",
            style="dim",
        )
    console.rule("Every corpus in one lake")
    overview = run_named("corpus_overview", lake).select(
        [
            "corpus",
            "sessions",
            "scenarios",
            "events",
            "human_share",
            "adoption_rate",
            "modification_rate",
            "success_rate",
        ]
    )
    console.print(
        rich_table(
            overview.rename_columns(
                ["corpus", "sessions", "tasks", "events", "human", "R_A", "R_M", "success"]
            )
        )
    )
    console.print(
        f'\nlake: {lake.root}\nnext: graphlake sql "SELECT label, count(*) FROM '
        f'adoptions GROUP BY 1" --lake {lake.root}\n'
        + (
            f'      graphlake search frames "summary of sources" --lake {lake.root}\n'
            if frames
            else ""
        )
        + f"      graphlake serve --lake {lake.root}   (then open "
        "http://127.0.0.1:8000/ for the workbench, or run python "
        "docs/examples/evaluate_majority.py)"
    )
    return res


def show_traces(corpus_dir: Path, seed: int, console: Console, ingest) -> None:
    """Write and ingest one agent trace of each family ``ingest traces`` reads, saying which
    library wrote each (the real one where installed)."""
    import pyarrow as pa

    from graphlake.demo.traces import write_demo_traces

    console.rule("Agent traces, one of each family (docs/traces.md)")
    root, written = write_demo_traces(corpus_dir, seed=seed)
    console.print(
        rich_table(
            pa.table(
                {
                    "family": [w[0] for w in written],
                    "file": [str(w[1].relative_to(root)) for w in written],
                    "written by": [w[2] for w in written],
                }
            )
        )
    )
    ingest("traces", root)


def vision_available() -> bool:
    from graphlake.vision import frames_available

    return frames_available()


#: The demo's frame searches: the words on the screen, and the same moment paraphrased.
DEMO_SEARCHES = ("summary of sources", "the assistant condensed the interviews and reports")


def search_recording(lake: Lake, console: Console) -> list[list[dict]]:
    """Index the demo recording (sample, OCR, embed) and print two searches with context."""
    from graphlake.query.connection import Connection
    from graphlake.search import search_frames
    from graphlake.vision.indexer import FrameIndexer

    console.rule("Screen recording: frames read, embedded and searched")
    with _progress(console) as progress:
        task = progress.add_task("frames", total=None)
        rep = FrameIndexer(
            lake,
            on_progress=lambda what, done, total: progress.update(
                task, completed=done, total=total or None, description=what
            ),
        ).run()
    console.print(
        f"indexed {rep.recordings} recording(s): {rep.frames} frames kept of "
        f"{rep.checked} checked ({rep.skipped_share:.0%} skipped as duplicates), "
        f"{rep.texts} labels and chat turns embedded ({rep.seconds:.0f} s)"
    )
    results = []
    with Connection(lake) as con:
        for query in DEMO_SEARCHES:
            hits = search_frames(lake.root, con, query, k=3)
            results.append(hits)
            rows = [
                {
                    "t": f"{int(h['t'] // 60)}:{int(h['t'] % 60):02d}",
                    "score": round(h["score"], 4),
                    "step": h["step_id"],
                    "nodes running": "; ".join(h["nodes"]),
                    "chat before": (h["chat_before"] or {}).get("text"),
                    "screen": " / ".join((h["text"] or "").splitlines()[1:3]),
                }
                for h in hits
            ]
            import pyarrow as pa

            console.print(
                rich_table(pa.Table.from_pylist(rows), title=f'graphlake search frames "{query}"')
            )
    return results


def _progress(console: Console):
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    return Progress(
        TextColumn("{task.description}", markup=False),
        BarColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=True,
    )


#: Real samples that ship beside the project (../shared/data), by ingestor.
SAMPLE_FOLDERS = {"tau2": "tau2", "coauthor": "coauthor", "maptask": "gmmt", "marble": "marble"}


def shared_samples() -> list[tuple[str, Path]]:
    """(ingestor, folder) for each real sample folder found (see config.samples_dir)."""
    root = samples_dir()
    if root is None:
        return []
    return [(c, root / f) for c, f in SAMPLE_FOLDERS.items() if (root / f).is_dir()]
