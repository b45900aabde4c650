"""Ingestors: one module per source format, registered by name.

``graphlake ingest NAME PATH`` looks ``NAME`` up here. Each ingestor lists its units (files or
session folders) and parses them into canonical rows and rejects; none of them writes the lake.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable

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
        coauthor,
        hasbench,
        kolab,
        maptask,
        marble,
        tau2,
        traces,
    )


def names() -> list[str]:
    _load_builtins()
    return sorted(_REGISTRY)


def get(name: str):
    """A fresh ingestor instance for ``name`` (one per run: it tracks ids seen in the run)."""
    _load_builtins()
    try:
        return _REGISTRY[name]()
    except KeyError:
        close = difflib.get_close_matches(name, _REGISTRY, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise UnknownCorpusError(
            f"no ingestor named {name!r}.{hint} Available: {', '.join(sorted(_REGISTRY))}."
        ) from None
