"""The vectorised GMMT reader must agree with the record-by-record parser.

The fast path takes only dialogues it can convert without judging anything and hands the rest
to ``_Dialogue``. So for any corpus, ``parse_many`` (fast path + fallback) and ``parse`` per
unit (record parser only) must give exactly the same rows and rejects; and clean dialogues must
really take the fast path (else the agreement proves nothing).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import SAMPLES
from graphlake import ingest
from graphlake.demo.public_gen import write_maptask_corpus
from graphlake.ingest.base import CollectingEmitter
from graphlake.ingest.maptask_fast import convert_dialogues
from tests.test_kolab_fast import assert_same as same_on_both_paths

RELEASE = Path(__file__).parent / "fixtures" / "maptask_release"


def assert_same(folder: Path) -> None:
    same_on_both_paths(folder, "maptask")


def handed_back(folder: Path) -> list[str]:
    """The dialogues of ``folder`` the fast path hands back to the record parser."""
    units = [u for u in ingest.get("maptask").units(folder) if u.kind == "dialogue"]
    back = convert_dialogues(units, CollectingEmitter("maptask"), 0)
    return sorted(units[k].path.name.split(".")[0] for k in back)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    return write_maptask_corpus(tmp_path_factory.mktemp("mt"), dialogues=24, refs=25)


def test_generated_dialogues_take_the_fast_path_and_agree(corpus):
    assert handed_back(corpus) == []
    out = CollectingEmitter("maptask")
    ingest.get("maptask").parse_many(ingest.get("maptask").units(corpus), 0, out)
    assert len(out.tables["events"]) == 24 * 25
    assert len(out.tables["edges"]) == 24 * 24
    assert_same(corpus)


def test_the_published_sample_takes_the_fast_path_and_agrees():
    """The real GMMT files are pretty-printed JSON; the fast path reads them as they are."""
    assert handed_back(SAMPLES / "gmmt") == []
    assert_same(SAMPLES / "gmmt")


def test_dialogues_with_release_layers_go_to_the_record_parser_and_agree():
    assert_same(RELEASE)


def _irregular(k: int, res: list[dict], ann: list[dict], files: dict) -> None:
    """Dialogue ``k`` changed in the k-th of the ways the fast path must hand back or get
    right (``files``: its two files' raw text, to replace where that is the point)."""
    cases = [
        lambda: res.__setitem__(1, ["not", "an", "object"]),
        lambda: res[1].pop("ref_id_unif"),
        lambda: res[2].update(ref_id_unif=res[1]["ref_id_unif"]),
        lambda: res[1].update(speaker="narrator"),
        lambda: res[1].update(end_time=res[1]["start_time"] - 1),
        lambda: res[1].update(start_time="3.5"),
        lambda: res[1].update({"reference expression": ["a", "list"]}),  # kept: text as JSON
        lambda: res[1].update(lm_id_orig=5),  # a number where a text belongs
        lambda: res[1].update(ref_id_orig=7),
        lambda: ann[1].update(ref_id_unif="nowhere"),
        lambda: ann[1].update(interpretations=["giver"]),
        lambda: ann[1].update(extra=None),  # kept: no status
        lambda: ann[1]["interpretations"].update(giver=3),
        lambda: files.update(ann="{not json"),
        lambda: files.update(top={"map_pair": "m12"}),  # kept: a session attr
        lambda: ann[1].update(note="kept in attrs"),  # kept
        lambda: files.update(ann=None),  # kept: no annotations file
        lambda: files.update(res_text=True),  # NaN: orjson refuses, the record path reads it
        lambda: res[1].update(start_time=True),
        lambda: res[1].update({"reference expression": None}),  # kept
        lambda: ann[1].update(reason=4),
    ]
    cases[k]()


KEPT = {6, 11, 14, 15, 16, 19}
N_CASES = 21


def test_each_irregular_dialogue_goes_back_whole_and_both_paths_agree(corpus, tmp_path):
    folder = tmp_path / "gmmt"
    shutil.copytree(corpus, folder)
    names = sorted(p.name.split(".")[0] for p in folder.rglob("*.reference_expressions.json"))
    for k in range(N_CASES):
        ref = next(folder.rglob(f"{names[k]}.reference_expressions.json"))
        ann_path = ref.with_name(f"{names[k]}.annotated.json")
        doc, ann_doc = json.loads(ref.read_text()), json.loads(ann_path.read_text())
        files: dict = {"ann": ""}
        _irregular(
            k,
            doc["landmark_reference_expressions"],
            ann_doc["landmark_reference_expressions"],
            files,
        )
        doc.update(files.get("top") or {})
        text = json.dumps(doc)
        if files.get("res_text"):
            text = text.replace('"utt_id": 0', '"utt_id": NaN', 1)
            assert "NaN" in text
        ref.write_text(text)
        if files["ann"] is None:
            ann_path.unlink()
        else:
            ann_path.write_text(files["ann"] or json.dumps(ann_doc))
    back = handed_back(folder)
    assert sorted(set(range(N_CASES)) - {names.index(n) for n in back}) == sorted(KEPT)
    assert_same(folder)
