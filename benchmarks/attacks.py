"""Attacks on a running `graphlake serve`: does `/health` still answer in under a second, and
does the server stay within its bounds?

    python -m benchmarks.attacks              # 1,100 slow clients, 45 long statements, a bomb
    python -m benchmarks.attacks --quick      # 300 slow clients, 12 long statements

The real command serves a small lake (the hand-checked Kolab session) in its own process with
its defaults (1,024 connections, a 10 s client timeout, 4 SQL slots and 32 queued, a 2 GiB
DuckDB memory limit). Each attack runs while a prober asks `GET /health` on a fresh connection
every 0.2 s; the figures are the probes' latency (median and worst), how many failed, and the
server's open descriptors and resident memory at their peak (psutil):

1. **slowloris**: N connections that each send half a request's headers, then nothing;
2. **long statements**: M concurrent `POST /sql` statements that would run for minutes;
3. **memory bomb**: `SELECT length(list(x)::VARCHAR) FROM range(3000000000)`, four at once.

Before issue 21's bounds, 1,100 slow clients used up the server's descriptors, 45 long
statements held every thread (`/health` took 34.6 s), and one bomb grew the server to 8 GiB.
The script prints a Markdown table for docs/reliability.md.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import psutil

ROOT = Path(__file__).resolve().parent.parent
HAND = ROOT / "tests" / "fixtures" / "kolab" / "hand"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """`graphlake serve` in its own process; the peak of its descriptors and memory."""

    def __init__(self, lake: Path):
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "graphlake", "serve", "--lake", str(lake)]
            + ["--port", str(self.port), "--timeout", "10"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 300
        while True:
            try:
                httpx.get(self.url + "/health", timeout=5)
                break
            except httpx.HTTPError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("graphlake serve did not start") from None
                time.sleep(0.2)
        self.ps = psutil.Process(self.proc.pid)
        self.peak_fds = self.peak_rss = 0

    def sample(self) -> None:
        try:
            self.peak_fds = max(self.peak_fds, self.ps.num_fds())
            self.peak_rss = max(self.peak_rss, self.ps.memory_info().rss)
        except psutil.Error:
            pass

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(60)


def probe_while(server: Server, attack, seconds: float) -> dict:
    """Run ``attack(stop_event)`` in a thread while probing /health; the probes' figures."""
    stop = threading.Event()
    attacker = threading.Thread(target=attack, args=(stop,), daemon=True)
    server.peak_fds = server.peak_rss = 0
    attacker.start()
    time.sleep(min(3.0, seconds / 3))  # let the attack build up
    latencies, failed = [], 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        server.sample()
        t0 = time.perf_counter()
        try:
            ok = httpx.get(server.url + "/health", timeout=30).status_code == 200
        except httpx.HTTPError:
            ok = False
        latencies.append(time.perf_counter() - t0)
        failed += not ok
        time.sleep(0.2)
    stop.set()
    attacker.join(120)
    return {
        "probes": len(latencies),
        "failed": failed,
        "p50_ms": statistics.median(latencies) * 1000,
        "max_ms": max(latencies) * 1000,
        "fds": server.peak_fds,
        "rss_mib": server.peak_rss / 2**20,
    }


def slowloris(server: Server, n: int):
    def attack(stop: threading.Event) -> None:
        socks = []
        try:
            for _ in range(n):
                if stop.is_set():
                    break
                try:
                    s = socket.create_connection(("127.0.0.1", server.port), timeout=5)
                    s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: ")
                    socks.append(s)
                except OSError:
                    pass
            while not stop.wait(1.0):  # keep trickling a byte to the ones still open
                for s in socks:
                    try:
                        s.sendall(b"a")
                    except OSError:
                        pass
        finally:
            for s in socks:
                s.close()

    return attack


def statements(server: Server, n: int, sql: str):
    def attack(stop: threading.Event) -> None:
        with concurrent.futures.ThreadPoolExecutor(n) as pool:
            while not stop.is_set():
                futures = [
                    pool.submit(httpx.post, server.url + "/sql", json={"sql": sql}, timeout=120)
                    for _ in range(n)
                ]
                concurrent.futures.wait(futures)

    return attack


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smaller attacks, shorter probes")
    args = ap.parse_args(argv)
    slow, long_n, seconds = (300, 12, 8.0) if args.quick else (1100, 45, 20.0)
    with tempfile.TemporaryDirectory() as tmp:
        lake = Path(tmp) / "lake"
        subprocess.run(
            [sys.executable, "-m", "graphlake", "ingest", "kolab", str(HAND), "--lake", str(lake)],
            check=True,
            capture_output=True,
        )
        server = Server(lake)
        try:
            rows = {
                "none (baseline)": probe_while(server, lambda stop: stop.wait(), seconds / 2),
                f"{slow:,} slow clients (half-sent headers)": probe_while(
                    server, slowloris(server, slow), seconds
                ),
                f"{long_n} concurrent long statements": probe_while(
                    server,
                    statements(server, long_n, "SELECT count(*) FROM range(100000000000) t(x)"),
                    seconds,
                ),
                "4 memory bombs at once": probe_while(
                    server,
                    statements(
                        server, 4, "SELECT length(list(x)::VARCHAR) FROM range(3000000000) t(x)"
                    ),
                    seconds,
                ),
            }
        finally:
            server.stop()
    print("| attack | /health probes (failed) | median | worst | server descriptors | RSS |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, r in rows.items():
        print(
            f"| {name} | {r['probes']} ({r['failed']}) | {r['p50_ms']:.0f} ms | "
            f"{r['max_ms']:.0f} ms | {r['fds']} | {r['rss_mib']:.0f} MiB |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
