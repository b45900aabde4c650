"""The ``graphlake`` command line: ingest, sql, query, lake, schema, demo.

Every command takes ``--lake DIR`` (default: ``$GRAPHLAKE_LAKE`` or the user data directory).
Errors graphlake raises on purpose are printed as one line that says what to do next.
"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path
from typing import Annotated, Literal

import typer
import typer.core
from rich.table import Table

app = typer.Typer(
    help="graphlake: one lake for human-agent collaboration corpora.\n\n"
    "Ingest source files into versioned tables, query them with SQL and named queries, "
    "and compute the collaboration metrics the papers define.\n\n"
    'Start with `graphlake demo`, then try `graphlake sql "SELECT * FROM adoptions '
    'LIMIT 5"`.',
    no_args_is_help=True,
    rich_markup_mode="rich",
    pretty_exceptions_enable=False,
)
query_app = typer.Typer(
    help="Named queries shipped in queries/ (list, show, run).", no_args_is_help=True
)
lake_app = typer.Typer(
    help="Inspect and maintain the lake (info, history, fingerprint, compact, refresh, repair).",
    no_args_is_help=True,
)


def _print_version(value: bool) -> None:
    if value:
        import graphlake

        typer.echo(f"graphlake {graphlake.__version__}")
        raise typer.Exit()


@app.callback()
def _top(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_print_version,
            is_eager=True,
            help="Print graphlake's version and exit. (To read lake version N, pass --at N to a "
            "command, e.g. `graphlake sql ... --at 3`.)",
        ),
    ] = False,
) -> None:
    """graphlake: one lake for human-agent collaboration corpora."""


schema_app = typer.Typer(
    help="The canonical schema (export JSON Schema files).", no_args_is_help=True
)
app.add_typer(query_app, name="query")
app.add_typer(lake_app, name="lake")
app.add_typer(schema_app, name="schema")
export_app = typer.Typer(
    help="Export lake data for other tools (GraphML, DOT, OCEL 2.0).", no_args_is_help=True
)
app.add_typer(export_app, name="export")

from graphlake.cli_common import (  # noqa: E402,I001
    AddressOpt,
    LakeOpt,
    ParallelEngineOpt,
    WorkersOpt,
    _lake,
    _progress,
    console,
    err_console,
    exit_when_done,
    run_app,
    usage_error,
)
from graphlake.errors import LakeNotFoundError  # noqa: E402
from graphlake.config import OUTPUT_FORMATS  # noqa: E402

VersionOpt = Annotated[
    int | None,
    typer.Option(
        "--at",
        metavar="VERSION",
        help="Read this lake version instead of the "
        "latest (time travel; see `graphlake lake history`).",
    ),
]
FormatOpt = Annotated[
    Literal[OUTPUT_FORMATS],
    typer.Option(
        "--format",
        "-f",
        help="Output format: json is an array of row objects; parquet needs -o or a pipe.",
    ),
]
OutputOpt = Annotated[
    Path | None,
    typer.Option("--output", "-o", help="Write the result to this file instead of stdout."),
]
MaxRowsOpt = Annotated[
    int, typer.Option("--max-rows", help="Return at most this many rows (0 for no cap).")
]
TimeoutOpt = Annotated[
    float,
    typer.Option(
        "--timeout", help="Stop a query that runs longer than this many seconds (0 for none)."
    ),
]
DialectOpt = Annotated[
    str | None,
    typer.Option(
        "--dialect",
        help="With --transpile-only: print the SQL rewritten for this dialect "
        "(spark, postgres, trino, ...).",
    ),
]
TranspileOpt = Annotated[
    bool, typer.Option("--transpile-only", help="Print the transpiled SQL instead of running it.")
]
EngineOpt = Annotated[
    Literal["duckdb", "spark"],
    typer.Option(
        "--engine",
        help="duckdb runs in-process; spark "
        "runs PySpark over the same lake files (needs the spark extra and Java 17; local[2] unless "
        "$GRAPHLAKE_SPARK_MASTER).",
    ),
]


def _emit(table, fmt: str, output: Path | None, truncated: bool, max_rows: int) -> None:
    from graphlake.query.output import write

    if fmt == "parquet" and output is None and sys.stdout.isatty():
        usage_error("parquet is binary: pass --output FILE or redirect stdout")
    write(table, fmt, output, console)
    if truncated:
        from graphlake.tabular import note_truncated

        note_truncated(max_rows, err_console)


# -- ingest ----------------------------------------------------------------------------------
@app.command()
def ingest(
    corpus: Annotated[
        str,
        typer.Argument(
            help="Ingestor: kolab, tau2, coauthor, maptask, marble, hasbench, almanac, traces "
            "(agent traces, sniffed per file; otel, langfuse, inspect, sweagent or openhands "
            "forces one), a shipped mapping (chatarena, agentbench, taubench, minisweagent, "
            "openhands_eval, harbor_atif; `graphlake mapping list`), or auto: each file's "
            "ingestor picked from its structure (files nothing reads go to `unmatched`: one "
            "reject each). With --mapping, PATH alone."
        ),
    ],
    path: Annotated[Path | None, typer.Argument(help="File or folder to ingest.")] = None,
    mapping: Annotated[
        Path | None,
        typer.Option(
            "--mapping",
            "-m",
            help="Read PATH with this mapping file (docs/mappings.md): "
            "`graphlake ingest --mapping mylab.yaml ./logs`.",
            exists=True,
            dir_okay=False,
        ),
    ] = None,
    lake: LakeOpt = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
    no_refresh: Annotated[
        bool,
        typer.Option(
            "--no-refresh",
            help="Leave the materialized views (adoptions, adoption_chains, "
            "co_occurrences) for a later `graphlake lake refresh`, e.g. between the runs of a bulk "
            "load. Queries stay correct meanwhile: they compute those views from their SQL.",
        ),
    ] = False,
    prune: Annotated[
        bool,
        typer.Option(
            "--prune",
            help="Also delete the sessions (and tasks, runs) read earlier from files "
            "under PATH that are no longer there. Without it, a source that is gone stays.",
        ),
    ] = False,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Read every file even when all are as the last ingest of PATH read them "
            "(by size, time and content hash); without it such a source is not read again.",
        ),
    ] = False,
    engine: ParallelEngineOpt = "local",
    address: AddressOpt = None,
    workers: WorkersOpt = None,
):
    """Ingest PATH with the CORPUS ingestor as one new lake version, then refresh the
    materialized views for the sessions it added to (a second version).

    Prints, per table, how many records were accepted, how many of those were new to the lake
    (re-ingesting the same files adds nothing), and how many were rejected. Rejected records
    are kept with their raw payload and a reason: `graphlake sql "SELECT * FROM rejects"`.

    A session whose source changed since it was ingested (a row edited, added or gone) is
    replaced whole, in the same lake version; `graphlake sql --at N` still reads it as
    it was. A source whose files are all unchanged since the last ingest of the same PATH
    is not read at all (--force reads it).

    --engine ray parses the files in Ray tasks (the ray extra), on the cluster at --address
    or on one started here; the lake version it commits is the one a local ingest commits.

    `graphlake ingest auto PATH` picks, per file, the built-in ingestor or mapping whose
    detector matches its structure, says which, and ingests each group; a file nothing
    matches is one reject saying what was tried.

    Example: graphlake ingest kolab ./recordings --engine ray --address 10.0.0.5:6379
    """
    from graphlake import ingest as ingestors
    from graphlake.errors import UnknownCorpusError

    if mapping is not None:
        if path is not None:
            usage_error("with --mapping, give PATH alone: graphlake ingest --mapping FILE PATH")
        path, corpus = Path(corpus), _use_mapping(mapping)
    elif path is None:
        usage_error(f"give the PATH to ingest: graphlake ingest {corpus} PATH")
    if path.is_dir() and engine == "local":  # many files, likely: the forkserver starts now
        from graphlake.workers import start_early

        start_early()
    if corpus == "auto":
        ingest_auto(path, _lake(lake), quiet=quiet, refresh=not no_refresh, force=force)
        return
    try:
        ingestors.get(corpus)
    except UnknownCorpusError as exc:  # a wrong name is a usage mistake: exit 2, with usage
        usage_error(str(exc))
    ingest_and_report(
        corpus, path, _lake(lake), quiet=quiet, refresh=not no_refresh, prune=prune, force=force,
        parallel={"engine": engine, "address": address, "workers": workers},
    )  # fmt: skip


def _use_mapping(mapping: Path) -> str:
    from graphlake import ingest as ingestors
    from graphlake.ingest.mapping import MappingError

    try:
        return ingestors.use_mapping(mapping)
    except MappingError as exc:
        err_console.print(str(exc), style="red", highlight=False)
        raise typer.Exit(1) from None


def ingest_auto(path: Path, lk, *, quiet: bool, refresh: bool, force: bool) -> None:
    """``ingest auto``: every file's ingestor from its structure, each group ingested."""
    from graphlake.ingest.auto import UNMATCHED, choose

    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist; give a file or a folder")
    choice = choose(path)
    for name, files in sorted(choice.by_ingestor.items()):
        err_console.print(f"auto: {len(files)} file(s) read as {name}", highlight=False)
    if choice.unmatched:
        err_console.print(
            f"auto: {len(choice.unmatched)} file(s) match no ingestor (each becomes a reject); "
            f"tried {'; '.join(choice.tried)}",
            style="yellow",
            highlight=False,
        )
    groups = sorted(choice.by_ingestor.items())
    if choice.unmatched:
        groups.append((UNMATCHED, choice.unmatched))
    for name, files in groups:
        ingest_and_report(name, path, lk, quiet=quiet, refresh=False, force=force, only=files)
    if refresh and lk.exists():
        rep = _refresh(lk)
        if rep.snapshot is not None:
            print_refresh_report(rep)


def ingest_and_report(
    corpus: str,
    path: Path,
    lk,
    *,
    quiet: bool = False,
    refresh: bool = True,
    prune: bool = False,
    force: bool = False,
    parallel: dict | None = None,
    only: list[Path] | None = None,
):
    """Ingest, print the report, refresh the materialized views; return (stats, snapshot).
    ``parallel``: ``engine``, ``address`` and ``workers`` for :func:`ingest_path`; ``only``:
    just these files of ``path``."""
    stats, snap = _run_ingest(
        corpus, path, lk, quiet, prune, force, {**(parallel or {}), "only": only}
    )
    print_ingest_report(corpus, stats, snap, lk)
    if refresh and lk.exists():
        # also when this run added nothing: it finishes a refresh a killed run left
        rep = _refresh(lk)
        if snap is not None or rep.snapshot is not None:
            print_refresh_report(rep)
    if corpus in ("inspect", "traces") and lk.exists():  # also a log ingested before
        _save_eval_runs(lk)
    return stats, snap


def _save_eval_runs(lk) -> None:
    """inspect logs of graphlake's own task are also evaluation runs (eval_runs)."""
    from graphlake.protocols.eval_logs import import_eval_runs

    done = import_eval_runs(lk)
    for run in done.saved:
        rep = run["report"]
        headline = (
            f"MAE {rep['mae']:.3f}"
            if rep.get("mae") is not None
            else f"macro F1 {rep['macro_f1']:.3f}"
            if rep.get("macro_f1") is not None
            else "no valid answers"
        )
        err_console.print(
            f"saved eval run {run['run_id']}: {run['model']} on {run['protocol']} "
            f"({run['condition']}), {headline} over {rep['n_instances']} instances; "
            "compare with `graphlake query run eval_runs`"
        )
    for why in done.skipped:
        err_console.print(f"not scored: {why}", style="yellow")


def _run_ingest(corpus: str, path: Path, lk, quiet: bool, prune: bool, force: bool, parallel: dict):
    from graphlake.pipeline import ingest_path

    if quiet:
        return ingest_path(corpus, path, lk, prune=prune, force=force, **parallel)
    with _progress(transient=True) as progress:
        task = progress.add_task(f"ingest {corpus}", total=None)

        def tick(done, total, _path):
            progress.update(task, completed=done, total=total)

        return ingest_path(corpus, path, lk, on_unit=tick, prune=prune, force=force, **parallel)


def _refresh(lk, full: bool = False):
    from graphlake.lake.derived import refresh

    return refresh(lk, full=full)


def print_refresh_report(rep) -> None:
    if rep.snapshot is None:
        console.print("materialized views: already up to date")
        return
    made = ", ".join(f"{name} {n:,} rows" for name, n in rep.rows.items())
    n = rep.sessions
    which = "every session" if n is None else f"{n:,} session{'' if n == 1 else 's'}"
    console.print(
        f"materialized views refreshed for {which} in {rep.seconds:.1f} s ({made}); "
        f"committed lake version {rep.snapshot.lake_version}"
    )
    if rep.crowded:
        err_console.print(
            f"note: {rep.crowded:,} session{'' if rep.crowded == 1 else 's'} left out of "
            "co_occurrences: more overlapping pairs than $GRAPHLAKE_CO_OCCURRENCE_CAP allows "
            "(see the co_occurrence_overflow view; window_nodes() reads their overlaps)"
        )


def print_ingest_report(corpus, stats, snap, lk) -> None:
    from graphlake.schema import TABLES

    if stats.unchanged_units and stats.unchanged_units == stats.units:
        console.print(
            f"{corpus}: nothing new: all {stats.unchanged_units:,} source units are as the "
            f"last ingest of this path read them (size, time, content hash), so none was read; "
            f"lake {lk.root} stays at version {lk.snapshot().lake_version} (--force reads "
            "them again)",
            highlight=False,
        )
        return

    t = Table(title=f"{corpus}: {stats.units} source units", header_style="bold")
    cols = ("table", "accepted", "new", "rejected") + (("removed",) if stats.removed else ())
    for col in cols:
        t.add_column(col, justify="left" if col == "table" else "right")
    for name in TABLES:
        if name == "rejects":
            continue
        a, n, r, d = (
            stats.accepted[name],
            stats.added[name],
            stats.rejected[name],
            stats.removed[name],
        )
        if a or r or d:
            t.add_row(
                name,
                str(a),
                str(n),
                str(r) if r else "",
                *((str(d) if d else "",) if stats.removed else ()),
            )
    console.print(t)
    if stats.replaced_sessions or stats.pruned_sessions:

        def n(k: int) -> str:
            return f"{k} session{'' if k == 1 else 's'}"

        console.print(
            f"{n(stats.replaced_sessions)} replaced (their source changed), "
            f"{n(stats.pruned_sessions)} pruned (their source is gone); older lake "
            "versions still hold them"
        )
    if stats.unchanged_units:
        console.print(
            f"{stats.unchanged_units:,} of {stats.units:,} source units are as the last ingest "
            "of this path read them and were not read again (--force reads them)",
            highlight=False,
        )
    if stats.skipped:
        names = sorted({Path(p).name for p in stats.skipped})
        console.print(
            f"{len(stats.skipped)} non-data files skipped ({', '.join(names[:5])}"
            f"{', ...' if len(names) > 5 else ''})",
            highlight=False,
        )
    total_rej = sum(stats.rejected.values())
    if snap is None:
        console.print(f"nothing new: lake {lk.root} stays at version {lk.snapshot().lake_version}")
    else:
        console.print(f"committed lake version {snap.lake_version} at {lk.root}")
    if total_rej:
        console.print(
            f"{total_rej} records rejected; see them with: graphlake sql "
            f'"SELECT source_file, record_ref, reason FROM rejects WHERE corpus = '
            f"'{corpus}'\"",
            highlight=False,
            style="yellow",
        )
    for other, n in sorted(stats.elsewhere.items()):
        console.print(
            f"{n} of the files here look like {other} data, not {corpus}: ingest them with "
            f"graphlake ingest {other} <their folder>",
            highlight=False,
            style="yellow",
        )


# -- sql -------------------------------------------------------------------------------------
class _CatalogHelp(typer.core.TyperCommand):
    """A command whose help lists the lake's views from the catalog itself, built only when
    the help is shown (the schema imports PyArrow, which the CLI does not load to start)."""

    def format_help(self, ctx, formatter):
        from graphlake.schema import TABLES
        from graphlake.schema.views import DERIVED_VIEWS

        base = ", ".join(t for t in TABLES)
        derived = ", ".join(DERIVED_VIEWS)
        self.help = (self.help or "").replace(
            "{views}",
            f"Views: {base} (columns in schemas/*.schema.json), and the derived {derived} "
            "(SQL in queries/views/).",
        )
        return super().format_help(ctx, formatter)


@app.command(cls=_CatalogHelp)
def sql(
    statement: Annotated[str, typer.Argument(help="One read-only SQL statement (DuckDB dialect).")],
    lake: LakeOpt = None,
    version: VersionOpt = None,
    fmt: FormatOpt = "table",
    output: OutputOpt = None,
    dialect: DialectOpt = None,
    transpile_only: TranspileOpt = False,
    max_rows: MaxRowsOpt = 100_000,
    timeout: TimeoutOpt = 300.0,
    engine: EngineOpt = "duckdb",
):
    """Run one read-only SQL statement over the lake's views.

    {views} Statements are parsed by sqlglot first: only reads pass, and unknown tables or
    columns get a "did you mean".

    Graph patterns stand where a table can (see docs/patterns.md):

      graphlake sql "SELECT * FROM GRAPH_TABLE (MATCH (p:human)-[:next]->{1,3}(x:ai))"

    Graph primitives are table functions: descendants, ancestors, neighborhood,
    window_nodes, step_nodes, cycles; allen() names the interval relation of two occurrences.

    Example: graphlake sql "SELECT label, count(*) FROM adoptions GROUP BY 1" --format json
    """
    _run_statement(
        statement,
        None,
        lake,
        version,
        fmt,
        output,
        dialect,
        transpile_only,
        max_rows,
        timeout,
        engine,
    )


def _run_statement(
    statement: str,
    params: dict | None,
    lake,
    version,
    fmt,
    output,
    dialect,
    transpile_only: bool,
    max_rows: int,
    timeout: float,
    engine: str = "duckdb",
) -> None:
    """What `sql` and `query run` share: transpile only, or run guarded and print."""
    from graphlake.query import guard, run_sql, transpile

    if transpile_only:
        guard.parse(statement)
        typer.echo(transpile(statement, dialect or "duckdb", params))
        return
    if dialect:
        usage_error(
            "--dialect only applies with --transpile-only; to run on Spark use --engine spark"
        )
    if engine == "spark":
        from graphlake.query.spark import run_sql_spark

        res = run_sql_spark(
            statement, _lake(lake), version=version, params=params, max_rows=max_rows or None
        )
    else:
        res = run_sql(
            statement,
            _lake(lake),
            version=version,
            params=params,
            max_rows=max_rows or None,
            timeout_s=timeout or None,
        )
    _emit(res.table, fmt, output, res.truncated, max_rows)


# -- named queries ---------------------------------------------------------------------------
@query_app.command("list")
def query_list(fmt: FormatOpt = "table", output: OutputOpt = None, lake: LakeOpt = None):
    """List the named queries with their parameters."""
    import pyarrow as pa

    from graphlake.query import named

    qs = named.load_all()
    rows = [
        {
            "name": q.name,
            "title": q.title,
            "params": ", ".join(
                f"{p.name}:{p.type}" + ("" if p.required else "?") for p in q.params
            ),
        }
        for q in qs.values()
    ]
    _emit(pa.Table.from_pylist(rows), fmt, output, False, 0)
    exit_when_done()


@query_app.command("show")
def query_show(
    name: Annotated[str, typer.Argument(help="Named query.")], dialect: DialectOpt = None
):
    """Print a named query's SQL (optionally transpiled with --dialect spark)."""
    from graphlake.query import named, transpile

    q = named.get(name)
    typer.echo(transpile(q.sql, dialect) if dialect else q.sql)


@query_app.command("run")
def query_run(
    name: Annotated[str, typer.Argument(help="Named query (see `graphlake query list`).")],
    param: Annotated[
        list[str] | None,
        typer.Option("--param", "-p", help="Parameter as NAME=VALUE; repeat for several."),
    ] = None,
    lake: LakeOpt = None,
    version: VersionOpt = None,
    fmt: FormatOpt = "table",
    output: OutputOpt = None,
    dialect: DialectOpt = None,
    transpile_only: TranspileOpt = False,
    max_rows: MaxRowsOpt = 100_000,
    timeout: TimeoutOpt = 300.0,
    engine: EngineOpt = "duckdb",
):
    """Run a named query, e.g. `graphlake query run collab_metrics -p corpus=kolab`."""
    from graphlake.query import named

    q = named.get(name)
    given = {}
    for item in param or []:
        if "=" not in item:
            raise named.NamedQueryError(f"--param {item!r}: write NAME=VALUE")
        k, v = item.split("=", 1)
        given[k.strip()] = v
    values = q.bind(given)
    if not transpile_only:  # what the user named (a default names what the query is for)
        _check_named_values(lake, version, {k: values[k] for k in given if k in values})
    _run_statement(
        q.sql,
        values,
        lake,
        version,
        fmt,
        output,
        dialect,
        transpile_only,
        max_rows,
        timeout,
        engine,
    )


#: Parameters that name a value of a sessions column: a value the lake does not hold would
#: give an empty answer that looks like a finding, so it is an error that lists what exists.
_NAMING_PARAMS = ("corpus", "domain", "condition")


def _distinct_session_values_sql(column: str) -> str:
    """``SELECT DISTINCT <column> AS v FROM sessions``, the column a quoted identifier."""
    from sqlglot import exp

    return (
        exp.select(exp.alias_(exp.column(column, quoted=True), "v"))
        .distinct()
        .from_("sessions")
        .sql("duckdb")
    )


def _check_named_values(lake, version, values: dict) -> None:
    import difflib

    from graphlake.query import named, run_sql

    asked = {k: v for k, v in values.items() if k in _NAMING_PARAMS and isinstance(v, str)}
    if not asked:
        return
    lk = _lake(lake)
    for column, value in asked.items():
        distinct = _distinct_session_values_sql(column)
        have = run_sql(distinct, lk, version=version).table.column("v").to_pylist()
        if value not in have:
            known = sorted(str(v) for v in have if v is not None)
            close = difflib.get_close_matches(value, known, n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise named.NamedQueryError(
                f"-p {column}={value}: the lake has no sessions with {column} {value!r}, so "
                f"the answer would be empty.{hint} Values: {', '.join(known) or '(none)'}"
            )


@query_app.command("lint")
def query_lint(
    names: Annotated[
        list[str] | None, typer.Argument(help="Named queries to check (all when omitted).")
    ] = None,
    sql_text: Annotated[
        str | None, typer.Option("--sql", help="Check this statement instead of named queries.")
    ] = None,
):
    """Check that queries are portable to Spark: constructs Spark rejects or reads
    differently (ASOF joins, WITH ORDINALITY, epoch(), functions Spark lacks) are listed with
    their reason; ordered list aggregation is listed as rewritten. Exit 1 if any query
    cannot run on Spark."""
    from graphlake.query import named
    from graphlake.query.portable import lint

    items = (
        [("--sql", sql_text)]
        if sql_text
        else [(q.name, q.sql) for q in named.load_all().values() if not names or q.name in names]
    )
    if names and not sql_text:
        for n in names:
            named.get(n)  # unknown names get a did-you-mean
    blocked = 0
    for name, text in items:
        findings = lint(text)
        bad = [f for f in findings if not f.rewritten]
        blocked += bool(bad)
        from rich.text import Text

        mark = ("not portable", "red") if bad else ("portable", "green")
        console.print(Text.assemble(f"{name}: ", mark), highlight=False)
        for f in findings:
            console.print(f"  {f}", highlight=False)
    if blocked:
        raise typer.Exit(1)


# -- lake ------------------------------------------------------------------------------------
@lake_app.command("info")
def lake_info(
    lake: LakeOpt = None,
    version: VersionOpt = None,
    fmt: FormatOpt = "table",
    output: OutputOpt = None,
):
    """Tables at a lake version: Delta version, rows, files, bytes."""
    import pyarrow as pa

    from graphlake.lake.maintenance import table_info

    lk = _lake(lake)
    snap = lk.snapshot(version)
    rows = [vars(i) for i in table_info(lk, snap)]
    if fmt == "table":
        when = f"{snap.committed_at:%Y-%m-%d %H:%M:%S}" if snap.committed_at else ""
        detail = f" ({snap.operation} {snap.corpus or ''} {when} UTC)" if when else " (empty)"
        err_console.print(f"lake {lk.root} at version {snap.lake_version}{detail}")
    _emit(pa.Table.from_pylist(rows), fmt, output, False, 0)


@lake_app.command("fingerprint")
def lake_fingerprint(
    lake: LakeOpt = None,
    version: VersionOpt = None,
    fmt: FormatOpt = "table",
    output: OutputOpt = None,
):
    """Each table's row count and a SHA-256 of its rows (sorted): two lakes, or two
    versions, with equal fingerprints hold the same rows, whatever files and history they
    have. Example: compare a local ingest with one on Ray."""
    import pyarrow as pa

    from graphlake.lake.fingerprint import fingerprint

    lk = _lake(lake)
    prints = fingerprint(lk, version)
    rows = [{"table": name, "rows": p.rows, "sha256": p.sha256} for name, p in prints.items()]
    _emit(pa.Table.from_pylist(rows), fmt, output, False, 0)


@lake_app.command("history")
def lake_history(lake: LakeOpt = None, fmt: FormatOpt = "table", output: OutputOpt = None):
    """Every lake version: when, what operation, which corpus and source, whether it can
    still be read (a vacuum deletes the files of versions older than its retention), rows
    added and rows removed (a re-ingest that replaced changed sessions or pruned gone ones)."""
    import json

    import pyarrow as pa

    lk = _lake(lake)
    vac = lk.vacuum_record()
    snaps = lk.snapshots()
    rows = [
        {
            "version": s.lake_version,
            "committed_at": s.committed_at,
            "operation": s.operation,
            "corpus": s.corpus,
            "source": s.source,
            "readable": vac is None or s.lake_version >= vac["readable_from"] or s is snaps[-1],
            "rows_added": sum(s.rows_added.values()),
            "rows_removed": sum(s.rows_removed.values()),
            "detail": json.dumps(
                {"added": s.rows_added, "removed": s.rows_removed}
                if s.rows_removed
                else s.rows_added
            ),
        }
        for s in snaps
    ]
    _emit(
        pa.Table.from_pylist(rows) if rows else pa.table({"version": pa.array([], pa.int64())}),
        fmt,
        output,
        False,
        0,
    )


@lake_app.command("compact")
def lake_compact(
    lake: LakeOpt = None,
    vacuum: Annotated[
        bool,
        typer.Option(
            "--vacuum",
            help="Then delete the files that no lake version of the last "
            "--retain-hours uses. Versions older than that can no longer be read; the current "
            "one always can.",
        ),
    ] = False,
    retain_hours: Annotated[
        int,
        typer.Option(
            "--retain-hours",
            min=0,
            help="With --vacuum: keep every version committed in the "
            "last this many hours readable (readers still on them are safe).",
            show_default=True,
        ),
    ] = 168,
):
    """Rewrite many small Parquet files into few large ones (a new lake version, same rows).

    The new version is committed before anything is deleted, and a vacuum only deletes files
    outside the retention window, so a compaction or vacuum killed at any point leaves a lake
    that reads at its last version. `graphlake lake history` says which versions can be read.
    """
    from graphlake.lake.maintenance import compact

    snap, report = compact(_lake(lake), vacuum=vacuum, retain_hours=retain_hours)
    for name, r in report.items():
        console.print(
            f"{name}: {r['files_removed']} files -> {r['files_added']}"
            + (f", {r['vacuumed']} vacuumed" if r["vacuumed"] is not None else "")
        )
    console.print(f"committed lake version {snap.lake_version}" if snap else "already compact")


@lake_app.command("repair")
def lake_repair(lake: LakeOpt = None):
    """Clean what killed writers left: table commits no lake version pins (rolled back),
    staging folders of runs whose process is gone, data files no lake version reads (a
    compaction killed before its version, say) and DuckDB spill folders of readers that were
    killed; then finishes a refresh of the materialized views that was cut short. Every
    ingest, refresh and compaction does the cleaning first; run it by hand after a crash to
    get the space back now. Nothing a reader can see changes."""
    lk = _lake(lake)
    if not lk.exists():
        raise LakeNotFoundError(
            f"no lake at {lk.root}; give --lake the folder `graphlake ingest` created"
        )
    with lk.write_lock():
        done = lk.repair(lk.snapshot(), full=True)
    console.print(
        f"lake {lk.root}: {len(done['rolled_back'])} tables rolled back, "
        f"{len(done['staging_removed'])} staging folders, "
        f"{len(done['files_removed'])} unreferenced files and "
        f"{len(done['spill_removed'])} spill folders of killed readers removed",
        highlight=False,
    )
    rep = _refresh(lk)  # a refresh killed half-way is finished (nothing when views are current)
    if rep.snapshot is not None:
        print_refresh_report(rep)


@lake_app.command("refresh")
def lake_refresh(
    lake: LakeOpt = None,
    full: Annotated[
        bool, typer.Option("--full", help="Recompute every session, not only those with new rows.")
    ] = False,
):
    """Bring the materialized views (adoptions, adoption_chains, co_occurrences) up to date,
    as a new lake version.

    `graphlake ingest` does this after each run unless told `--no-refresh`. Until it happens,
    or after upgrading to a graphlake whose view SQL differs, queries compute those views from
    their SQL (correct, slower) and `graphlake lake info` marks the tables stale.
    """
    print_refresh_report(_refresh(_lake(lake), full))


# -- export ------------------------------------------------------------------------------------
@export_app.command("graph")
def export_graph(
    corpus: Annotated[str, typer.Argument(help="Corpus of the session (kolab, ...).")],
    session: Annotated[str, typer.Argument(help="session_id.")],
    fmt: Annotated[
        Literal["graphml", "dot"], typer.Option("--format", "-f", help="GraphML or Graphviz DOT.")
    ] = "graphml",
    output: OutputOpt = None,
    lake: LakeOpt = None,
    version: VersionOpt = None,
):
    """Write one session's workflow graph as GraphML (Gephi, yEd, Cytoscape) or DOT
    (Graphviz), e.g. `graphlake export graph kolab hand-1 -f dot | dot -Tsvg > g.svg`."""
    from graphlake.query.export import session_graph, to_dot

    g = session_graph(_lake(lake), corpus, session, version=version)
    if fmt == "dot":
        text = to_dot(g)
    else:
        import io

        import networkx as nx

        buf = io.BytesIO()
        nx.write_graphml(g, buf)
        text = buf.getvalue().decode()
    if output:
        output.write_text(text)
    else:
        typer.echo(text, nl=False)


@export_app.command("ocel")
def export_ocel_cmd(
    output: Annotated[
        Path,
        typer.Argument(help="The file to write: .jsonocel/.json for JSON, .sqlite/.db for SQLite."),
    ],
    corpus: Annotated[str | None, typer.Option("--corpus", help="Only this corpus.")] = None,
    fmt: Annotated[
        Literal["json", "sqlite"] | None,
        typer.Option("--format", "-f", help="[default: from the file's suffix]"),
    ] = None,
    lake: LakeOpt = None,
    version: VersionOpt = None,
):
    """Write the lake as an OCEL 2.0 event log (JSON or SQLite) for process mining (pm4py:
    `pm4py.read_ocel2_json(FILE)` / `read_ocel2_sqlite(FILE)`): sessions, participants and
    nodes as objects; node occurrences and events as events."""
    from graphlake.query.ocel import export_ocel

    counts = export_ocel(_lake(lake), output, corpus=corpus, version=version, fmt=fmt)
    console.print(f"wrote {counts['events']} events and {counts['objects']} objects to {output}")


# -- schema ----------------------------------------------------------------------------------
@schema_app.command("export")
def schema_export(
    directory: Annotated[Path, typer.Argument(help="Folder to write into.")] = Path("schemas"),
):
    """Write the JSON Schema of every canonical table (regenerates schemas/)."""
    from graphlake.schema.jsonschema import export

    for p in export(directory):
        console.print(str(p))


# -- demo ------------------------------------------------------------------------------------
@app.command()
def demo(
    lake: LakeOpt = None,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out", help="Where to write the generated corpus [default: <lake>/../demo-corpus]."
        ),
    ] = None,
    sessions: Annotated[int, typer.Option("--sessions", help="Kolab sessions to generate.")] = 24,
    seed: Annotated[int, typer.Option("--seed", help="Random seed (same seed, same corpus).")] = 7,
    frames: Annotated[
        bool | None,
        typer.Option(
            "--frames/--no-frames",
            help="Index and search the demo's screen recording (OCR and "
            "embeddings: most of the demo's time) [default: when the vision extra is installed].",
            show_default=False,
        ),
    ] = None,
):
    """Generate the demo corpus, ingest it, and print the headline analyses.

    The corpus is written by code in graphlake.demo from a fixed seed, so every run produces
    the same files; it includes a few deliberately invalid records to show rejects.
    """
    from graphlake.demo.run import run_demo

    lk = _lake(lake)
    corpus_dir = out or lk.root.parent / "demo-corpus"
    if frames:
        from graphlake.demo.run import vision_available
        from graphlake.errors import MissingExtraError
        from graphlake.vision import FRAMES_INSTALL

        if not vision_available():
            raise MissingExtraError(
                f"indexing the recording needs the frames extra: {FRAMES_INSTALL}, "
                "or run the demo with --no-frames"
            )
    run_demo(
        lk,
        corpus_dir,
        sessions=sessions,
        seed=seed,
        console=console,
        ingest=lambda c, p: ingest_and_report(c, p, lk),
        frames=frames,
    )


# -- serve and bench --------------------------------------------------------------------------
@app.command()
def serve(
    lake: LakeOpt = None,
    host: Annotated[
        str, typer.Option("--host", help="Address to bind. Anything but loopback needs --token.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="TCP port.")] = 8000,
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            envvar="GRAPHLAKE_TOKEN",
            help="Require 'Authorization: Bearer TOKEN' on "
            "every request (needed to bind a non-loopback address).",
        ),
    ] = None,
    version: VersionOpt = None,
    max_rows: Annotated[
        int, typer.Option("--max-rows", help="Rows one /sql or /queries answer may hold.")
    ] = 10_000,
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout", help="Seconds a statement may run before it is stopped (HTTP 408)."
        ),
    ] = 30.0,
    max_body: Annotated[
        int, typer.Option("--max-body", help="Largest request body, in bytes (HTTP 413 beyond).")
    ] = 1_000_000,
    workers: Annotated[
        int, typer.Option("--workers", help="uvicorn worker processes (each opens the lake once).")
    ] = 1,
    sql_workers: Annotated[
        int,
        typer.Option(
            "--sql-workers",
            help="Statements (/sql, /queries) one worker runs at once, in a pool of their own: "
            "long statements never hold the threads other routes need.",
        ),
    ] = 4,
    sql_queue: Annotated[
        int,
        typer.Option(
            "--sql-queue",
            help="Statements that may wait for a free SQL slot; beyond them HTTP 503 with "
            "Retry-After.",
        ),
    ] = 32,
    max_connections: Annotated[
        int,
        typer.Option(
            "--max-connections",
            help="Open connections one worker keeps. Past it, the connection that has "
            "waited longest for its request's headers is closed; if every one has a request "
            "running, the new one gets HTTP 503.",
        ),
    ] = 1024,
    client_timeout: Annotated[
        float,
        typer.Option(
            "--client-timeout",
            help="Seconds a client has to send a request's headers, and then its body: "
            "slow or silent connections are closed, a late body gets HTTP 408.",
        ),
    ] = 10.0,
    preload_rows: Annotated[
        int,
        typer.Option(
            "--preload-rows",
            help="Read corpora of up to this many node occurrences + events "
            "into memory at startup, so a context costs a slice, not queries (0: never).",
        ),
    ] = 20_000_000,
    allow_writes: Annotated[
        bool,
        typer.Option(
            "--allow-writes",
            help="Let POST /benchmarks/{id}/score?save=true keep evaluation runs in the lake. "
            "Without it the service only reads (403 on a save).",
        ),
    ] = False,
):
    """Serve the lake over HTTP for model evaluators and the browser workbench.

    Benchmark protocols with leakage-safe instances and scoring (/benchmarks), sessions with
    their graph, events, chat and recordings (/sessions, /media), read-only SQL (/sql) and
    named queries (/queries). API docs at /docs, the OpenAPI spec at /openapi.json. The
    workbench (sessions, timelines with the recording, search, SQL, instance previews) is at
    / : open http://127.0.0.1:8000/ (with --token T, open /?token=T).

    Binds to 127.0.0.1 by default; a non-loopback --host is refused without --token.

    Example: graphlake serve --port 8000, then
    curl 'localhost:8000/benchmarks/kolab-1b/instances?condition=graph-chat'
    """
    import json
    import os

    from graphlake.server.settings import is_loopback

    if not is_loopback(host) and not token:
        usage_error(
            f"refusing to serve on {host}, which is not a loopback address, without "
            "a token: pass --token T (clients then send 'Authorization: Bearer T'), "
            "or bind 127.0.0.1"
        )
    lk = _lake(lake)
    if not lk.exists():
        raise LakeNotFoundError(
            f"no lake at {lk.root}; build one with `graphlake demo` or "
            "`graphlake ingest`, or pass --lake DIR"
        )
    # resolved once here (an unknown --at fails here, not in every worker): every worker
    # starts at this version, even if an ingest lands while they start
    start_version = lk.snapshot(version).lake_version
    _check_port_free(host, port)
    import uvicorn

    from graphlake.server.connections import raise_descriptor_limit, uvicorn_options
    from graphlake.server.settings import Settings
    from graphlake.server.state import write_version_record

    fitting = raise_descriptor_limit(max_connections)
    if fitting < max_connections:
        err_console.print(
            f"graphlake: the open-file limit fits {fitting} connections, not "
            f"{max_connections}: serving with --max-connections {fitting} "
            "(raise it with `ulimit -n`)"
        )
        max_connections = fitting

    record = None
    if workers > 1:  # the workers follow one record of the version they serve (server/state.py)
        record = lk.meta_dir / "cache" / f"serve-{os.getpid()}.json"
        record.parent.mkdir(parents=True, exist_ok=True)
        write_version_record(record, start_version)

    config = {
        "version": start_version,
        "version_record": str(record) if record else None,
        "token": token,
        "max_rows": max_rows,
        "query_timeout_s": timeout,
        "max_body_bytes": max_body,
        "preload_rows": preload_rows,
        "sql_workers": sql_workers,
        "sql_queue": sql_queue,
        "max_connections": max_connections,
        "client_timeout_s": client_timeout,
        "allow_writes": allow_writes,
    }
    os.environ.update(
        {"GRAPHLAKE_SERVE_LAKE": str(lk.root), "GRAPHLAKE_SERVE_CONFIG": json.dumps(config)}
    )
    # every worker imports the protocol class by name with the same settings (server/main.py)
    options = uvicorn_options(Settings(lake=lk.root, **{**config, "version_record": None}))
    options["http"] = "graphlake.server.main:protocol"
    err_console.print(
        f"graphlake: serving {lk.root} on http://{host}:{port} "
        f"(docs at /docs{', token required' if token else ''})\n"
        f"workbench: http://{host}:{port}/{'?token=...' if token else ''}"
    )
    ceiling = _cap_memory()
    if ceiling:
        err_console.print(
            f"graphlake: each serving process is capped at {ceiling / (1 << 30):.1f} GiB of data "
            "($GRAPHLAKE_SERVE_MEMORY_CEILING), or at what it holds + the memory limit + 1 GiB: "
            "a statement that needs more is stopped"
        )
    try:
        uvicorn.run(
            "graphlake.server.main:app",
            host=host,
            port=port,
            workers=workers,
            log_level="warning",
            access_log=False,
            **options,
        )
    finally:
        if record is not None:
            record.unlink(missing_ok=True)


def _cap_memory() -> int | None:
    """Cap this process's data segment (RLIMIT_DATA; worker processes inherit it) at
    :func:`graphlake.config.serve_memory_ceiling`, never raising a cap already lower; the
    server's own builds make room above it (:mod:`graphlake.data_cap`)."""
    from graphlake.config import serve_memory_ceiling
    from graphlake.data_cap import install

    ceiling = serve_memory_ceiling()
    return None if ceiling is None else install(ceiling)


def _check_port_free(host: str, port: int) -> None:
    """A busy port is one ``error:`` line before any banner (uvicorn would print its own
    traceback-free message only after the banner, and exit 3)."""
    import socket

    from graphlake.errors import GraphlakeError

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise GraphlakeError(
                f"cannot listen on {host}:{port}: {exc.strerror or exc}; "
                "stop what holds the port or pass another --port"
            ) from None


bench_app = typer.Typer(
    help="Benchmark protocols offline: list, export instances, score predictions.",
    no_args_is_help=True,
)
app.add_typer(bench_app, name="bench")
ParamOpt = Annotated[
    list[str] | None,
    typer.Option("--param", "-p", help="Protocol parameter as name=value (e.g. k=2), repeatable."),
]


def _bench(lake, version):
    from graphlake.protocols import Benchmarks
    from graphlake.query.connection import Connection

    # lazy: listing and counting read the instance indexes cached for the version, and need
    # no catalog until an index is built
    return Benchmarks(Connection(_lake(lake), version, lazy=True))


def _params(items: list[str] | None) -> dict:
    out = {}
    for item in items or []:
        if "=" not in item:
            usage_error(f"--param {item!r} must be name=value")
        k, v = item.split("=", 1)
        out[k] = v
    return out


@bench_app.command("list")
def bench_list(
    lake: LakeOpt = None,
    version: VersionOpt = None,
    fmt: FormatOpt = "table",
    output: OutputOpt = None,
):
    """Every protocol with its instance count, labels and conditions. ``with_recording``
    counts the instances whose session has a recording: the video conditions list only
    those."""
    from concurrent.futures import ThreadPoolExecutor

    import pyarrow as pa

    b = _bench(lake, version)
    specs = b.specs()
    with ThreadPoolExecutor(4) as pool:  # each count builds an index: DuckDB runs them side
        counts = list(pool.map(lambda s: b.count(s["id"]), specs))  # by side (thread-safe)
    rows = [
        {
            "id": s["id"],
            "instances": n,
            # what video conditions list: instances whose session has a recording
            "with_recording": b.recorded(s["id"]),
            "task": s["task"],
            "labels": ", ".join(s["labels"]) or "(categories)",
            "conditions": ", ".join(s["conditions"]),
            "description": s["description"],
        }
        for s, n in zip(specs, counts, strict=True)
    ]
    _emit(pa.Table.from_pylist(rows), fmt, output, False, 0)
    exit_when_done()


@bench_app.command("export")
def bench_export(
    protocol: Annotated[str, typer.Argument(help="Protocol id (graphlake bench list).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="JSON Lines file to write.")],
    condition: Annotated[
        str | None, typer.Option("--condition", "-c", help="Input condition (e.g. graph-chat).")
    ] = None,
    param: ParamOpt = None,
    lake: LakeOpt = None,
    version: VersionOpt = None,
):
    """Write every instance of PROTOCOL in one condition as JSON Lines (no gold labels). A
    video condition writes only the instances whose session has a recording."""
    import orjson

    b = _bench(lake, version)
    params = _params(param)
    total = b.count(protocol, params, condition)
    cursor, n = None, 0
    with out.open("wb") as fh, _progress() as bar:
        task = bar.add_task(f"{protocol} {condition or ''}".strip(), total=total)
        while True:
            page = b.instances(
                protocol, condition=condition, params=params, limit=500, cursor=cursor
            )
            for item in page.items:
                fh.write(orjson.dumps(item) + b"\n")
            n += len(page.items)
            bar.update(task, advance=len(page.items))
            cursor = page.next_cursor
            if cursor is None:
                break
    err_console.print(f"wrote {n} instances to {out}")


@bench_app.command("score")
def bench_score(
    protocol: Annotated[str, typer.Argument(help="Protocol id.")],
    predictions: Annotated[
        Path | None, typer.Argument(help='JSON Lines of {"id": ..., "label": ...}.')
    ] = None,
    baseline: Annotated[
        str | None,
        typer.Option("--baseline", help="Score a built-in baseline instead: majority or mode."),
    ] = None,
    param: ParamOpt = None,
    save: Annotated[
        bool,
        typer.Option(
            "--save",
            help="Keep the run in the lake (corpus evals: its metrics and every prediction), "
            "to compare runs with `graphlake query run eval_runs`.",
        ),
    ] = False,
    model: Annotated[
        str | None, typer.Option("--model", help="The model that made the predictions (--save).")
    ] = None,
    condition: Annotated[
        str | None,
        typer.Option("--condition", help="The input condition it saw, e.g. graph-chat (--save)."),
    ] = None,
    subset: Annotated[
        bool,
        typer.Option(
            "--subset",
            help="Score only the instances predicted (a run over part of the protocol, e.g. "
            "inspect's --limit): the others are not listed as missing.",
        ),
    ] = False,
    lake: LakeOpt = None,
    version: VersionOpt = None,
    fmt: FormatOpt = "json",
    output: OutputOpt = None,
):
    """Score predictions with the paper's metrics (missing, unknown and invalid ids listed);
    --save keeps the run in the lake beside earlier ones."""
    import orjson

    b = _bench(lake, version)
    params = _params(param)
    if baseline:
        preds = b.baseline(protocol, baseline, params)
    elif predictions is None:
        usage_error("pass a PREDICTIONS.jsonl file or --baseline majority")
    else:
        preds = [
            orjson.loads(line) for line in predictions.read_bytes().splitlines() if line.strip()
        ]
        if not any(isinstance(p, dict) and p.get("label") is not None for p in preds):
            from graphlake.errors import GraphlakeError

            raise GraphlakeError(
                f"{predictions} holds no predictions: each line needs "
                '{"id": "<instance id>", "label": "<answer>"} (an instances file from '
                "`graphlake bench export` has ids but no labels; add your model's answers)"
            )
    if save:
        condition = condition or params.get("condition")
        source = str(predictions) if predictions is not None else f"baseline {baseline}"
        model = model or (f"baseline:{baseline}" if baseline else None)
        result, run_id = b.save(
            protocol, preds, params, model=model, condition=condition, source=source,
            subset=subset,
        )  # fmt: skip
        result = {**result, "saved_run": run_id}
    else:
        result = b.score(protocol, preds, params, subset=subset)
    if fmt == "json":
        text = orjson.dumps(result, option=orjson.OPT_INDENT_2).decode()
        if output:
            output.write_text(text + "\n")
        else:
            typer.echo(text)
    else:
        import pyarrow as pa

        flat = {
            k: (orjson.dumps(v).decode() if isinstance(v, dict | list) else v)
            for k, v in result.items()
        }
        _emit(pa.Table.from_pylist([flat]), fmt, output, False, 0)


def _register_mapping() -> None:
    from graphlake.cli_mapping import mapping_app

    app.add_typer(mapping_app, name="mapping")


_register_mapping()


def _register_vision() -> None:
    """``frames`` and ``search`` live in cli_vision (their heavy imports stay lazy)."""
    from graphlake.cli_vision import frames_app, search_app

    app.add_typer(frames_app, name="frames")
    app.add_typer(search_app, name="search")


_register_vision()


def _unwrap(doc: str) -> str:
    """A docstring as help text: the lines of a paragraph joined (the source wraps them at 100
    columns; the terminal wraps them again at its own width), indented examples kept as they
    are. Rich help mode keeps every line break, which broke sentences in the middle."""
    paragraphs = []
    for para in inspect.cleandoc(doc).split("\n\n"):
        lines = para.splitlines()
        preformatted = any(line.startswith((" ", "\t")) for line in lines)
        paragraphs.append(para if preformatted else " ".join(x.strip() for x in lines))
    return "\n\n".join(paragraphs)


def _unwrap_help(typer_app: typer.Typer) -> None:
    for info in typer_app.registered_commands:
        doc = info.help or (info.callback.__doc__ if info.callback else None)
        if doc:
            info.help = _unwrap(doc)
    for group in typer_app.registered_groups:
        if group.typer_instance is not None:
            _unwrap_help(group.typer_instance)


_unwrap_help(app)


def main() -> None:  # console-script entry point
    from graphlake.deferred_init import defer
    from graphlake.pandas_probe import install

    install()  # pyarrow's list conversions stop importing pandas (0.2-0.3 s a command)
    defer()  # LanceDB's REST client loads its API classes when first used (0.6 s a search)
    run_app(app)


if __name__ == "__main__":
    main()
