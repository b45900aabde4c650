"""Which ingestor a folder's files look like: for a helpful error when a run finds nothing it
can read (``graphlake ingest kolab`` pointed at tau2 results), and to tell data files from the
README and LICENSE files that travel with every dataset."""

from __future__ import annotations

import re
from pathlib import Path

from graphlake.ingest.base import data_files, load_json

#: Files that come with datasets but hold no data: skipped and counted, never rejected
NON_DATA = re.compile(
    r"^(readme|license|licence|copying|notice|changelog|changes|authors|"
    r"citation|contributing)([._-].*)?$",
    re.IGNORECASE,
)

_SAMPLE_FILES = 20
_HEAD_BYTES = 64 << 10


def is_atif(doc) -> bool:
    """A Harbor ATIF trajectory (``schema_version`` "ATIF-v1.x"), or one from a writer that
    spells its version "1.4" (OpenAgents' Terminal-Bench runs), whose steps are ATIF's
    ``{step_id, source}``: it has ``steps`` and ``session_id`` like a Kolab graph, and is not
    one."""
    if not isinstance(doc, dict):
        return False
    version = str(doc.get("schema_version", ""))
    if version.startswith("ATIF"):
        return True
    steps = doc.get("steps")
    return (
        re.fullmatch(r"v?1\.\d+", version) is not None
        and isinstance(steps, list)
        and bool(steps)
        and isinstance(steps[0], dict)
        and {"step_id", "source"} <= steps[0].keys()
    )


def is_non_data(path: Path) -> bool:
    return bool(NON_DATA.match(path.name)) and path.is_file()


def _first_value(path: Path, sh=None):
    """The file's JSON (small files), or its first JSON Lines record, from its first 64 KiB;
    where those do not parse, from its structure (:mod:`graphlake.ingest.structure`, or the
    ``sh`` a caller already read): a document's top-level fields, a list's first element
    (inside a one-element list), the first JSON Lines record, however far into the file
    they are; None if neither."""
    with path.open("rb") as fh:
        head = fh.read(_HEAD_BYTES)
    for candidate in (head, head.split(b"\n", 1)[0]):
        try:
            return load_json(candidate)
        except ValueError:
            continue
    from graphlake.ingest.structure import shape

    sh = sh if sh is not None else shape(path)
    if sh.kind == "object":
        return {k: (sh.first or {}).get(k) for k in sh.keys if "." not in k}
    if sh.kind == "array":
        return [sh.first] if sh.first is not None else []
    if sh.kind == "lines":
        return sh.first
    return None


def _looks_like(path: Path, sh=None) -> str | None:
    name = path.name
    if name.endswith(
        (".timed-units.xml", ".moves.xml", ".reference_expressions.json")
    ) or name.startswith("landmarks_configuration"):
        return "maptask"
    if path.suffix.lower() in (".yaml", ".yml"):
        return None  # HAS-Bench and MARBLE both write YAML tasks: too close to call
    if path.suffix.lower() not in (".json", ".jsonl"):
        return None
    value = _first_value(path, sh)
    if (
        isinstance(value, list)
        and value
        and isinstance(value[0], dict)
        and "user_scenario" in value[0]
    ):
        return "tau2"
    if not isinstance(value, dict):
        return None
    keys = set(value)
    if is_atif(value):
        return "harbor_atif"  # Harbor's trajectory format also has steps and session_id
    if "simulations" in keys or "simulation_index" in keys:
        return "tau2"
    if "steps" in keys and ("session_id" in keys or "title" in keys):
        return "kolab"
    if "eventName" in keys and "eventTimestamp" in keys:
        return "coauthor"
    if "iterations" in keys or ("scenario" in keys and "task_id" in keys):
        return "marble"
    if value.get("type") in ("run", "step", "channel_event", "outcome") and "run_id" in keys:
        return "hasbench"
    if "landmark_reference_expressions" in keys:
        return "maptask"
    return None


def votes(path: Path, sample: int = _SAMPLE_FILES) -> dict[str, int]:
    """How many of a sample of ``path``'s data files look like each ingestor's."""
    out: dict[str, int] = {}
    for f in [p for p in data_files(Path(path)) if not is_non_data(p)][:sample]:
        try:
            guess = _looks_like(f)
        except OSError:
            guess = None
        if guess:
            out[guess] = out.get(guess, 0) + 1
    return out


def sniff(path: Path) -> str | None:
    """The ingestor most of a sample of ``path``'s files look like, or None."""
    counted = votes(path)
    return max(counted, key=lambda k: counted[k]) if counted else None
