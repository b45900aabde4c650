"""Whatever a private Ray cluster started, stopped with the command that started it, even
when that command is killed.

``ray.shutdown()`` stops the cluster when the command ends normally. A command killed with
SIGKILL runs no code: Ray's own processes mostly die with it, but agents that the raylet
started outlive it (two survived, one still listening). So before the cluster starts, the
command marks its environment with a random token, which every process of the cluster
inherits, and starts a reaper: a small process in its own session that holds the read end
of a pipe whose write end only the command holds. When the command ends, however it ends,
the pipe closes; the reaper then stops every process that carries the token (SIGTERM, then
SIGKILL for what is left after a grace period) and exits. No polling: it waits on the pipe.
Once the cluster is up, the command also tells the reaper, through the pipe, the cluster's
session folder and the processes it has: Ray's agents rename themselves (setproctitle),
which overwrites the environment block the mark is in, but they keep their log files in the
session folder open.

    python -m graphlake.cluster.reaper FD TOKEN PID   # started by :func:`start`, not by hand
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from dataclasses import dataclass

#: The environment variable that marks the processes of one private cluster
MARK = "GRAPHLAKE_RAY_CLUSTER_TOKEN"
#: Seconds the reaper lets marked processes end on SIGTERM before it sends SIGKILL
GRACE_S = 5.0


@dataclass
class Reaper:
    """The running reaper of one private cluster: :meth:`release` when the cluster is down."""

    token: str
    proc: subprocess.Popen
    write_fd: int

    def announce(self, session_dir: str | None, pids: list[int]) -> None:
        """Tell the reaper the cluster's session folder and processes (each with its start
        time, so that a pid used again later is not mistaken for one of them)."""
        import psutil

        lines = [f"dir {session_dir}"] if session_dir else []
        for pid in pids:
            try:
                lines.append(f"pid {pid} {psutil.Process(pid).create_time()!r}")
            except psutil.Error:
                continue
        if lines and self.write_fd >= 0:
            os.write(self.write_fd, ("\n".join(lines) + "\n").encode())

    def release(self) -> None:
        """The cluster was shut down: close the pipe (the reaper sweeps what is left, which
        should be nothing, and exits) and wait for it."""
        if self.write_fd >= 0:
            os.close(self.write_fd)
            self.write_fd = -1
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:  # it is stuck: it must not outlive us either
            self.proc.kill()


def start() -> Reaper:
    """Mark this process's environment (children inherit it) and start the reaper."""
    token = secrets.token_hex(16)
    read_fd, write_fd = os.pipe()
    env = {k: v for k, v in os.environ.items() if k != MARK}  # the reaper is not reaped
    proc = subprocess.Popen(
        [sys.executable, "-m", "graphlake.cluster.reaper", str(read_fd), token, str(os.getpid())],
        pass_fds=(read_fd,),
        env=env,
        start_new_session=True,  # a kill of the command's process group spares it
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    os.close(read_fd)
    os.set_inheritable(write_fd, False)  # only this process holds the pipe open
    os.environ[MARK] = token
    return Reaper(token, proc, write_fd)


def marked(token: str) -> list:
    """The processes (psutil) whose environment carries ``token``. On Linux the bytes of
    ``/proc/<pid>/environ`` are searched: Ray's processes rename themselves (setproctitle),
    which zeroes the start of their environment block, and psutil's parser stops there."""
    import psutil

    needle = f"{MARK}={token}".encode()
    found = []
    for p in psutil.process_iter():
        if p.pid == os.getpid():
            continue
        try:
            if _has_mark(p, needle, token):
                found.append(p)
        except (psutil.Error, OSError):
            continue  # gone, or not ours to read
    return found


def _has_mark(p, needle: bytes, token: str) -> bool:
    try:
        with open(f"/proc/{p.pid}/environ", "rb") as f:
            raw = f.read()
    except FileNotFoundError:  # no /proc (macOS): psutil reads it its own way
        return p.environ().get(MARK) == token
    return any(part == needle for part in raw.split(b"\0") if part.startswith(MARK.encode()))


def sweep(
    token: str,
    grace_s: float = GRACE_S,
    rounds: int = 20,
    session_dir: str | None = None,
    pids: dict[int, float] | None = None,
    spare: int | None = None,
) -> int:
    """Stop every process of the cluster (marked with ``token``, holding a file open in its
    ``session_dir``, or one of ``pids`` with its start time), round after round until none
    is left (a raylet being stopped may still start an agent); how many there were."""
    total = 0
    for _ in range(rounds):
        procs = [p for p in cluster_processes(token, session_dir, pids or {}) if p.pid != spare]
        n = _stop(procs, grace_s)
        if not n:
            break
        total += n
    return total


def cluster_processes(token: str, session_dir: str | None, pids: dict[int, float]) -> list:
    """The processes (psutil) of one private cluster, found three ways (see the module)."""
    import psutil

    found = {p.pid: p for p in marked(token)}
    for pid, started in pids.items():
        if pid == os.getpid():  # the command's children include this reaper
            continue
        try:
            p = psutil.Process(pid)
            if p.create_time() == started:
                found[pid] = p
        except psutil.Error:
            continue
    if session_dir:
        for p in psutil.process_iter():
            if p.pid in found or p.pid == os.getpid():
                continue
            try:
                if any(f.path.startswith(session_dir) for f in p.open_files()):
                    found[p.pid] = p
            except (psutil.Error, OSError):
                continue
    return list(found.values())


def _stop(procs: list, grace_s: float) -> int:
    import psutil

    for p in procs:
        try:
            p.terminate()
        except psutil.Error:
            pass
    _, alive = psutil.wait_procs(procs, timeout=grace_s)
    for p in alive:
        try:
            p.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(alive, timeout=grace_s)
    return len(procs)


def _main(argv: list[str]) -> int:
    read_fd, token, command = int(argv[0]), argv[1], int(argv[2])
    session_dir: str | None = None
    pids: dict[int, float] = {}
    with os.fdopen(read_fd, "rb") as pipe:
        for line in pipe:  # returns at EOF: when the command that holds the other end has
            # ended, however it ended
            kind, _, rest = line.decode().strip().partition(" ")
            if kind == "dir":
                session_dir = rest
            elif kind == "pid":
                pid, started = rest.split()
                pids[int(pid)] = float(started)
    # the command itself holds files in the session folder: it is never a target (it has
    # ended, or it is waiting for this reaper after its own clean shutdown)
    sweep(token, session_dir=session_dir, pids=pids, spare=command)
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
