"""The private Ray cluster a command starts for itself (``--engine ray`` without an address):
it listens on the loopback address only, requires a token, and leaves no process behind,
even when the command is killed with SIGKILL (two Ray agents used to survive, one of them
still listening). Real Ray, real processes, real sockets."""

from __future__ import annotations

import ipaddress
import os
import select
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import require_installed

require_installed("ray", reason="the private cluster needs the ray extra")
psutil = pytest.importorskip("psutil")

pytestmark = [pytest.mark.ray, pytest.mark.xdist_group("ray")]

#: how long Ray may take to start, and its processes to end, on a busy 2-core machine
RAY_S = 300

_DRIVER = """
import os, sys
from graphlake.cluster.reaper import MARK
from graphlake.cluster.runtime import attached
with attached(workers=1) as ray:
    @ray.remote
    def plus_one(x):
        return x + 1
    assert ray.get(plus_one.remote(1), timeout=300) == 2
    session = ray._private.worker._global_node.get_session_dir_path()
    print("up", os.environ[MARK], os.environ.get("RAY_AUTH_MODE"), session, flush=True)
    if sys.argv[1] == "wait":
        sys.stdin.read()  # until the test kills us
print("down", MARK in os.environ, os.environ.get("RAY_AUTH_MODE"), flush=True)
"""


def _without_auth() -> dict[str, str]:
    """This environment without the suite's Ray token (tests/conftest.py sets one for the
    other Ray tests): the private cluster must turn auth on by itself, and restore this."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH")}
    return {**env, "RAY_USAGE_STATS_ENABLED": "0"}


def _driver(tmp_path: Path, mode: str) -> tuple[subprocess.Popen, str, str, str]:
    script = tmp_path / "driver.py"
    script.write_text(_DRIVER)
    proc = subprocess.Popen(
        [sys.executable, str(script), mode],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True, env=_without_auth(),
    )  # fmt: skip
    # the event: the cluster is up (its line), waited for at most RAY_S: a driver whose
    # cluster never came up once held a CI run until its time ran out
    up, _, _ = select.select([proc.stdout], [], [], RAY_S)
    line = proc.stdout.readline() if up else ""
    if not line.startswith("up"):
        os.killpg(proc.pid, signal.SIGKILL)
        _, err = proc.communicate(timeout=RAY_S)
        pytest.fail(f"the driver did not bring Ray up in {RAY_S} s: {line!r} {err[-3000:]}")
    _, token, auth, session = line.split()
    return proc, token, auth, session


def _listening(procs) -> set[str]:
    addrs = set()
    for p in procs:
        try:
            for c in p.net_connections(kind="inet"):
                if c.status == psutil.CONN_LISTEN:
                    addrs.add(c.laddr.ip)
        except psutil.Error:
            continue
    return addrs


def _is_loopback(ip: str) -> bool:
    addr = ipaddress.ip_address(ip)
    mapped = getattr(addr, "ipv4_mapped", None)
    return (mapped or addr).is_loopback


def test_a_private_cluster_listens_on_loopback_with_auth_and_dies_with_a_killed_command(
    tmp_path,
):
    from graphlake.cluster.reaper import cluster_processes

    proc, token, auth, session = _driver(tmp_path, "wait")
    try:
        cluster = cluster_processes(token, session, {})
        names = {p.name() for p in cluster}
        assert any("raylet" in n for n in names) and any("gcs_server" in n for n in names)
        addrs = _listening(cluster) | _listening([psutil.Process(proc.pid)])
        assert addrs and all(_is_loopback(a) for a in addrs), addrs
        assert auth == "token"
    finally:
        os.kill(proc.pid, signal.SIGKILL)  # the command alone: no code of it runs
        proc.wait(timeout=RAY_S)
    # the event: every process of the cluster ends (the reaper stops them), those seen
    # above and any started since
    _, alive = psutil.wait_procs(cluster, timeout=RAY_S)
    assert not alive, [p.name() for p in alive]
    _, late = psutil.wait_procs(cluster_processes(token, session, {}), timeout=RAY_S)
    assert not late, [p.name() for p in late]
    assert cluster_processes(token, session, {}) == []


def test_a_command_that_ends_normally_leaves_nothing_and_restores_its_environment(tmp_path):
    from graphlake.cluster.reaper import cluster_processes

    proc, token, _, session = _driver(tmp_path, "once")
    out, err = proc.communicate(timeout=RAY_S)
    assert proc.returncode == 0, err[-3000:]
    assert out.strip() == "down False None"  # the mark and the auth setting are gone
    assert cluster_processes(token, session, {}) == []
