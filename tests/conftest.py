"""Shared fixtures: real lakes in temporary folders, the hand-checked Kolab session, the CLI."""

from __future__ import annotations

import os
import re
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


SOURCE_RUN = re.compile(r"^(.*):[0-9a-f]{12}$")


def portable_run_id(run_id: str | None) -> str | None:
    """A default run's id ends in a hash of the ingested path, which differs between
    checkouts: goldens compare it without the hash."""
    if run_id and SOURCE_RUN.match(run_id):
        return SOURCE_RUN.sub(r"\1:<hash of the source path>", run_id)
    return run_id


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


def graph_lake(folder: Path, n: int, edges, actor_types=None) -> Lake:
    """A real lake holding one session 'g'/'s' with nodes v0..v{n-1} and the given edges.

    Node i occupies [i, i + 1.5] seconds; ``actor_types[i]`` (default: all human) is its type.
    """
    from graphlake.lake import LakeRun

    lake = Lake(folder / "lake")
    run = LakeRun(lake, "g", "test")
    em = run.emitter()
    for i in range(n):
        kind = actor_types[i] if actor_types else "human"
        em.row("nodes", {"session_id": "s", "node_id": f"v{i}", "actor_type": kind})
        em.row("node_occurrences", {"session_id": "s", "node_id": f"v{i}", "seq": 0,
                                    "t_start": float(i), "t_end": float(i) + 1.5,
                                    "actor_type": kind})
    for a, b in edges:
        em.row("edges", {"session_id": "s", "edge_id": f"v{a}->v{b}", "src": f"v{a}",
                         "dst": f"v{b}", "level": "action", "kind": "sequential"})
    run.commit([em.close()])
    return lake


def nx_graph(n: int, edges):
    import networkx as nx

    g = nx.DiGraph()
    g.add_nodes_from(f"v{i}" for i in range(n))
    g.add_edges_from((f"v{a}", f"v{b}") for a, b in edges)
    return g


@pytest.fixture(scope="session")
def demo_lake(tmp_path_factory) -> Path:
    """A lake holding the demo corpora (12 Kolab sessions, HAS-Bench, Almanac), built once."""
    from graphlake.demo.almanac_gen import write_almanac_corpus
    from graphlake.demo.corpus import write_demo_corpus
    from graphlake.demo.hasbench_gen import write_hasbench_corpus
    from graphlake.lake.derived import refresh
    from graphlake.pipeline import ingest_path

    root = tmp_path_factory.mktemp("demo")
    lake = root / "lake"
    ingest_path("kolab", write_demo_corpus(root / "corpus", sessions=12, seed=7), lake)
    ingest_path("hasbench", write_hasbench_corpus(root / "corpus", seed=7), lake)
    ingest_path("almanac", write_almanac_corpus(root / "corpus", seed=7), lake)
    refresh(Lake(lake))  # as `graphlake ingest` does: the materialized views are current
    return lake


class LiveServer:
    """``graphlake.server`` run by uvicorn on a free loopback port, in a thread of this
    process (a real socket: requests go through HTTP, the middleware and the routers)."""

    def __init__(self, settings):
        import socket
        import threading

        import uvicorn

        from graphlake.server import create_app

        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        sock.close()
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(create_app(settings), host="127.0.0.1", port=self.port,
                                log_level="warning", access_log=False)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self):
        import time

        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc):
        self.server.should_exit = True
        self.thread.join(10)


@pytest.fixture(scope="session")
def hand_lake(tmp_path_factory) -> Path:
    """The hand-checked Kolab session (4 adoption triples, 5 rated steps) in a lake."""
    from graphlake.lake.derived import refresh
    from graphlake.pipeline import ingest_path

    lake = tmp_path_factory.mktemp("hand") / "lake"
    ingest_path("kolab", HAND, lake)
    refresh(Lake(lake))
    return lake


@pytest.fixture(scope="session")
def demo_server(demo_lake):
    from graphlake.server import Settings

    with LiveServer(Settings(lake=demo_lake, max_rows=50, query_timeout_s=5.0,
                             max_body_bytes=20_000)) as srv:
        yield srv
