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


def run_demo(lake: Lake, corpus_dir: Path, *, sessions: int, seed: int, console: Console,
             ingest) -> dict:
    """Generate, ingest (with ``ingest(corpus, path)``, which also reports), and print;
    return the analyses."""
    console.rule("[bold]graphlake demo")
    kolab_dir = write_demo_corpus(corpus_dir, sessions=sessions, seed=seed)
    console.print(f"generated {sessions} Kolab sessions (seed {seed}) in {kolab_dir}")
    ingest("kolab", kolab_dir)
    res = headline(lake)
    console.rule("[bold]AI retention by sector (Kolab Figure 3c)")
    ret = res["retention"].select(["domain", "n_responses", "retention_adopt",
                                   "retention_modify", "reject_rate", "median_delay_adopt_s",
                                   "median_delay_modify_s", "median_delay_reject_s"])
    console.print(rich_table(ret.rename_columns(["domain", "n", "R_A", "R_M", "rejected",
                                                 "delay adopt s", "delay modify s",
                                                 "delay reject s"])))
    console.rule("[bold]Collaboration dynamics (Kolab 4.3)")
    console.print("#1 " + res["burst_vs_lead"].describe())
    console.print("#2 " + res["w_vs_rating"].describe())
    cols = ["session_id", "burstiness", "solo_lead_in", "topology_w", "collaboration_rating",
            "retention_adopt", "retention_modify"]
    table = res["metrics"].select(cols).slice(0, 8).rename_columns(
        ["session", "B", "solo lead-in", "W", "collab rating", "R_A", "R_M"])
    console.print(rich_table(table, title="collab_metrics (first 8 sessions)"))
    console.rule("[bold]Generated HAS-Bench and Almanac corpora")
    for corpus, folder in (("hasbench", write_hasbench_corpus(corpus_dir, seed=seed)),
                           ("almanac", write_almanac_corpus(corpus_dir, seed=seed))):
        ingest(corpus, folder)
    rescue = run_named("has_rescue", lake, from_condition="A1", to_condition="A3")
    console.print(rich_table(rescue.select(["domain", "failed_before", "rescued", "broken",
                                            "rescue_rate"]),
                             title="HAS rescue rate, A1 -> A3 (HAS-Bench Table 4)"))
    progress = run_named("almanac_alignment_progress", lake)
    console.print(rich_table(progress, title="Almanac alignment over task progress (Fig. 4)"))
    samples = shared_samples()
    if samples:
        console.rule("[bold]Real public samples")
        for corpus, path in samples:
            ingest(corpus, path)
    console.rule("[bold]Every corpus in one lake")
    overview = run_named("corpus_overview", lake).select(
        ["corpus", "sessions", "scenarios", "events", "human_share", "adoption_rate",
         "modification_rate", "success_rate"])
    console.print(rich_table(overview.rename_columns(
        ["corpus", "sessions", "tasks", "events", "human", "R_A", "R_M", "success"])))
    console.print(f"\nlake: {lake.root}\nnext: graphlake sql \"SELECT label, count(*) FROM "
                  f"adoptions GROUP BY 1\" --lake {lake.root}\n"
                  f"      graphlake serve --lake {lake.root}   (then python "
                  "docs/examples/evaluate_majority.py)")
    return res


#: Real samples that ship beside the project (../shared/data), by ingestor.
SAMPLE_FOLDERS = {"tau2": "tau2", "coauthor": "coauthor", "maptask": "gmmt", "marble": "marble"}


def shared_samples() -> list[tuple[str, Path]]:
    """(ingestor, folder) for each real sample folder found (see config.samples_dir)."""
    root = samples_dir()
    if root is None:
        return []
    return [(c, root / f) for c, f in SAMPLE_FOLDERS.items() if (root / f).is_dir()]
