"""The statement time limit runs on one shared thread (a Timer thread per call cost a fifth of
``sql("SELECT 1")``): deadlines fire in order, a disarmed one never fires, and an earlier
deadline armed after a later one wakes the thread. Waits are for events, never fixed sleeps."""

from __future__ import annotations

import threading

from graphlake.query.deadlines import Deadlines

WAIT = 120  # a backstop for a broken watcher, not a measure of speed


def test_deadlines_fire_once_in_order_and_disarmed_ones_never():
    d = Deadlines()
    fired: list[str] = []
    done = threading.Event()
    late = d.arm(3600, lambda: fired.append("late"))
    started = threading.Event()
    d.arm(0.01, started.set)
    assert started.wait(WAIT)  # the thread now sleeps towards the hour-long deadline
    d.arm(0.02, lambda: fired.append("first"))  # earlier: must wake the thread
    gone = d.arm(0.03, lambda: fired.append("disarmed"))
    d.disarm(gone)
    d.arm(0.05, lambda: (fired.append("second"), done.set()))
    assert done.wait(WAIT)
    d.disarm(late)
    assert fired == ["first", "second"]
    names = [t.name for t in threading.enumerate() if t.name == "graphlake-deadlines"]
    assert len(names) >= 1 and d._thread is not None and d._thread.is_alive()


def test_a_statement_past_its_limit_is_stopped(tmp_path):
    import pytest

    from conftest import HAND
    from graphlake.errors import QueryTimeoutError
    from graphlake.pipeline import ingest_path
    from graphlake.query.connection import Connection

    ingest_path("kolab", HAND, tmp_path / "lake")
    with Connection(tmp_path / "lake") as con:
        for _ in range(50):  # many short statements: no stray interrupt lands on a later one
            assert con.execute("SELECT count(*) AS n FROM nodes", timeout_s=30).table.num_rows
        with pytest.raises(QueryTimeoutError):
            con.execute(
                "SELECT count(*) FROM range(100000000000) a, range(10) b "
                "WHERE a.range % 7 = b.range",
                timeout_s=0.5,
            )
        assert con.execute("SELECT 1 AS x", timeout_s=30).table.num_rows == 1
