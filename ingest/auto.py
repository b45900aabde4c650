"""``graphlake ingest auto``: which ingestor reads each file, decided per file from its
structure (:mod:`graphlake.ingest.structure`), never from its name alone.

Mappings (shipped, installed by plugins, named with ``--mapping``) are tried first: their
``detect`` blocks are specific (required keys, value patterns). Then the built-in formats,
whose detectors look for the keys each writer always writes. A file nothing matches is one
reject in the lake that lists what was tried.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from pathlib import Path

from graphlake import ingest
from graphlake.ingest.base import Emitter, Ingestor, SourceUnit, data_files, head_bytes, reject_file
from graphlake.ingest.sniff import is_non_data
from graphlake.ingest.structure import _MISSING, Shape, shape

UNMATCHED = "unmatched"


def _mapping_matches(detect: dict, path: Path, sh: Shape) -> bool:
    suffixes = detect.get("suffixes")
    if suffixes and not any(path.name.lower().endswith(s.lower()) for s in suffixes):
        return False
    if sh.kind is None:
        return False
    keys = set(sh.keys)
    if any(k not in keys for k in detect.get("keys", [])):
        return False
    any_keys = detect.get("any_keys")
    if any_keys and not any(k in keys for k in any_keys):
        return False
    for k, patterns in (detect.get("values") or {}).items():
        v = sh.value_at(k)
        if isinstance(patterns, str):
            patterns = [patterns]
        if (
            v is _MISSING
            or not isinstance(v, str)
            or not any(fnmatch.fnmatchcase(v, p) for p in patterns)
        ):
            return False
    item_keys = detect.get("item_keys")
    if item_keys and not set(item_keys) <= set(sh.item_keys):
        return False
    return bool(detect.get("keys") or any_keys or detect.get("values") or item_keys)


def _builtin(path: Path, sh: Shape) -> str | None:
    """The built-in ingestor whose writers' keys ``path`` has."""
    from graphlake.ingest.sniff import _looks_like
    from graphlake.ingest.traces import sniff as sniff_trace

    keys = set(sh.keys)
    if sh.kind == "object" and "trajectory" in keys and ("history" in keys or "info" in keys):
        return "traces"  # SWE-agent, wherever its keys start
    guess = _looks_like(path, sh if sh.kind is not None else None)
    if guess:
        return guess
    found = sniff_trace(
        head_bytes(path, 64 << 10), ("otel", "langfuse", "inspect", "sweagent", "openhands")
    )
    return "traces" if found else None


def _tried() -> list[str]:
    names = sorted({**ingest.mapping_paths(), **ingest._run_mappings()})
    return [
        f"the mappings {', '.join(names)}" if names else "no mapping",
        "the built-in formats " + ", ".join(n for n in ingest.builtin_names() if n != UNMATCHED),
    ]


def _detect_block(path: Path) -> dict:
    """A mapping's ``detect`` block, read without compiling the mapping (the ingest that
    follows loads and checks the mappings it uses)."""
    from graphlake.ingest.mapping.spec import MAX_MAPPING_BYTES
    from graphlake.ingest.yaml_bounded import load_yaml

    if path.stat().st_size > MAX_MAPPING_BYTES:
        return {}
    doc = load_yaml(path.read_text(encoding="utf-8"))
    detect = doc.get("detect") if isinstance(doc, dict) else None
    return detect if isinstance(detect, dict) else {}


@dataclass
class Choice:
    """What ``auto`` decided for a source: files by ingestor, and the files nothing read."""

    by_ingestor: dict[str, list[Path]] = field(default_factory=dict)
    unmatched: list[Path] = field(default_factory=list)
    tried: list[str] = field(default_factory=list)


def choose(path: Path) -> Choice:
    """Pick an ingestor for every data file under ``path``."""
    mappings = {**ingest.mapping_paths(), **ingest._run_mappings()}
    loaded = []
    for name, p in sorted(mappings.items()):
        try:
            loaded.append((name, _detect_block(p)))
        except Exception:  # noqa: BLE001 - a broken mapping is skipped here; `mapping check` says why
            continue
    choice = Choice(tried=_tried())
    for f in data_files(Path(path)):
        if is_non_data(f):
            continue
        sh = (
            shape(f) if f.suffix.lower() in (".json", ".jsonl", ".ndjson", ".traj") else Shape(None)
        )
        name = next((n for n, d in loaded if d and _mapping_matches(d, f, sh)), None)
        if name is None:
            try:
                name = _builtin(f, sh)
            except (OSError, ValueError):
                name = None
        if name is None:
            choice.unmatched.append(f)
        else:
            choice.by_ingestor.setdefault(name, []).append(f)
    # a file nothing claims beside files a built-in reader took (a MARBLE scenario YAML, a
    # tau2 task list) is that reader's companion: it decides what to make of it
    builtins = set(ingest.builtin_names())
    folders: dict[Path, str] = {}
    for name, files in choice.by_ingestor.items():
        if name in builtins:
            for f in files:
                folders.setdefault(f.parent, name)
    still = []
    for f in choice.unmatched:
        owner = folders.get(f.parent)
        if owner:
            choice.by_ingestor[owner].append(f)
        else:
            still.append(f)
    choice.unmatched = still
    return choice


@ingest.register(UNMATCHED)
class UnmatchedFiles(Ingestor):
    """The files ``auto`` found no reader for: one reject each, listing what was tried."""

    independent_units = True
    help = "files `ingest auto` found no reader for: one reject each, saying what was tried"

    def units(self, path: Path) -> list[SourceUnit]:
        return [SourceUnit(p, "unmatched") for p in data_files(Path(path))]

    def parse(self, unit: SourceUnit, out: Emitter) -> None:
        reject_file(
            out,
            unit.path,
            "sessions",
            "no ingestor recognises this file; `graphlake ingest auto` tried "
            f"{', '.join(_tried())}. Write a mapping for its format "
            "(`graphlake mapping draft FILE`) and ingest with --mapping",
            head_bytes(unit.path),
        )
