"""Shared fixtures: real lakes in temporary folders, the hand-checked Kolab session, the CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from graphlake.ingest.base import CollectingEmitter
from graphlake.lake import Lake

FIXTURES = Path(__file__).parent / "fixtures"
HAND = FIXTURES / "kolab" / "hand"


@pytest.fixture
def lake(tmp_path) -> Lake:
    return Lake(tmp_path / "lake")


def parse_with(corpus: str, path: Path) -> CollectingEmitter:
    """Run an ingestor's record path over ``path`` into memory."""
    from graphlake import ingest

    ing = ingest.get(corpus)
    out = CollectingEmitter(corpus)
    for unit in ing.units(path):
        ing.parse(unit, out)
    return out


def parse_kolab(path: Path) -> CollectingEmitter:
    return parse_with("kolab", path)


def write_graph(folder: Path, obj, name: str = "graph.json") -> Path:
    import json

    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(json.dumps(obj))
    return path


def cli(*args: str, lake: Path | None = None, check: bool = True) -> subprocess.CompletedProcess:
    """Run the real `graphlake` console entry point in a subprocess."""
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
    cmd = [sys.executable, "-m", "graphlake.cli", *args]
    if lake is not None:
        cmd += ["--lake", str(lake)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    if check and proc.returncode != 0:
        raise AssertionError(f"{cmd} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc
