"""The serving process's data-segment cap makes room for the server's own builds and keeps
the same headroom above what the server holds after them. Each case runs in a child process:
a cap on the test process itself would outlive the test."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.subprocess

SCRIPT = textwrap.dedent(
    """
    import resource
    from graphlake import data_cap

    MiB = 1 << 20
    base = data_cap.data_bytes()
    ceiling = data_cap.install(base + 200 * MiB)
    assert resource.getrlimit(resource.RLIMIT_DATA)[0] == ceiling

    try:  # a statement's allocation past the cap fails
        big = bytearray(400 * MiB)
        print("statement-allocated")
    except MemoryError:
        print("statement-stopped")

    held = []
    with data_cap.room_for_build(100 * MiB):  # the server's own build: past the ceiling
        with data_cap.room_for_build(100 * MiB):  # a second build at the same time
            held.append(bytearray(300 * MiB))
        assert resource.getrlimit(resource.RLIMIT_DATA)[0] == resource.RLIM_INFINITY
        held.append(bytearray(100 * MiB))
    print("build-held", sum(len(b) for b in held) // MiB)
    soft = resource.getrlimit(resource.RLIMIT_DATA)[0]
    print("headroom-ok", soft >= data_cap.data_bytes() + 90 * MiB and soft > ceiling)

    try:  # above what the build holds, statements have the headroom and no more
        more = bytearray(50 * MiB)
        print("small-allocated")
        more2 = bytearray(400 * MiB)
        print("large-allocated")
    except MemoryError:
        print("large-stopped")

    # ready to serve: the cap moves to what the process holds + the room, never lower
    before = resource.getrlimit(resource.RLIMIT_DATA)[0]
    data_cap.settle(10 * MiB)
    print("settle-never-lowers", resource.getrlimit(resource.RLIMIT_DATA)[0] == before)
    del more
    held.append(bytearray(60 * MiB))
    data_cap.settle(200 * MiB)
    soft = resource.getrlimit(resource.RLIMIT_DATA)[0]
    print("settle-room", soft >= data_cap.data_bytes() + 190 * MiB)
    """
)


def test_builds_make_room_and_the_headroom_stays_above_what_they_hold():
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [
        "statement-stopped",
        "build-held",
        "400",
        "headroom-ok",
        "True",
        "small-allocated",
        "large-stopped",
        "settle-never-lowers",
        "True",
        "settle-room",
        "True",
    ]


def test_without_a_cap_a_build_changes_nothing():
    script = textwrap.dedent(
        """
        import resource
        from graphlake import data_cap
        before = resource.getrlimit(resource.RLIMIT_DATA)
        with data_cap.room_for_build(1 << 20):
            pass
        print(resource.getrlimit(resource.RLIMIT_DATA) == before)
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert out.stdout.strip() == "True", out.stderr


def test_statements_and_builds_take_turns_so_no_statement_runs_uncapped():
    """A build lifts the cap for the whole process. A statement sent meanwhile (the server
    warming its indexes at startup) ran uncapped and built a 4 GB string. Now a statement
    waits while a build has the cap lifted, a build waits for the statements running, each
    statement sees the cap in force, and a statement that cannot wait is refused."""
    script = textwrap.dedent(
        """
        import resource, threading, time
        from graphlake import data_cap

        data_cap.install(data_cap.data_bytes() + (200 << 20))
        soft = lambda: resource.getrlimit(resource.RLIMIT_DATA)[0]
        seen, order = [], []
        building, done = threading.Event(), threading.Event()

        def build():
            with data_cap.room_for_build(100 << 20):
                order.append("build")
                building.set()
                done.wait(10)
                order.append("build-end")  # (inside: the statement may start right after)

        def run(name):
            with data_cap.statement(10):
                order.append(name)
                seen.append(soft() != resource.RLIM_INFINITY)
                time.sleep(0.05)

        t = threading.Thread(target=build)
        t.start()
        building.wait(10)
        s = threading.Thread(target=run, args=("statement-after-build",))
        s.start()
        try:
            with data_cap.statement(0.05):
                order.append("not-waited")
        except data_cap.BuildUnderWay:
            order.append("refused")
        done.set()
        t.join(); s.join()

        # a build waits for a statement already running
        gate = threading.Event()
        def long_statement():
            with data_cap.statement(10):
                order.append("statement")
                gate.set()
                time.sleep(0.2)
                seen.append(soft() != resource.RLIM_INFINITY)
                order.append("statement-end")
        s = threading.Thread(target=long_statement)
        s.start()
        gate.wait(10)
        with data_cap.room_for_build(100 << 20):
            order.append("build2")
        s.join()
        print(" ".join(order), all(seen), len(seen))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [
        "build", "refused", "build-end", "statement-after-build",
        "statement", "statement-end", "build2",
        "True", "2",
    ]  # fmt: skip
