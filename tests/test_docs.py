"""Docs are checked: every CLI command, named query and metric column is documented."""

from __future__ import annotations

from pathlib import Path

from graphlake.query import named
from graphlake.schema import TABLES

ROOT = Path(__file__).parent.parent
README = (ROOT / "README.md").read_text()
#: The reference the README points to: every command, view, query and primitive.
USAGE = (ROOT / "docs" / "usage.md").read_text()
METRICS = (ROOT / "docs" / "metrics.md").read_text()
LAYOUT = (ROOT / "docs" / "kolab-layout.md").read_text()


def test_usage_names_every_named_query_and_view():
    for name in named.load_all():
        assert f"`{name}`" in USAGE, name
    from graphlake.query.catalog import DERIVED_VIEWS
    from graphlake.schema.graph_macros import MACROS

    for table in [*TABLES, *DERIVED_VIEWS]:
        assert f"`{table}`" in USAGE, table
    for macro in MACROS:
        assert f"`{macro}(" in USAGE, macro


def test_patterns_doc_names_every_label_edge_type_and_mode():
    from graphlake.query.pattern import EDGE_TYPES, NODE_LABELS, PATH_MODES

    doc = (ROOT / "docs" / "patterns.md").read_text()
    for word in [*NODE_LABELS, *EDGE_TYPES]:
        assert f":{word}" in doc, word
    for mode in PATH_MODES:
        assert f"`{mode}`" in doc, mode


def test_analyses_doc_covers_every_analysis_query():
    doc = (ROOT / "docs" / "analyses.md").read_text()
    for name in (
        "kolab_findings",
        "retention_by_domain",
        "response_timing",
        "has_rescue",
        "almanac_alignment_by_act",
        "almanac_alignment_progress",
    ):
        assert f"`{name}`" in doc, name


def test_usage_shows_every_cli_command():
    for cmd in (
        "graphlake ingest",
        "graphlake sql",
        "graphlake query list",
        "graphlake query run",
        "graphlake lake info",
        "graphlake schema export",
        "graphlake demo",
        "--transpile-only",
        "--at",
        "--engine spark",
        "graphlake query lint",
        "graphlake export ocel",
        "GRAPH_TABLE",
    ):
        assert cmd in USAGE, cmd


def test_every_collab_metrics_column_is_documented(tmp_path):
    from graphlake.lake import Lake
    from graphlake.query import run_sql

    Lake(tmp_path / "lake").init()  # an empty lake: the columns are all that is asked for
    q = named.get("collab_metrics")
    cols = run_sql(q.sql, tmp_path / "lake", params=q.bind({})).table.column_names
    for col in cols:
        if col in ("corpus", "session_id", "domain", "title"):
            continue
        assert f"`{col}`" in METRICS, col


def test_layout_doc_names_every_side_file():
    from graphlake.ingest.kolab_session import COLLAB_ITEMS, SIDE_FILES

    for name in SIDE_FILES:
        assert f"`{name}`" in LAYOUT, name
    for item in COLLAB_ITEMS:
        assert f"`{item}`" in LAYOUT, item


def test_ci_runs_the_readme_test_command():
    """.ci/run runs exactly the README's test command (under its suite limit, ``timeout``,
    which only stops a hung run)."""
    import re

    ci = (ROOT / ".ci" / "run").read_text()
    command = "python -m pytest -n auto"
    assert f"\n{command}\n" in README
    line = rf"^(timeout( [-\w=\"$]+)* )?{re.escape(command)}    # the README's test command$"
    assert re.search(line, ci, re.M), "the test command in .ci/run differs from the README's"
    assert '-m "not slow"' in README  # the fast tier is documented


def test_readme_is_short_and_its_links_resolve():
    """A newcomer reads it in two minutes; the reference lives in docs/."""
    import re

    assert len(README.splitlines()) < 160
    for target in re.findall(r"\]\(((?:docs|tests)/[^)#]+)", README):
        assert (ROOT / target).exists(), target


def test_every_ingestor_is_documented_and_named_in_the_cli_help():
    from graphlake import ingest

    cli_src = (ROOT / "graphlake" / "cli.py").read_text()
    for name in ingest.names():
        assert f"graphlake ingest {name}" in USAGE, name
        assert name in cli_src, name


def test_service_doc_names_every_protocol_route_and_option(tmp_path):
    import re

    from graphlake.protocols import SPECS
    from graphlake.server import Settings, create_app

    doc = (ROOT / "docs" / "service.md").read_text()
    for pid in SPECS:
        assert f"`{pid}`" in doc, pid
    from graphlake.lake import Lake

    Lake(tmp_path / "lake").init()
    paths = create_app(Settings(lake=tmp_path / "lake")).openapi()["paths"]
    assert len(paths) > 15
    generic = re.sub(r"\{[^}]+\}", "{}", doc)
    for path, methods in paths.items():
        for method in methods:
            shown = re.sub(r"\{[^}]+\}", "{}", f"{method.upper()} {path}")
            assert re.search("`" + re.escape(shown) + "[`?]", generic), shown
    for option in (
        "--host",
        "--port",
        "--token",
        "--max-rows",
        "--timeout",
        "--max-body",
        "--workers",
        "--at",
    ):
        assert f"`{option}" in doc, option
