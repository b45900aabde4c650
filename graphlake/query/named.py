"""Named queries: SQL files in ``queries/`` with a small metadata header.

A named query is an ordinary DuckDB SELECT that uses ``$name`` placeholders, preceded by::

    -- name: collab_metrics
    -- title: Collaboration dynamics per session
    -- description: Burstiness B, topology W, retention R_A / R_M and solo lead-in (Kolab 4.2).
    -- param: corpus text = kolab | Only sessions of this corpus (NULL for all).

Parameter types are ``text``, ``int``, ``float`` and ``bool``; ``= value`` gives a default
(``= NULL`` makes the parameter optional with no value). The loader parses every file with
sqlglot and checks that declared parameters and used placeholders match, reporting problems
as ``file:line``.

A query may come with a chart: a Vega-Lite spec in ``charts/<name>.vl.json`` beside it, with
no ``data`` (the workbench plots the query's rows with it). The spec is declarative, so a chart
is reviewed like the SQL it plots.
"""

from __future__ import annotations

import difflib
import json
import re
import threading
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError

from graphlake.errors import NamedQueryError

_HEADER = re.compile(r"^--\s*(name|title|description|param):\s*(.*)$")
_PARAM = re.compile(r"^(\w+)\s+(text|int|float|bool)\s*(?:=\s*([^|]*?))?\s*(?:\|\s*(.*))?$")
_CASTS = {
    "text": str,
    "int": int,
    "float": float,
    "bool": lambda v: str(v).strip().lower() in ("1", "true", "yes", "on"),
}


@dataclass(frozen=True)
class Param:
    name: str
    type: str
    default: object = None
    required: bool = False
    doc: str = ""

    def convert(self, raw: str):
        if raw is None or str(raw).upper() == "NULL":
            return None
        try:
            return _CASTS[self.type](raw)
        except ValueError:
            raise NamedQueryError(
                f"parameter {self.name} expects {self.type}, got {raw!r}"
            ) from None


@dataclass(frozen=True)
class NamedQuery:
    name: str
    title: str
    description: str
    sql: str
    path: Path
    params: tuple[Param, ...] = field(default_factory=tuple)
    chart: dict | None = field(default=None, compare=False)  # Vega-Lite, without data

    def bind(self, given: dict[str, str]) -> dict:
        """Convert ``name=value`` texts to typed values, apply defaults, reject unknowns."""
        names = {p.name for p in self.params}
        for k in given:
            if k not in names:
                close = difflib.get_close_matches(k, names, n=1)
                hint = f" Did you mean {close[0]!r}?" if close else ""
                raise NamedQueryError(
                    f"query {self.name} has no parameter {k!r}.{hint} "
                    f"Parameters: {', '.join(sorted(names)) or 'none'}"
                )
        out = {}
        for p in self.params:
            if p.name in given:
                out[p.name] = p.convert(given[p.name])
            elif p.required:
                raise NamedQueryError(
                    f"query {self.name} needs --param {p.name}=<{p.type}> ({p.doc})"
                )
            else:
                out[p.name] = p.default
        return out


def _parse_default(p_type: str, text: str | None):
    if text is None:
        return None, True
    text = text.strip()
    if text.upper() == "NULL" or text == "":
        return None, False
    return _CASTS[p_type](text.strip("'\"")), False


def parse_file(path: Path, text: str | None = None) -> NamedQuery:
    """Read and validate one named query file."""
    text = path.read_text() if text is None else text
    meta: dict[str, str] = {}
    params: list[Param] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        m = _HEADER.match(line.strip())
        if not m:
            continue
        key, value = m.group(1), m.group(2).strip()
        if key == "param":
            pm = _PARAM.match(value)
            if not pm:
                raise NamedQueryError(
                    f"{path}:{lineno}: bad param line {value!r}; write "
                    "'-- param: NAME TYPE [= DEFAULT] [| doc]' with TYPE one of"
                    " text, int, float, bool"
                )
            default, required = _parse_default(pm.group(2), pm.group(3))
            params.append(Param(pm.group(1), pm.group(2), default, required, pm.group(4) or ""))
        else:
            meta[key] = value
    if "name" not in meta:
        raise NamedQueryError(f"{path}:1: missing '-- name: <query name>' header")
    try:
        trees = [t for t in sqlglot.parse(text, read="duckdb") if t is not None]
    except ParseError as exc:
        err = exc.errors[0] if exc.errors else {}
        raise NamedQueryError(
            f"{path}:{err.get('line', '?')}: {err.get('description', exc)}"
        ) from None
    if len(trees) != 1 or not isinstance(trees[0], exp.Query):
        raise NamedQueryError(f"{path}: a named query is exactly one SELECT statement")
    used = {p.name for p in trees[0].find_all(exp.Placeholder) if p.name}
    declared = {p.name for p in params}
    if used - declared:
        raise NamedQueryError(
            f"{path}: placeholders {sorted(used - declared)} have no '-- param:' line"
        )
    if declared - used:
        raise NamedQueryError(
            f"{path}: parameters {sorted(declared - used)} are declared but never used as $name"
        )
    return NamedQuery(
        meta["name"],
        meta.get("title", meta["name"]),
        meta.get("description", ""),
        text,
        path,
        tuple(params),
        _chart(path, meta["name"]),
    )


def _chart(path: Path, name: str) -> dict | None:
    """The query's Vega-Lite spec (``charts/<name>.vl.json`` beside it), if it has one."""
    spec_path = path.parent / "charts" / f"{name}.vl.json"
    if not spec_path.is_file():
        return None
    try:
        spec = json.loads(spec_path.read_text())
    except ValueError as exc:
        raise NamedQueryError(f"{spec_path}: not JSON ({exc})") from None
    if not isinstance(spec, dict) or "mark" not in spec and "layer" not in spec:
        raise NamedQueryError(
            f"{spec_path}: a chart is one Vega-Lite spec with a 'mark' or 'layer'"
        )
    if "data" in spec:
        raise NamedQueryError(f"{spec_path}: leave 'data' out; the chart plots the query's rows")
    return spec


def builtin_dir() -> Path:
    return Path(str(resources.files("graphlake.queries")))


#: Parsed folders, by folder: (the files' stat signature, the queries). Parsing a folder with
#: sqlglot costs hundreds of milliseconds; a stat of its files, well under one.
_LOADED: dict[Path, tuple[tuple, dict[str, NamedQuery]]] = {}
_LOADED_LOCK = threading.Lock()


def _signature(directory: Path) -> tuple:
    files = sorted([*directory.glob("*.sql"), *directory.glob("charts/*.vl.json")])
    return tuple((f.name, f.stat().st_mtime_ns, f.stat().st_size) for f in files)


def load_all(directory: Path | None = None) -> dict[str, NamedQuery]:
    """Every named query in ``directory`` (the shipped ``queries/`` by default), by name.

    Parsed once and kept while no file of the folder changes (an edited query is read
    again on the next call), so a server answering named queries never re-parses them."""
    directory = directory or builtin_dir()
    signature = _signature(directory)
    with _LOADED_LOCK:
        hit = _LOADED.get(directory)
    if hit is not None and hit[0] == signature:
        return dict(hit[1])
    out = _parse_folder(directory)
    with _LOADED_LOCK:
        _LOADED[directory] = (signature, out)
    return dict(out)


def _parse_folder(directory: Path) -> dict[str, NamedQuery]:
    out: dict[str, NamedQuery] = {}
    for path in sorted(directory.glob("*.sql")):
        q = parse_file(path)
        if q.name in out:
            raise NamedQueryError(
                f"{path}: query name {q.name!r} is also used by {out[q.name].path}"
            )
        out[q.name] = q
    return out


def get(name: str, directory: Path | None = None) -> NamedQuery:
    queries = load_all(directory)
    if name not in queries:
        close = difflib.get_close_matches(name, queries, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise NamedQueryError(f"no named query {name!r}.{hint} See `graphlake query list`.")
    return queries[name]
