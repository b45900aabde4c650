"""The inspect_ai round trip, whole: graphlake's task (found by inspect through the entry point)
runs a protocol against inspect's mock model, inspect reports the protocol's metrics, and the
log ingested back is an evaluation run next to a saved baseline in eval_runs."""

from __future__ import annotations

import base64
import shutil

import pytest
from typer.testing import CliRunner

from graphlake.api import connect
from graphlake.cli import app
from graphlake.protocols import Benchmarks
from graphlake.protocols.scoring import parse_label, parse_rating
from graphlake.query.connection import Connection

inspect_ai = pytest.importorskip("inspect_ai")

ANSWERS = ["ADOPT", "The answer is `MODIFY`.", "REJECT/BYPASS", "I cannot tell."]


@pytest.fixture
def lake(hand_lake, tmp_path):
    copy = tmp_path / "lake"
    shutil.copytree(hand_lake, copy)
    return copy


def _mock(answers):
    """inspect's mock model answering ``answers`` in order; each output carries its usage
    (without it, mockllm counts tokens with tiktoken, which downloads its encoding)."""
    from inspect_ai.model import ModelOutput, ModelUsage, get_model

    outputs = []
    for text in answers:
        out = ModelOutput.from_content("mockllm/model", text)
        out.usage = ModelUsage(input_tokens=10, output_tokens=2, total_tokens=12)
        outputs.append(out)
    return get_model("mockllm/model", custom_outputs=outputs)


def _run(task_args: dict, answers, log_dir):
    from inspect_ai import eval as inspect_eval

    from graphlake.protocols.inspect_task import bench

    [log] = inspect_eval(
        bench(**task_args),
        model=_mock(answers),
        log_dir=str(log_dir),
        display="none",
        max_samples=1,  # the mock's answers are taken in sample order
    )
    assert log.status == "success", log.error
    return log


def test_label_parsing_reads_what_models_write():
    classes = ("ADOPT", "MODIFY", "REJECT")
    assert parse_label("`adopt`", classes) == "ADOPT"
    assert parse_label("The answer is `MODIFY`.", classes) == "MODIFY"
    assert parse_label("REJECT/BYPASS", classes) == "REJECT"
    assert parse_label("bypass it", classes) == "REJECT"
    assert parse_label("adopt or modify", classes) is None  # two classes: never guessed
    assert parse_label("ADOPTED", classes) is None  # a word containing a class is not it
    assert parse_rating("4") == 4 and parse_rating("I'd say 3.") == 3
    assert parse_rating("3 or 4") is None and parse_rating("6") is None


def test_inspect_reports_the_protocols_metrics_and_the_run_comes_back(lake, tmp_path):
    with Connection(lake) as con:
        bench = Benchmarks(con)
        gold = {i: r["gold"] for i, r in bench.gold("kolab-1b").items()}
    log = _run({"lake": str(lake), "protocol": "kolab-1b", "condition": "graph-chat"},
               ANSWERS, tmp_path / "logs")  # fmt: skip
    ids = [s.id for s in log.samples]
    assert ids == sorted(gold) and [s.target for s in log.samples] == [gold[i] for i in ids]
    [scores] = log.results.scores
    metrics = {k: v.value for k, v in scores.metrics.items()}

    # the same answers scored by graphlake: inspect reports the very same numbers
    with Connection(lake) as con:
        report = Benchmarks(con).score(
            "kolab-1b", [{"id": i, "label": a} for i, a in zip(ids, ANSWERS, strict=True)]
        )
    assert metrics["macro_f1"] == pytest.approx(report["macro_f1"])
    assert metrics["macro_recall"] == pytest.approx(report["macro_recall"])
    for cls, f1 in report["per_class_f1"].items():
        assert metrics[f"f1:{cls}"] == pytest.approx(f1)
    assert metrics["invalid"] == len(report["invalid"]) == 1
    # inspect's own accuracy counts the unreadable answer as wrong
    right = sum(
        parse_label(a, ("ADOPT", "MODIFY", "REJECT")) == gold[i]
        for i, a in zip(ids, ANSWERS, strict=True)
    )
    assert metrics["accuracy"] == pytest.approx(right / len(ids))

    runner = CliRunner()
    base = runner.invoke(app, ["bench", "score", "kolab-1b", "--baseline", "majority", "--save",
                               "--condition", "graph-chat", "--lake", str(lake)])  # fmt: skip
    assert base.exit_code == 0, base.output
    for _ in range(2):  # the second ingest adds no second run
        res = runner.invoke(app, ["ingest", "inspect", str(tmp_path / "logs"), "--lake",
                                  str(lake), "-q"])  # fmt: skip
        assert res.exit_code == 0, res.output
    rows = connect(lake).query("eval_runs", protocol="kolab-1b").to_pylist()
    assert sorted(r["model"] for r in rows) == ["baseline:majority", "mockllm/model"]
    [ours] = [r for r in rows if r["model"] == "mockllm/model"]
    assert ours["condition"] == "graph-chat" and ours["source"].startswith("inspect:")
    assert ours["macro_f1"] == pytest.approx(report["macro_f1"])
    assert ours["n_scored"] == len(ids) - 1  # the unreadable answer is invalid
    # the log's samples are also trace sessions of their own
    n = connect(lake).sql("SELECT count(*) AS n FROM sessions WHERE corpus = 'inspect'")
    assert n.to_pylist()[0]["n"] == len(ids)


LIMITED_RUN = """
import sys
from inspect_ai import eval as inspect_eval
from inspect_ai.model import ModelOutput, ModelUsage, get_model

outputs = []
for _ in range(2):
    out = ModelOutput.from_content("mockllm/model", "ADOPT")
    out.usage = ModelUsage(input_tokens=10, output_tokens=2, total_tokens=12)
    outputs.append(out)
[log] = inspect_eval(
    "graphlake/bench",
    task_args={"lake": sys.argv[1], "protocol": "kolab-1b", "condition": "graph"},
    model=get_model("mockllm/model", custom_outputs=outputs),
    log_dir=sys.argv[2], display="none", max_samples=1, limit=2,
)
assert log.status == "success" and len(log.samples) == 2, log.error
"""


@pytest.mark.subprocess
def test_the_registered_task_runs_by_name_and_a_limited_run_is_a_subset(lake, tmp_path):
    """``graphlake/bench`` resolves through graphlake's inspect_ai entry point, as a user
    runs it from a folder of their own; a ``--limit`` run is saved as the part it scored,
    without calling the rest missing."""
    import subprocess
    import sys

    script = tmp_path / "run_limited.py"
    script.write_text(LIMITED_RUN)
    logs = tmp_path / "logs"
    done = subprocess.run(
        [sys.executable, str(script), str(lake), str(logs)],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    res = CliRunner().invoke(app, ["ingest", "inspect", str(logs), "--lake", str(lake), "-q"])
    assert res.exit_code == 0, res.output
    [row] = connect(lake).query("eval_runs").to_pylist()
    assert row["n_instances"] == 2 and row["n_scored"] == 2
    total_sql = "SELECT value FROM annotations WHERE corpus = 'evals' AND label = $label"
    [total] = connect(lake).sql(total_sql, {"label": "n_protocol_instances"}).to_pylist()
    assert total["value"] == 4


@pytest.mark.frames
def test_video_conditions_hand_the_model_frames_from_the_lake(recorded_lake):
    """A video condition's samples hold the prompt and the sampled frames as JPEG images,
    decoded from the recording in the lake (no server); only sessions with a recording."""
    from inspect_ai.model import ContentImage, ContentText

    from graphlake.protocols.inspect_task import samples

    got = samples(recorded_lake, "kolab-1b", "video-graph", params={"frames": 3})
    assert got and {s.metadata["session_id"] for s in got} == {"hand-1"}
    for s in got:
        [message] = s.input
        text, *images = message.content
        assert isinstance(text, ContentText) and "video" in text.text.lower()
        assert len(images) == 3 and all(isinstance(i, ContentImage) for i in images)
        for image in images:
            head, data = image.image.split(",", 1)
            assert head == "data:image/jpeg;base64"
            assert base64.b64decode(data)[:2] == b"\xff\xd8"  # a JPEG
    # the frames differ: the recording changes shade every 32 s
    first = {i.image for i in got[0].input[0].content[1:]}
    assert len(first) >= 2
