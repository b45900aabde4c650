"""Write generated Kolab corpora to disk: the demo (session folders with side files and a few
planted errors) and bare graph-JSON corpora of any size for the benchmarks."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson

from graphlake.demo.kolab_gen import KolabGenerator
from graphlake.demo.video import have_pyav, write_demo_recording

_JSON = orjson.OPT_INDENT_2


def _write_json(path: Path, obj) -> None:
    path.write_bytes(orjson.dumps(obj, option=_JSON))


def write_demo_corpus(
    out: Path, sessions: int = 24, seed: int = 7, *, recording: bool = True
) -> Path:
    """Write ``sessions`` session folders under ``out/kolab`` (replacing what was there);
    the first has a rendered screen recording when ``recording`` and PyAV is installed.

    Planted errors, each of which must end up in ``rejects`` while the rest lands:
    a user_response whose AI time matches no occurrence, an unparseable node time, an edge
    to a node that does not exist, a duplicate node id, and one file that is not JSON.
    """
    root = Path(out) / "kolab"
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    gen = KolabGenerator(seed)
    for i in range(sessions):
        s = gen.session(i)
        _plant_errors(i, s.graph)
        folder = root / s.graph["session_id"]
        folder.mkdir()
        _write_json(folder / "graph.json", s.graph)
        _write_json(folder / "meta.json", s.meta)
        _write_json(folder / "ratings.json", s.ratings)
        _write_json(folder / "survey.json", s.survey)
        (folder / "workflow.md").write_text(s.workflow_md)
        (folder / "chat.jsonl").write_bytes(b"".join(orjson.dumps(m) + b"\n" for m in s.chat))
        if (
            i == 0 and recording and have_pyav()
        ):  # the session's screen recording, rendered from its graph
            write_demo_recording(folder / "recording.mp4", s.graph, s.chat)
    (root / "exported_graph_truncated.json").write_text('{"session_id": "kolab-broken", "steps": [')
    return root


def _plant_errors(i: int, graph: dict) -> None:
    steps = graph["steps"]
    if i == 2:  # a reference that resolves to nothing
        for node in (n for s in steps for n in s["nodes"] if "user_response" in n):
            node["user_response"].append(
                ["n1", "n2", "adopt", "", "05:00:00-05:01:00", node["time"][0]]
            )
            break
    elif i == 4:  # minutes past 59
        steps[0]["nodes"][0]["time"].append("00:61:00-00:62:00")
    elif i == 6:  # an edge to a node that does not exist
        steps[-1]["edges"].append({"from": "n1", "to": "n99", "type": "sequential"})
    elif i == 8:  # a duplicate node id within a step
        dup = dict(steps[0]["nodes"][0])
        dup["label"] = "Duplicate of the first node"
        steps[0]["nodes"].append(dup)


#: Benchmark sessions are smaller than demo ones: about 40 nodes each, as in the issue's
#: "100k sessions (about 4M nodes)".
BENCH_SHAPE = {"steps": (2, 5), "interactions": (1, 3)}


#: The graph benchmark's sessions: about 106 nodes each, so 100k sessions make 10M+ nodes.
GRAPH_BENCH_SHAPE = {"steps": (4, 8), "interactions": (3, 5)}


def write_graph_corpus(
    out: Path, sessions: int, seed: int = 11, per_dir: int = 1000, shape: dict | None = None
) -> Path:
    """Write ``sessions`` bare graph JSON files (no side files), ``per_dir`` per folder."""
    out = Path(out)
    gen = KolabGenerator(seed, **(shape or BENCH_SHAPE))
    for i in range(sessions):
        folder = out / f"part-{i // per_dir:04d}"
        if i % per_dir == 0:
            folder.mkdir(parents=True, exist_ok=True)
        g = gen.session(i).graph
        (folder / f"{g['session_id']}.json").write_bytes(orjson.dumps(g))
    return out
