"""Plugins: a package installed from a folder adds an ingestor (``graphlake.ingestors``) and
ships a mapping (``graphlake.mappings``) without touching graphlake. The package goes into a
folder of its own (``pip install --target``) put on ``PYTHONPATH`` for the commands, so the
test's venv stays as it was."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PLUGIN = Path(__file__).parent / "fixtures" / "plugin_pkg"

pytestmark = pytest.mark.subprocess


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    target = tmp_path_factory.mktemp("plugin-site")
    build = tmp_path_factory.mktemp("plugin-src")
    src = build / "plugin"
    subprocess.run(["cp", "-r", str(PLUGIN), str(src)], check=True)  # builds write egg-info
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
         "--no-index", "--target", str(target), str(src)],
        check=True,
        timeout=600,
    )  # fmt: skip
    return target


def graphlake(site: Path, *args: str) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
    }
    return subprocess.run(
        [sys.executable, "-m", "graphlake", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )


def test_a_plugin_adds_an_ingestor_and_a_mapping(site, tmp_path):
    lake = tmp_path / "lake"
    notes = tmp_path / "in" / "meeting.notes"
    notes.parent.mkdir()
    notes.write_text("ann: shall we start?\nbot: yes\nstray line\n")
    done = graphlake(site, "ingest", "notes_demo", str(notes.parent), "--lake", str(lake), "-q")
    assert done.returncode == 0, done.stderr
    got = graphlake(
        site, "sql", "SELECT actor, text FROM events ORDER BY seq", "--lake", str(lake),
        "--format", "json",
    )  # fmt: skip
    assert json.loads(got.stdout) == [
        {"actor": "ann", "text": "shall we start?"},
        {"actor": "bot", "text": "yes"},
    ]
    rejects = graphlake(
        site, "sql", "SELECT record_ref FROM rejects", "--lake", str(lake), "--format", "csv"
    )
    assert "line 3" in rejects.stdout

    log = tmp_path / "auto" / "x.json"
    log.parent.mkdir()
    log.write_text(json.dumps({"plugin_demo_log": "p1", "lines": [{"who": "a", "said": "hi"}]}))
    listed = graphlake(site, "mapping", "list")
    assert "plugin_demo" in listed.stdout
    done = graphlake(site, "ingest", "auto", str(log.parent), "--lake", str(lake), "-q")
    assert done.returncode == 0 and "read as plugin_demo" in done.stderr, done.stderr
    got = graphlake(site, "sql", "SELECT session_id FROM sessions WHERE corpus = 'plugin_demo'",
                    "--lake", str(lake), "--format", "csv")  # fmt: skip
    assert "p1" in got.stdout


def test_without_the_plugin_the_name_is_unknown(tmp_path):
    done = graphlake(tmp_path, "ingest", "notes_demo", str(tmp_path), "--lake", str(tmp_path / "l"))
    assert done.returncode == 2 and "no ingestor named 'notes_demo'" in done.stderr
