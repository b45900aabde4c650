"""docs/mappings.md: its language reference is the one the schema generates, and the example
mapping in its guide is a mapping that checks."""

from __future__ import annotations

import re
from pathlib import Path

from graphlake.ingest.mapping import load
from graphlake.ingest.mapping.reference import BEGIN, END, reference

DOC = Path(__file__).resolve().parent.parent / "docs" / "mappings.md"


def test_reference_is_generated_from_the_schema():
    text = DOC.read_text()
    shown = text[text.index(BEGIN) : text.index(END) + len(END)] + "\n"
    assert shown == reference(), "regenerate: python -m graphlake.ingest.mapping.reference"


def test_the_guides_example_mapping_checks(tmp_path):
    block = re.search(r"```yaml\n(.*?)```", DOC.read_text(), re.S).group(1)
    lines = block.splitlines()
    indent = min(len(x) - len(x.lstrip()) for x in lines if x.strip())
    path = tmp_path / "mylab.yaml"
    path.write_text("\n".join(x[indent:] for x in lines) + "\n")
    mapping = load(path)
    assert mapping.name == "mylab"
