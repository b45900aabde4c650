"""Ingestors: one module per source format, registered by name.

``graphlake ingest NAME PATH`` looks ``NAME`` up here, in this order:

1. the built-in ingestors (Python modules of this package, ``@register``);
2. mapping files named for this run (``--mapping FILE``: ``$GRAPHLAKE_MAPPING_FILES``, a
   ``os.pathsep``-separated list, which worker processes inherit);
3. ingestors plugins install: the ``graphlake.ingestors`` entry-point group (``name =
   "package.module:Class"``, a subclass of :class:`graphlake.ingest.base.Ingestor`);
4. mappings: those shipped in ``ingest/mappings/`` and those plugins install through the
   ``graphlake.mappings`` entry-point group (a module whose folder holds ``*.yaml`` mappings,
   or a function returning their paths).

Each ingestor lists its units (files or session folders) and parses them into canonical rows
and rejects; none of them writes the lake.
"""

from __future__ import annotations

import difflib
import functools
import os
from collections.abc import Callable
from importlib import metadata, resources
from pathlib import Path

from graphlake.errors import UnknownCorpusError

_REGISTRY: dict[str, Callable[[], object]] = {}


def register(name: str):
    """Class decorator: make an ingestor available as ``graphlake ingest NAME``."""

    def deco(cls):
        from graphlake.ingest.base import Ingestor

        if not (isinstance(cls, type) and issubclass(cls, Ingestor)):
            raise TypeError(
                f"{cls!r} must subclass graphlake.ingest.base.Ingestor to be registered as {name!r}"
            )
        cls.name = name
        _REGISTRY[name] = cls
        return cls

    return deco


def _load_builtins() -> None:
    from graphlake.ingest import (  # noqa: F401  (they register themselves)
        almanac,
        auto,
        coauthor,
        hasbench,
        kolab,
        maptask,
        marble,
        tau2,
        traces,
    )


MAPPING_FILES_ENV = "GRAPHLAKE_MAPPING_FILES"
INGESTOR_GROUP = "graphlake.ingestors"
MAPPING_GROUP = "graphlake.mappings"


def builtin_names() -> list[str]:
    _load_builtins()
    return sorted(_REGISTRY)


def names() -> list[str]:
    """Every ingestor name: built-in, plugin ingestors, mappings (shipped, installed, named)."""
    return sorted(
        set(builtin_names())
        | set(_plugin_ingestors())
        | set(mapping_paths())
        | set(_run_mappings())
    )


def get(name: str):
    """A fresh ingestor instance for ``name`` (one per run: it tracks ids seen in the run)."""
    _load_builtins()
    if name in _REGISTRY:
        return _REGISTRY[name]()
    run = _run_mappings()
    if name in run:
        return _mapping_ingestor(run[name])
    plugins = _plugin_ingestors()
    if name in plugins:
        from graphlake.ingest.base import Ingestor

        cls: type[Ingestor] = plugins[name].load()
        if not (isinstance(cls, type) and issubclass(cls, Ingestor)):
            raise UnknownCorpusError(
                f"the plugin ingestor {name!r} ({plugins[name].value}) is not a subclass of "
                "graphlake.ingest.base.Ingestor: fix the plugin's entry point"
            )
        cls.name = name
        return cls()
    paths = mapping_paths()
    if name in paths:
        return _mapping_ingestor(paths[name])
    known = names()
    close = difflib.get_close_matches(name, known, n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    raise UnknownCorpusError(
        f"no ingestor named {name!r}.{hint} Available: {', '.join(known)}. A format of your "
        "own: write a mapping (`graphlake mapping draft`) and ingest with --mapping FILE."
    ) from None


def _mapping_ingestor(path: Path):
    from graphlake.ingest.mapping.ingestor import MappingIngestor

    return MappingIngestor(load_mapping(path))


@functools.cache
def _load_mapping(path: str, mtime_ns: int):
    from graphlake.ingest.mapping import load

    return load(path)


def load_mapping(path: Path):
    """The checked mapping at ``path`` (cached per process while the file is unchanged)."""
    path = Path(path).resolve()
    return _load_mapping(str(path), path.stat().st_mtime_ns)


def _run_mappings() -> dict[str, Path]:
    """Mapping files named for this run (``--mapping``), by their ``name``."""
    out: dict[str, Path] = {}
    for item in filter(None, os.environ.get(MAPPING_FILES_ENV, "").split(os.pathsep)):
        mapping = load_mapping(Path(item))
        out[mapping.name] = Path(item)
    return out


def use_mapping(path: Path) -> str:
    """Name ``path``'s mapping for this process and the workers it starts; returns its name.
    A mapping may not take the name of a built-in ingestor."""
    mapping = load_mapping(path)
    if mapping.name in builtin_names():
        from graphlake.ingest.mapping import MappingError

        raise MappingError(
            f"{Path(path).name}: the name {mapping.name!r} is a built-in ingestor's; give the "
            "mapping a name of its own"
        )
    items = [p for p in os.environ.get(MAPPING_FILES_ENV, "").split(os.pathsep) if p]
    resolved = str(Path(path).resolve())
    if resolved not in items:
        os.environ[MAPPING_FILES_ENV] = os.pathsep.join([*items, resolved])
    return mapping.name


def _entry_points(group: str) -> list[metadata.EntryPoint]:
    return list(metadata.entry_points(group=group))


def _plugin_ingestors() -> dict[str, metadata.EntryPoint]:
    return {ep.name: ep for ep in _entry_points(INGESTOR_GROUP)}


def shipped_mapping_dir() -> Path:
    return Path(str(resources.files("graphlake.ingest").joinpath("mappings")))


def mapping_paths() -> dict[str, Path]:
    """Shipped and plugin-installed mappings by name (a mapping file is named as its
    ``name``: ``chatarena.yaml``); a plugin's may not replace a shipped one."""
    out: dict[str, Path] = {}
    for ep in _entry_points(MAPPING_GROUP):
        try:
            target = ep.load()
        except Exception:  # noqa: BLE001 - a broken plugin must not break graphlake
            continue
        if callable(target):
            paths = [Path(p) for p in target()]
        else:
            folder = Path(getattr(target, "__file__", "") or "").parent
            paths = sorted(folder.glob("*.yaml")) if folder.name else []
        for p in paths:
            out[p.stem] = p
    shipped = shipped_mapping_dir()
    if shipped.is_dir():
        for p in sorted(shipped.glob("*.yaml")):
            out[p.stem] = p
    return out
