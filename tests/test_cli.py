"""End-to-end: the real `graphlake` command in a subprocess, against a real lake."""

from __future__ import annotations

import json
import shutil

import pytest

from conftest import HAND, cli
from graphlake.lake import Lake


@pytest.fixture
def corpus(tmp_path):
    """A folder of one session folder, one bare graph file with a bad reference, one non-JSON."""
    root = tmp_path / "corpus"
    shutil.copytree(HAND, root / "hand")
    g = json.loads((HAND / "graph.json").read_text())
    g["session_id"] = "bare-1"
    g["steps"][1]["nodes"][2]["user_response"][1][1] = "n42"  # resolves to nothing
    (root / "bare.json").write_text(json.dumps(g))
    (root / "broken.json").write_text("{oops")
    return root


def test_ingest_prints_counts_and_reingest_adds_nothing(tmp_path, corpus):
    lake = tmp_path / "lake"
    first = cli("ingest", "kolab", str(corpus), "--quiet", lake=lake)
    lines = {
        ln.split("│")[1].strip(): [c.strip() for c in ln.split("│")[2:5]]
        for ln in first.stdout.splitlines()
        if ln.count("│") >= 5
    }
    assert lines["nodes"] == ["14", "14", ""]
    assert lines["annotations"] == ["23", "23", "1"]  # 20 hand + 3 of 4 bare
    assert lines["sessions"] == ["2", "2", "1"]
    assert "committed lake version 1" in first.stdout
    # then the materialized views, as a version of their own
    assert "materialized views refreshed for every session" in first.stdout
    assert "committed lake version 2" in first.stdout
    again = cli("ingest", "kolab", str(corpus), "--quiet", lake=lake)
    assert "nothing new" in again.stdout and "stays at version 2" in again.stdout
    assert "none was read" in again.stdout  # the manifest: the files are as they were
    assert "refreshed" not in again.stdout
    forced = cli("ingest", "kolab", str(corpus), "--quiet", "--force", lake=lake)
    assert "nothing new" in forced.stdout and "stays at version 2" in forced.stdout
    assert "none was read" not in forced.stdout  # read again, and still nothing new


def test_bad_reference_reject_names_the_id_and_the_rest_lands(tmp_path, corpus):
    lake = tmp_path / "lake"
    cli("ingest", "kolab", str(corpus), "--quiet", lake=lake)
    out = cli(
        "sql",
        "SELECT record_kind, reason, raw FROM rejects WHERE source_file LIKE '%bare.json' ",
        "--format",
        "json",
        lake=lake,
    )
    (rej,) = json.loads(out.stdout)
    assert rej["record_kind"] == "user_response"
    assert "'n42'" in rej["reason"] and "resolves to no node occurrence" in rej["reason"]
    assert json.loads(rej["raw"])[1] == "n42"
    nodes = json.loads(
        cli(
            "sql",
            "SELECT count(*) AS n FROM nodes WHERE session_id = 'bare-1'",
            "--format",
            "json",
            lake=lake,
        ).stdout
    )
    assert nodes == [{"n": 7}]


def test_sql_json_csv_parquet_and_version(tmp_path, corpus):
    lake = tmp_path / "lake"
    cli("ingest", "kolab", str(corpus), "--quiet", lake=lake)
    rows = json.loads(
        cli(
            "sql",
            "select label, count(*) from adoptions group by 1 order by 1",
            "--format",
            "json",
            lake=lake,
        ).stdout
    )
    # hand: adopt 2, modify 1, reject 1; bare: the same less its rejected adopt
    assert rows == [
        {"label": "adopt", "count_star()": 3},
        {"label": "modify", "count_star()": 2},
        {"label": "reject", "count_star()": 2},
    ]
    csv = cli(
        "sql", "select label from adoptions order by 1 limit 2", "--format", "csv", lake=lake
    ).stdout
    assert csv.splitlines() == ['"label"', '"adopt"', '"adopt"']
    pq_file = tmp_path / "out.parquet"
    cli("sql", "select * from nodes", "--format", "parquet", "-o", str(pq_file), lake=lake)
    import pyarrow.parquet as pq

    assert pq.read_table(pq_file).num_rows == 14
    old = json.loads(
        cli(
            "sql", "select count(*) as n from nodes", "--at", "0", "--format", "json", lake=lake
        ).stdout
    )
    assert old == [{"n": 0}]


def test_sql_errors_are_one_helpful_line(tmp_path):
    Lake(tmp_path / "lake").init()
    bad = cli("sql", "select lable from adoptions", lake=tmp_path / "lake", check=False)
    assert bad.returncode == 1
    assert "Did you mean 'label'?" in bad.stderr and "Traceback" not in bad.stderr
    write = cli("sql", "drop table nodes", lake=tmp_path / "lake", check=False)
    assert write.returncode == 1 and "only read statements" in write.stderr


def test_a_lake_that_does_not_exist_is_an_error_naming_it(tmp_path):
    """A mistyped --lake must not read as an empty lake (only ingest creates one)."""
    typo = tmp_path / "lak"
    for args in (
        ("sql", "SELECT count(*) FROM nodes"),
        ("query", "run", "collab_metrics"),
        ("lake", "history"),
    ):
        out = cli(*args, lake=typo, check=False)
        assert out.returncode != 0, args
        assert f"no lake at {typo}" in " ".join(out.stderr.split()), args
        assert "Traceback" not in out.stderr
    assert not typo.exists()  # reading created nothing


def test_transpile_only_prints_spark_sql(tmp_path):
    out = cli(
        "sql",
        "SELECT list_value(1, 2) AS l FROM nodes",
        "--dialect",
        "spark",
        "--transpile-only",
        lake=tmp_path / "lake",
    )
    assert "ARRAY(1, 2)" in out.stdout
    out = cli(
        "query",
        "run",
        "kolab_findings",
        "--dialect",
        "spark",
        "--transpile-only",
        lake=tmp_path / "lake",
    )
    assert "CORR(RX, RY)" in out.stdout.upper() and "'kolab'" in out.stdout


def test_query_list_and_run_collab_metrics(tmp_path, corpus):
    lake = tmp_path / "lake"
    cli("ingest", "kolab", str(corpus), "--quiet", lake=lake)
    listed = json.loads(cli("query", "list", "--format", "json", lake=lake).stdout)
    assert {"collab_metrics", "adoption_summary", "retention_by_domain"} <= {
        q["name"] for q in listed
    }
    rows = json.loads(cli("query", "run", "collab_metrics", "--format", "json", lake=lake).stdout)
    assert sorted(r["session_id"] for r in rows) == ["bare-1", "hand-1"]
    # a corpus the lake does not have is an error that lists the ones it has, not an empty
    # answer that reads like a finding
    nope = cli(
        "query", "run", "collab_metrics", "-p", "corpus=nope", "-f", "json", lake=lake, check=False
    )
    assert nope.returncode == 1 and "Values: kolab" in nope.stderr, nope.stderr
    bad = cli("query", "run", "collab_metric", lake=lake, check=False)
    assert "Did you mean 'collab_metrics'" in bad.stderr


def test_lake_info_history_compact(tmp_path, corpus):
    lake = tmp_path / "lake"
    cli("ingest", "kolab", str(corpus), "--quiet", lake=lake)
    info = {
        r["table"]: r for r in json.loads(cli("lake", "info", "--format", "json", lake=lake).stdout)
    }
    assert info["nodes"]["rows"] == 14 and info["nodes"]["files"] == 1
    assert info["media"]["delta_version"] is None
    hist = json.loads(cli("lake", "history", "--format", "json", lake=lake).stdout)
    assert [h["operation"] for h in hist] == ["ingest", "refresh"]
    assert info["adoptions"]["kind"] == "materialized" and info["adoptions"]["rows"] > 0
    assert "already compact" in cli("lake", "compact", lake=lake).stdout


def test_unknown_corpus_and_missing_path(tmp_path):
    bad = cli("ingest", "kolabb", str(tmp_path), lake=tmp_path / "l", check=False)
    assert bad.returncode == 2 and "Did you mean 'kolab'" in bad.stderr  # a usage mistake
    assert "Usage:" in bad.stderr
    missing = cli("ingest", "kolab", str(tmp_path / "nope"), lake=tmp_path / "l", check=False)
    assert missing.returncode == 1 and "does not exist" in missing.stderr


COMMANDS = [
    [],
    ["ingest"],
    ["sql"],
    ["query"],
    ["query", "list"],
    ["query", "run"],
    ["query", "show"],
    ["lake"],
    ["lake", "info"],
    ["lake", "history"],
    ["lake", "compact"],
    ["lake", "refresh"],
    ["schema"],
    ["schema", "export"],
    ["demo"],
    ["export"],
    ["export", "graph"],
    ["export", "ocel"],
]


@pytest.mark.parametrize("cmd", COMMANDS, ids=lambda c: " ".join(c) or "graphlake")
def test_every_command_has_help(cmd):
    out = cli(*cmd, "--help")
    assert "Usage:" in out.stdout and len(out.stdout) > 200


def test_version_and_help_say_what_they_should():
    import graphlake

    assert cli("--version").stdout.strip() == f"graphlake {graphlake.__version__}"
    help_ = " ".join(cli("sql", "--help").stdout.split())
    assert "default: $GRAPHLAKE_LAKE, else the user data directory" in help_


def test_exit_codes_usage_2_runtime_1_and_one_line_errors(tmp_path):
    """Click's usage errors exit 2; errors of the work itself exit 1 with one `error:` line
    and no traceback (one handler for every command)."""
    lake = tmp_path / "lake"
    ingest = cli("ingest", "kolab", str(HAND), "--quiet", lake=lake)
    assert ingest.returncode == 0
    usage = [
        ("sql", "SELECT 1", "--format", "xml"),
        ("sql", "SELECT 1", "--dialect", "spark"),
        ("sql", "SELECT 1", "--engine", "presto"),
        ("export", "graph", "kolab", "hand-1", "--format", "svg"),
        ("bench", "score", "kolab-1b"),
    ]
    for args in usage:
        out = cli(*args, lake=lake, check=False)
        assert out.returncode == 2 and "Usage:" in out.stderr, (args, out.stderr)
    runtime = [
        ("sql", "SELECT nope FROM nodes"),
        ("lake", "info", "--at", "99"),
        ("query", "run", "no_such_query"),
    ]
    for args in runtime:
        out = cli(*args, lake=lake, check=False)
        assert out.returncode == 1, (args, out.returncode, out.stderr)
        assert out.stderr.startswith("error: ") and "Traceback" not in out.stderr, out.stderr
    missing = cli("lake", "repair", lake=tmp_path / "nowhere", check=False)
    assert missing.returncode == 1 and "no lake at" in missing.stderr


def test_time_travel_is_at_and_data_commands_take_o(tmp_path):
    lake = tmp_path / "lake"
    cli("ingest", "kolab", str(HAND), "--quiet", lake=lake)
    now = json.loads(cli("lake", "info", "--at", "1", "-f", "json", lake=lake).stdout)
    latest = json.loads(cli("lake", "info", "-f", "json", lake=lake).stdout)
    assert {t["table"] for t in now} == {t["table"] for t in latest} and now != latest
    # --version is only graphlake's own version: after a command it is a usage mistake
    wrong = cli("lake", "info", "--version", "1", lake=lake, check=False)
    assert wrong.returncode == 2 and "--version" in wrong.stderr
    for args in (
        ("lake", "history"),
        ("lake", "info"),
        ("query", "list"),
        ("bench", "list"),
        ("sql", "SELECT count(*) AS n FROM nodes"),
    ):
        target = tmp_path / f"{args[0]}-{args[1][:8]}.json"
        cli(*args, "-f", "json", "-o", str(target), lake=lake)
        assert json.loads(target.read_text()), args


def test_error_text_is_printed_as_it_is(hand_lake, tmp_path):
    """User text in an error (a quoted name like "[/]", a path like runs[old]/) comes out
    literally: it is never read as Rich markup."""
    out = cli("sql", 'SELECT * FROM "[/]"', lake=hand_lake, check=False)
    assert out.returncode == 1 and out.stderr.startswith("error: "), out.stderr
    assert "[/]" in out.stderr and "Traceback" not in out.stderr
    missing = tmp_path / "runs[old]"
    out = cli("ingest", "kolab", str(missing), lake=tmp_path / "lake", check=False)
    assert out.returncode == 1 and str(missing) in out.stderr, out.stderr


@pytest.mark.subprocess
def test_serve_on_a_busy_port_is_one_error_line_before_any_banner(hand_lake):
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        out = cli("serve", "--port", str(port), lake=hand_lake, check=False, subprocess_=True)
    assert out.returncode == 1, out.stderr
    assert (
        out.stderr.startswith("error: cannot listen on 127.0.0.1:")
        and "serving" not in out.stderr
        and len(out.stderr.strip().splitlines()) == 1
    ), out.stderr


def test_sql_help_lists_every_view_from_the_catalog():
    from graphlake.schema import TABLES
    from graphlake.schema.views import DERIVED_VIEWS

    text = " ".join(cli("sql", "--help").stdout.split())
    for name in [*TABLES, *DERIVED_VIEWS]:
        assert f" {name}," in text or f" {name} " in text, name


def test_answers_that_would_mislead_are_errors(hand_lake, tmp_path):
    """An empty answer caused by a typo, and a score of nothing, say why instead of exit 0."""
    out = cli("query", "run", "collab_metrics", "-p", "corpus=kolba", lake=hand_lake, check=False)
    assert out.returncode == 1 and "Did you mean 'kolab'" in out.stderr, out.stderr
    exported = tmp_path / "1b.jsonl"
    cli("bench", "export", "kolab-1b", "-c", "graph", "-o", str(exported), lake=hand_lake)
    out = cli("bench", "score", "kolab-1b", str(exported), lake=hand_lake, check=False)
    assert out.returncode == 1 and "holds no predictions" in out.stderr, out.stderr


def test_help_text_is_not_broken_mid_sentence():
    """Docstring paragraphs are joined (the terminal wraps them); a line of help never ends in
    the middle of a sentence because the source wrapped there."""
    out = cli("demo", "--help").stdout  # 200 columns: the paragraph fits on one line
    assert "so every run produces the same files; it includes" in out, out


def test_a_parent_folder_of_several_corpora_names_the_others(tmp_path):
    """Ingesting a folder that also holds other corpora lands what is kolab, rejects the rest
    with reasons, and says which ingestor the other files look like."""
    import shutil

    from conftest import FIXTURES

    mixed = tmp_path / "mixed"
    shutil.copytree(HAND, mixed / "hand-1")
    shutil.copytree(FIXTURES / "hasbench", mixed / "hasbench")
    out = cli("ingest", "kolab", str(mixed), "--quiet", lake=tmp_path / "lake")
    assert "look like hasbench data" in out.stdout and "graphlake ingest hasbench" in out.stdout


def _printed_by_new_process(code: str) -> list[str]:
    """The words a fresh interpreter prints running ``code`` (this one imported too much)."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return done.stdout.split()


_PANDAS_PROBE = """
import sys
{install}
import pyarrow as pa
rows = pa.Table.from_pylist([{{"a": 1, "b": "x"}}, {{"a": None, "b": "y"}}]).to_pylist()
assert rows == [{{"a": 1, "b": "x"}}, {{"a": None, "b": "y"}}], rows
print("pandas" in sys.modules)
frame = pa.table({{"a": [1, None]}}).to_pandas()  # what needs pandas still gets it
assert frame["a"].isna().tolist() == [False, True]
print(type(frame).__name__)
"""


@pytest.mark.subprocess
@pytest.mark.parametrize("installed", [True, False])
def test_the_command_converts_lists_without_importing_pandas(installed):
    """pyarrow imports pandas (0.2-0.3 s) at its first list conversion; the command's
    process answers that probe without it, and to_pandas still works (a new process each:
    this one has pandas already)."""
    install = "from graphlake.pandas_probe import install; install()" if installed else ""
    out = _printed_by_new_process(_PANDAS_PROBE.format(install=install))
    assert out == [str(not installed), "DataFrame"]


_DEFERRED_INIT = """
import sys
{install}
import lancedb
print("lance_namespace_urllib3_client.api" in sys.modules)
from lance_namespace_urllib3_client import ApiClient, __version__  # the real __init__, on use
import lance_namespace_urllib3_client.api as api
print(ApiClient.__name__, type(api.TableApi).__name__, bool(__version__))
"""


@pytest.mark.subprocess
@pytest.mark.parametrize("installed", [True, False])
def test_the_command_defers_the_rest_client_of_lancedb(installed):
    """``import lancedb`` runs its REST client's generated __init__ (0.6 s of a cold search);
    the command's process defers it to the first name asked of the package, which then
    answers as if nothing had been deferred."""
    pytest.importorskip("lancedb")
    install = "from graphlake.deferred_init import defer; defer()" if installed else ""
    out = _printed_by_new_process(_DEFERRED_INIT.format(install=install))
    assert out == [str(not installed), "ApiClient", "type", "True"]
