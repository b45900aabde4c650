"""Where the lake lives when a command is not told: ``--lake``, then ``$GRAPHLAKE_LAKE``, then
the user's data directory (``~/.local/share/graphlake/lake`` on Linux)."""

from __future__ import annotations

import os
from pathlib import Path

from platformdirs import user_data_dir

ENV_LAKE = "GRAPHLAKE_LAKE"
#: Rows one public query returns and seconds it may run, unless the caller says otherwise
#: (the CLI's ``--max-rows`` / ``--timeout``, ``graphlake.connect(max_rows=, timeout_s=)``).
DEFAULT_MAX_ROWS = 100_000
DEFAULT_TIMEOUT_S = 300.0
#: Memory one DuckDB connection (every statement on it together) may use, and what it may
#: spill to its temporary folder, unless $GRAPHLAKE_MEMORY_LIMIT / $GRAPHLAKE_TEMP_LIMIT say
#: otherwise (DuckDB's own default is 80% of RAM: one statement could take the machine).
DEFAULT_MEMORY_LIMIT = "2GiB"
DEFAULT_TEMP_LIMIT = "4GiB"


def memory_limit() -> str:
    return os.environ.get("GRAPHLAKE_MEMORY_LIMIT", DEFAULT_MEMORY_LIMIT)


def temp_limit() -> str:
    return os.environ.get("GRAPHLAKE_TEMP_LIMIT", DEFAULT_TEMP_LIMIT)


#: What a statement may allocate that DuckDB's memory limit does not see (a 4 GB string from
#: ``repeat``, a sorted list of 200 million numbers: they grew a server to 3 GiB in 7 s and
#: killed it): the serving process's data segment is capped at the memory limit plus this
#: headroom for the process itself ($GRAPHLAKE_SERVE_MEMORY_CEILING overrides the total;
#: ``off`` leaves the process uncapped). Past it an allocation fails, DuckDB stops the
#: statement with an out-of-memory error, and the server answers it and lives on.
SERVE_HEADROOM_BYTES = 1 << 30


def size_bytes(text: str) -> int:
    """``2GiB``, ``500MB``, ``1.5 GB``, ``4096`` as bytes (DuckDB's spelling of sizes)."""
    import re

    m = re.fullmatch(r"\s*([0-9.]+)\s*([KMGT]?)(i?)B?\s*", text, re.IGNORECASE)
    if not m:
        raise ValueError(f"{text!r} is not a size (e.g. 2GiB, 500MB)")
    unit = {"": 0, "K": 1, "M": 2, "G": 3, "T": 4}[m.group(2).upper()]
    base = 1024 if m.group(3) or not m.group(2) else 1000
    return int(float(m.group(1)) * base**unit)


def serve_room_bytes() -> int:
    """The room a serving process keeps for statements above what it holds itself: the
    memory limit + :data:`SERVE_HEADROOM_BYTES` (:mod:`graphlake.data_cap`)."""
    return size_bytes(memory_limit()) + SERVE_HEADROOM_BYTES


def serve_memory_ceiling() -> int | None:
    """The data-segment cap of a serving process in bytes, or None (``off``)."""
    value = os.environ.get("GRAPHLAKE_SERVE_MEMORY_CEILING")
    if value is not None and value.strip().lower() in ("off", "0", "none"):
        return None
    if value:
        return size_bytes(value)
    return size_bytes(memory_limit()) + SERVE_HEADROOM_BYTES


#: The largest ``attrs`` (a record's fields without a column, as JSON) a row may carry; a
#: record past it is a reject naming the limit. And the most characters of its raw record a
#: reject keeps (past it, cut, with a note of the full length).
DEFAULT_MAX_ATTRS_BYTES = 1 << 20
DEFAULT_MAX_REJECT_RAW = 1 << 20


def int_env(name: str, default: int) -> int:
    value = os.environ.get(name, "")
    try:
        return int(value) if value else default
    except ValueError:
        raise ValueError(
            f"${name}={value!r} is not a whole number; unset it for the default ({default:,})"
        ) from None


#: Files a reader must hold whole (one JSON, YAML or XML document: a Map Task layer, a task
#: list, a Kolab side file) may be this large; peak memory is about 25 times a file's size.
#: A Kolab graph past it is streamed (graphlake.ingest.kolab_stream). Line-oriented and
#: streamed formats (JSON Lines, tau2 results) have no such limit.
DEFAULT_MAX_FILE_BYTES = 64 << 20


def max_file_bytes() -> int:
    return int_env("GRAPHLAKE_MAX_FILE_BYTES", DEFAULT_MAX_FILE_BYTES)


def max_attrs_bytes() -> int:
    return int_env("GRAPHLAKE_MAX_ATTRS_BYTES", DEFAULT_MAX_ATTRS_BYTES)


def max_reject_raw() -> int:
    return int_env("GRAPHLAKE_MAX_REJECT_RAW", DEFAULT_MAX_REJECT_RAW)


#: Ordered pairs of overlapping node occurrences one session may have in ``co_occurrences``
#: (a session of n mutually overlapping nodes has n(n-1)): past it the session is listed in
#: ``co_occurrence_overflow`` instead. Part of the views' definition: a lake refreshed with
#: another value recomputes them.
DEFAULT_CO_OCCURRENCE_CAP = 1_000_000


def co_occurrence_cap() -> int:
    return int_env("GRAPHLAKE_CO_OCCURRENCE_CAP", DEFAULT_CO_OCCURRENCE_CAP)


#: Rows ``co_occurrences`` may hold for the whole lake (many sessions, each under the
#: per-session cap, still add up: 150 trace files gave 23.9 million rows). Past it, the
#: sessions with the most pairs are left out, largest first, until the rest fit, and listed
#: in ``co_occurrence_overflow`` with ``limit_kind = 'lake'``.
DEFAULT_CO_OCCURRENCE_LAKE_CAP = 20_000_000


def co_occurrence_lake_cap() -> int:
    return int_env("GRAPHLAKE_CO_OCCURRENCE_LAKE_CAP", DEFAULT_CO_OCCURRENCE_LAKE_CAP)


#: How query answers can be written (``--format``; graphlake.query.output).
OUTPUT_FORMATS = ("table", "json", "csv", "parquet")


def default_lake_dir() -> Path:
    env = os.environ.get(ENV_LAKE)
    if env:
        return Path(env).expanduser()
    return Path(user_data_dir("graphlake", appauthor=False)) / "lake"


def resolve_lake_dir(given: str | os.PathLike | None) -> Path:
    return Path(given).expanduser() if given else default_lake_dir()


ENV_SAMPLES = "GRAPHLAKE_SAMPLES"


def samples_dir() -> Path | None:
    """The folder of real public samples (``shared/data`` beside the checkout), if present:
    ``$GRAPHLAKE_SAMPLES``, else the first ``shared/data`` found walking up from this package
    or from the working directory."""
    env = os.environ.get(ENV_SAMPLES)
    if env:
        return Path(env) if Path(env).is_dir() else None
    for start in (Path(__file__).resolve(), Path.cwd().resolve()):
        for parent in start.parents:
            candidate = parent / "shared" / "data"
            if candidate.is_dir():
                return candidate
    return None
