"""CoAuthor ingestor: the real sample, the adopt / modify / reject rules, document replay."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import SAMPLES, parse_with
from graphlake.ingest.base import CollectingEmitter
from graphlake.pipeline import ingest_path
from graphlake.query import run_sql
from graphlake.query.documents import document_at
from graphlake.schema.quill import apply_delta

DATA = SAMPLES / "coauthor"
SAMPLE = next(DATA.glob("*.jsonl"))


def parse(path: Path) -> CollectingEmitter:
    return parse_with("coauthor", path)


@pytest.fixture(scope="module")
def lake(tmp_path_factory):
    lake = tmp_path_factory.mktemp("coauthor") / "lake"
    ingest_path("coauthor", SAMPLE, lake)
    return lake


def test_every_line_is_an_event_and_episodes_match_the_release_notes(lake):
    lines = [ln for ln in SAMPLE.read_text().splitlines() if ln.strip()]
    rows = run_sql(
        "SELECT (SELECT count(*) FROM events) AS events, (SELECT count(*) FROM rejects) AS rejects",
        lake,
    ).table.to_pylist()
    assert rows == [{"events": len(lines), "rejects": 0}]
    labels = dict(
        run_sql("SELECT label, count(*) AS n FROM adoptions GROUP BY 1", lake).table.to_pylist()
        and [
            (r["label"], r["n"])
            for r in run_sql(
                "SELECT label, count(*) AS n FROM adoptions GROUP BY 1", lake
            ).table.to_pylist()
        ]
    )
    # data/README.md: 15 episodes, 12 accepted, 3 dismissed
    assert sum(labels.values()) == 15 and labels["reject"] == 3
    assert labels["adopt"] + labels["modify"] == 12


def test_kolab_retention_runs_unchanged_on_coauthor(lake):
    from graphlake.query import named

    q = named.get("collab_metrics")
    (row,) = run_sql(q.sql, lake, params=q.bind({"corpus": "coauthor"})).table.to_pylist()
    assert row["n_responses"] == 15
    assert row["retention_adopt"] + row["retention_modify"] == pytest.approx(12 / 15)


def test_document_at_any_event(lake):
    final = run_sql("SELECT text FROM documents WHERE doc_id = 'final'", lake).table
    assert document_at(lake, SAMPLE.stem.split("_")[-1]) == final["text"][0].as_py()
    sid = SAMPLE.stem.split("_")[-1]
    select_seq = (
        run_sql("SELECT min(seq) AS s FROM events WHERE kind = 'suggestion-select'", lake)
        .table["s"][0]
        .as_py()
    )
    before = document_at(lake, sid, select_seq)
    after = document_at(lake, sid, select_seq + 2)  # select, close, then the api insert
    assert "it's not wrong." not in before
    assert after.rstrip("\n").endswith("it's not wrong.")  # Quill keeps a final newline


def log(tmp_path, events, stem: str = "creative_0123456789abcdef0123456789abcdef") -> Path:
    t = 1_000_000
    lines = [
        {
            "eventName": "system-initialize",
            "eventSource": "api",
            "eventTimestamp": t,
            "currentDoc": "Prompt\n",
            "textDelta": "",
        }
    ]
    for k, (name, source, delta) in enumerate(events, 1):
        lines.append(
            {
                "eventName": name,
                "eventSource": source,
                "eventTimestamp": t + k * 100,
                "textDelta": {"ops": delta} if delta else "",
                "eventNum": k,
                "currentSuggestions": [{"index": 0, "trimmed": "AI text"}]
                if name == "suggestion-open"
                else [],
            }
        )
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / f"{stem}.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return path


EPISODE = [
    ("suggestion-get", "user", None),
    ("suggestion-open", "api", None),
    ("suggestion-select", "user", None),
    ("suggestion-close", "api", None),
    ("text-insert", "api", [{"retain": 7}, {"insert": "AI text"}]),
]


@pytest.mark.parametrize(
    "after,label",
    [
        ([], "adopt"),
        ([("text-insert", "user", [{"retain": 14}, {"insert": " more"}])], "adopt"),  # after it
        ([("text-insert", "user", [{"retain": 7}, {"insert": "My "}])], "adopt"),  # before it
        ([("text-insert", "user", [{"retain": 9}, {"insert": "X"}])], "modify"),  # inside
        ([("text-delete", "user", [{"retain": 10}, {"delete": 2}])], "modify"),  # cut it
        ([("text-insert", "api", [{"retain": 9}, {"insert": "X"}])], "adopt"),  # not the writer
        (
            [
                ("text-insert", "user", [{"retain": 7}, {"insert": "My "}]),  # shifted,
                ("text-insert", "user", [{"retain": 17}, {"insert": "!"}]),
            ],
            "adopt",
        ),  # then after
        (
            [
                ("text-insert", "user", [{"retain": 7}, {"insert": "My "}]),
                ("text-insert", "user", [{"retain": 12}, {"insert": "X"}]),
            ],
            "modify",
        ),  # shifted, in
    ],
)
def test_adopt_or_modify_follows_the_span(tmp_path, after, label):
    out = parse(log(tmp_path, EPISODE + after))
    (a,) = out.tables["annotations"]
    assert a["label"] == label
    assert out.tables["sessions"][0]["domain"] == "creative"


def test_dismissed_without_select_is_reject(tmp_path):
    out = parse(log(tmp_path, EPISODE[:2] + [("suggestion-close", "user", None)]))
    (a,) = out.tables["annotations"]
    assert a["label"] == "reject"
    assert [n["node_id"] for n in out.tables["nodes"]] == [
        "ep0/request",
        "ep0/suggestion",
        "ep0/response",
    ]


def test_bad_lines_are_rejected_and_the_rest_lands(tmp_path):
    path = log(tmp_path, EPISODE)
    with path.open("a") as fh:
        fh.write("{oops\n")
        fh.write(
            json.dumps(
                {
                    "eventName": "text-insert",
                    "eventSource": "user",
                    "eventTimestamp": 1_000_900,
                    "textDelta": {"ops": [{"retain": 999}, {"insert": "x"}]},
                }
            )
            + "\n"
        )
        fh.write(json.dumps({"eventSource": "user"}) + "\n")
    out = parse(path)
    reasons = [r["reason"] for r in out.tables["rejects"]]
    assert len(reasons) == 3
    assert any("not valid JSON" in r for r in reasons)
    assert any("retain 999 runs past the end" in r for r in reasons)
    assert any("needs eventName" in r for r in reasons)
    assert len(out.tables["events"]) == 6


def test_a_log_the_reader_fails_on_leaves_none_of_its_batched_rows(tmp_path, monkeypatch):
    """Events and episode rows are batched across logs: a log whose reading fails half-way
    takes back what it had added to the batch, and the logs around it land whole."""
    from graphlake import ingest
    from graphlake.ingest import coauthor

    for k, genre in enumerate(("creative", "argumentative", "news")):
        log(tmp_path / "in", EPISODE, f"{genre}_{k:032x}")
    real = coauthor._Session.finish

    def finish(self):
        if "argumentative" in self.src:
            raise RuntimeError("reader bug")
        real(self)

    monkeypatch.setattr(coauthor._Session, "finish", finish)
    ing, out = ingest.get("coauthor"), CollectingEmitter("coauthor")
    ing.parse_many(ing.units(tmp_path / "in"), 0, out)
    assert sorted(s["domain"] for s in out.tables["sessions"]) == ["creative", "news"]
    for table in ("events", "nodes", "node_occurrences", "edges", "annotations"):
        assert {r["session_id"] for r in out.tables[table]} == {f"{0:032x}", f"{2:032x}"}
        per_log = len(parse(log(tmp_path / "one", EPISODE)).tables[table])
        assert len(out.tables[table]) == 2 * per_log, table
    (reject,) = out.tables["rejects"]
    assert "argumentative" in reject["source_file"] and "reader bug" in reject["reason"]


def test_apply_delta():
    assert apply_delta("abc", [{"retain": 1}, {"insert": "X"}, {"delete": 1}]) == (
        "aXc",
        [("insert", 1, 1), ("delete", 2, 1)],
    )


ops = st.lists(
    st.one_of(
        st.fixed_dictionaries({"retain": st.integers(-1, 20)}),
        st.fixed_dictionaries({"insert": st.text(max_size=4)}),
        st.fixed_dictionaries({"delete": st.integers(0, 5)}),
        st.integers(),
    ),
    max_size=4,
)
event = st.fixed_dictionaries(
    {
        "eventName": st.sampled_from(
            [
                "text-insert",
                "text-delete",
                "suggestion-get",
                "suggestion-open",
                "suggestion-select",
                "suggestion-close",
            ]
        ),
        "eventSource": st.sampled_from(["user", "api"]),
        "eventTimestamp": st.integers(0, 10_000),
    },
    optional={"textDelta": st.one_of(st.just(""), st.fixed_dictionaries({"ops": ops}))},
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.one_of(event, st.integers(), st.text(max_size=3)), max_size=12))
def test_never_raises_and_every_line_is_accounted_for(tmp_path_factory, lines):
    path = tmp_path_factory.mktemp("c") / "x.jsonl"
    text = [json.dumps(x) for x in lines]
    path.write_text("\n".join(text) + "\n")
    out = parse(path)
    n_lines = sum(1 for t in text if t.strip())
    events = len(out.tables.get("events", []))
    line_rejects = sum(1 for r in out.tables.get("rejects", []) if r["record_kind"] == "event")
    assert events + line_rejects == n_lines


REOPEN = Path(__file__).parent / "fixtures" / "coauthor"


def test_reopen_reselect_and_writer_sourced_inserts_label_every_accepted_suggestion():
    """A select after a reopen, a second select from reopened candidates and a chosen text
    inserted with eventSource "user" (later studies' logs) each get their node and label."""
    out = parse(REOPEN)
    assert not out.tables.get("rejects")
    selects = [e for e in out.tables["events"] if e["kind"] == "suggestion-select"]
    labels = {
        a["annotation_id"]: (a["label"], json.loads(a["attrs"])) for a in out.tables["annotations"]
    }
    accepted = [k for k, (label, _) in labels.items() if label in ("adopt", "modify")]
    assert len(accepted) == len(selects) == 4  # one label per accepted suggestion
    assert {k: v[0] for k, v in labels.items()} == {
        "ep0/adoption": "adopt",  # closed, reopened, then chosen: one episode
        "ep1/adoption": "adopt",  # chosen ...
        "ep2/adoption": "adopt",  # ... and another chosen from the reopened list
        "ep3/adoption": "modify",  # inserted by the writer, then edited inside
        "ep4/adoption": "reject",
    }
    assert labels["ep0/adoption"][1]["reopens"] == 1
    assert labels["ep2/adoption"][1]["reopened_from"] == "ep1"
    assert labels["ep3/adoption"][1]["chosen_text"] == " Walking is healthy."
    # the select events point at the response node of their own episode
    assert [e["node_id"] for e in selects] == [
        "ep0/response",
        "ep1/response",
        "ep2/response",
        "ep3/response",
    ]
    nodes = {n["node_id"]: n["label"] for n in out.tables["nodes"]}
    assert nodes["ep2/request"] == "Reopen the suggestions"


def test_every_select_of_the_sample_is_labelled(lake):
    (row,) = run_sql(
        "SELECT (SELECT count(*) FROM events WHERE kind = 'suggestion-select') "
        "AS selects, (SELECT count(*) FROM adoptions WHERE label <> 'reject') "
        "AS accepted",
        lake,
    ).table.to_pylist()
    assert row["selects"] == row["accepted"] == 12
