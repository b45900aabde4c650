"""The vectorised Almanac reader must agree with the record-by-record parser.

The fast path takes only files it can convert without judging anything and hands the rest to
``_Session``. So for any corpus, ``parse_many`` (fast path + fallback) and ``parse`` per file
(record parser only) must give exactly the same rows and rejects; and well-formed files must
really take the fast path (else the first check proves nothing).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from graphlake.demo.almanac_gen import write_almanac_corpus
from graphlake.ingest.almanac_fast import read_batch
from tests.test_kolab_fast import assert_same as same_on_both_paths

FIXTURE = Path(__file__).parent / "fixtures" / "almanac"


def assert_same(folder: Path) -> None:
    same_on_both_paths(folder, "almanac")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    root = write_almanac_corpus(tmp_path_factory.mktemp("al"), sessions=30, actions=60)
    return root


def test_generated_sessions_take_the_fast_path_and_agree(corpus):
    sessions = sorted((corpus / "sessions").glob("*.jsonl"))
    tables, headers, fallback = read_batch(sessions, "almanac")
    assert fallback == []
    assert len(headers) == len(sessions)
    assert tables["events"].num_rows == 30 * 60
    assert tables["canvas_cells"].num_rows > 0
    assert_same(corpus)


def test_the_hand_written_fixture_agrees():
    assert_same(FIXTURE)


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def _write(path: Path, lines: list[dict]) -> None:
    path.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines))


def _irregular(k: int, lines: list[dict]) -> tuple[list[dict], str | None]:
    """Session ``k`` changed in the k-th of the ways the fast path must hand back or get
    right; the raw text to write instead of JSON lines, where that is the point."""
    first = next(i for i, x in enumerate(lines) if x.get("action") == "draw")
    cases = [
        lambda: lines[1].update(extra_field={"kept": True}),  # attrs
        lambda: lines[1]["mental_model"].update(confidence=3),  # mm/other
        lambda: lines[2].update(action="wave"),
        lambda: lines[2].update(actor="nobody"),
        lambda: lines[2].update(t=-1),
        lambda: lines[2].update(t="3.5"),
        lambda: lines[2].update(grounding_act="shrug"),
        lambda: lines[first].update(canvas=[[1, 2, 3]]),
        lambda: lines[first].update(canvas=[[1, -2]]),
        lambda: lines[first].update(canvas=[[1, 2], None]),
        lambda: lines.append(
            {
                "type": "action",
                "t": 999,
                "actor": lines[1]["actor"],
                "action": "undo",
                "mental_model": {},
            }
        ),
        lambda: lines.append(
            {"type": "action", "t": 999, "actor": lines[2]["actor"], "action": "reset"}
        ),
        lambda: lines[1].update(text="é" * 150 + "👩‍🔬" * 40),  # a long label is cut by characters
        lambda: lines[first].update(canvas=[[4, 4], [4, 4], [0, 1]]),  # a cell twice
        lambda: lines[1].update(mental_model=None, grounding_act=None),
        lambda: lines[0].update(condition="C_other"),
        lambda: lines[0].pop("session_id"),
        lambda: lines[0].update(site="lab-3"),  # a header field without a column
        lambda: lines[1].update(text=7),  # a number where text belongs
        lambda: lines[first].update(action="message"),  # a message with a canvas
    ]
    raw = None
    if k < len(cases):
        cases[k]()
    elif k == len(cases):
        raw = "\n".join(json.dumps(x) for x in lines[:3]) + "\n\n" + json.dumps(lines[3]) + "\n"
    elif k == len(cases) + 1:
        raw = "\r\n".join(json.dumps(x) for x in lines) + "\r\n"
    elif k == len(cases) + 2:
        raw = "\n".join(json.dumps(x) for x in lines[:4]) + "\n{not json\n"
    elif k == len(cases) + 3:
        lines[:] = lines[:1]  # a header and no actions
    return lines, raw


def test_irregular_sessions_are_handed_back_and_the_rows_agree(corpus, tmp_path):
    folder = tmp_path / "irregular"
    shutil.copytree(corpus, folder)
    sessions = sorted((folder / "sessions").glob("*.jsonl"))
    for k, path in enumerate(sessions[:24]):
        lines, raw = _irregular(k, _lines(path))
        if raw is None:
            _write(path, lines)
        else:
            path.write_text(raw)
    tables, headers, fallback = read_batch(sessions, "almanac")
    # what the record parser must judge went back; the odd but regular files stayed
    kept = {11, 12, 13, 14, 17, 23}
    assert set(fallback) == set(range(24)) - kept
    assert kept <= set(headers)
    assert_same(folder)
