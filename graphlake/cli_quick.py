"""The ``graphlake`` command's entry point, and the quick path of ``graphlake sql``.

A cold ``graphlake sql "select 1"`` took a second: Typer (with pydantic) to parse the line,
pyarrow, deltalake and sqlglot imported, the snapshot log and every table's Delta log read, the
guard's parse, then the catalog built. Most statements a researcher types need none of it. So
before any of that is imported, :func:`main` tries the quick path:

* the line is ``sql STATEMENT`` with only ``--lake``, ``--at``, ``--format table|json``,
  ``--max-rows`` and ``--timeout`` (anything else, ``--help`` included, goes to the full CLI);
* the lake's manifest of its newest version is provably current (:mod:`graphlake.lake.current`)
  and is the version asked for; the catalog is made from it, the same statements the full path
  runs, under the same bounds (:func:`graphlake.sandbox.confine`);
* DuckDB's own parser admits the statement: one SELECT, short and shallow, calling no function
  that reads outside the lake, every table a lake view or one of its CTEs, every table function
  a safe one. These are the guard's rules (:mod:`graphlake.query.guard`) where DuckDB can tell;
* every column is of a type both paths print alike.

Whatever the quick path cannot vouch for (a graph pattern, an unknown name, a long statement,
a BLOB column, a syntax error) it hands to the full CLI, which checks, runs and explains as it
always has: nothing is printed before the quick path is sure. ``GRAPHLAKE_QUICK=0`` turns it
off; ``GRAPHLAKE_QUICK=require`` exits 97 instead of handing over (to see which way a command
goes). tests/test_cli_quick.py runs each statement both ways and compares the bytes.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass

#: Statements longer than this go the full way (the guard measures nesting on its tokens)
MAX_QUICK_CHARS = 4_000
#: Deepest brackets / CASE a quick statement may nest (the guard's own limit is 32)
MAX_QUICK_NESTING = 16
_SAFE_TABLE_FUNCTIONS = frozenset({"range", "generate_series", "unnest"})
#: Exit status under GRAPHLAKE_QUICK=require when the full CLI would have run the command
QUICK_REFUSED = 97


class _NotQuick(Exception):
    """The quick path cannot vouch for this command: the full CLI runs it."""


class _Stopped(Exception):
    """A limit stopped the statement: one ``error:`` line, as the full path prints."""


@dataclass
class _Line:
    statement: str
    lake: str | None = None
    version: int | None = None
    fmt: str = "table"
    max_rows: int = 100_000
    timeout: float = 300.0


def main() -> None:
    """The console script: the quick path when it applies, else the full CLI."""
    mode = os.environ.get("GRAPHLAKE_QUICK", "1")
    if mode != "0":
        code = quick_sql(sys.argv[1:])
        if code is not None:
            _finish(code)
        if mode == "require":  # to see whether a command takes the quick path
            print("graphlake: not the quick path (GRAPHLAKE_QUICK=require)", file=sys.stderr)
            sys.exit(QUICK_REFUSED)
    from graphlake.cli import main as full

    full()


def quick_sql(argv: list[str]) -> int | None:
    """Run ``argv`` (``sql STATEMENT ...``) the quick way and return the exit status, or None
    when the full CLI must run it (nothing has been printed then)."""
    try:
        line = _parse(argv)
        return _run(line)
    except _NotQuick:
        return None


def _parse(argv: list[str]) -> _Line:
    """The few options the quick path knows, as the full CLI reads them; anything else is
    :class:`_NotQuick`."""
    if not argv or argv[0] != "sql":
        raise _NotQuick
    values: dict[str, str] = {}
    positional: list[str] = []
    names = {
        "--lake": "lake",
        "--at": "version",
        "--format": "fmt",
        "-f": "fmt",
        "--max-rows": "max_rows",
        "--timeout": "timeout",
    }
    args = iter(argv[1:])
    for arg in args:
        if arg.startswith("-") and arg != "-":
            name, eq, value = arg.partition("=")
            if name not in names or (eq and name == "-f"):
                raise _NotQuick
            if not eq:
                value = next(args, None)  # type: ignore[assignment]
                if value is None:
                    raise _NotQuick
            if names[name] in values:
                raise _NotQuick
            values[names[name]] = value
        else:
            positional.append(arg)
    if len(positional) != 1:
        raise _NotQuick
    try:
        line = _Line(
            positional[0],
            lake=values.get("lake"),
            version=int(values["version"]) if "version" in values else None,
            fmt=values.get("fmt", "table"),
            max_rows=int(values.get("max_rows", 100_000)),
            timeout=float(values.get("timeout", 300.0)),
        )
    except ValueError:
        raise _NotQuick from None  # the full CLI says what is wrong with the value
    if line.fmt not in ("table", "json") or line.max_rows < 0 or line.timeout < 0:
        raise _NotQuick
    return line


_QUOTED = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"")
_NEST = re.compile(r"[(\[{]|[)\]}]|\bcase\b|\bend\b", re.IGNORECASE)


def _nesting(sql: str) -> int:
    """The deepest nesting of brackets and CASE ... END outside quotes (what the guard
    measures on its tokens; a comment's brackets count too, which only errs towards the
    full path)."""
    depth = deepest = 0
    for m in _NEST.finditer(_QUOTED.sub("''", sql)):
        tok = m.group(0)
        if tok in "([{" or tok.lower() == "case":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth = max(0, depth - 1)
    return deepest


def _walk(node, out: dict[str, set[str]]) -> None:
    """The function names, table names, table functions and CTE names of a DuckDB
    ``json_serialize_sql`` tree."""
    if isinstance(node, dict):
        kind = node.get("type")
        if kind == "BASE_TABLE":
            if node.get("schema_name") or node.get("catalog_name"):
                out["qualified"].add(str(node.get("table_name")))
            out["tables"].add(str(node.get("table_name", "")).lower())
        elif kind == "TABLE_FUNCTION":
            fn = node.get("function") or {}
            out["table_functions"].add(str(fn.get("function_name", "")).lower())
        if "function_name" in node:
            out["functions"].add(str(node["function_name"]).lower())
        cte = node.get("cte_map")
        if isinstance(cte, dict):
            for entry in cte.get("map") or []:
                out["ctes"].add(str(entry.get("key", "")).lower())
        for value in node.values():
            _walk(value, out)
    elif isinstance(node, list):
        for value in node:
            _walk(value, out)


def _admit(con, statement: str, views: set[str], table_macros: set[str]) -> None:
    """Raise :class:`_NotQuick` unless DuckDB's parser shows a statement the guard admits."""
    import json

    import duckdb

    from graphlake.sandbox import FORBIDDEN_FUNCTIONS

    if len(statement) > MAX_QUICK_CHARS or _nesting(statement) > MAX_QUICK_NESTING:
        raise _NotQuick
    try:
        parsed = duckdb.extract_statements(statement)
    except duckdb.Error:
        raise _NotQuick from None
    if len(parsed) != 1 or parsed[0].type != duckdb.StatementType.SELECT:
        raise _NotQuick
    (text,) = con.execute("SELECT json_serialize_sql($s)", {"s": statement}).fetchone()
    tree = json.loads(text)
    if tree.get("error"):
        raise _NotQuick
    found: dict[str, set[str]] = {
        k: set() for k in ("functions", "tables", "table_functions", "ctes", "qualified")
    }
    _walk(tree.get("statements"), found)
    if (
        found["qualified"]
        or found["functions"] & FORBIDDEN_FUNCTIONS
        or found["table_functions"] - _SAFE_TABLE_FUNCTIONS - table_macros
        or found["tables"] - views - found["ctes"]
    ):
        raise _NotQuick


def _run(line: _Line) -> int:
    from graphlake.config import resolve_lake_dir
    from graphlake.lake import current

    root = resolve_lake_dir(line.lake)
    doc = current.read_doc(root)
    if doc is None or not doc["fresh"]:
        raise _NotQuick
    if line.version is not None and line.version != doc["snapshot"]["lake_version"]:
        raise _NotQuick
    import duckdb

    statements, files, views = current.catalog_statements(doc, root, line.statement)
    con = duckdb.connect()
    temp_dir = None
    try:
        _admit(con, line.statement, views, set(doc["table_macros"]))
        from graphlake.sandbox import confine

        try:  # a file gone since (a vacuum), a folder not writable: the full path explains
            for stmt in statements:
                con.execute(stmt)
            temp_dir, memory = confine(con, root / "_graphlake", files)
        except (duckdb.Error, OSError):
            raise _NotQuick from None
        names, numeric, rows, truncated = _execute(con, line, memory)
    except _Stopped as stop:  # the statement failed the way the full path reports it too
        from graphlake.tabular import print_error

        print_error(str(stop))
        return 1
    finally:
        con.close()
        if temp_dir:
            import shutil

            shutil.rmtree(temp_dir, ignore_errors=True)
    from graphlake import tabular

    if line.fmt == "json":
        sys.stdout.buffer.write(tabular.json_bytes(names, rows) + b"\n")
        sys.stdout.buffer.flush()
    else:
        from rich.console import Console

        tabular.print_rows(names, numeric, rows, Console(markup=False))
    if truncated:
        tabular.note_truncated(line.max_rows)
    return 0


def _execute(con, line: _Line, memory: str):
    """(names, numeric flags, rows, truncated) of the statement; :class:`_Stopped` when
    its time or memory limit stopped it."""
    import threading

    import duckdb

    from graphlake.tabular import NotPlain, all_plain, numeric_columns, plain_rows

    timer = None
    fired = threading.Event()
    if line.timeout:

        def interrupt() -> None:
            fired.set()
            con.interrupt()

        timer = threading.Timer(line.timeout, interrupt)
        timer.daemon = True
        timer.start()
    try:
        con.execute(line.statement)
        desc = con.description
        if desc is None:
            raise _NotQuick
        types = [str(d[1]) for d in desc]
        if not all_plain(types):
            raise _NotQuick
        rows = con.fetchmany(line.max_rows + 1) if line.max_rows else con.fetchall()
    except duckdb.InterruptException:
        if fired.is_set():
            raise _Stopped(
                f"query ran past its {line.timeout:g} s limit and was stopped; narrow it "
                "(WHERE, LIMIT) or raise the time limit"
            ) from None
        raise
    except duckdb.OutOfMemoryException:
        raise _Stopped(
            f"query needed more than its memory limit ({memory}) and was stopped; narrow it "
            "(WHERE, fewer columns, no huge lists) or raise $GRAPHLAKE_MEMORY_LIMIT"
        ) from None
    except duckdb.Error:
        raise _NotQuick from None  # the full path runs it again and explains
    finally:
        if timer is not None:
            timer.cancel()
    truncated = bool(line.max_rows) and len(rows) > line.max_rows
    if truncated:
        rows = rows[: line.max_rows]
    try:
        rows = plain_rows(types, rows)
    except NotPlain:
        raise _NotQuick from None  # printed as exact digits by the full path
    return [d[0] for d in desc], numeric_columns(types), rows, truncated


def _finish(code: int) -> None:
    """End the process: without the interpreter's teardown after a success (as every
    read-only command does, :func:`graphlake.cli_common.exit_when_done`)."""
    sys.stdout.flush()
    sys.stderr.flush()
    if code == 0 and os.environ.get("GRAPHLAKE_FAST_EXIT", "1") != "0":
        os._exit(0)
    sys.exit(code)
