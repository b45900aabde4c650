"""Load benchmark of `graphlake serve`: wrk in a second process on loopback against the real
server (`graphlake serve`, one uvicorn worker; ``--compare-workers N`` also N) over the
100k-session benchmark lake.

    python -m benchmarks.serve            # 100k sessions, 10 s per run, 5-minute soak
    python -m benchmarks.serve --quick    # 3k sessions, 5 s per run, 30 s soak

At 1, 8 and 32 concurrent connections, each bounded in time, it measures p50 / p99 latency and
requests per second for:

* ``kolab-1b`` instance fetches in the ``graph-chat`` condition (random instance ids);
* graph renderings (``/sessions/kolab/{id}/graph?format=text``, random sessions);
* a session's row and a page of 100 sessions after a random key (``/sessions``);
* ``/sql`` point queries (one session's row by a bound id), apart: ids asked before (the
  result cache answers) and ids no earlier request named (DuckDB answers);
* the ceiling: the same server's ``/health/payload`` returning a precomputed body as large as
  the mean instance, through the same middleware and thread pool.

Then it soaks instance fetches at 32 connections and samples the server's RSS every second.
Goals (issues 9 and 22): instance fetches at 32 clients at least 50% of the ceiling's
throughput with p99 under 50 ms; repeated ``/sql`` point queries >= 1,000 req/s, session rows
and list pages >= 500 req/s; memory flat over the soak. Results are appended to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx
import psutil

from graphlake.demo.corpus import write_graph_corpus
from graphlake.lake import Lake
from graphlake.lake.derived import refresh
from graphlake.pipeline import ingest_path
from graphlake.protocols import Benchmarks
from graphlake.query.connection import Connection

ROOT = Path(__file__).resolve().parent.parent
CONNECTIONS = (1, 8, 32)

_LUA = r"""
local paths = {}
for line in io.lines(os.getenv("GL_PATHS")) do paths[#paths + 1] = line end
local method, body = os.getenv("GL_METHOD") or "GET", os.getenv("GL_BODY")
local i = 0
local counter = 0
setup = function(thread) counter = counter + 1; thread:set("offset", counter * 7919) end
request = function()
  i = i + 1
  local p = paths[((i + (offset or 0)) % #paths) + 1]
  if method == "POST" then
    return wrk.format("POST", "/sql", {["Content-Type"] = "application/json"},
                      string.format(body, p))
  end
  return wrk.format("GET", p)
end
"""


POINT_SQL = "SELECT * FROM sessions WHERE corpus = 'kolab' AND session_id = $s"
SQL_REPEATED = "/sql point query, ids asked before (result cache)"
SQL_FRESH = "/sql point query, ids never asked (no result cache)"
#: ids each run of SQL_FRESH may use: more than it sends in a run (1,600 a second seen)
FRESH_PER_RUN = 15_000


def list_paths(sids: list[str]) -> list[str]:
    """``GET /sessions`` pages of 100 Kolab sessions, each after a random session's key."""
    from graphlake.server.routers.sessions import _LIST_CURSOR

    return [
        f"/sessions?corpus=kolab&limit=100&cursor={_LIST_CURSOR.encode(['kolab', s])}" for s in sids
    ]


def build_lake(work: Path, sessions: int) -> Path:
    src = work / f"kolab-{sessions}-s23"
    if not (src / ".complete").exists():
        shutil.rmtree(src, ignore_errors=True)
        print(f"generating {sessions:,} sessions into {src} ...", flush=True)
        write_graph_corpus(src, sessions, seed=23)
        (src / ".complete").write_text("ok")
    lake = work / f"lake-serve-{sessions}"
    if not (lake / ".complete").exists():
        shutil.rmtree(lake, ignore_errors=True)
        print("ingesting ...", flush=True)
        ingest_path("kolab", src, lake)
        refresh(Lake(lake))
        (lake / ".complete").write_text("ok")
    return lake


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def start_server(lake: Path, port: int, workers: int = 1) -> subprocess.Popen:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "graphlake.cli",
            "serve",
            "--lake",
            str(lake),
            "--port",
            str(port),
            "--max-rows",
            "1000",
            "--workers",
            str(workers),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    t0 = time.monotonic()
    while True:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                print(
                    f"server up after {time.monotonic() - t0:.1f} s (preload included)", flush=True
                )
                return proc
        except httpx.HTTPError:
            pass
        if proc.poll() is not None:
            raise RuntimeError(f"server exited: {proc.stderr.read().decode()[-2000:]}")
        time.sleep(0.5)


def wrk(
    url: str,
    paths: list[str],
    conns: int,
    seconds: float,
    *,
    method: str = "GET",
    body: str | None = None,
) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        plist, script = Path(tmp) / "paths.txt", Path(tmp) / "load.lua"
        plist.write_text("\n".join(paths) + "\n")
        script.write_text(_LUA)
        env = {**os.environ, "GL_PATHS": str(plist), "GL_METHOD": method, "GL_BODY": body or ""}
        out = subprocess.run(
            [
                "wrk",
                "-t",
                "1",
                "-c",
                str(conns),
                "-d",
                f"{seconds:g}s",
                "--latency",
                "-s",
                str(script),
                url,
            ],
            capture_output=True,
            text=True,
            env=env,
            check=True,
        ).stdout

    def ms(label):
        m = re.search(rf"^\s+{label}%\s+([\d.]+)(us|ms|s)\s*$", out, re.M)
        value, unit = float(m.group(1)), m.group(2)
        return value / 1000 if unit == "us" else value * 1000 if unit == "s" else value

    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    sent = int(re.search(r"(\d+) requests in", out).group(1))
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    socket_err = re.search(r"Socket errors: (.*)", out)
    return {
        "rps": rps,
        "requests": sent,
        "p50": ms("50"),
        "p99": ms("99"),
        "non2xx": int(errors.group(1)) if errors else 0,
        "socket_errors": socket_err.group(1) if socket_err else "",
    }


def sample_targets(lake: Path, n: int, seed: int = 5) -> tuple[list[str], list[str], int]:
    """``n`` random instance ids, every Kolab session id in random order, and the number of
    instances."""
    rng = random.Random(seed)
    with Connection(lake) as con:
        bench = Benchmarks(con, preload_rows=0)
        spec, _m = bench.spec("kolab-1b")
        ids = bench.index("kolab-1b", spec.bind({})).table.column("id").to_pylist()
        sessions = [
            r["session_id"]
            for r in con.rows("SELECT session_id FROM sessions WHERE corpus = 'kolab'")
        ]
    rng.shuffle(sessions)
    return rng.sample(ids, min(n, len(ids))), sessions, len(ids)


def soak(url: str, paths: list[str], pid: int, seconds: float) -> dict:
    proc = psutil.Process(pid)
    samples: list[tuple[float, float]] = []
    stop = threading.Event()

    private: list[float] = []

    def sample():
        t0 = time.monotonic()
        while not stop.is_set():
            tree = [proc, *proc.children(recursive=True)]
            infos = [q.memory_info() for q in tree]
            samples.append((time.monotonic() - t0, sum(i.rss for i in infos) / 2**20))
            # rss - shared: what is the process's own (the rest: mapped cache files)
            private.append(sum(i.rss - i.shared for i in infos) / 2**20)
            stop.wait(1.0)

    th = threading.Thread(target=sample, daemon=True)
    th.start()
    res = wrk(url, paths, 32, seconds)
    stop.set()
    th.join()
    rss = [r for _t, r in samples]
    first_min = [r for t, r in samples if t <= 60] or rss
    last_min = [r for t, r in samples if t >= samples[-1][0] - 60] or rss
    return {
        **res,
        "rss_start": rss[0],
        "rss_max": max(rss),
        "private_max": max(private),
        "private_end": private[-1],
        "rss_end": rss[-1],
        "rss_first_min_mean": sum(first_min) / len(first_min),
        "rss_last_min_mean": sum(last_min) / len(last_min),
        "seconds": seconds,
    }


def make_cases(url: str, iids: list[str], sids: list[str]) -> tuple[dict, int]:
    """The measured requests, by name (each a list of paths, a method and a body), and the
    mean instance body size the ceiling returns. The repeated ``/sql`` ids are asked once
    first, so that they are in the result cache."""
    inst_paths = [f"/benchmarks/kolab-1b/instances/{i}?condition=graph-chat" for i in iids]
    graph_paths = [f"/sessions/kolab/{s}/graph?format=text" for s in sids[:50_000]]
    sizes = [len(httpx.get(url + p, timeout=60).content) for p in inst_paths[:200]]
    size = int(sum(sizes) / len(sizes))
    sql_body = json.dumps({"sql": POINT_SQL, "params": {"s": "%s"}})
    # /sql misses: every run asks for ids no earlier request named (the result cache
    # cannot help), taken from the back of the shuffled ids; hits: 1,000 ids asked before
    fresh = sids[len(sids) // 2 :]
    repeated = sids[:1_000]
    for s in repeated:  # in the cache before the runs (the warm-up below adds none)
        httpx.post(f"{url}/sql", json=json.loads(sql_body % s), timeout=60).raise_for_status()
    cases = {
        "ceiling: precomputed payload": dict(paths=[f"/health/payload?size={size}"]),
        "kolab-1b graph-chat instance": dict(paths=inst_paths),
        "graph rendering (text)": dict(paths=graph_paths),
        "session row": dict(paths=[f"/sessions/kolab/{s}" for s in sids[:50_000]]),
        "session list page (100 rows)": dict(paths=list_paths(sids[:50_000])),
        SQL_REPEATED: dict(paths=repeated, method="POST", body=sql_body),
        SQL_FRESH: dict(paths=fresh, method="POST", body=sql_body, fresh=True),
    }
    return cases, size


def run_cases(url: str, cases: dict, connections, seconds: float) -> dict:
    """Each case at each number of ``connections`` for ``seconds`` (after a warm-up of
    those the result cache does not decide): ``{(name, clients): wrk's figures}``."""
    for case in cases.values():  # warm up: first index build, thread pools
        if not case.get("fresh"):
            wrk(url, case["paths"], 8, 2, method=case.get("method", "GET"), body=case.get("body"))
    results = {}
    for name, case in cases.items():
        for c in connections:
            paths = case["paths"]
            if case.get("fresh"):  # a slice no earlier run used (a small lake: all)
                k = list(connections).index(c)
                paths = paths[k * FRESH_PER_RUN : (k + 1) * FRESH_PER_RUN] or paths
            r = wrk(url, paths, c, seconds, method=case.get("method", "GET"), body=case.get("body"))
            if case.get("fresh") and r["requests"] > len(paths):
                r["note"] = f"{r['requests'] - len(paths):,} repeats"
            results[(name, c)] = r
            print(
                f"{name:32s} c={c:2d}  {r['rps']:8.0f} req/s  p50 {r['p50']:7.2f} ms  "
                f"p99 {r['p99']:7.2f} ms  non-2xx {r['non2xx']} {r.get('note', '')}",
                flush=True,
            )
    return results


def compare_workers(lake: Path, one_url: str, cases: dict, n: int, seconds: float) -> str:
    """Three interleaved rounds of the running one-worker server against ``--workers n`` on
    the same lake, at 32 clients: the table, and the ratio of the medians."""
    return workers_table(workers_medians(lake, one_url, cases, n, seconds), n, seconds)


WORKER_CASES = ["kolab-1b graph-chat instance", "session row", SQL_REPEATED]


def workers_medians(
    lake: Path, one_url: str, cases: dict, n: int, seconds: float
) -> dict[tuple[str, int], float]:
    """req/s medians by (case, workers) of three interleaved rounds at 32 clients."""
    port = free_port()
    many = start_server(lake, port, workers=n)
    many_url = f"http://127.0.0.1:{port}"
    names = WORKER_CASES
    got: dict[tuple[str, int], list[float]] = {}
    try:
        for name in names:  # the workers warm up: each finds the indexes mapped, not built
            case = cases[name]
            wrk(
                many_url,
                case["paths"],
                8,
                2,
                method=case.get("method", "GET"),
                body=case.get("body"),
            )
        for _round in range(3):
            for name in names:
                case = cases[name]
                for workers, url in ((1, one_url), (n, many_url)):
                    r = wrk(
                        url,
                        case["paths"],
                        32,
                        seconds,
                        method=case.get("method", "GET"),
                        body=case.get("body"),
                    )
                    got.setdefault((name, workers), []).append(r["rps"])
    finally:
        many.terminate()
        many.wait(30)
    return {k: sorted(v)[1] for k, v in got.items()}


def workers_table(med: dict[tuple[str, int], float], n: int, seconds: float) -> str:
    lines = [
        "",
        f"`--workers {n}` against one worker, 32 clients, medians of 3 interleaved {seconds:g} s "
        f"runs ({psutil.cpu_count()} cores; wrk takes a share of them too):",
        "",
        f"| endpoint | 1 worker req/s | {n} workers req/s | ratio |",
        "|---|---|---|---|",
    ]
    for name in WORKER_CASES:
        a, b = med[(name, 1)], med[(name, n)]
        lines.append(f"| {name} | {a:,.0f} | {b:,.0f} | {b / a:.2f}x |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="3k sessions, short runs")
    ap.add_argument("--sessions", type=int, help="sessions in the lake [100,000]")
    ap.add_argument("--seconds", type=float, help="length of each run [10]")
    ap.add_argument("--soak", type=float, help="soak length in seconds [300]")
    ap.add_argument(
        "--work",
        type=Path,
        default=Path(os.environ.get("GRAPHLAKE_BENCH_DIR", "/tmp/graphlake-bench")),
        help="scratch folder",
    )
    ap.add_argument("--no-write", action="store_true", help="do not append to the docs")
    ap.add_argument(
        "--compare-workers",
        type=int,
        default=0,
        metavar="N",
        help="also serve with --workers N and compare it with one worker, interleaved",
    )
    args = ap.parse_args(argv)
    if shutil.which("wrk") is None:
        print("wrk is not installed: apt-get install wrk", file=sys.stderr)
        return 2
    sessions = args.sessions or (3_000 if args.quick else 100_000)
    seconds = args.seconds or (5 if args.quick else 10)
    soak_s = args.soak if args.soak is not None else (30 if args.quick else 300)
    args.work.mkdir(parents=True, exist_ok=True)
    lake = build_lake(args.work, sessions)
    iids, sids, n_instances = sample_targets(lake, 50_000)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = start_server(lake, port)
    try:
        cases, size = make_cases(url, iids, sids)
        results = run_cases(url, cases, CONNECTIONS, seconds)
        inst_paths = cases["kolab-1b graph-chat instance"]["paths"]
        soaked = soak(url, inst_paths, server.pid, soak_s) if soak_s else None
        if soaked:
            print(
                f"soak {soak_s:g} s: RSS {soaked['rss_start']:.0f} -> "
                f"{soaked['rss_end']:.0f} MiB (max {soaked['rss_max']:.0f})",
                flush=True,
            )
        scaling = (
            compare_workers(lake, url, cases, args.compare_workers, seconds)
            if args.compare_workers
            else None
        )
    finally:
        server.terminate()
        server.wait(30)
    text = report(results, soaked, sessions, n_instances, size, seconds, args.quick)
    if scaling:
        text += scaling
    print(text)
    if not args.no_write:
        with (ROOT / "docs" / "benchmarks.md").open("a") as fh:
            fh.write("\n" + text)
    return 0


def report(
    results: dict,
    soaked: dict | None,
    sessions: int,
    n_instances: int,
    size: int,
    seconds: float,
    quick: bool,
) -> str:
    ceiling = {c: results[("ceiling: precomputed payload", c)] for c in CONNECTIONS}
    lines = [
        f"## {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, serve benchmark"
        + (" (quick)" if quick else ""),
        "",
        f"Machine: {platform.machine()}, {psutil.cpu_count()} cores, "
        f"{psutil.virtual_memory().total / 2**30:.0f} GiB, Python {platform.python_version()}. "
        f"Command: `python -m benchmarks.serve{' --quick' if quick else ''}`. Lake: "
        f"{sessions:,} Kolab sessions, {n_instances:,} `kolab-1b` instances; one uvicorn "
        f"worker; wrk (1 thread) on loopback, {seconds:g} s per run; instance body "
        f"{size:,} bytes on average (the ceiling returns that many).",
        "",
        "| endpoint | clients | req/s | p50 ms | p99 ms | req/s vs ceiling |",
        "|---|---|---|---|---|---|",
    ]
    for (name, c), r in results.items():
        ratio = r["rps"] / ceiling[c]["rps"] if ceiling[c]["rps"] else 0
        lines.append(
            f"| {name} | {c} | {r['rps']:,.0f} | {r['p50']:.2f} | {r['p99']:.2f} | {ratio:.0%} |"
        )
    inst = results[("kolab-1b graph-chat instance", 32)]
    ratio = inst["rps"] / ceiling[32]["rps"]

    def at_least(name: str, floor: float) -> str:
        rps = results[(name, 32)]["rps"]
        return f"{name} >= {floor:,.0f} req/s: {'met' if rps >= floor else 'not met'} ({rps:,.0f})"

    goal = (
        f"Goals at 32 clients: instance fetches >= 50% of the ceiling: "
        f"{'met' if ratio >= 0.5 else 'not met'} ({ratio:.0%}); p99 < 50 ms: "
        f"{'met' if inst['p99'] < 50 else 'not met'} ({inst['p99']:.1f} ms); "
        + "; ".join(
            at_least(n, f)
            for n, f in (
                (SQL_REPEATED, 1000),
                (SQL_FRESH, 1000),
                ("session row", 500),
                ("session list page (100 rows)", 500),
            )
        )
        + "."
    )
    notes = [f"{n} at {c} clients: {r['note']}" for (n, c), r in results.items() if r.get("note")]
    lines += ["", goal] + ([f"Cache could help in: {'; '.join(notes)}."] if notes else [])
    if soaked:
        growth = soaked["rss_last_min_mean"] / soaked["rss_first_min_mean"] - 1
        lines.append(
            f"Soak: {soaked['seconds']:g} s of instance fetches at 32 clients "
            f"({soaked['rps']:,.0f} req/s, p99 {soaked['p99']:.1f} ms): server RSS "
            f"{soaked['rss_start']:,.0f} MiB at the start, {soaked['rss_end']:,.0f} MiB at the "
            f"end, {soaked['rss_max']:,.0f} MiB at most, of which the server's own (RSS less "
            f"shared file pages: the memory-mapped indexes and rows are page cache) "
            f"{soaked['private_max']:,.0f} MiB at most; mean of the last minute "
            f"{growth:+.1%} against the first: "
            f"{'flat (met)' if abs(growth) < 0.05 else 'not flat (not met)'}."
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
