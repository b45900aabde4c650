"""Every error graphlake raises on purpose, in one place.

Each message says what went wrong *and what to do next*; the CLI prints it as-is, without a
traceback. Errors mix in the matching built-in so callers can catch ``ValueError`` and friends.
"""

from __future__ import annotations


class GraphlakeError(Exception):
    """Base class: anything graphlake reports to a user deliberately."""


class InputLimitError(GraphlakeError):
    """An input past a documented limit (a file too large to read whole, say): the message
    names the limit and the variable that raises it. The reader rejects that input alone."""


class LakeError(GraphlakeError):
    """The lake directory is missing, locked, or at an unknown version."""


class LakeVersionError(LakeError, LookupError):
    """A read asked for a lake version that does not exist."""


class SnapshotGoneError(LakeVersionError):
    """The files of the lake version a reader was pinned to were deleted while it read
    (``graphlake lake compact --vacuum``). A connection that follows the newest version
    reopens there by itself; one pinned on purpose raises this. Over HTTP: 503, retry."""

    def __init__(self, message: str, version: int):
        super().__init__(message)
        self.version = version


class SnapshotMovedWarning(UserWarning):
    """A connection reopened at a newer lake version because its own version's files were
    deleted by a vacuum: what it reads from now on is that version."""


class LakeNotFoundError(LakeError, FileNotFoundError):
    """A read named a lake directory that no writer ever created."""


class NotFoundError(GraphlakeError, LookupError):
    """A named thing (session, benchmark, instance, media file, named query) does not exist;
    the message says how to list what does. Over HTTP: 404."""

    def __str__(self) -> str:  # LookupError's KeyError cousin would quote the message
        return str(self.args[0]) if self.args else "not found"


class WrongCorpusError(GraphlakeError, ValueError):
    """An ingest found nothing it could read, and the files look like another corpus."""


class UnknownCorpusError(GraphlakeError, KeyError):
    """No ingestor is registered under that name."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class SqlError(GraphlakeError, ValueError):
    """A statement was rejected before it ran (not a read, bad syntax, unknown names)."""

    def __init__(self, message: str, *, line: int | None = None, col: int | None = None):
        super().__init__(message)
        self.line = line
        self.col = col


class QueryMemoryError(SqlError):
    """A statement needed more memory than its connection's limit and was stopped."""


class QueryTimeoutError(GraphlakeError, TimeoutError):
    """A query ran past its time limit and was interrupted."""


class NamedQueryError(GraphlakeError, ValueError):
    """A named query file is malformed, unknown, or was given bad parameters."""


class MissingExtraError(GraphlakeError, ImportError):
    """An optional dependency is not installed; the message names the pip command."""


def attempt_import(module: str, extra: str):
    """Import an optional heavy dependency, or say exactly how to install it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise MissingExtraError(
            f"{module} is not installed; it ships in graphlake's '{extra}' extra. "
            f'Install it with: pip install "graphlake[{extra}]"'
        ) from exc


def importable(*modules: str) -> bool:
    """Whether every one of ``modules`` imports here (an optional dependency installed and
    working): for code that takes another path without it, where :func:`attempt_import`
    would stop with an error."""
    import importlib

    try:
        for module in modules:
            importlib.import_module(module)
    except ImportError:
        return False
    return True


class ResultTruncatedWarning(UserWarning):
    """A query's answer was cut at the row cap; raise ``max_rows`` (0: no cap) for all rows."""
