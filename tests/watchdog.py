"""Run an attack in a child process with a memory ceiling, never unguarded on the machine.

The child's data segment (heap and private mappings: what a bomb grows) is capped with
``RLIMIT_DATA``. Code that bounds its input stays far below the cap and the child exits 0;
code that does not hits ``MemoryError`` in the child (exit status 1, the traceback on stderr)
instead of taking the shared machine. Peak memory is the child's own high-water mark
(``VmHWM``; its rusage would also count the process it was forked from).
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

#: The documented ceiling for one input or statement (docs/reliability.md).
DEFAULT_CEILING = 2 << 30

_WRAPPER = """
import json, resource, runpy, sys
ceiling, result_file, script = int(sys.argv[1]), sys.argv[2], sys.argv[3]
resource.setrlimit(resource.RLIMIT_DATA, (ceiling, ceiling))
sys.argv = sys.argv[3:]
try:
    runpy.run_path(script, run_name="__main__")
finally:
    # VmHWM: this process's own peak. ru_maxrss also counts the parent it was forked from
    # (Linux carries the peak across exec): a test run's large pytest worker, not the attack
    try:
        with open("/proc/self/status") as f:
            peak_kib = next(int(l.split()[1]) for l in f if l.startswith("VmHWM:"))
    except (OSError, StopIteration):
        peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with open(result_file, "w") as f:
        json.dump({"peak_bytes": peak_kib * 1024}, f)
"""


@dataclass(frozen=True)
class Bounded:
    returncode: int
    stdout: str
    stderr: str
    peak_bytes: int


def run_bounded(
    script: Path, *args: str, ceiling: int = DEFAULT_CEILING, timeout: float = 600
) -> Bounded:
    """Run the Python file ``script`` with ``args`` under a memory ceiling of ``ceiling``
    bytes; ``timeout`` is a backstop for a hang, not a measure of speed."""
    result_file = script.with_suffix(".peak.json")
    proc = subprocess.run(
        [sys.executable, "-c", _WRAPPER, str(ceiling), str(result_file), str(script), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    peak = json.loads(result_file.read_text())["peak_bytes"] if result_file.exists() else -1
    return Bounded(proc.returncode, proc.stdout, proc.stderr, peak)
