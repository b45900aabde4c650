"""The Ray engine against the local one, on a real two-node Ray cluster on this machine.

The cluster is a head and a worker node, each `ray start --block` in its own process group
with one CPU, started by this module and stopped after it (SIGTERM, then the group killed):
tasks and actors are scheduled across two raylets, and models, frames and Arrow batches are
serialised between processes, as on several machines. The tests compare what the Ray
engine writes with what the local engine wrote from the same input: the fingerprints of
every table for ingest, and every column of the frame index, vectors included.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import FIXTURES, cli, require_installed
from graphlake.lake import Lake
from graphlake.lake.fingerprint import fingerprint
from graphlake.pipeline import ingest_path

require_installed("ray", reason="the Ray engine needs the ray extra")

pytestmark = [pytest.mark.ray, pytest.mark.xdist_group("ray")]

#: how long a node may take to start on a busy 2-core machine
NODE_START_S = 180


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start_node(args: list[str], log: Path) -> subprocess.Popen:
    """One `ray start --block` node, its output in ``log``; returns once it says it runs."""
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    out = open(log, "wb")  # noqa: SIM115 - the node writes it until it stops
    ray = Path(sys.executable).with_name("ray")
    proc = subprocess.Popen(
        [str(ray), "start", "--block", "--disable-usage-stats", "--node-ip-address=127.0.0.1",
         "--num-cpus=1", "--object-store-memory=400000000", *args],
        stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + NODE_START_S
    while "Ray runtime started" not in log.read_text(errors="replace"):
        if proc.poll() is not None or time.monotonic() > deadline:
            _stop(proc)
            pytest.fail(f"ray start did not come up:\n{log.read_text(errors='replace')}")
        time.sleep(0.2)  # polling a log file: there is no event to wait on
    return proc


def _stop(proc: subprocess.Popen) -> None:
    """SIGTERM (ray start --block stops its processes), then the whole group, surely."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # anything of the node still running
    except ProcessLookupError:
        pass
    proc.wait()


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """A head and a worker node on loopback, with the test process's token (set in
    conftest.py); yields the address a driver attaches to."""
    temp = Path(tempfile.mkdtemp(prefix="glray-", dir="/tmp"))  # socket paths must be short
    port = _free_port()
    nodes = []
    try:
        nodes.append(
            _start_node(
                [
                    "--head",
                    f"--port={port}",
                    "--include-dashboard=false",
                    f"--temp-dir={temp}",
                ],
                temp / "head.log",
            )  # fmt: skip
        )
        nodes.append(_start_node([f"--address=127.0.0.1:{port}"], temp / "worker.log"))
        yield f"127.0.0.1:{port}"
    finally:
        for proc in reversed(nodes):
            _stop(proc)
        shutil.rmtree(temp, ignore_errors=True)


def _fixture_corpora(tmp: Path) -> dict[str, tuple[str, Path]]:
    """Every fixture corpus the golden tests ingest, by name: (ingestor, source)."""
    from test_golden_corpora import CORPORA

    out = {}
    for name, make in CORPORA.items():
        (tmp / name).mkdir(parents=True)
        out[name] = (name.split("_")[0], Path(make(tmp / name)).resolve())
    out["kolab"] = ("kolab", (FIXTURES / "kolab").resolve())
    return out


def test_ingest_on_ray_commits_the_lake_a_local_ingest_commits(cluster, tmp_path):
    """Every fixture corpus, parsed by Ray tasks across both nodes, lands with the rows and
    rejects of a local ingest of the same files: equal fingerprints, table by table."""
    for name, (corpus, src) in _fixture_corpora(tmp_path / "src").items():
        local, ray = Lake(tmp_path / name / "local"), Lake(tmp_path / name / "ray")
        ingest_path(corpus, src, local)
        stats, snap = ingest_path(corpus, src, ray, engine="ray", address=cluster)
        assert snap is not None and sum(stats.accepted.values()) > 0, name
        prints = fingerprint(ray)
        assert prints == fingerprint(local), name
        assert sum(p.rows for p in prints.values()) > 0, name
        # a second run adds nothing, on Ray as locally
        _stats, again = ingest_path(corpus, src, ray, engine="ray", address=cluster, force=True)
        assert again is None, name
    # the command line's --engine and --address reach the same path
    by_cli = tmp_path / "cli"
    out = cli("ingest", "hasbench", str((FIXTURES / "hasbench").resolve()), "--quiet",
              "--engine", "ray", "--address", cluster, lake=by_cli)  # fmt: skip
    assert "committed lake version 1" in out.stdout, out.stdout
    local = fingerprint(Lake(tmp_path / "hasbench" / "local"), 1)  # before its refresh
    assert fingerprint(Lake(by_cli), 1) == local


def test_a_parse_task_lost_with_its_worker_is_run_again(cluster, tmp_path):
    """The worker process of a running parse task is killed; Ray runs the task again and
    the lake equals a local ingest's (4,000 generated Kolab sessions, so that the parse
    lasts long enough to be caught)."""
    import threading

    import psutil

    from graphlake.demo.corpus import write_graph_corpus

    src = write_graph_corpus(tmp_path / "src", sessions=4000, per_dir=500).resolve()
    local, ray = Lake(tmp_path / "local"), Lake(tmp_path / "ray")
    ingest_path("kolab", src, local)
    failed: list[BaseException] = []

    def on_ray() -> None:
        try:
            ingest_path("kolab", src, ray, engine="ray", address=cluster)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the test's thread
            failed.append(exc)

    driver = threading.Thread(target=on_ray)
    driver.start()
    killed = None
    while driver.is_alive() and killed is None:
        for p in psutil.process_iter(["cmdline"]):
            if (p.info["cmdline"] or [""])[0].startswith("ray::_worker"):  # parsing now
                p.kill()
                killed = p.pid
                break
        time.sleep(0.05)  # polling the process table: there is no event to wait on
    driver.join()
    assert not failed, failed
    assert killed is not None, "the ingest ended before a parse task could be killed"
    assert fingerprint(ray) == fingerprint(local)


def test_a_cluster_that_returns_nothing_within_the_stall_limit_stops_the_ingest(
    cluster, tmp_path, monkeypatch
):
    """A driver waits for its cluster's next result at most GRAPHLAKE_RAY_STALL_S: past it
    the ingest stops with an error that says what it waited for and what to do, and commits
    nothing (a driver blocked in ray.wait with no limit once held a CI run for an hour).
    The limit here is shorter than any parse task can take, so the first wait runs out."""
    from graphlake.demo.corpus import write_graph_corpus
    from graphlake.errors import GraphlakeError

    src = write_graph_corpus(tmp_path / "src", sessions=200, per_dir=100).resolve()
    monkeypatch.setenv("GRAPHLAKE_RAY_STALL_S", "0.001")
    lake = Lake(tmp_path / "lake")
    with pytest.raises(GraphlakeError, match=r"returned nothing for 0.001 s while parsing"):
        ingest_path("kolab", src, lake, engine="ray", address=cluster)
    assert lake.snapshots() == []  # nothing committed


def _frames_table(lake: Path, name: str):
    import lancedb

    table = lancedb.connect(str(lake / "_frames")).open_table(name)
    key = "frame_id" if name == "frames" else "text_id"
    return table.search().limit(table.count_rows()).to_arrow().sort_by(key)


def _frames_written(lake: Path) -> int:
    import lancedb

    try:
        return lancedb.connect(str(lake / "_frames")).open_table("frames").count_rows()
    except (ValueError, FileNotFoundError, OSError):  # not created yet
        return 0


def _kill_one(title: str) -> int | None:
    """SIGKILL one process whose title (``ray::<task or actor>``) starts with ``title``."""
    import psutil

    for p in psutil.process_iter(["cmdline"]):
        if (p.info["cmdline"] or [""])[0].startswith(title):
            p.kill()
            return p.pid
    return None


@pytest.mark.frames
@pytest.mark.subprocess
def test_frames_index_on_ray_equals_the_local_index_through_kills(cluster, readme_demo, tmp_path):
    """The demo's Kolab sessions ingested and its recording indexed through the cluster in
    batches of 4 frames, while one reader actor's process, then the sampler task's, then the
    driver itself are killed (each once a batch more has landed), and the index run again to
    its end, give the index the local engine gave: same frame ids, times, texts, OCR scores,
    workflow state, thumbnails and vectors (MiniLM's vectors do not depend on the batch), the
    same text index, and the same lake ``frames`` table."""
    import pyarrow.compute as pc

    lake = tmp_path / "lake"
    kolab = readme_demo.lake.parent / "corpus" / "kolab"  # the demo's sessions and recording
    ingest_path("kolab", kolab, lake, engine="ray", address=cluster)
    cmd = [sys.executable, "-m", "graphlake.cli", "frames", "index", "--lake", str(lake),
           "--engine", "ray", "--address", cluster, "--batch", "4", "--quiet"]  # fmt: skip
    run = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    # (rows written before the kill, what is killed): a reader, the sampler, the driver
    plan = [(4, "ray::FrameReader"), (8, "ray::sample_batches"), (16, "driver")]
    killed: list[str] = []
    try:
        deadline = time.monotonic() + 600
        while plan and run.poll() is None and time.monotonic() < deadline:
            rows, what = plan[0]
            if _frames_written(lake) >= rows:
                if what == "driver":
                    run.kill()
                elif _kill_one(what) is None:
                    break  # nothing of that kind runs now: the assertion below says so
                killed.append(what)
                plan.pop(0)
            time.sleep(0.5)  # polling the index: no event says a batch landed
        out, _ = run.communicate(timeout=600)  # past GRAPHLAKE_RAY_STALL_S: it hung
    finally:
        if run.poll() is None:
            run.kill()
    assert killed == ["ray::FrameReader", "ray::sample_batches", "driver"], (killed, out)
    assert run.returncode == -signal.SIGKILL, out  # until the driver was killed, it ran on
    resumed = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=600).stdout
    assert "indexed 1 recording" in resumed, resumed
    for name in ("frames", "texts"):
        got, want = _frames_table(lake, name), _frames_table(readme_demo.lake, name)
        want = want.filter(pc.equal(want.column("corpus"), "kolab"))  # the demo has more
        assert got.num_rows == want.num_rows > 0, name
        for col in want.column_names:
            assert got.column(col).equals(want.column(col)), f"{name}.{col} differs"
    # the lake's frames table (for SQL) is committed from the same rows
    assert fingerprint(Lake(lake))["frames"] == fingerprint(Lake(readme_demo.lake))["frames"]
    again = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=600).stdout
    assert "nothing new" in again, again  # re-running adds nothing


def test_an_address_where_no_cluster_answers_is_an_error_that_says_what_to_do(tmp_path):
    """A dead address is one error line with what to do (ray.init alone retries it for
    minutes, printing its own logs: the command checks the port first)."""
    port = _free_port()  # nothing listens there
    out = cli("ingest", "hasbench", str(FIXTURES / "hasbench"), "--engine", "ray",
              "--address", f"127.0.0.1:{port}", lake=tmp_path / "lake", check=False)  # fmt: skip
    assert out.returncode == 1
    assert f"no Ray cluster answers at 127.0.0.1:{port}" in out.stderr
    assert "ray start --head" in out.stderr


def test_ray_address_from_the_environment_is_the_cluster_used(tmp_path, monkeypatch):
    """$RAY_ADDRESS names the cluster, as for ray.init: a private cluster is not started
    beside it (here the address is dead, so the error names it)."""
    from graphlake.errors import GraphlakeError

    dead = f"127.0.0.1:{_free_port()}"
    monkeypatch.setenv("RAY_ADDRESS", dead)
    with pytest.raises(GraphlakeError, match=f"no Ray cluster answers at {dead}"):
        ingest_path("hasbench", FIXTURES / "hasbench", tmp_path / "lake", engine="ray")
