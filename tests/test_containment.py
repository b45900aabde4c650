"""Nothing outside the input folder reaches the lake: every file an ingestor could open is
planted as a link to a secret, and the secret appears in no table, reject or message."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import FIXTURES, cli
from graphlake.query import run_sql
from graphlake.schema import TABLES

SECRET = "GRAPHLAKE-SECRET-7f3a9c"
#: Each ingestor's fixture corpus: every file name in it is what the ingestor opens.
CORPORA = {
    "kolab": FIXTURES / "kolab",
    "tau2": FIXTURES / "tau2_runs",
    "coauthor": FIXTURES / "coauthor",
    "maptask": FIXTURES / "maptask_release",
    "marble": FIXTURES / "marble",
    "hasbench": FIXTURES / "hasbench",
    "almanac": FIXTURES / "almanac",
}


def _linked_copy(src: Path, dst: Path, secret: Path, only: str | None = None) -> int:
    """Copy ``src`` to ``dst`` with its files (or only the one named ``only``) replaced by
    links to ``secret``; return how many were replaced."""
    shutil.copytree(src, dst)
    n = 0
    for f in sorted(p for p in dst.rglob("*") if p.is_file()):
        if only is None or f.name == only:
            f.unlink()
            f.symlink_to(secret)
            n += 1
    return n


def _lake_text(lake: Path) -> str:
    if not (lake / "_graphlake").exists():
        return ""
    tables = [
        run_sql(f"SELECT * FROM {name}", lake, max_rows=None).table.to_pylist() for name in TABLES
    ]
    return json.dumps(tables, default=str)


@pytest.mark.parametrize("corpus", sorted(CORPORA))
def test_links_out_of_the_input_folder_are_never_read(tmp_path, corpus):
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps({"secret": SECRET, "task_id": SECRET, "messages": [SECRET]}))
    src = tmp_path / "input"
    assert _linked_copy(CORPORA[corpus], src, secret) > 0
    lake = tmp_path / "lake"
    run = cli("ingest", corpus, str(src), lake=lake, check=False)
    assert SECRET not in run.stdout + run.stderr
    assert SECRET not in _lake_text(lake)


@pytest.mark.parametrize("name", ["graph.json", "meta.json", "chat.jsonl", "ratings.json"])
def test_a_kolab_session_file_linked_out_is_a_reject_and_never_read(tmp_path, name):
    """The graph and the metadata of a session folder too (they were read through links)."""
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps({"domain": SECRET, "steps": [], "nodes": [SECRET]}))
    src = tmp_path / "input"
    assert _linked_copy(FIXTURES / "kolab", src, secret, only=name) == 1
    lake = tmp_path / "lake"
    run = cli("ingest", "kolab", str(src), lake=lake, check=False)
    assert SECRET not in run.stdout + run.stderr + _lake_text(lake)
    reasons = run_sql("SELECT reason FROM rejects", lake).table.column(0).to_pylist()
    assert any(f"{name} is a link out of the session folder" in r for r in reasons), reasons
