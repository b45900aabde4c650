"""`graphlake demo` as the README runs it, built once per test run and shared.

The full demo (its recording sampled, read and embedded) takes minutes. Two test modules
need exactly what it leaves: ``test_demo`` checks what it prints and commits, the browser
workbench tests drive its lake. So it runs once per run, in its own process, in a folder
every pytest-xdist worker sees:

* the xdist controller (or a plain pytest process) starts it when the session starts, if
  the run can include those tests, so it builds while the workers run other tests;
* otherwise the first test that needs it starts it;
* a test that needs it waits for the process's exit status (a file the launcher writes last),
  with a deadline, and fails with the demo's own output if it failed;
* whatever is still running when the session ends is stopped.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ARGS = ("demo", "--sessions", "12")
#: How long a test waits for the shared demo (it takes 2-5 minutes on a busy 2-core machine).
DEADLINE_S = 1800
#: The test modules that use it: a run that can collect one of them starts it early.
USERS = ("test_demo.py", "test_workbench_browser.py")

_LAUNCHER = """
import subprocess, sys
out, rc_file = sys.argv[1], sys.argv[2]
with open(out, "wb") as log:
    rc = subprocess.run(sys.argv[3:], stdout=log, stderr=subprocess.STDOUT).returncode
with open(rc_file + ".tmp", "w") as f:
    f.write(str(rc))
import os
os.replace(rc_file + ".tmp", rc_file)
"""


@dataclass(frozen=True)
class ReadmeDemo:
    """What the run left: its lake and everything it printed."""

    lake: Path
    output: str


def folder(basetemp: Path) -> Path:
    """The run's shared folder: xdist workers' temp folders sit inside the controller's."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        basetemp = basetemp.parent
    return basetemp / "readme-demo"


def vision_installed() -> bool:
    import importlib.util

    return all(importlib.util.find_spec(m) for m in ("lancedb", "rapidocr_onnxruntime"))


def start(where: Path) -> None:
    """Start the demo in the background unless this run already did (idempotent)."""
    from filelock import FileLock

    where.mkdir(parents=True, exist_ok=True)
    with FileLock(str(where / "start.lock")):
        if (where / "pid").exists():
            return
        env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
        cmd = [sys.executable, "-m", "graphlake.cli", *ARGS]
        cmd += ["--out", str(where / "corpus"), "--lake", str(where / "lake")]
        proc = subprocess.Popen(
            [sys.executable, "-c", _LAUNCHER, str(where / "output"), str(where / "rc"), *cmd],
            env=env,
            start_new_session=True,  # its own process group: stop() ends the demo too
            stdin=subprocess.DEVNULL,
        )
        (where / "pid").write_text(str(proc.pid))


def wait(where: Path) -> ReadmeDemo:
    """Start it if need be, then wait for its exit status; fail with its output if it failed."""
    start(where)
    deadline = time.monotonic() + DEADLINE_S
    rc_file = where / "rc"
    while not rc_file.exists():
        if time.monotonic() > deadline:
            raise AssertionError(f"graphlake demo did not finish in {DEADLINE_S} s")
        time.sleep(0.5)  # polls for the exit status the launcher writes last
    output = (where / "output").read_text(errors="replace")
    rc = int(rc_file.read_text())
    if rc != 0:
        raise AssertionError(f"graphlake {' '.join(ARGS)} failed ({rc}):\n{output}")
    return ReadmeDemo(where / "lake", output)


def stop(where: Path) -> None:
    """End a demo still running (a run interrupted, or its tests deselected)."""
    pid_file = where / "pid"
    if not pid_file.exists() or (where / "rc").exists():
        return
    try:
        os.killpg(int(pid_file.read_text()), signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        pass


def wanted(config) -> bool:
    """Whether a run can include the demo's users: whole-suite runs, or runs naming them."""
    markexpr = config.option.markexpr or ""
    if any(f"not {m}" in markexpr for m in ("slow", "frames", "subprocess", "browser")):
        return False
    if config.option.keyword:
        return False
    args = [a.split("::")[0] for a in config.args]
    tests_dir = Path(__file__).parent.resolve()
    for arg in args or [str(tests_dir)]:
        path = Path(arg).resolve()
        if path == tests_dir or path.name in USERS or tests_dir.is_relative_to(path):
            return vision_installed()
    return False
