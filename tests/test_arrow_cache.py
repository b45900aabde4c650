"""Tables derived from a lake version (instance indexes, preloaded corpus rows) are built once,
kept as Arrow IPC files in the lake's cache and memory-mapped by every process after."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pyarrow as pa
import pytest

from graphlake.lake import Lake
from graphlake.protocols.arrow_cache import KEEP_VERSIONS, cache_dir, cached_table
from graphlake.protocols.service import Benchmarks, _Index


def _table(n=5):
    return pa.table({"id": [f"{i:020x}" for i in range(n)], "corpus": ["k"] * n})


def test_built_once_then_mapped(lake):
    built = []

    def build():
        built.append(1)
        return _table()

    first = cached_table(lake, 1, "t", "SELECT 1", build)
    again = cached_table(lake, 1, "t", "SELECT 1", build)
    assert first.equals(_table()) and again.equals(_table()) and len(built) == 1
    assert len(list((cache_dir(lake) / "v1").glob("t-*.arrow"))) == 1
    cached_table(lake, 1, "t", "SELECT 2", build)  # another recipe: another table
    cached_table(lake, 2, "t", "SELECT 1", build)  # another version too
    assert len(built) == 3


def test_a_streamed_build_writes_every_reader_into_one_file(lake):
    """A build handing over several readers (a corpus read range by range) gives one table,
    the readers' batches in order, mapped from its file."""
    parts = [_table(3), _table(3).slice(0, 0), pa.table({"id": ["z"], "corpus": ["k"]})]

    def stream(write):
        for t in parts:
            write(pa.RecordBatchReader.from_batches(t.schema, t.to_batches()))

    got = cached_table(lake, 1, "s", "r", stream=stream)
    assert got.equals(pa.concat_tables(parts))
    assert cached_table(lake, 1, "s", "r", stream=lambda write: None).equals(got)  # mapped
    with pytest.raises(TypeError):
        cached_table(lake, 1, "s", "r")


def test_a_built_table_is_mapped_as_one_chunk(lake):
    """An index's columns are combined into one chunk each after mapping; written as one
    batch, that is a view of the file, not a copy."""
    got = cached_table(lake, 1, "c", "r", lambda: pa.concat_tables([_table(3), _table(2)]))
    again = cached_table(lake, 1, "c", "r", lambda: _table(0))
    assert got.num_rows == again.num_rows == 5
    assert {c.num_chunks for c in again.columns} == {1}


def test_an_unreadable_file_is_built_again(lake):
    cached_table(lake, 1, "t", "r", _table)
    (path,) = (cache_dir(lake) / "v1").glob("t-*.arrow")
    path.write_bytes(b"not arrow")
    assert cached_table(lake, 1, "t", "r", lambda: _table(3)).num_rows == 3


def test_only_the_newest_versions_are_kept(lake):
    for v in range(1, KEEP_VERSIONS + 3):
        cached_table(lake, v, "t", "r", _table)
    kept = sorted(int(p.name[1:]) for p in cache_dir(lake).iterdir())
    assert kept == list(range(3, KEEP_VERSIONS + 3))


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_lake_builds_in_memory(lake):
    cache_dir(lake).parent.mkdir(parents=True, exist_ok=True)
    os.chmod(cache_dir(lake).parent, 0o500)
    try:
        assert cached_table(lake, 1, "t", "r", _table).equals(_table())
    finally:
        os.chmod(cache_dir(lake).parent, 0o700)


def test_processes_at_once_build_it_once(lake, tmp_path):
    log = tmp_path / "builds.log"
    script = textwrap.dedent(
        f"""
        import os, pyarrow as pa
        from graphlake.lake import Lake
        from graphlake.protocols.arrow_cache import cached_table

        def build():
            with open({str(log)!r}, "a") as fh:
                fh.write(f"{{os.getpid()}}\\n")
            sum(range(3_000_000))  # a build that takes a moment: the others must wait
            return pa.table({{"x": list(range(1000))}})

        t = cached_table(Lake({str(lake.root)!r}), 7, "t", "r", build)
        assert t.num_rows == 1000
        """
    )
    procs = [subprocess.Popen([sys.executable, "-c", script]) for _ in range(3)]
    assert [p.wait(120) for p in procs] == [0, 0, 0]
    assert len(log.read_text().split()) == 1


def test_mapped_index_ids_are_a_view_and_search_as_strings():
    rng = np.random.default_rng(3)
    ids = sorted({f"{int(x):020x}" for x in rng.integers(0, 2**63, 2000)})
    idx = _Index(pa.table({"id": ids, "corpus": ["k"] * len(ids)}), frozenset({"k"}))
    assert idx.ids.dtype.kind == "S" and idx.ids.base is not None  # no copy of the ids
    plain = np.asarray(ids, dtype=str)
    for probe in [ids[0], ids[777], ids[-1], ids[5] + "0", ids[5][:-1], "", "zzzz", "0" * 25]:
        want = int(np.searchsorted(plain, probe))
        found = want if want < len(plain) and plain[want] == probe else None
        assert idx.find(probe) == found, probe
        assert idx.after(probe) == int(np.searchsorted(plain, probe, side="right")), probe
    assert [idx.id_at(i) for i in range(len(idx))] == ids
    mixed = _Index(pa.table({"id": ["a", "bb"], "corpus": ["k", "k"]}), frozenset({"k"}))
    assert mixed.find("bb") == 1 and mixed.find("b") is None


def test_a_second_service_maps_the_first_ones_index(demo_lake):
    from graphlake.query.connection import Connection

    with Connection(demo_lake) as one, Connection(demo_lake) as two:
        first = Benchmarks(one, preload_rows=0)
        spec, _m = first.spec("kolab-1b")
        a = first.index("kolab-1b", spec.bind({}))
        second = Benchmarks(two, preload_rows=0)
        calls = []
        real = two.execute
        two.execute = lambda *a, **k: calls.append(a) or real(*a, **k)  # type: ignore[method-assign]
        b = second.index("kolab-1b", spec.bind({}))
        assert b.table.equals(a.table) and calls == []
        assert len(list((cache_dir(Lake(demo_lake)) / f"v{one.version}").glob("index-kolab-1b-*")))
