"""Structure-aware fuzzing of every ingestor with Hypothesis.

Each corpus starts from its real fixture files (valid documents of the source's own format);
Hypothesis then rewrites them where a reader is most likely to trip: a value swapped for one
of another type or an absurd size (None, huge and negative numbers, NaN and infinity, empty
and odd strings, lists, objects, deep nesting), a key removed, a record duplicated, a garbage
line added, an XML attribute or element text replaced. The property is the issue's: a reader
never raises out of ``parse`` for one file (that would turn a whole file into one reject and
lose its good records); what it cannot read becomes record rejects, and the rows it emits
convert to the canonical Arrow schema.

A failure here names the corpus and the mutation; Hypothesis shrinks it to the smallest one.
"""

from __future__ import annotations

import copy
import json
import math
import os
import re
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import FIXTURES, HAND
from graphlake import ingest
from graphlake.lake.writer import StagingEmitter

pytestmark = pytest.mark.fuzz

HOSTILE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0, -1, 1e308, -1e308, 1e20, math.nan, math.inf, -math.inf, 2**63]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(
        [
            "",
            " ",
            "\x00",
            "\ud7ff" * 3,
            "9999-99-99T99:99:99",
            "10000-01-01",
            "1e20",
            "NaN",
            "null",
            "../../etc/passwd",
            "a" * 5000,
        ]
    ),
    st.lists(st.none() | st.integers() | st.text(max_size=3), max_size=3),
    st.dictionaries(st.text(max_size=4), st.integers() | st.none(), max_size=3),
    st.builds(lambda: [[[[[[[[[[[]]]]]]]]]]]),
)


def _paths(node, prefix=()):
    """Every (path) to a value in a JSON document, the root's children first."""
    out = []
    if isinstance(node, dict):
        for k, v in node.items():
            out.append((*prefix, k))
            out.extend(_paths(v, (*prefix, k)))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out.append((*prefix, i))
            out.extend(_paths(v, (*prefix, i)))
    return out


def _parent(doc, path):
    for step in path[:-1]:
        doc = doc[step]
    return doc


@st.composite
def mutated(draw, doc):
    """``doc`` with 1-4 structure-aware mutations."""
    doc = json.loads(json.dumps(doc))
    for _ in range(draw(st.integers(1, 4))):
        paths = _paths(doc)
        if not paths:
            return draw(HOSTILE)
        path = paths[draw(st.integers(0, len(paths) - 1))]
        parent, key = _parent(doc, path), path[-1]
        op = draw(st.sampled_from(["replace", "replace", "replace", "delete", "duplicate"]))
        if op == "replace":
            parent[key] = copy.deepcopy(draw(HOSTILE))
        elif op == "delete":
            del parent[key]
        elif isinstance(parent, list):
            parent.insert(key, json.loads(json.dumps(parent[key])))
        else:
            parent[key] = [parent[key], parent[key]]
    return doc


def _dump(doc) -> str:
    return doc if isinstance(doc, Raw) else json.dumps(doc, allow_nan=True)


def _run(corpus: str, root: Path) -> None:
    """Parse every unit under ``root`` into the lake writer's staging emitter, as the pipeline
    does (so the rows are converted to the canonical Arrow schema), but let a reader's
    exception escape: the pipeline would turn it into a whole-file reject, the finding."""
    ing = ingest.get(corpus)
    out = StagingEmitter(corpus, root.parent / f"{root.name}-staging", "u0", flush_rows=7)
    for index, unit in enumerate(ing.units(root)):
        out.unit = index
        ing.parse(unit, out)
    out.close()


class Raw(str):
    """A fixture line that is not JSON on purpose: written back as it was."""


def _jsonl_docs(path: Path) -> list:
    out = []
    for line in path.read_text().splitlines():
        if line.strip():
            try:
                out.append(json.loads(line))
            except ValueError:
                out.append(Raw(line))
    return out


#: CI runs a fixed 40 examples per test; GRAPHLAKE_FUZZ_EXAMPLES=N runs N fresh random ones
#: (how docs/reliability.md's deeper figures were made).
_DEEP = int(os.environ.get("GRAPHLAKE_FUZZ_EXAMPLES", "0"))
FUZZ = settings(
    max_examples=_DEEP or 40,
    deadline=None,
    derandomize=not _DEEP,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)

JSONL_CORPORA = {
    "coauthor": FIXTURES / "coauthor" / "reopen_0123456789abcdef0123456789abcdef.jsonl",
    "marble": FIXTURES / "marble" / "result_log.jsonl",
    "hasbench": FIXTURES / "hasbench" / "traces.jsonl",
    "almanac": FIXTURES / "almanac" / "s01.jsonl",
}


@pytest.mark.parametrize("corpus", sorted(JSONL_CORPORA))
@FUZZ
@given(data=st.data())
def test_jsonl_ingestors_survive_mutated_records(corpus, data, tmp_path_factory):
    source = JSONL_CORPORA[corpus]
    records = _jsonl_docs(source)
    objects = [i for i, r in enumerate(records) if not isinstance(r, Raw)]
    which = objects[data.draw(st.integers(0, len(objects) - 1), label="record")]
    records[which] = data.draw(mutated(records[which]), label="mutation")
    lines = [_dump(r) for r in records]
    if data.draw(st.booleans(), label="garbage line"):
        lines.insert(
            data.draw(st.integers(0, len(lines))),
            data.draw(
                st.sampled_from(
                    [
                        "{",
                        "]",
                        "not json",
                        '{"a": ' + "[" * 3000 + "]" * 3000 + "}",
                        "\xff\xfe",
                        "[]",
                        "null",
                        "42",
                    ]
                )
            ),
        )
    root = tmp_path_factory.mktemp(corpus)
    for extra in source.parent.iterdir():  # side files (maps, tasks.yaml) stay as they are
        if extra != source:
            (shutil.copytree if extra.is_dir() else shutil.copy)(extra, root / extra.name)
    (root / source.name).write_text("\n".join(lines) + "\n", errors="surrogatepass")
    _run(corpus, root)


@FUZZ
@given(data=st.data())
def test_kolab_survives_mutated_session_files(data, tmp_path_factory):
    name = data.draw(
        st.sampled_from(["graph.json", "meta.json", "ratings.json", "survey.json", "chat.jsonl"]),
        label="file",
    )
    root = tmp_path_factory.mktemp("kolab")
    shutil.copytree(HAND, root / "hand")
    target = root / "hand" / name
    if name.endswith(".jsonl"):
        docs = _jsonl_docs(target)
        k = data.draw(
            st.sampled_from([i for i, d in enumerate(docs) if not isinstance(d, Raw)]), label="line"
        )
        docs[k] = data.draw(mutated(docs[k]), label="mutation")
        target.write_text("\n".join(_dump(d) for d in docs) + "\n")
    else:
        target.write_text(
            _dump(data.draw(mutated(json.loads(target.read_text())), label="mutation"))
        )
    _run("kolab", root)


TAU2_FILES = [
    FIXTURES / "tau2_runs" / "mock_llm_agent_3trials.json",
    FIXTURES / "tau2_runs" / "voice_run" / "results.json",
]


@FUZZ
@given(data=st.data())
def test_tau2_survives_mutated_results(data, tmp_path_factory):
    source = data.draw(st.sampled_from(TAU2_FILES), label="file")
    root = tmp_path_factory.mktemp("tau2")
    if source.parent.name == "voice_run":
        shutil.copytree(source.parent, root / "voice_run")
        target = root / "voice_run" / "results.json"
        sims = sorted((root / "voice_run" / "simulations").glob("*.json"))
        if sims and data.draw(st.booleans(), label="mutate a simulation file"):
            target = sims[data.draw(st.integers(0, len(sims) - 1))]
    else:
        target = root / source.name
        shutil.copy(source, target)
    doc = json.loads(target.read_text())
    # aim at the simulations: most of a results file's structure lives there
    sims = doc.get("simulations") if isinstance(doc, dict) else None
    if sims and data.draw(st.booleans(), label="inside one simulation"):
        k = data.draw(st.integers(0, len(sims) - 1))
        sims[k] = data.draw(mutated(sims[k]), label="mutation")
    else:
        doc = data.draw(mutated(doc), label="mutation")
    target.write_text(_dump(doc))
    _run("tau2", root)


_ATTR = re.compile(r'(\s[\w:.-]+=")([^"]*)(")')


@FUZZ
@given(data=st.data())
def test_maptask_survives_mutated_xml(data, tmp_path_factory):
    root = tmp_path_factory.mktemp("maptask")
    shutil.copytree(FIXTURES / "maptask_release", root / "release")
    files = sorted((root / "release").rglob("*.xml"))
    target = files[data.draw(st.integers(0, len(files) - 1), label="file")]
    text = target.read_text()
    attrs = list(_ATTR.finditer(text))
    for _ in range(data.draw(st.integers(1, 4))):
        if not attrs:
            break
        m = attrs[data.draw(st.integers(0, len(attrs) - 1))]
        value = data.draw(
            st.sampled_from(
                [
                    "",
                    "-1",
                    "1e308",
                    "nan",
                    "inf",
                    "abc",
                    "0",
                    "99999999999999999999",
                    "&amp;",
                    "&lt;x&gt;",
                ]
            )
        )
        text = text[: m.start(2)] + value + text[m.end(2) :]
        attrs = list(_ATTR.finditer(text))
    if data.draw(st.booleans(), label="truncate"):
        text = text[: data.draw(st.integers(0, len(text)))]
    target.write_text(text)
    _run("maptask", root)


# ------------------------------------------------------------------ one bad record, siblings

#: The shapes of one bad record (issue 21): put into one record's line as an extra field.
BAD_VALUES = {
    "nan": b"NaN",
    "infinity": b"-Infinity",
    "huge-number": b"[1e999, 123456789012345678901234567890]",
    "deep": b"[" * 3000 + b"]" * 3000,
    "bad-byte": b'"caf\xe9 \xff\xfe"',
}
BAD_SHAPES = {name: b'"_bad": ' + value + b", " for name, value in BAD_VALUES.items()}


def _row_keys(em) -> set[tuple[str, str]]:
    from graphlake.schema.emit import _ROW_KEYS

    keys = set()
    for table, rows in em.tables.items():
        if table == "rejects":
            continue
        for row in rows:
            key = next((k for k in _ROW_KEYS if row.get(k) is not None), None)
            keys.add((table, f"{key}={row.get(key)}"))
    return keys


def _collect(corpus: str, root: Path):
    """Every unit parsed as the pipeline does (a reader's failure is its unit's reject)."""
    from graphlake.ingest.base import parse_isolated
    from graphlake.schema.emit import CollectingEmitter

    ing = ingest.get(corpus)
    em = CollectingEmitter(corpus)
    for index, unit in enumerate(ing.units(root)):
        parse_isolated(ing.parse, unit, em, index)
    return em


def _with_line(source: Path, root: Path, k: int, line: bytes) -> Path:
    """``source``'s folder copied under ``root``, with line ``k`` of ``source`` replaced."""
    shutil.copytree(source.parent, root)
    lines = source.read_bytes().split(b"\n")
    lines[k] = line
    (root / source.name).write_bytes(b"\n".join(lines))
    return root


#: Line-oriented sources, and a Kolab session folder's chat log.
LINE_SOURCES = {**JSONL_CORPORA, "kolab": HAND / "chat.jsonl"}


@pytest.mark.parametrize("shape", sorted(BAD_SHAPES))
@pytest.mark.parametrize("corpus", sorted(LINE_SOURCES))
def test_one_bad_record_keeps_every_sibling(corpus, shape, tmp_path):
    """One record with a non-finite number, absurd nesting or bytes that are not UTF-8 is
    that record's reject at most: everything that lands when the record is not there at all
    (its line left blank: line numbers stay) lands with it in place, and no file is lost."""
    source = LINE_SOURCES[corpus]
    lines = source.read_bytes().split(b"\n")
    k = [i for i, line in enumerate(lines) if line.strip().startswith(b"{")][1]
    bad = lines[k].strip()
    bad = b"{" + BAD_SHAPES[shape] + bad[1:]
    without = _collect(corpus, _with_line(source, tmp_path / "without", k, b""))
    withbad = _collect(corpus, _with_line(source, tmp_path / "bad", k, bad))
    assert _row_keys(without) <= _row_keys(withbad)
    assert len(without.tables["events"] or without.tables["sessions"]) > 0
    assert not [r for r in withbad.tables["rejects"] if r["record_kind"] == "file"]


def _document_with(doc, bad: bytes | None, where) -> bytes:
    """``doc`` as JSON with the record ``where(doc)`` returns removed (``bad`` None) or
    carrying the bad value as an extra field."""
    doc = json.loads(json.dumps(doc))
    parent, key = where(doc)
    if bad is None:
        del parent[key]
        return json.dumps(doc).encode()
    parent[key]["_bad"] = "__BAD__"
    return json.dumps(doc).encode().replace(b'"__BAD__"', bad)


DOCUMENTS = {
    # one simulation of a tau2 results file; one node of a Kolab graph
    "tau2": (
        FIXTURES / "tau2_runs" / "mock_llm_agent_3trials.json",
        lambda d: (d["simulations"], 1),
    ),
    "kolab": (HAND / "graph.json", lambda d: (d["steps"][1]["nodes"], 0)),
}


@pytest.mark.parametrize("shape", sorted(BAD_VALUES))
@pytest.mark.parametrize("corpus", sorted(DOCUMENTS))
def test_one_bad_record_in_a_document_keeps_every_sibling(corpus, shape, tmp_path):
    """As above, for records inside one JSON document: a tau2 simulation, a Kolab node."""
    source, where = DOCUMENTS[corpus]
    doc = json.loads(source.read_text())
    runs = {}
    for name, bad in (("without", None), ("bad", BAD_VALUES[shape])):
        root = tmp_path / name
        shutil.copytree(source.parent, root)
        (root / source.name).write_bytes(_document_with(doc, bad, where))
        runs[name] = _collect(corpus, root)
    assert _row_keys(runs["without"]) <= _row_keys(runs["bad"])
    assert not [r for r in runs["bad"].tables["rejects"] if r["record_kind"] == "file"]
