"""The bounds and confinement of every DuckDB connection that reads a lake for a user.

One function, shared by the catalog a :class:`~graphlake.query.connection.Connection` opens
and by the quick path of ``graphlake sql`` (:mod:`graphlake.cli_quick`), so both run a
statement under the same limits. It imports DuckDB's settings only, nothing of the lake.
"""

from __future__ import annotations

import os
import socket
import tempfile
from pathlib import Path

#: Functions that read files, the environment or other databases: never on a public path.
FORBIDDEN_FUNCTIONS = {
    "read_csv",
    "read_csv_auto",
    "read_parquet",
    "parquet_scan",
    "read_json",
    "read_json_auto",
    "read_json_objects",
    "read_ndjson",
    "read_ndjson_auto",
    "read_ndjson_objects",
    "read_text",
    "read_blob",
    "glob",
    "sniff_csv",
    "delta_scan",
    "iceberg_scan",
    "sqlite_scan",
    "postgres_scan",
    "mysql_scan",
    "getenv",
    "parquet_metadata",
    "parquet_schema",
    "parquet_file_metadata",
    "parquet_kv_metadata",
    "read_xlsx",
    "query_table",
    "query",
}


def confine(con, meta_dir: Path, files: list[str], memory: str | None = None) -> tuple[str, str]:
    """Bound and confine DuckDB connection ``con`` for good (the configuration is locked
    after); returns (its spill folder, the memory limit as DuckDB reports it):

    * memory: ``memory`` (default :func:`graphlake.config.memory_limit`, 2 GiB) for every
      statement on the connection together, instead of DuckDB's 80% of RAM;
    * spill: a temporary folder of its own under ``<lake>/_graphlake/tmp`` (the system's
      when the lake is read-only), capped at :func:`graphlake.config.temp_limit`, removed
      by whoever closes the connection; not ``.tmp`` in whatever folder the process started in;
    * files: only ``files`` (the Parquet files of the snapshot's views) can be read
      (``allowed_paths``); DuckDB also allows its own temporary folder, which is why that
      folder is the lake's.
    """
    from graphlake.config import memory_limit, temp_limit

    try:
        parent = Path(meta_dir) / "tmp"
        parent.mkdir(parents=True, exist_ok=True)
        # named for its process, so `lake repair` can remove what a killed reader left
        temp_dir = tempfile.mkdtemp(
            prefix=f"duckdb-{os.getpid()}@{socket.gethostname()}-", dir=parent
        )
    except OSError:  # a lake on a read-only mount: spill to the system's temporary folder
        temp_dir = tempfile.mkdtemp(prefix="graphlake-duckdb-")
    con.execute("SET memory_limit = $m", {"m": memory or memory_limit()})
    (reported,) = con.execute("SELECT current_setting('memory_limit')").fetchone() or ("?",)
    con.execute("SET temp_directory = $t", {"t": temp_dir})
    con.execute("SET max_temp_directory_size = $s", {"s": temp_limit()})
    con.execute("SET allowed_paths = $paths", {"paths": sorted(set(files))})
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")
    return temp_dir, reported
