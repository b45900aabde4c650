"""The distributed path: the same lake snapshot and the same SQL, run on PySpark.

Spark reads the very Parquet files a snapshot pins (no export, no copy), each canonical table
becomes a temporary view with the schema the lake declares, the derived views are translated
once by :mod:`graphlake.query.portable`, and statements go through the same guard as on
DuckDB before they are translated. Tests run Spark in local mode; point ``master`` at a
cluster for corpora that outgrow one machine.

    from graphlake.query.spark import run_sql_spark
    run_sql_spark("SELECT label, count(*) FROM adoptions GROUP BY 1", "~/lake").table
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pyarrow as pa

from graphlake.errors import GraphlakeError, SqlError
from graphlake.lake import Lake
from graphlake.query.catalog import DERIVED_VIEWS
from graphlake.query.engine import DEFAULT_MAX_ROWS, QueryResult
from graphlake.query.guard import check
from graphlake.query.pattern import compile_patterns
from graphlake.query.portable import to_spark
from graphlake.schema import TABLES

_SPARK_TYPES = {
    pa.string(): "STRING",
    pa.float64(): "DOUBLE",
    pa.int32(): "INT",
    pa.int64(): "BIGINT",
    pa.bool_(): "BOOLEAN",
    pa.timestamp("us", tz="UTC"): "TIMESTAMP",
    pa.list_(pa.string()): "ARRAY<STRING>",
}
_lock = threading.Lock()
_session = None


@contextmanager
def _gateway_launched_without_python_in_the_child() -> Iterator[None]:
    """While PySpark starts its JVM, launch it with ``start_new_session`` instead of its
    ``preexec_fn``. PySpark passes a Python function (ignore SIGINT) to run between fork and
    exec, which makes CPython fork plainly and run Python in the child: in a process with
    threads (LanceDB's event loop, DuckDB's, a server's), a lock another thread held at the
    fork stays held in the child, which never reaches exec, and the session waits for ever
    (a CI run hung there for an hour: the child forked, ``spark-submit`` never ran). A new
    session keeps the terminal's Ctrl-C from the JVM as the function meant to, and runs no
    Python in the child."""
    from pyspark import java_gateway

    launch = java_gateway.Popen

    def popen(*args, **kwargs):
        if kwargs.pop("preexec_fn", None) is not None:
            kwargs["start_new_session"] = True
        return launch(*args, **kwargs)

    java_gateway.Popen = popen  # type: ignore[misc,assignment]
    try:
        yield
    finally:
        java_gateway.Popen = launch  # type: ignore[misc]


def spark_session(master: str | None = None):
    """One SparkSession per process (local[2] unless ``master`` or $GRAPHLAKE_SPARK_MASTER)."""
    global _session
    with _lock:
        if _session is None:
            try:
                from pyspark.sql import SparkSession
            except ImportError:
                raise GraphlakeError(
                    "the Spark engine needs PySpark: pip install 'graphlake[spark]' (and Java 17)"
                ) from None
            master = master or os.environ.get("GRAPHLAKE_SPARK_MASTER", "local[2]")
            with _gateway_launched_without_python_in_the_child():
                _session = _build(SparkSession, master)
            _session.sparkContext.setLogLevel("OFF")
        return _session


def _build(SparkSession, master: str):
    return (
        SparkSession.builder.master(master)
        .appName("graphlake")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.ansi.enabled", "false")
        .config("spark.driver.memory", "2g")
        .getOrCreate()
    )


def _ddl(schema: pa.Schema) -> str:
    return ", ".join(f"`{f.name}` {_SPARK_TYPES[f.type]}" for f in schema)


#: (spark session, every table's files) -> the view -> columns map registered last
_registered: dict[tuple, dict[str, list[str]]] = {}


def register_lake(spark, lake: Lake, version: int | None = None) -> dict[str, list[str]]:
    """Create Spark temp views for ``lake`` at ``version``; return the view -> columns map.

    Temp views belong to the session, and a Parquet file of the lake never changes: when the
    views already read exactly these files they are kept (registering analyses every table
    and derived view, 1-2 s a call)."""
    snap = lake.snapshot(version)
    files = {name: lake.files(name, snap) for name in TABLES}
    key = (id(spark), tuple((name, tuple(fs)) for name, fs in files.items()))
    with _lock:
        if key in _registered:
            return _registered[key]
        _registered.clear()  # the session's views are about to show another snapshot
    columns: dict[str, list[str]] = {}
    for name, spec in TABLES.items():
        ddl = _ddl(spec.schema)
        if files[name]:
            df = spark.read.schema(ddl).parquet(*files[name])
        else:
            df = spark.createDataFrame([], ddl)
        df.createOrReplaceTempView(name)
        columns[name] = list(spec.schema.names)
    for name, (sql, _doc) in DERIVED_VIEWS.items():
        spark.sql(f"CREATE OR REPLACE TEMP VIEW {name} AS {to_spark(sql)}")
        columns[name] = spark.table(name).columns
    with _lock:
        _registered[key] = columns
    return columns


def run_sql_spark(
    sql: str,
    lake,
    *,
    version: int | None = None,
    params: dict | None = None,
    max_rows: int | None = DEFAULT_MAX_ROWS,
    master: str | None = None,
) -> QueryResult:
    """Guard ``sql`` as on DuckDB, translate it to Spark SQL, run it on ``lake``."""
    lake = lake if isinstance(lake, Lake) else Lake(os.fspath(lake))
    spark = spark_session(master)
    columns = register_lake(spark, lake, version)
    compiled = compile_patterns(sql)
    check(compiled, columns)
    statement = to_spark(compiled, params)  # already compiled: to_spark finds no pattern
    try:
        df = spark.sql(statement)
        if max_rows is not None:
            df = df.limit(max_rows + 1)
        table = df.toArrow()
    except Exception as exc:  # py4j and Spark analysis errors share no useful base class
        if type(exc).__module__.startswith(("pyspark", "py4j")):
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise SqlError(f"Spark: {first}\n-- Spark SQL was:\n{statement}") from None
        raise
    truncated = max_rows is not None and table.num_rows > max_rows
    if truncated:
        table = table.slice(0, max_rows)
    return QueryResult(table, truncated, lake.snapshot(version))
