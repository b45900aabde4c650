"""A graph pattern language inside SQL, compiled by sqlglot into joins and recursive CTEs.

In the spirit of SQL/PGQ's ``GRAPH_TABLE``, a pattern can stand wherever a table can::

    SELECT a, count(*) FROM GRAPH_TABLE (kolab
        MATCH (p:human)-[:next]->(a:ai)<-[r:responds {label: 'modify'}]-(h:human)
        WHERE h.t_start > a.t_end
        COLUMNS (a.node_id AS a, h.label AS response)) AS g
    GROUP BY a

The compiler is a pure rewrite: the pattern becomes a subquery of ordinary joins over the lake
views (plus a recursive CTE per variable-length edge), so the result is a relation that joins
with events and ratings, and the same SQL runs on DuckDB and, transpiled, on Spark.

Vocabulary (see ``docs/patterns.md``):

* node labels ``:human``, ``:ai``, ``:system`` (``nodes.actor_type``; ``|`` for either);
  properties ``{col: value}`` match ``nodes`` columns; a repeated variable is the same node;
* edge types (:data:`EDGE_TYPES`): ``next`` (action-level ``edges``, the default),
  ``responds`` (response node -> AI output, from adoption annotations) and ``prompts``
  (request node -> AI output); properties match the edge's own table;
* ``{lo,hi}`` after an edge makes it variable length. Without a path mode the edge means
  reachability: one row per (start, end) with the fewest hops in range, computed by a
  deduplicating recursion that never enumerates paths (each step keeps DISTINCT
  (start, node, hops) rows; see graph_macros for why that equals UNION and runs on Spark).
  With a mode before the path (``WALK``, ``TRAIL``, ``ACYCLIC``, ``ANY SHORTEST``,
  ``ALL SHORTEST``) paths are enumerated, one row per path, with ``<var>.path`` (node ids)
  and ``<var>.edge_ids``. Every variable-length edge needs an upper bound.

Without COLUMNS a pattern returns ``corpus``, ``session_id``, one column per named node (its
node_id), one per named edge (its id) and ``<var>_hops`` / ``<var>_path`` for named
variable-length edges. A match always lies within one session.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError

from graphlake.errors import SqlError
from graphlake.query.guard import suggest as _suggest
from graphlake.schema import TABLES


class PatternError(SqlError):
    """A GRAPH_TABLE pattern that cannot be compiled; ``line``/``col`` point into the SQL."""


@dataclass(frozen=True)
class EdgeType:
    """How one pattern edge type maps onto a lake table."""

    table: str
    src: str
    dst: str
    id: str
    where: str
    doc: str


EDGE_TYPES: dict[str, EdgeType] = {
    "next": EdgeType(
        "edges",
        "src",
        "dst",
        "edge_id",
        "level = 'action'",
        "action-level workflow edge, src -> dst",
    ),
    "responds": EdgeType(
        "annotations",
        "response_node",
        "ai_node",
        "annotation_id",
        "kind = 'adoption'",
        "a human response to an AI output (label: adopt, modify, reject)",
    ),
    "prompts": EdgeType(
        "annotations",
        "source_node",
        "ai_node",
        "annotation_id",
        "kind = 'adoption' AND source_node IS NOT NULL",
        "the request that led to an AI output",
    ),
}
NODE_LABELS = ("human", "ai", "system")
_ID_COLUMNS = ("corpus", "session_id", "node_id")
#: Reachability bounds up to this many hops compile to one join per hop (no recursion).
UNROLL_MAX_HOPS = 8
PATH_MODES = ("WALK", "TRAIL", "ACYCLIC", "ANY SHORTEST", "ALL SHORTEST")
_PLAIN_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
_KEYWORDS = {"MATCH", "WHERE", "COLUMNS", "WALK", "TRAIL", "ACYCLIC", "ANY", "ALL", "SHORTEST"}

_TOKEN = re.compile(
    r"""
  (?P<ws>\s+)
| (?P<str>'(?:[^']|'')*')
| (?P<num>\d+(?:\.\d+)?)
| (?P<arrow><-|->)
| (?P<ident>[A-Za-z_][A-Za-z0-9_]*|"(?:[^"]|"")+")
| (?P<punct>[()\[\]{}:,|*+=.-])
| (?P<other>.)
""",
    re.VERBOSE | re.DOTALL,
)


@dataclass
class Tok:
    kind: str
    text: str
    pos: int  # offset in the whole SQL statement

    @property
    def upper(self) -> str:
        return self.text.upper() if self.kind == "ident" else self.text


@dataclass
class NodePat:
    var: str | None
    labels: list[str]
    props: dict[str, exp.Expr]
    pos: int

    @property
    def virtual(self) -> bool:
        """Anonymous and unconstrained: its id can come from the adjacent edge, no join."""
        return self.var is None and not self.labels and not self.props


@dataclass
class EdgePat:
    var: str | None
    etype: str
    props: dict[str, exp.Expr]
    outgoing: bool
    pos: int
    lo: int | None = None
    hi: int | None = None

    @property
    def bounds(self) -> tuple[int, int]:
        """``(lo, hi)`` of a variable-length edge (the parser refuses one without them)."""
        assert self.lo is not None and self.hi is not None
        return self.lo, self.hi

    @property
    def quantified(self) -> bool:
        return self.hi is not None


@dataclass
class PathPat:
    mode: str | None
    elements: list = field(default_factory=list)  # NodePat, EdgePat, NodePat, ...


@dataclass
class GraphTable:
    start: int
    end: int  # one past the closing parenthesis
    graph: str | None
    paths: list[PathPat]
    where: exp.Expr | None
    columns: list[exp.Expr] | None


def _position(sql: str, offset: int) -> tuple[int, int]:
    line = sql.count("\n", 0, offset) + 1
    return line, offset - (sql.rfind("\n", 0, offset) + 1) + 1


def _fail(sql: str, offset: int, message: str) -> PatternError:
    line, col = _position(sql, offset)
    return PatternError(
        f"pattern error at line {line}, column {col}: {message}", line=line, col=col
    )


# ---------------------------------------------------------------- finding GRAPH_TABLE spans

_SKIP = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|--[^\n]*|/\*.*?\*/", re.DOTALL)
_GT = re.compile(r"\bGRAPH_TABLE\s*\(", re.IGNORECASE)


def _code_mask(sql: str) -> str:
    """``sql`` with strings and comments blanked, so scanning never looks inside them."""
    return _SKIP.sub(lambda m: m.group(0)[0] + " " * (len(m.group(0)) - 1), sql)


def find_graph_tables(sql: str) -> list[tuple[int, int, int]]:
    """(start, open_paren, close_paren) of every top-level ``GRAPH_TABLE (...)``."""
    code = _code_mask(sql)
    spans: list[tuple[int, int, int]] = []
    for m in _GT.finditer(code):
        if spans and m.start() < spans[-1][2]:
            raise _fail(sql, m.start(), "GRAPH_TABLE cannot be nested inside another pattern")
        depth, i = 0, m.end() - 1
        while i < len(code):
            if code[i] == "(":
                depth += 1
            elif code[i] == ")":
                depth -= 1
                if depth == 0:
                    break
            i += 1
        else:
            raise _fail(sql, m.start(), "GRAPH_TABLE ( has no closing parenthesis")
        spans.append((m.start(), m.end() - 1, i))
    return spans


# ---------------------------------------------------------------- parsing the pattern


class _Parser:
    def __init__(self, sql: str, open_paren: int, close_paren: int):
        self.sql = sql
        self.end_pos = close_paren
        body = sql[open_paren + 1 : close_paren]
        self.toks = [
            Tok(m.lastgroup or "other", m.group(0), open_paren + 1 + m.start())
            for m in _TOKEN.finditer(body)
            if m.lastgroup != "ws"
        ]
        self.i = 0

    # token helpers
    def peek(self, k: int = 0) -> Tok | None:
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else None

    def kind(self) -> str | None:
        """The next token's kind, None at the end of the pattern."""
        t = self.peek()
        return t.kind if t else None

    def pos(self) -> int:
        t = self.peek()
        return t.pos if t else self.end_pos

    def take(self) -> Tok:
        t = self.peek()
        if t is None:
            raise _fail(self.sql, self.end_pos, "the pattern ends too early")
        self.i += 1
        return t

    def at(self, *texts: str) -> bool:
        t = self.peek()
        return t is not None and t.upper in texts

    def expect(self, text: str, what: str) -> Tok:
        t = self.peek()
        if t is None or t.upper != text:
            got = repr(t.text) if t else "the end of the pattern"
            raise _fail(self.sql, self.pos(), f"expected {what}, got {got}")
        return self.take()

    def ident(self, what: str) -> str:
        t = self.peek()
        if t is None or t.kind != "ident":
            got = repr(t.text) if t else "the end of the pattern"
            raise _fail(self.sql, self.pos(), f"expected {what}, got {got}")
        self.take()
        if not t.text.startswith('"'):
            name = t.text.lower()
        else:
            name = t.text[1:-1]
            if not _PLAIN_NAME.fullmatch(name):
                raise _fail(
                    self.sql,
                    t.pos,
                    f"{what} {t.text} is not a plain name: pattern "
                    "variables, labels, types and properties are letters, digits and "
                    "underscores, starting with a letter",
                )
        if name.startswith("_"):
            raise _fail(
                self.sql,
                t.pos,
                f"{what} {t.text} starts with '_', which the "
                "compiler keeps for its own aliases; start it with a letter",
            )
        return name

    # grammar
    def graph_table(self, start: int) -> GraphTable:
        graph = None
        if self.kind() == "ident" and not self.at("MATCH"):
            # a corpus name goes into the SQL as a string literal: any text is safe
            t = self.take()
            graph = t.text[1:-1].replace('""', '"') if t.text.startswith('"') else t.text.lower()
        self.expect("MATCH", "MATCH")
        paths = [self.path()]
        while self.at(","):
            self.take()
            paths.append(self.path())
        where = columns = None
        if self.at("WHERE"):
            where_tok = self.take()
            stop = self._find_top_level("COLUMNS")
            text_end = self.toks[stop].pos if stop is not None else self.end_pos
            where = self._sql_expr(where_tok.pos + 5, text_end, "WHERE")
            self.i = stop if stop is not None else len(self.toks)
        if self.at("COLUMNS"):
            self.take()
            open_tok = self.expect("(", "( after COLUMNS")
            close = self._matching_paren(self.i - 1)
            columns = self._select_list(open_tok.pos + 1, self.toks[close].pos)
            self.i = close + 1
        if self.peek() is not None:
            t = self.take()
            raise _fail(
                self.sql,
                t.pos,
                f"unexpected {t.text!r}: after the pattern come "
                "WHERE <condition> and COLUMNS (<expressions>)",
            )
        return GraphTable(start, self.end_pos + 1, graph, paths, where, columns)

    def path(self) -> PathPat:
        mode = None
        if self.at("ANY", "ALL"):
            first = self.take().upper
            self.expect("SHORTEST", f"SHORTEST after {first}")
            mode = f"{first} SHORTEST"
        elif self.at("SHORTEST"):
            self.take()
            mode = "ANY SHORTEST"
        elif self.at("WALK", "TRAIL", "ACYCLIC"):
            mode = self.take().upper
        p = PathPat(mode, [self.node()])
        while self.at("-", "<-", "->"):
            p.elements.append(self.edge())
            p.elements.append(self.node())
        if mode and not any(isinstance(e, EdgePat) and e.quantified for e in p.elements):
            raise _fail(
                self.sql,
                self.pos(),
                f"path mode {mode} needs a variable-length edge such as -[:next]->{{1,5}}",
            )
        return p

    def node(self) -> NodePat:
        start = self.pos()
        self.expect("(", "a node such as (p:human)")
        var = None
        if self.kind() == "ident":
            var = self.ident("a variable")
        labels = []
        if self.at(":"):
            self.take()
            labels.append(self._label())
            while self.at("|"):
                self.take()
                labels.append(self._label())
        props = self._props("nodes") if self.at("{") else {}
        self.expect(")", "')' to close the node")
        return NodePat(var, labels, props, start)

    def _label(self) -> str:
        pos = self.pos()
        label = self.ident("a node label")
        if label not in NODE_LABELS:
            raise _fail(
                self.sql,
                pos,
                f"unknown node label {label!r}; labels are "
                f"{', '.join(NODE_LABELS)} (match other columns with properties, "
                "e.g. (x {actor: 'claude'}))",
            )
        return label

    def edge(self) -> EdgePat:
        start = self.pos()
        first = self.take().text
        incoming = first == "<-"
        var, etype, props = None, "next", {}
        if first == "->":
            pass
        elif first == "<-" and not self.at("["):
            pass
        else:
            self.expect("[", "'[' to open the edge")
            if self.kind() == "ident":
                var = self.ident("an edge variable")
            if self.at(":"):
                self.take()
                pos = self.pos()
                etype = self.ident("an edge type")
                if etype not in EDGE_TYPES:
                    raise _fail(
                        self.sql,
                        pos,
                        f"unknown edge type {etype!r}; types are {', '.join(EDGE_TYPES)}",
                    )
            props = self._props(EDGE_TYPES[etype].table) if self.at("{") else {}
            self.expect("]", "']' to close the edge")
            close = self.take().text if self.peek() else ""
            if incoming and close != "-":
                raise _fail(self.sql, self.pos(), "an incoming edge reads <-[...]-")
            if not incoming and close != "->":
                raise _fail(
                    self.sql,
                    self.pos(),
                    "an outgoing edge reads -[...]-> "
                    "(undirected edges are not supported; use neighborhood())",
                )
        e = EdgePat(var, etype, props, not incoming, start)
        if self.at("{"):
            self._quantifier(e)
        elif self.at("*", "+"):
            raise _fail(
                self.sql,
                self.pos(),
                "variable-length edges need an upper bound, "
                "e.g. {1,5}; unbounded reachability is descendants()/ancestors()",
            )
        return e

    def _quantifier(self, e: EdgePat) -> None:
        pos = self.pos()
        self.take()
        lo = hi = None
        if self.kind() == "num":
            lo = int(self.take().text)
        if self.at(","):
            self.take()
            if self.kind() == "num":
                hi = int(self.take().text)
        else:
            hi = lo
        self.expect("}", "'}' to close the quantifier {lo,hi}")
        if hi is None:
            raise _fail(
                self.sql,
                pos,
                "variable-length edges need an upper bound, e.g. "
                "{1,5}; unbounded reachability is descendants()/ancestors()",
            )
        lo = 0 if lo is None else lo
        if lo > hi:
            raise _fail(self.sql, pos, f"quantifier lower bound {lo} is above upper bound {hi}")
        e.lo, e.hi = lo, hi

    def _props(self, table: str) -> dict[str, exp.Expr]:
        self.take()
        props: dict[str, exp.Expr] = {}
        cols = TABLES[table].schema.names
        while True:
            pos = self.pos()
            key = self.ident("a property name")
            if key not in cols:
                raise _fail(
                    self.sql,
                    pos,
                    f"unknown property {key!r} of {table}."
                    f"{_suggest(key, cols)} Properties: {', '.join(cols)}",
                )
            self.expect(":", f"':' after {key}")
            props[key] = self._literal()
            if self.at(","):
                self.take()
                continue
            self.expect("}", "'}' or ',' in the property map")
            return props

    def _literal(self) -> exp.Expr:
        """A property value as a literal node: the tokenizer's text never reaches SQL."""
        t = self.take()
        if t.kind == "str":
            return exp.Literal.string(t.text[1:-1].replace("''", "'"))
        if t.kind == "num":
            return exp.Literal.number(t.text)
        if t.text == "-" and self.kind() == "num":
            return exp.Neg(this=exp.Literal.number(self.take().text))
        if t.kind == "ident" and t.upper in ("TRUE", "FALSE"):
            return exp.Boolean(this=t.upper == "TRUE")
        if t.kind == "ident" and t.upper == "NULL":
            return exp.Null()
        raise _fail(
            self.sql,
            t.pos,
            f"expected a literal ('text', number, true, false, null), got {t.text!r}",
        )

    def _find_top_level(self, word: str) -> int | None:
        depth = 0
        for j in range(self.i, len(self.toks)):
            t = self.toks[j]
            depth += t.text == "("
            depth -= t.text == ")"
            if depth == 0 and t.upper == word:
                return j
        return None

    def _matching_paren(self, j: int) -> int:
        depth = 0
        for k in range(j, len(self.toks)):
            depth += self.toks[k].text == "("
            depth -= self.toks[k].text == ")"
            if depth == 0:
                return k
        raise _fail(self.sql, self.toks[j].pos, "unclosed '('")

    def _sql_expr(self, a: int, b: int, what: str) -> exp.Expr:
        text = self.sql[a:b]
        try:
            tree = sqlglot.parse_one(f"SELECT 1 WHERE {text}", read="duckdb")
        except ParseError as exc:
            err = exc.errors[0] if exc.errors else {}
            raise _fail(
                self.sql, a, f"bad {what} condition: {err.get('description', exc)}"
            ) from None
        cond = tree.args["where"].this
        _shift_meta(cond, a - len("SELECT 1 WHERE "))
        return cond

    def _select_list(self, a: int, b: int) -> list[exp.Expr]:
        try:
            tree = sqlglot.parse_one(f"SELECT {self.sql[a:b]}", read="duckdb")
        except ParseError as exc:
            err = exc.errors[0] if exc.errors else {}
            raise _fail(self.sql, a, f"bad COLUMNS list: {err.get('description', exc)}") from None
        for e in tree.expressions:
            _shift_meta(e, a - len("SELECT "))
        return list(tree.expressions)


def _shift_meta(tree: exp.Expr, delta: int) -> None:
    """Make sqlglot's token offsets in a sub-parse point into the whole statement."""
    for node in tree.walk():
        meta = node.meta if hasattr(node, "_meta") and node._meta else None
        if meta and "start" in meta:
            meta["abs_start"] = meta["start"] + delta


def parse_graph_table(sql: str, span: tuple[int, int, int]) -> GraphTable:
    start, open_paren, close_paren = span
    return _Parser(sql, open_paren, close_paren).graph_table(start)


# ---------------------------------------------------------------- compiling to SQL
#
# Everything below builds sqlglot expression trees. Variables, labels, types and keys reach
# the statement only as Identifier nodes (quoted by the generator where they need it) and
# property values only as Literal nodes, so no name from a pattern is ever pasted into SQL
# text. The only SQL text parsed here is the constant filter of each edge type.


def _ident(name: str) -> exp.Identifier:
    return exp.to_identifier(name)


def _col(table: str | None, name: str) -> exp.Column:
    return exp.column(name, table=table)


def _eq(a: exp.Expr, b: exp.Expr) -> exp.EQ:
    return exp.EQ(this=a, expression=b)


def _all(conds: Sequence[exp.Expr]) -> exp.Expr | None:
    """``a AND b AND c``, left-deep as the parser builds it; ``None`` for no condition."""
    out: exp.Expr | None = None
    for cond in conds:
        out = cond.copy() if out is None else exp.And(this=out, expression=cond.copy())
    return out


def _table(name: str, alias: str | None = None) -> exp.Table:
    return exp.Table(this=_ident(name), alias=exp.TableAlias(this=_ident(alias)) if alias else None)


def _derived(query: exp.Expr, alias: str) -> exp.Subquery:
    return exp.Subquery(this=query, alias=exp.TableAlias(this=_ident(alias)))


def _aliased(expr: exp.Expr, alias: str) -> exp.Alias:
    return exp.Alias(this=expr, alias=_ident(alias))


def _select(
    cols: list[exp.Expr],
    sources: Sequence[tuple[exp.Expr, Sequence[exp.Expr]]],
    where: Sequence[exp.Expr],
    distinct: bool = False,
    group_by: list[exp.Expr] | None = None,
) -> exp.Select:
    """``SELECT cols FROM first JOIN next ON ... WHERE ...``; ``sources`` pairs each
    relation with its join condition (the first one's is empty)."""
    query = exp.Select(expressions=cols)
    if distinct:
        query.set("distinct", exp.Distinct())
    if sources:
        query.set("from_", exp.From(this=sources[0][0]))
        joins = [exp.Join(this=src, on=_all(on) or exp.true()) for src, on in sources[1:]]
        if joins:
            query.set("joins", joins)
    cond = _all(where)
    if cond is not None:
        query.set("where", exp.Where(this=cond))
    if group_by:
        query.set("group", exp.Group(expressions=group_by))
    return query


def _cte(name: str, query: exp.Expr, columns: list[str] | None = None) -> exp.CTE:
    return exp.CTE(
        this=query,
        alias=exp.TableAlias(
            this=_ident(name), columns=[_ident(c) for c in columns] if columns else None
        ),
    )


def _union_all(queries: list[exp.Expr]) -> exp.Expr:
    out = queries[0]
    for q in queries[1:]:
        out = exp.Union(this=out, expression=q, distinct=False)
    return out


def _cols(table: str | None, names: list[str]) -> list[exp.Expr]:
    return [_col(table, n) for n in names]


def _conjuncts(tree: exp.Expr) -> list[exp.Expr]:
    return list(tree.flatten()) if isinstance(tree, exp.And) else [tree]


@dataclass
class _Ref:
    """Where a pattern node's corpus, session and id live in the FROM clause: columns
    ``corpus``, ``session_id`` and ``node_col`` of relation ``alias``."""

    alias: str
    node_col: str

    @property
    def corpus(self) -> exp.Column:
        return _col(self.alias, "corpus")

    @property
    def session(self) -> exp.Column:
        return _col(self.alias, "session_id")

    @property
    def node(self) -> exp.Column:
        return _col(self.alias, self.node_col)


def _lit_filters(alias: str, props: dict[str, exp.Expr]) -> list[exp.Expr]:
    return [
        exp.Is(this=_col(alias, k), expression=exp.Null())
        if isinstance(v, exp.Null)
        else _eq(_col(alias, k), v.copy())
        for k, v in props.items()
    ]


def _node_filters(alias: str, n: NodePat) -> list[exp.Expr]:
    out: list[exp.Expr] = []
    if n.labels:
        labels = [exp.Literal.string(x) for x in n.labels]
        actor = _col(alias, "actor_type")
        out.append(
            exp.In(this=actor, expressions=labels) if len(labels) > 1 else _eq(actor, labels[0])
        )
    return out + _lit_filters(alias, n.props)


def _edge_filters(alias: str, e: EdgePat) -> list[exp.Expr]:
    base = sqlglot.parse_one(EDGE_TYPES[e.etype].where, read="duckdb")  # a constant of ours
    for col in base.find_all(exp.Column):
        col.set("table", _ident(alias))
    return _conjuncts(base) + _lit_filters(alias, e.props)


_WALK_COLUMNS = ["corpus", "session_id", "start", "node", "hops"]
_PATH_COLUMNS = _WALK_COLUMNS + ["path", "edge_ids"]


class _Compiler:
    def __init__(self, sql: str, gt: GraphTable, ordinal: int):
        self.sql, self.gt, self.k = sql, gt, ordinal
        self.ctes: list[exp.CTE] = []
        #: FROM list: each relation (aliased) with the conditions that join it
        self.sources: list[tuple[exp.Expr, list[exp.Expr]]] = []
        self.where: list[exp.Expr] = []
        self.bound: dict[str, _Ref] = {}
        self.var_kind: dict[str, str] = {}  # var -> "nodes", its edge table, or "cte:<mode>"
        self.default_cols: list[exp.Expr] = []
        self.anchor: _Ref | None = None
        self.n_anon = 0
        self.node_pats: dict[str, list[NodePat]] = {}  # var -> its constraints
        for path in gt.paths:
            for el in path.elements[::2]:
                if el.var:
                    self.node_pats.setdefault(el.var, []).append(el)
        used: dict[str, set[str]] = {}
        for tree in ([gt.where] if gt.where is not None else []) + (gt.columns or []):
            for col in tree.find_all(exp.Column):
                if col.table:
                    used.setdefault(col.table.lower(), set()).add(col.name.lower())
        #: Node variables matched only by id: read from the adjacent edge, no join on nodes.
        self.id_only = {
            v
            for v, pats in self.node_pats.items()
            if not any(p.labels or p.props for p in pats) and used.get(v, set()) <= set(_ID_COLUMNS)
        }
        self.pending: str | None = None  # an id-only variable waiting for its first edge

    def _graph(self) -> exp.Literal:
        assert self.gt.graph is not None
        return exp.Literal.string(self.gt.graph)

    def _anon(self, prefix: str) -> str:
        self.n_anon += 1
        return f"_{prefix}{self.k}_{self.n_anon}"

    def _add(self, relation: exp.Expr, on: list[exp.Expr]) -> None:
        if not self.sources:
            self.sources.append((relation, []))
            self.where[:0] = on
        else:
            self.sources.append((relation, on))

    def _link(self, ref: _Ref | None, new: _Ref) -> list[exp.Expr]:
        """Join conditions tying a new relation's (corpus, session, node) to a known node."""
        if ref is not None:
            return [
                _eq(new.corpus, ref.corpus),
                _eq(new.session, ref.session),
                _eq(new.node, ref.node),
            ]
        if self.anchor is not None:
            return [_eq(new.corpus, self.anchor.corpus), _eq(new.session, self.anchor.session)]
        return []

    def _declare(self, var: str | None, kind: str, pos: int) -> None:
        if var is None:
            return
        if var in self.var_kind:
            raise _fail(
                self.sql,
                pos,
                f"variable {var!r} is already used; only node variables "
                "may repeat (to close a cycle)",
            )
        self.var_kind[var] = kind

    def _bind_id_only(self, var: str, ref: _Ref) -> None:
        """An id-only node variable lives in an edge's column: no join on nodes."""
        self.bound[var] = ref
        self.default_cols.append(_aliased(ref.node, var))
        if self.anchor is None:
            self.anchor = ref

    def node(
        self, n: NodePat, ref_from_edge: _Ref | None, first_of_path: bool = False
    ) -> _Ref | None:
        """Bind node ``n``; ``ref_from_edge`` is where the previous edge says it is."""
        if n.var and n.var in self.bound:
            if self.var_kind[n.var] != "nodes":
                raise _fail(self.sql, n.pos, f"{n.var!r} names an edge, not a node")
            ref = self.bound[n.var]
            if ref_from_edge is not None:
                self.where.append(_eq(ref_from_edge.node, ref.node))
            if n.labels or n.props:
                self.where += _node_filters(ref.alias, n)
            return ref
        if n.virtual:
            return ref_from_edge
        if (
            n.var in self.id_only
            and n.var not in self.var_kind
            and (ref_from_edge is not None or first_of_path)
        ):
            self._declare(n.var, "nodes", n.pos)
            if ref_from_edge is None:
                self.pending = n.var  # bound by the edge that follows
                return None
            self._bind_id_only(n.var, ref_from_edge)
            return ref_from_edge
        alias = n.var or self._anon("n")
        self._declare(n.var, "nodes", n.pos)
        ref = _Ref(alias, "node_id")
        self._add(_table("nodes", alias), self._link(ref_from_edge, ref))
        self.where += _node_filters(alias, n)
        if n.var:
            self.bound[n.var] = ref
            self.default_cols.append(_aliased(ref.node, n.var))
        if self.anchor is None:
            self.anchor = ref
        return ref

    def edge(self, e: EdgePat, left: _Ref | None, left_node: NodePat, mode: str | None) -> _Ref:
        """Join edge ``e`` after the node at ``left``; return where its far end is."""
        et = EDGE_TYPES[e.etype]
        near, far = (et.src, et.dst) if e.outgoing else (et.dst, et.src)
        alias = e.var or self._anon("e")
        if not e.quantified:
            self._declare(e.var, et.table, e.pos)
            at_near = _Ref(alias, near)
            self._add(_table(et.table, alias), self._link(left, at_near) + _edge_filters(alias, e))
            self._bind_pending(at_near)
            if e.var:
                self.default_cols.append(_aliased(_col(alias, et.id), e.var))
            ref = _Ref(alias, far)
        else:
            relation = self._recursive_cte(e, left, left_node, mode)
            self._declare(e.var, "cte:" + (mode or "reach"), e.pos)
            at_start = _Ref(alias, "start")
            source = (
                _table(relation.name, alias)
                if isinstance(relation, exp.Table)
                else _derived(relation, alias)
            )
            self._add(source, self._link(left, at_start))
            self._bind_pending(at_start)
            if e.var:
                self.default_cols.append(_aliased(_col(alias, "hops"), f"{e.var}_hops"))
                if mode:
                    self.default_cols.append(_aliased(_col(alias, "path"), f"{e.var}_path"))
            ref = _Ref(alias, "node")
        if self.anchor is None:
            self.anchor = _Ref(ref.alias, ref.node_col)
        return ref

    def _bind_pending(self, ref: _Ref) -> None:
        if self.pending is not None:
            var, self.pending = self.pending, None
            self._bind_id_only(var, ref)

    def _unrolled(
        self,
        name: str,
        e: EdgePat,
        et: EdgeType,
        near: str,
        far: str,
        seeds: tuple[exp.Expr, list[exp.Expr]],
    ) -> exp.Table:
        """Reachability within a small hop bound as one plain CTE per hop: the frontier at
        hop i is the DISTINCT (start, node) pairs one arc beyond hop i - 1. The same set the
        recursion computes, but ordinary joins that DuckDB pipelines and runs in parallel."""
        arcs = f"{name}_arcs"
        lo, hi = e.bounds
        arc_filters = _edge_filters("x", e)
        keys: list[exp.Expr] = [_eq(_col("x", "corpus"), _col("r", "corpus"))]
        if self.gt.graph:  # one corpus: filter the arcs once, join on session and node only
            arc_filters.append(_eq(_col("x", "corpus"), self._graph()))
            keys = []
        keys += [_eq(_col("x", "session_id"), _col("r", "session_id"))]
        self.ctes.append(
            _cte(
                arcs,
                _select(
                    _cols("x", ["corpus", "session_id"])
                    + [_aliased(_col("x", near), "a"), _aliased(_col("x", far), "b")],
                    [(_table(et.table, "x"), [])],
                    arc_filters,
                    distinct=True,
                ),
            )
        )
        # the seeds are distinct nodes, so hop 0 is distinct, and so is hop 1 (distinct arcs
        # out of one node each); from hop 2 on, two paths can reach the same node
        seed_from, seed_where = seeds
        self.ctes.append(
            _cte(
                f"{name}_0",
                _select(
                    _cols("n", ["corpus", "session_id"])
                    + [
                        _aliased(_col("n", "node_id"), "start"),
                        _aliased(_col("n", "node_id"), "node"),
                    ],
                    [(seed_from, [])],
                    seed_where,
                ),
            )
        )
        for i in range(1, hi + 1):
            self.ctes.append(
                _cte(
                    f"{name}_{i}",
                    _select(
                        _cols("r", ["corpus", "session_id", "start"])
                        + [_aliased(_col("x", "b"), "node")],
                        [
                            (_table(f"{name}_{i - 1}", "r"), []),
                            (_table(arcs, "x"), keys + [_eq(_col("x", "a"), _col("r", "node"))]),
                        ],
                        [],
                        distinct=i > 1,
                    ),
                )
            )
        levels = _union_all(
            [
                _select(
                    _cols(None, ["corpus", "session_id", "start", "node"])
                    + [_aliased(exp.Literal.number(i), "hops")],
                    [(_table(f"{name}_{i}"), [])],
                    [],
                )
                for i in range(lo, hi + 1)
            ]
        )
        group = _cols(None, ["corpus", "session_id", "start", "node"])
        self.ctes.append(
            _cte(
                name,
                _select(
                    _cols(None, ["corpus", "session_id", "start", "node"])
                    + [exp.Min(this=_col(None, "hops"))],
                    [(_derived(levels, "_levels"), [])],
                    [],
                    group_by=group,
                ),
                _WALK_COLUMNS,
            )
        )
        return _table(name)

    def _seeds(self, left: _Ref | None, left_node: NodePat) -> tuple[exp.Expr, list[exp.Expr]]:
        """Where a variable-length edge starts: a relation aliased ``n`` with corpus,
        session_id, node_id, and the conditions on it.

        When the pattern before the edge is already bound, the walk starts only from the
        nodes that part of the pattern matched (``SELECT DISTINCT`` of it): a sideways pass
        that keeps ``(p)-[:prompts]->()`` followed by ``-[:next]->{1,3}`` from walking out
        of every node of the lake. Otherwise it starts from every node that can match
        ``left_node``."""
        if left is not None and self.sources:
            where = list(self.where)
            if self.gt.graph and self.anchor is not None:
                where.append(_eq(self.anchor.corpus, self._graph()))
            bound = _select(
                [
                    _aliased(left.corpus, "corpus"),
                    _aliased(left.session, "session_id"),
                    _aliased(left.node, "node_id"),
                ],
                [(src.copy(), [c.copy() for c in on]) for src, on in self.sources],
                where,
                distinct=True,
            )
            return _derived(bound, "n"), []
        filters = [
            f
            for n in self.node_pats.get(left_node.var or "", [left_node])
            for f in _node_filters("n", n)
        ]
        if self.gt.graph:
            filters.append(_eq(_col("n", "corpus"), self._graph()))
        return _table("nodes", "n"), filters

    def _recursive_cte(
        self, e: EdgePat, left: _Ref | None, left_node: NodePat, mode: str | None
    ) -> exp.Expr:
        """A recursive CTE walking ``e`` from the nodes that can match ``left_node``;
        return the relation to join: the CTE's name (a Table) or a filtering query."""
        et = EDGE_TYPES[e.etype]
        lo, hi = e.bounds
        near, far = (et.src, et.dst) if e.outgoing else (et.dst, et.src)
        name = (
            f"_walk{self.k}_{len(self.ctes) + 1}"
            if mode
            else f"_reach{self.k}_{len(self.ctes) + 1}"
        )
        seeds = self._seeds(left, left_node)
        seed_from, seed_where = seeds
        step_on = [
            _eq(_col("x", "corpus"), _col("r", "corpus")),
            _eq(_col("x", "session_id"), _col("r", "session_id")),
            _eq(_col("x", near), _col("r", "node")),
        ] + _edge_filters("x", e)
        within = exp.LT(this=_col("r", "hops"), expression=exp.Literal.number(hi))
        at_least = exp.GTE(this=_col(None, "hops"), expression=exp.Literal.number(lo))
        walk = [(_table(name, "r"), []), (_table(et.table, "x"), step_on)]
        seed_node = _col("n", "node_id")
        step = exp.Add(this=_col("r", "hops"), expression=exp.Literal.number(1))
        if mode is None and hi <= UNROLL_MAX_HOPS:
            return self._unrolled(name, e, et, near, far, seeds)
        if mode is None:
            base = _select(
                _cols("n", ["corpus", "session_id"])
                + [seed_node, seed_node.copy(), exp.Literal.number(0)],
                [(seed_from, [])],
                seed_where,
            )
            recurse = _select(
                _cols("r", ["corpus", "session_id", "start"]) + [_col("x", far), step],
                walk,
                [within],
                distinct=True,
            )
            self.ctes.append(_cte(name, _union_all([base, recurse]), _WALK_COLUMNS))
            return _select(
                _cols(None, ["corpus", "session_id", "start", "node"])
                + [_aliased(exp.Min(this=_col(None, "hops")), "hops")],
                [(_table(name), [])],
                [at_least],
                group_by=_cols(None, ["corpus", "session_id", "start", "node"]),
            )
        guard: list[exp.Expr] = []
        if mode in ("ACYCLIC", "ANY SHORTEST", "ALL SHORTEST"):
            guard = [
                exp.Not(this=exp.ArrayContains(this=_col("r", "path"), expression=_col("x", far)))
            ]
        elif mode == "TRAIL":
            guard = [
                exp.Not(
                    this=exp.ArrayContains(this=_col("r", "edge_ids"), expression=_col("x", et.id))
                )
            ]
        base = _select(
            _cols("n", ["corpus", "session_id"])
            + [
                seed_node,
                seed_node.copy(),
                exp.Literal.number(0),
                exp.Array(expressions=[seed_node.copy()]),
                exp.Cast(
                    this=exp.Array(expressions=[]),
                    to=exp.DataType.build("VARCHAR[]", dialect="duckdb"),
                ),
            ],
            [(seed_from, [])],
            seed_where,
        )
        recurse = _select(
            _cols("r", ["corpus", "session_id", "start"])
            + [
                _col("x", far),
                step,
                exp.ArrayAppend(this=_col("r", "path"), expression=_col("x", far)),
                exp.ArrayAppend(this=_col("r", "edge_ids"), expression=_col("x", et.id)),
            ],
            walk,
            [within] + guard,
        )
        self.ctes.append(_cte(name, _union_all([base, recurse]), _PATH_COLUMNS))
        paths = _select(_cols(None, _PATH_COLUMNS), [(_table(name), [])], [at_least])
        if mode in ("WALK", "TRAIL", "ACYCLIC"):
            return paths
        order: list[exp.Expr] = [_col(None, "hops")]
        if mode != "ALL SHORTEST":
            order.append(
                exp.ArrayToString(this=_col(None, "path"), expression=exp.Literal.string(","))
            )
        rank = exp.Window(
            this=exp.Rank() if mode == "ALL SHORTEST" else exp.RowNumber(),
            partition_by=_cols(None, ["corpus", "session_id", "start", "node"]),
            order=exp.Order(expressions=[exp.Ordered(this=o, nulls_first=False) for o in order]),
            over="OVER",
        )
        paths.set("expressions", paths.expressions + [_aliased(rank, "_rank")])
        return _select(
            _cols(None, _PATH_COLUMNS),
            [(_derived(paths, "_ranked"), [])],
            [_eq(_col(None, "_rank"), exp.Literal.number(1))],
        )

    def compile(self) -> tuple[exp.Select, list[exp.CTE]]:
        for path in self.gt.paths:
            els = path.elements
            ref = self.node(els[0], None, first_of_path=len(els) > 1)
            for j in range(1, len(els), 2):
                far = self.edge(els[j], ref, els[j - 1], path.mode)
                ref = self.node(els[j + 1], far)
        assert self.anchor is not None  # a pattern has at least one node
        if self.gt.graph:
            self.where.append(_eq(self.anchor.corpus, self._graph()))
        self._check_refs()
        self._inline_id_only()
        cols = (
            [c.copy() for c in self.gt.columns]
            if self.gt.columns
            else [
                _aliased(self.anchor.corpus, "corpus"),
                _aliased(self.anchor.session, "session_id"),
            ]
            + self.default_cols
        )
        where = list(self.where)
        if self.gt.where is not None:
            where.append(exp.Paren(this=self.gt.where.copy()))
        return _select(cols, self.sources, where), self.ctes

    def _inline_id_only(self) -> None:
        """``p.node_id`` of an id-only variable becomes the edge column that holds it."""

        def swap(node: exp.Expr) -> exp.Expr:
            if isinstance(node, exp.Column) and node.table and node.table.lower() in self.id_only:
                ref = self.bound[node.table.lower()]
                return {"corpus": ref.corpus, "session_id": ref.session, "node_id": ref.node}[
                    node.name.lower()
                ]
            return node

        if self.gt.where is not None:
            self.gt.where = self.gt.where.transform(swap)
        if self.gt.columns:
            self.gt.columns = [c.transform(swap) for c in self.gt.columns]

    def _columns_of(self, var: str) -> list[str]:
        kind = self.var_kind[var]
        if kind.startswith("cte:"):
            return _WALK_COLUMNS if kind == "cte:reach" else _PATH_COLUMNS
        return list(TABLES[kind].schema.names)

    def _check_refs(self) -> None:
        exprs = ([self.gt.where] if self.gt.where is not None else []) + (self.gt.columns or [])
        for tree in exprs:
            for col in tree.find_all(exp.Column):
                pos = (
                    col.this.meta.get("abs_start", self.gt.start)
                    if col.this.meta
                    else self.gt.start
                )
                var = col.table.lower() if col.table else ""
                if not var:
                    raise _fail(
                        self.sql,
                        pos,
                        f"column {col.name!r} needs a pattern variable, "
                        f"e.g. {next(iter(self.var_kind), 'p')}.{col.name}",
                    )
                if var not in self.var_kind:
                    raise _fail(
                        self.sql,
                        pos,
                        f"unknown pattern variable {var!r}."
                        f"{_suggest(var, self.var_kind)} Variables: "
                        f"{', '.join(self.var_kind) or '(none: name one, e.g. (p))'}",
                    )
                cols = self._columns_of(var)
                if col.name.lower() not in cols:
                    raise _fail(
                        self.sql,
                        pos,
                        f"{var!r} has no column {col.name!r}."
                        f"{_suggest(col.name.lower(), cols)} Columns: {', '.join(cols)}",
                    )


def compile_patterns(sql: str) -> str:
    """Rewrite every ``GRAPH_TABLE (...)`` in ``sql`` into plain SQL; other SQL passes as is.

    Raises :class:`PatternError` with the line and column of the problem.
    """
    spans = find_graph_tables(sql)
    if not spans:
        return sql
    parsed = [parse_graph_table(sql, span) for span in spans]
    pieces, last = [], 0
    for k, gt in enumerate(parsed):
        pieces += [sql[last : gt.start], f"__graph_table_{k}__"]
        last = gt.end
    pieces.append(sql[last:])
    try:
        tree = sqlglot.parse_one("".join(pieces), read="duckdb")
    except ParseError as exc:
        err = exc.errors[0] if exc.errors else {}
        raise SqlError(
            f"SQL syntax error around the pattern: {err.get('description', exc)}"
        ) from None
    all_ctes: list[exp.CTE] = []
    for k, gt in enumerate(parsed):
        select, ctes = _Compiler(sql, gt, k + 1).compile()
        all_ctes += ctes
        for table in list(tree.find_all(exp.Table)):
            if table.name == f"__graph_table_{k}__":
                alias = table.alias or f"graph_table_{k + 1}"
                table.replace(
                    exp.Subquery(this=select, alias=exp.TableAlias(this=exp.to_identifier(alias)))
                )
    if all_ctes:
        existing = tree.args.get("with_")
        if existing is not None:
            existing.set("expressions", all_ctes + list(existing.expressions))
            existing.set("recursive", True)
        else:
            tree.set("with_", exp.With(expressions=all_ctes, recursive=True))
    return tree.sql("duckdb")
