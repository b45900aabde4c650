"""Every code example in README.md and docs/ runs against the demo lake.

Fenced blocks are read from the Markdown itself: ``bash`` lines that call ``graphlake`` run as
commands (with ``$GRAPHLAKE_LAKE`` set to the demo lake, in a scratch folder), ``sql`` blocks
run through the guarded connection, ``python`` blocks are executed. An example that cannot run
here is skipped only by a rule below that says why (a placeholder path, a long-running server,
a recording to index first); those commands are covered by the test named in the rule. A new
example that matches no rule must run.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.docs

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)

#: (pattern in the command, why it does not run here and where it is tested instead)
SKIP = [
    (
        r"path/to/|SESSION_ID|\[--|\"SELECT \.\.\.\"|\"TEXT\"|predictions\.jsonl|screenshot\.png"
        r"|/ckpt/|info \| history",
        "a placeholder or a synopsis, not a command",
    ),
    (r"^graphlake serve", "a long-running server: tests/test_server.py serves on loopback"),
    (r"^graphlake demo", "builds a new lake: tests/test_demo.py runs it"),
    (r"^graphlake (frames|search) ", "needs an indexed recording: tests/test_frames.py"),
    (r"--engine spark", "PySpark start-up: tests/test_spark.py runs the same queries"),
    (r"--engine ray", "starts a Ray cluster: tests/test_ray.py runs ingest and frames on one"),
    (r"^graphlake ingest inspect logs/", "the log of the eval above: tests/test_inspect_task.py"),
]
#: Python blocks that need something the demo lake does not have.
SKIP_PYTHON = [
    (r"Client\(", "talks to a running service: tests/test_server.py"),
    (r"on_ray\(|engine=\"ray\"", "starts a Ray cluster: tests/test_ray.py"),
]


def blocks(lang: str) -> list[tuple[str, str]]:
    out = []
    for doc in DOCS:
        for m in FENCE.finditer(doc.read_text()):
            if m.group(1) == lang:
                out.append((f"{doc.relative_to(ROOT)}", m.group(2)))
    return out


def commands(text: str) -> list[str]:
    """The shell commands of a bash block: continuation lines joined (a trailing backslash or
    an open quote), comments dropped, anything after a pipe left out."""
    out, pending = [], ""
    for line in text.splitlines():
        pending = f"{pending}\n{line}" if pending else line
        if pending.endswith("\\") or pending.count('"') % 2:
            pending = pending.rstrip("\\")
            continue
        words = shlex.split(pending, comments=True)
        pending = ""
        if "|" in words and "info | history" not in line:
            words = words[: words.index("|")]
        if words:
            out.append(shlex.join(words))
    return out


def skip_reason(cmd: str, rules) -> str | None:
    return next((why for pattern, why in rules if re.search(pattern, cmd)), None)


BASH = [
    (where, cmd)
    for where, text in blocks("bash")
    for cmd in commands(text)
    if cmd.startswith("graphlake ")
]


def test_the_examples_are_found():
    assert len(BASH) >= 40 and len(blocks("sql")) >= 4 and len(blocks("python")) >= 2
    runnable = [c for _, c in BASH if skip_reason(c, SKIP) is None]
    assert len(runnable) >= 20, runnable


@pytest.fixture(scope="module")
def workdir(demo_lake, tmp_path_factory):
    work = tmp_path_factory.mktemp("docs-examples")
    lake = work / "lake"
    shutil.copytree(demo_lake, lake)  # examples may write (exports), never into the fixture
    return work, lake


@pytest.mark.parametrize("where,cmd", BASH, ids=[f"{w}:{c[:60]}" for w, c in BASH])
def test_every_cli_example_runs(workdir, where, cmd):
    why = skip_reason(cmd, SKIP)
    if why:
        pytest.skip(why)
    work, lake = workdir
    args = shlex.split(cmd)
    env = {**os.environ, "GRAPHLAKE_LAKE": str(lake)}
    proc = subprocess.run(
        [sys.executable, "-m", "graphlake", *args[1:]],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, f"{where}: {cmd}\n{proc.stderr[-2000:]}"


@pytest.mark.parametrize("where,sql", blocks("sql"))
def test_every_sql_example_runs(workdir, where, sql):
    from graphlake.query import run_sql

    _, lake = workdir
    statements = [s for s in re.sub(r"--[^\n]*", "", sql).split(";") if s.strip()]
    for statement in statements:
        run_sql(statement, lake)  # raises with the guard's or DuckDB's message


@pytest.mark.parametrize("where,code", blocks("python"))
def test_every_python_example_runs(workdir, where, code, monkeypatch):
    why = skip_reason(code, SKIP_PYTHON)
    if why:
        pytest.skip(why)
    from graphlake.demo.corpus import write_demo_corpus

    work, lake = workdir
    run = work / f"py-{abs(hash(code))}"
    run.mkdir()
    # the README ingests "sessions/": give it the demo's Kolab sessions
    write_demo_corpus(run / "corpus", sessions=12, seed=7, recording=False)
    shutil.copytree(run / "corpus" / "kolab", run / "sessions")
    monkeypatch.chdir(run)
    monkeypatch.setenv("GRAPHLAKE_LAKE", str(lake))
    exec(compile(code, where, "exec"), {"__name__": "__docs__"})  # noqa: S102
