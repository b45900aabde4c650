"""Re-ingesting an edited corpus reads only the files that changed, in every format, and the
lake it leaves is the lake a fresh ingest of the edited corpus makes (issue 44).

Each case generates a small corpus in the format's published shape, ingests it, then makes
random changes: a letter changed inside a string of one file, a file copied under a new name
(its sessions then collide with the original's: the run reads everything, as a whole read
decides who is first), a unit's files deleted (with ``prune``). After each change the lake's
fingerprint (every table's rows, hashed) must equal that of a fresh lake made from the same
folder, and an edit must leave the other files unread. MARBLE's corpus is its vendored real
task file, config and result log; a scenario two task files name has its own test below.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import time
from pathlib import Path

import pytest

from conftest import FIXTURES, SAMPLES
from graphlake import ingest
from graphlake.lake import Lake
from graphlake.lake.fingerprint import fingerprint
from graphlake.pipeline import ingest_path


def _tau2(out: Path) -> Path:
    out.mkdir(parents=True)
    for f in ("telecom_grok-3_5sims.json", "airline_tasks.json", "mock_tasks.json"):
        shutil.copy(SAMPLES / "tau2" / f, out / f)
    shutil.copytree(FIXTURES / "tau2_runs", out / "runs")
    return out


def _corpus(fmt: str, out: Path) -> Path:
    from graphlake.demo import almanac_gen, hasbench_gen, public_gen

    if fmt == "coauthor":
        return public_gen.write_coauthor_corpus(out, sessions=6, episodes=4)
    if fmt == "maptask":
        return public_gen.write_maptask_corpus(out, dialogues=4, refs=8)
    if fmt == "marble":  # the vendored real task file, config and result log (twice, as
        # two runs' logs); the copy below makes a task file name the scenarios of another
        out.mkdir(parents=True)
        for f in ("coding_main.first20.jsonl", "coding_config_1.yaml"):
            shutil.copy(SAMPLES / "marble" / f, out / f)
        log = SAMPLES / "marble" / "minecraft_discussion_gpt-4o-mini_1.first1.jsonl"
        for name in ("results_run1.jsonl", "results_run2.jsonl"):
            shutil.copy(log, out / name)
        return out
    if fmt == "almanac":
        return almanac_gen.write_almanac_corpus(out, sessions=5, actions=8)
    if fmt == "hasbench":
        return hasbench_gen.write_hasbench_corpus(out, tasks_per_domain=2)
    return _tau2(out)


FORMATS = ("coauthor", "maptask", "almanac", "hasbench", "tau2", "marble")


def _data_files(src: Path) -> list[Path]:
    return sorted(
        p for p in src.rglob("*") if p.is_file() and p.suffix in (".json", ".jsonl", ".yaml")
    )


def _age(src: Path) -> None:
    """Files dated an hour back: times the source manifest can trust."""
    old = time.time() - 3600
    for p in src.rglob("*"):
        os.utime(p, (old, old))


_WORD = re.compile(rb'"([a-z]{4,})"')


def _edit(path: Path, rng: random.Random) -> bool:
    """One letter of a quoted word changed (the file stays valid JSON or YAML)."""
    data = path.read_bytes()
    words = list(_WORD.finditer(data))
    if not words:
        return False
    m = rng.choice(words)
    at = m.start(1) + rng.randrange(len(m.group(1)))
    letter = bytes([ord("a") + (data[at] - ord("a") + 1) % 26])
    path.write_bytes(data[:at] + letter + data[at + 1 :])
    return True


def _same_as_fresh(fmt: str, src: Path, lake: Path, fresh: Path, step: str) -> None:
    shutil.rmtree(fresh, ignore_errors=True)
    ingest_path(fmt, src, fresh)
    ours, theirs = fingerprint(Lake(lake)), fingerprint(Lake(fresh))
    assert ours == theirs, (step, [t for t in ours if ours[t] != theirs[t]])


# seeds 2-5 found what 0-1 did not: a copy's rejects lost, a map's landmarks kept after its
# file went, a scenario's agents kept after its task file went
@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("fmt", FORMATS)
def test_an_edited_corpus_reads_only_what_changed_and_equals_a_fresh_ingest(tmp_path, fmt, seed):
    rng = random.Random(seed)
    src = _corpus(fmt, tmp_path / "src")
    _age(src)
    lake, fresh = tmp_path / "lake", tmp_path / "fresh"
    first, _ = ingest_path(fmt, src, lake)
    units = first.units
    assert units > 1, "a corpus of one unit tests nothing here"

    # an edit: that file is read again, and no other
    files = _data_files(src)
    rng.shuffle(files)
    edited = next(f for f in files if _edit(f, rng))
    stats, _ = ingest_path(fmt, src, lake)
    assert stats.units - stats.unchanged_units >= 1
    assert stats.unchanged_units >= 1, "the unchanged files were read again"
    _same_as_fresh(fmt, src, lake, fresh, f"after an edit of {edited.name}")
    _age(src)

    # a copy under a new name: its sessions collide with the original's
    copy = edited.with_name("zz_copy_" + edited.name)
    shutil.copy(edited, copy)
    _age(src)
    ingest_path(fmt, src, lake)
    _same_as_fresh(fmt, src, lake, fresh, f"after a copy of {edited.name}")

    # a deleted unit (its files), with prune: what it held is gone from the lake
    units = [u for u in ingest.get(fmt).units(src) if u.path != copy]
    unit = rng.choice(units)
    for f in unit.files():
        shutil.rmtree(f) if Path(f).is_dir() else Path(f).unlink(missing_ok=True)
    ingest_path(fmt, src, lake, prune=True)
    _same_as_fresh(fmt, src, lake, fresh, f"after deleting {unit.path.name}")


def test_a_scenario_two_task_files_name_follows_the_first_through_edits(tmp_path):
    """Two MARBLE task files name scenario coding/1; the first file (path order) wins, the
    other's copy waits. Edits that take the scenario out of the winner, change the copy, and
    bring the scenario back leave, each time, the lake a fresh ingest of the folder makes:
    the copy takes over when the winner drops it (before, the scenario was lost: only the
    winner's file was read again), and an agent the scenario no longer has is gone with it
    (before, its participant row stayed)."""
    import json

    from graphlake.query import run_sql

    src = tmp_path / "src"
    src.mkdir()

    def task(tid: int, content: str, agents: list[str]) -> dict:
        return {
            "scenario": "coding", "task_id": tid, "coordinate_mode": "graph",
            "relationships": [[agents[0], agents[-1], "collaborates with"]],
            "task": {"content": content, "output_format": "x"},
            "agents": [{"type": "CodingAgent", "agent_id": a, "profile": "dev"} for a in agents],
        }  # fmt: skip

    def write(name: str, tasks: list[dict]) -> None:
        (src / name).write_text("".join(json.dumps(t) + "\n" for t in tasks))
        _age(src)

    def goal_of_1(lake: Path) -> list:
        q = "SELECT goal FROM scenarios WHERE scenario_id = 'coding/1'"
        return [r["goal"] for r in run_sql(q, lake).table.to_pylist()]

    write("a.jsonl", [task(1, "first version", ["x", "y"])])
    write("b.jsonl", [task(1, "second version", ["x", "z"]), task(5, "other", ["q"])])
    lake, fresh = tmp_path / "lake", tmp_path / "fresh"
    ingest_path("marble", src, lake)
    assert goal_of_1(lake) == ["first version"]  # the first unit's copy, every time
    _same_as_fresh("marble", src, lake, fresh, "first ingest")

    write("a.jsonl", [task(2, "first version", ["x", "y"])])  # the winner drops it
    ingest_path("marble", src, lake)
    assert goal_of_1(lake) == ["second version"]
    _same_as_fresh("marble", src, lake, fresh, "after the winner dropped coding/1")

    write("b.jsonl", [task(1, "second version, edited", ["x"]), task(5, "other", ["q"])])
    stats, _ = ingest_path("marble", src, lake)
    assert stats.unchanged_units == 1  # a.jsonl is not read again
    _same_as_fresh("marble", src, lake, fresh, "after an agent left coding/1")

    write("a.jsonl", [task(1, "back", ["x", "y"]), task(2, "first version", ["x", "y"])])
    ingest_path("marble", src, lake)
    assert goal_of_1(lake) == ["back"]
    _same_as_fresh("marble", src, lake, fresh, "after the first file named coding/1 again")


def test_a_one_letter_edit_rewrites_only_the_tables_it_changed(tmp_path):
    """A node label of the hand-checked Kolab session changed by one letter: its node rows are
    replaced, with the rows that say where they were read from (the session's, its
    documents'), and no other table is touched (before, all nine tables of the session were
    deleted and appended again: eighteen Delta commits for one letter). The lake equals a
    fresh ingest of the edited folder."""
    from conftest import HAND

    src = tmp_path / "src"
    shutil.copytree(HAND, src)
    _age(src)
    lake, fresh = tmp_path / "lake", tmp_path / "fresh"
    ingest_path("kolab", src, lake)
    graph = src / "graph.json"
    text = graph.read_text()
    at = re.search(r'"label": "([A-Za-z])', text).start(1)
    graph.write_text(text[:at] + ("B" if text[at] != "B" else "C") + text[at + 1 :])
    stats, _ = ingest_path("kolab", src, lake)
    assert stats.replaced_sessions == 1
    assert set(stats.removed) == set(stats.added) == {"sessions", "nodes", "documents"}
    _same_as_fresh("kolab", src, lake, fresh, "after one letter of a label")
