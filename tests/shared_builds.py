"""Expensive fixtures built once per test run, in their own process, and shared.

Two lakes are needed by many tests and cost many seconds to build:

* ``demo``: the demo corpora (12 Kolab sessions with their recording, HAS-Bench, Almanac)
  ingested and refreshed, read by most query, server and protocol tests (10-16 s);
* ``readme-demo``: `graphlake demo` exactly as the README runs it, its recording sampled,
  read and embedded; ``test_demo`` checks what it prints and commits, the browser workbench
  tests drive its lake (2-5 minutes).

Each is built once per run in a folder every pytest-xdist worker sees:

* the xdist controller (or a plain pytest process) starts the builds a run can need when the
  session starts, so they build while the workers collect and run other tests;
* otherwise the first test that needs one starts it;
* a test waits for the build's exit status (a file its launcher writes last), with a
  deadline, and fails with the build's own output if it failed;
* whatever is still running when the session ends is stopped.

Tests only read these lakes; a test that writes copies one first.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

TESTS = Path(__file__).resolve().parent
#: How long a test waits for a shared build (the README demo takes 2-5 minutes on a busy
#: 2-core machine).
DEADLINE_S = 1800

_LAUNCHER = """
import os, subprocess, sys
out, rc_file = sys.argv[1], sys.argv[2]
with open(out, "wb") as log:
    rc = subprocess.run(sys.argv[3:], stdout=log, stderr=subprocess.STDOUT).returncode
with open(rc_file + ".tmp", "w") as f:
    f.write(str(rc))
os.replace(rc_file + ".tmp", rc_file)
"""


@dataclass(frozen=True)
class Built:
    """What a build left: its lake and everything it printed."""

    lake: Path
    output: str


@dataclass(frozen=True)
class SharedBuild:
    name: str
    #: The test modules that use it: a run naming one of them starts it early.
    users: tuple[str, ...]
    #: Marks whose exclusion (``-m "not <mark>"``) means the run cannot need it.
    marks: tuple[str, ...] = ()
    #: Python modules it needs (it is not started without them; its tests skip).
    needs: tuple[str, ...] = ()

    def folder(self, basetemp: Path) -> Path:
        """The run's shared folder: xdist workers' temp folders sit inside the controller's."""
        if os.environ.get("PYTEST_XDIST_WORKER"):
            basetemp = basetemp.parent
        return basetemp / f"shared-{self.name}"

    def command(self, where: Path) -> list[str]:
        if self.name == "readme-demo":
            return [
                *(sys.executable, "-m", "graphlake.cli", "demo", "--sessions", "12"),
                *("--out", str(where / "corpus"), "--lake", str(where / "lake")),
            ]
        return [sys.executable, str(Path(__file__).resolve()), self.name, str(where)]

    def installed(self) -> bool:
        return all(importlib.util.find_spec(m) for m in self.needs)

    def start(self, where: Path) -> None:
        """Start the build in the background unless this run already did (idempotent)."""
        from filelock import FileLock

        where.mkdir(parents=True, exist_ok=True)
        with FileLock(str(where / "start.lock")):
            if (where / "pid").exists():
                return
            env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
            launcher = [sys.executable, "-c", _LAUNCHER, str(where / "output"), str(where / "rc")]
            proc = subprocess.Popen(
                [*launcher, *self.command(where)],
                env=env,
                start_new_session=True,  # its own process group: stop() ends the build too
                stdin=subprocess.DEVNULL,
            )
            (where / "pid").write_text(str(proc.pid))

    def wait(self, where: Path) -> Built:
        """Start it if need be, then wait for its exit status; fail with its output if it
        failed."""
        self.start(where)
        deadline = time.monotonic() + DEADLINE_S
        rc_file = where / "rc"
        while not rc_file.exists():
            if time.monotonic() > deadline:
                raise AssertionError(f"the shared {self.name} build took over {DEADLINE_S} s")
            time.sleep(0.2)  # polls for the exit status the launcher writes last
        output = (where / "output").read_text(errors="replace")
        rc = int(rc_file.read_text())
        if rc != 0:
            raise AssertionError(f"the shared {self.name} build failed ({rc}):\n{output}")
        return Built(where / "lake", output)

    @staticmethod
    def stop(where: Path) -> None:
        """End a build still running (a run interrupted, or its tests deselected)."""
        pid_file = where / "pid"
        if not pid_file.exists() or (where / "rc").exists():
            return
        try:
            os.killpg(int(pid_file.read_text()), signal.SIGTERM)
        except (ProcessLookupError, PermissionError):
            pass

    def wanted(self, config) -> bool:
        """Whether a run can need it: whole-suite runs, or runs naming one of its users."""
        markexpr = config.option.markexpr or ""
        if any(f"not {m}" in markexpr for m in self.marks) or config.option.keyword:
            return False
        for arg in [a.split("::")[0] for a in config.args] or [str(TESTS)]:
            path = Path(arg).resolve()
            if path.name in self.users or TESTS.is_relative_to(path):
                return self.installed()
        return False


DEMO = SharedBuild("demo", users=())
README_DEMO = SharedBuild(
    "readme-demo",
    users=("test_demo.py", "test_workbench_browser.py", "test_ray.py"),
    marks=("slow", "frames", "subprocess", "browser"),
    needs=("lancedb", "rapidocr_onnxruntime"),
)
BUILDS = (DEMO, README_DEMO)


def build_demo_lake(where: Path) -> None:
    """The ``demo`` lake, written to a temporary folder and renamed into place."""
    import shutil

    from graphlake.demo.almanac_gen import write_almanac_corpus
    from graphlake.demo.corpus import write_demo_corpus
    from graphlake.demo.hasbench_gen import write_hasbench_corpus
    from graphlake.lake import Lake
    from graphlake.lake.derived import refresh
    from graphlake.pipeline import ingest_path

    building = where / "lake.building"
    shutil.rmtree(building, ignore_errors=True)
    corpus = where / "corpus"
    ingest_path("kolab", write_demo_corpus(corpus, sessions=12, seed=7), building)
    ingest_path("hasbench", write_hasbench_corpus(corpus, seed=7), building)
    ingest_path("almanac", write_almanac_corpus(corpus, seed=7), building)
    refresh(Lake(building))  # as `graphlake ingest` does: the materialized views are current
    building.rename(where / "lake")


if __name__ == "__main__":  # the build process: shared_builds.py NAME FOLDER
    name, folder = sys.argv[1], Path(sys.argv[2])
    {"demo": build_demo_lake}[name](folder)
