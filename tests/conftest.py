"""Shared fixtures: real lakes in temporary folders, the hand-checked Kolab session, the CLI."""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from shared_builds import BUILDS, DEMO, README_DEMO, Built

from graphlake.ingest.base import CollectingEmitter
from graphlake.lake import Lake

#: Ray's token authentication, explicit and one token for the whole test process, set before
#: any test runs: for tests/test_ray.py's cluster nodes, for every driver this process or the
#: commands it starts attach, and for any private cluster a test starts. Left unset, Ray
#: decides per process from whether ~/.ray/auth_token exists (any earlier ``ray.init()`` on
#: the machine writes it), and a worker node then fails to join. Set only while test_ray's
#: cluster fixture was up, it was not enough: Ray keeps the first mode and token a process
#: reads, and a driver was refused with ``InvalidAuthToken`` ("RAY_AUTH_MODE is currently
#: 'disabled'") in 1 of 3 CI runs.
os.environ.setdefault("RAY_AUTH_MODE", "token")
os.environ.setdefault("RAY_AUTH_TOKEN", secrets.token_hex(32))
#: a Ray driver that waits longer than this for its cluster's next result fails with what it
#: waited for, well before pytest-timeout ends the test (a CI run hung at 90% for an hour)
os.environ.setdefault("GRAPHLAKE_RAY_STALL_S", "600")

FIXTURES = Path(__file__).parent / "fixtures"
HAND = FIXTURES / "kolab" / "hand"
#: Real public samples, vendored (tests/fixtures/samples/README.md: whose, which license).
SAMPLES = FIXTURES / "samples"


#: The slow tiers (markers registered in pyproject.toml). ``pytest -m "not slow"`` is the fast
#: tier a developer runs while working; the whole suite runs them all.
SLOW_TIERS = ("subprocess", "faults", "fuzz", "browser", "frames", "spark", "ray", "docs")
#: Tiers that need something outside the dev extra (a system package, Java): where
#: $GRAPHLAKE_REQUIRE_TIERS names them (``.ci/run`` does), a skip in them is a failure.
REQUIRE_ENV = "GRAPHLAKE_REQUIRE_TIERS"


#: True in the fast tier (``-m "not slow"``): property tests run a fifth of their examples.
FAST_TIER = False


def pytest_configure(config):
    global FAST_TIER
    FAST_TIER = "not slow" in (config.option.markexpr or "")


def pytest_sessionstart(session):
    """Start the shared builds this run can need (the xdist controller, or a plain run), so
    they build while the workers collect and test; see tests/shared_builds.py."""
    config = session.config
    if not hasattr(config, "workerinput"):
        for build in BUILDS:
            if build.wanted(config):
                build.start(build.folder(config._tmp_path_factory.getbasetemp()))


def pytest_sessionfinish(session):
    config = session.config
    if not hasattr(config, "workerinput"):
        for build in BUILDS:
            build.stop(build.folder(config._tmp_path_factory.getbasetemp()))


def require_installed(*modules: str, reason: str) -> None:
    """Skip the calling test module unless ``modules`` are installed, without importing them:
    ``importorskip`` would import PyTorch (sentence-transformers) or pm4py at collection, in
    every run, the fast tier included."""
    import importlib.util

    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"{reason} (not installed: {', '.join(missing)})", allow_module_level=True)


@pytest.fixture(scope="session")
def readme_demo(tmp_path_factory) -> Built:
    """`graphlake demo` as the README runs it, with its recording indexed: one run per test
    run, shared by every worker (tests only read its lake)."""
    require_installed(*README_DEMO.needs, reason="the demo's frames need the vision extra")
    return README_DEMO.wait(README_DEMO.folder(tmp_path_factory.getbasetemp()))


def examples(n: int) -> int:
    """Hypothesis examples for a property test that builds a real lake per example: all of
    them in the whole suite, a fifth (at least 5) in the fast tier."""
    return max(5, n // 5) if FAST_TIER else n


def pytest_collection_modifyitems(config, items):
    """Every test of a slow tier is also ``slow``. Tests that read the README demo run last:
    it builds in the background from the session's start (tests/shared_builds.py), so the
    workers test everything else meanwhile instead of waiting for it."""
    for item in items:
        if any(item.get_closest_marker(t) for t in SLOW_TIERS):
            item.add_marker(pytest.mark.slow)
    items.sort(key=lambda item: "readme_demo" in getattr(item, "fixturenames", ()))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A tier .ci/run expects to run must not pass by skipping: a skip there fails, with the
    skip's reason (Java missing, Chromium missing, the vision extra missing)."""
    outcome = yield
    report = outcome.get_result()
    required = {t for t in os.environ.get(REQUIRE_ENV, "").split(",") if t}
    if not report.skipped or not required:
        return
    tiers = sorted(t for t in required if item.get_closest_marker(t))
    if tiers:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        report.outcome = "failed"
        report.longrepr = (
            f"tier {', '.join(tiers)} is required here (${REQUIRE_ENV}) but "
            f"this test skipped: {reason}"
        )


def pytest_collectreport(report):
    """Modules of the dependency-bound tiers skip whole when their dependency is missing:
    where tiers are required, such a skip stops the run and says what is missing."""
    if report.skipped and os.environ.get(REQUIRE_ENV):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        report.outcome = "failed"
        report.longrepr = (
            f"{report.nodeid} was skipped at collection, but "
            f"${REQUIRE_ENV} requires its tier to run: {reason}"
        )


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


#: What every CLI run sees: wide tables and no colour, in this process and in subprocesses
#: (set before graphlake.cli builds its consoles, which read them once).
CLI_ENV = {"COLUMNS": "200", "NO_COLOR": "1"}
os.environ.update(CLI_ENV)


def cli(
    *args: str,
    lake: Path | None = None,
    check: bool = True,
    env: dict | None = None,
    subprocess_: bool = False,
) -> subprocess.CompletedProcess:
    """Run the `graphlake` command: its real entry point (argument parsing, the one error
    handler, the exit code) in this process, which saves the 3-4 s of imports a subprocess
    pays. ``subprocess_=True`` starts the console script in its own process, for tests of what
    only a process shows (its environment, signals, the lock between processes)."""
    cmd = [*args, *(["--lake", str(lake)] if lake is not None else [])]
    run = _cli_subprocess if subprocess_ else _cli_in_process
    proc = run(cmd, env or {})
    if check and proc.returncode != 0:
        raise AssertionError(
            f"graphlake {cmd} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
        )
    return proc


def _cli_subprocess(cmd: list[str], env: dict) -> subprocess.CompletedProcess:
    full = [sys.executable, "-m", "graphlake.cli", *cmd]
    return subprocess.run(
        full, capture_output=True, text=True, timeout=1800, env={**os.environ, **CLI_ENV, **env}
    )


def _cli_in_process(cmd: list[str], env: dict) -> subprocess.CompletedProcess:
    import contextlib
    import io
    import traceback
    from unittest import mock

    from graphlake.cli import main

    # text streams over bytes, as a process has: binary formats write to sys.stdout.buffer
    out, err = (
        io.TextIOWrapper(io.BytesIO(), encoding="utf-8", write_through=True) for _ in range(2)
    )
    code: int | str | None = 0
    with (
        mock.patch.dict(os.environ, {"GRAPHLAKE_FAST_EXIT": "0", **env}),  # never os._exit
        mock.patch.object(sys, "argv", ["graphlake", *cmd]),
        mock.patch.object(sys, "stdin", io.StringIO()),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        try:
            main()
        except SystemExit as exc:
            code = exc.code
        except Exception:  # a bug: what the interpreter would print, and exit 1
            traceback.print_exc(file=err)
            code = 1
    if code is None:
        code = 0
    elif not isinstance(code, int):  # sys.exit("message") prints it and exits 1
        err.write(f"{code}\n")
        code = 1
    return subprocess.CompletedProcess(
        ["graphlake", *cmd],
        code,
        out.buffer.getvalue().decode(errors="replace"),
        err.buffer.getvalue().decode(errors="replace"),
    )


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
        em.row(
            "node_occurrences",
            {
                "session_id": "s",
                "node_id": f"v{i}",
                "seq": 0,
                "t_start": float(i),
                "t_end": float(i) + 1.5,
                "actor_type": kind,
            },
        )
    for a, b in edges:
        em.row(
            "edges",
            {
                "session_id": "s",
                "edge_id": f"v{a}->v{b}",
                "src": f"v{a}",
                "dst": f"v{b}",
                "level": "action",
                "kind": "sequential",
            },
        )
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
    """A lake holding the demo corpora (12 Kolab sessions with their recording, HAS-Bench,
    Almanac): built once per run and shared by every worker (tests/shared_builds.py). Tests
    only read it; one that writes copies it first."""
    return DEMO.wait(DEMO.folder(tmp_path_factory.getbasetemp())).lake


class LiveServer:
    """``graphlake.server`` run by uvicorn on a free loopback port, in a thread of this
    process (a real socket: requests go through HTTP, the middleware and the routers)."""

    def __init__(self, settings, wrap=None, shared_socket: bool = False):
        """``wrap(app)`` returns the ASGI app to serve instead (e.g. a :class:`Gate`);
        ``shared_socket`` serves on a socket bound first, as ``graphlake serve --workers N``
        does, and with ``proto`` 0, as uvicorn before 0.55 (and its gunicorn worker) bound
        it."""
        import socket
        import threading

        import uvicorn

        from graphlake.server import create_app
        from graphlake.server.connections import uvicorn_options

        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        sock.close()
        self.url = f"http://127.0.0.1:{self.port}"
        self.app = create_app(settings)
        config = uvicorn.Config(
            wrap(self.app) if wrap else self.app,
            host="127.0.0.1",
            port=self.port,
            log_level="warning",
            access_log=False,
            **uvicorn_options(settings),  # the client bounds `graphlake serve` runs with
        )
        self.server = uvicorn.Server(config)
        sockets = None
        if shared_socket:
            shared = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            shared.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            shared.bind(("127.0.0.1", self.port))
            sockets = [shared]
        self.thread = threading.Thread(target=lambda: self.server.run(sockets=sockets), daemon=True)

    def __enter__(self):
        import time

        self.thread.start()
        deadline = time.monotonic() + 300  # generous: a loaded machine starts slowly
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc):
        self.server.should_exit = True
        self.thread.join(10)


class ServeProcess:
    """``graphlake serve`` as a user starts it: the real command in its own process, on a free
    loopback port. ``ready()`` polls /health until it answers (the process dying, or 300 s on
    a loaded machine, fails the test); leaving the block stops the process."""

    def __init__(
        self, lake: Path, *args: str, headers: dict | None = None, backstop: int | None = None
    ):
        """``backstop``: a data-segment cap (bytes) set on the process as it starts, for
        tests that attack its memory (never unguarded on the shared machine)."""
        import socket

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.headers = headers or {}
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "graphlake.cli",
                "serve",
                "--lake",
                str(lake),
                "--port",
                str(self.port),
                *args,
            ],
            env={**os.environ, **CLI_ENV},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        if backstop is not None:
            # set from here, not by a preexec_fn: Python run between fork and exec in this
            # process with threads can wait for ever on a lock (the Spark gateway did). The
            # first milliseconds of the interpreter's start run uncapped: a backstop only
            import resource

            resource.prlimit(self.proc.pid, resource.RLIMIT_DATA, (backstop, backstop))

    def health(self) -> dict:
        """/health on a new connection (under --workers N, any worker may take it)."""
        import httpx

        return httpx.get(self.url + "/health", headers=self.headers, timeout=60).json()

    def ready(self) -> dict:
        import time

        import httpx

        deadline = time.monotonic() + 300
        while True:
            try:
                return self.health()
            except httpx.HTTPError:
                assert self.proc.poll() is None, self.proc.stderr.read().decode()
                assert time.monotonic() < deadline, "graphlake serve did not start"
                time.sleep(0.2)  # a poll interval while it starts, not a wait for a result

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.proc.terminate()
        self.proc.wait(60)


class Gate:
    """An ASGI wrapper that holds back requests whose path and query match ``hold(pattern)``
    until the test calls ``release()``: a slow answer on demand, to reproduce races in the
    browser. ``arrived`` is set when a held request reached the server, ``done`` when the
    last held one has been answered."""

    def __init__(self, app):
        import threading

        self.app = app
        self.pattern = None
        self.arrived, self.opened, self.done = (threading.Event() for _ in range(3))
        self.pending = 0

    def hold(self, pattern: str) -> None:
        self.pattern = re.compile(pattern)
        for event in (self.arrived, self.opened, self.done):
            event.clear()

    def release(self) -> None:
        self.opened.set()

    async def __call__(self, scope, receive, send):
        import asyncio

        target = scope.get("path", "") + "?" + scope.get("query_string", b"").decode()
        if scope["type"] != "http" or self.pattern is None or not self.pattern.search(target):
            return await self.app(scope, receive, send)
        self.pending += 1
        self.arrived.set()
        await asyncio.to_thread(self.opened.wait)
        try:
            await self.app(scope, receive, send)
        finally:
            self.pending -= 1
            if self.pending == 0:
                self.done.set()


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
def recorded_lake(tmp_path_factory) -> Path:
    """Two copies of the hand session: ``hand-1`` with a screen recording (a real encoded
    video, 128 s of changing shades) and ``hand-2`` without one. Needs PyAV."""
    pytest.importorskip("av")
    import shutil

    from graphlake.demo.video import write_recording
    from graphlake.lake.derived import refresh
    from graphlake.pipeline import ingest_path

    root = tmp_path_factory.mktemp("recorded")
    shutil.copytree(HAND, root / "src" / "hand-1")
    write_recording(
        root / "src" / "hand-1" / "recording.mp4",
        shades=[30, 90, 150, 210],
        seconds_each=32,
        fps=2,
        size=(64, 48),
    )
    other = root / "src" / "hand-2"
    shutil.copytree(HAND, other)
    graph = other / "graph.json"
    graph.write_text(graph.read_text().replace('"hand-1"', '"hand-2"'))
    lake = root / "lake"
    ingest_path("kolab", root / "src", lake)
    refresh(Lake(lake))
    return lake


@pytest.fixture(scope="session")
def demo_server(demo_lake):
    from graphlake.server import Settings

    with LiveServer(
        Settings(lake=demo_lake, max_rows=50, query_timeout_s=5.0, max_body_bytes=20_000)
    ) as srv:
        yield srv
