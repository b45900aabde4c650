"""The Python API: one object per lake, every answer an Arrow table (pandas or polars on
request), the same guarded SQL, patterns and primitives as the CLI.

    import graphlake
    gl = graphlake.connect("~/lake")
    gl.sql("SELECT label, count(*) AS n FROM adoptions GROUP BY 1", output="pandas")
    gl.match("(p:human)-[:next]->(a:ai)<-[r:responds {label: 'modify'}]-(h)", graph="kolab")
    gl.descendants("kolab", "kolab-7-000000", "seg1a/n1", max_hops=3)
    gl.query("collab_metrics", corpus="kolab")
    gl.rustworkx("kolab", "kolab-7-000000")    # per-session algorithms SQL is awkward at
    gl.betweenness("kolab", "kolab-7-000000")  # e.g. which actions broker the workflow

Pass ``engine="spark"`` to run the same statements on PySpark over the same files.
"""

from __future__ import annotations

import warnings

import pyarrow as pa

from graphlake.config import DEFAULT_MAX_ROWS, DEFAULT_TIMEOUT_S
from graphlake.errors import GraphlakeError, ResultTruncatedWarning, attempt_import
from graphlake.lake import Lake

OUTPUTS = ("arrow", "pandas", "polars")


def _convert(table: pa.Table, output: str):
    if output == "arrow":
        return table
    if output == "pandas":
        return table.to_pandas()
    if output == "polars":
        pl = attempt_import("polars", "graph")
        return pl.from_arrow(table)
    raise GraphlakeError(f"unknown output {output!r}; choose one of {', '.join(OUTPUTS)}")


class GraphLake:
    """A lake pinned to one snapshot (the newest when ``version`` is None), queried with
    DuckDB or Spark.

    The DuckDB catalog is opened once and kept (sandboxed: it reads nothing outside the lake);
    ``refresh()`` moves to the newest snapshot, ``close()`` (or a ``with`` block) releases it.
    """

    def __init__(
        self,
        lake: Lake,
        version: int | None = None,
        engine: str = "duckdb",
        *,
        max_rows: int = DEFAULT_MAX_ROWS,
        timeout_s: float = DEFAULT_TIMEOUT_S,
    ):
        if engine not in ("duckdb", "spark"):
            raise GraphlakeError(f"unknown engine {engine!r}; choose duckdb or spark")
        self.lake = lake
        self.engine = engine
        self.max_rows = max_rows
        self.timeout_s = timeout_s
        self._version = version
        self._con = None
        if engine == "duckdb":
            from graphlake.query.connection import Connection

            self._con = Connection(lake, version)
        else:  # pinned now, as the DuckDB connection is: every call reads this version
            self._version = lake.snapshot(version).lake_version

    @property
    def version(self) -> int | None:
        """The lake version this object reads (pinned when it was opened)."""
        return self._con.version if self._con is not None else self._version

    @property
    def connection(self):
        """The pinned :class:`~graphlake.query.connection.Connection` (DuckDB engine)."""
        return self._con

    def refresh(self) -> bool:
        """Move to the newest lake snapshot; True when the version changed."""
        if self._con is not None:
            return self._con.refresh()
        newest = self.lake.snapshot(None).lake_version
        changed, self._version = newest != self._version, newest
        return changed

    def close(self) -> None:
        if self._con is not None:
            self._con.close()

    def __enter__(self) -> GraphLake:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---------------------------------------------------------------- SQL
    def sql(
        self,
        statement: str,
        params: dict | None = None,
        *,
        output: str = "arrow",
        max_rows: int | None = None,
        timeout_s: float | None = None,
    ):
        """Run one read-only statement (patterns and primitives allowed). ``max_rows`` and
        ``timeout_s`` default to the limits given to :func:`connect`; 0 lifts one."""
        max_rows = (self.max_rows if max_rows is None else max_rows) or None
        timeout_s = (self.timeout_s if timeout_s is None else timeout_s) or None
        if self.engine == "spark":
            from graphlake.query.spark import run_sql_spark

            res = run_sql_spark(
                statement, self.lake, version=self._version, params=params, max_rows=max_rows
            )
        else:
            res = self._con.sql(statement, params, max_rows=max_rows, timeout_s=timeout_s)
        if res.truncated:
            warnings.warn(
                f"result cut at {max_rows:,} rows; pass max_rows=0 for all of them",
                ResultTruncatedWarning,
                stacklevel=2,
            )
        return _convert(res.table, output)

    def query(self, name: str, *, output: str = "arrow", **params):
        """Run a named query (``graphlake query list``) with its parameters."""
        from graphlake.query import named

        q = named.get(name)
        return self.sql(
            q.sql,
            q.bind({k: str(v) if v is not None else None for k, v in params.items()}),
            output=output,
        )

    def match(
        self,
        pattern: str,
        *,
        graph: str | None = None,
        where: str | None = None,
        columns: str | None = None,
        output: str = "arrow",
    ):
        """Rows matching a graph pattern, e.g. ``"(p:human)-[:next]->{1,3}(x:ai)"``
        (``graph``: a corpus; ``where``/``columns``: as in GRAPH_TABLE)."""
        text = f"{graph or ''} MATCH {pattern}"
        if where:
            text += f" WHERE {where}"
        if columns:
            text += f" COLUMNS ({columns})"
        return self.sql(f"SELECT * FROM GRAPH_TABLE ({text}) AS g", output=output)

    # ---------------------------------------------------------------- search
    def search_frames(
        self, query: str | None = None, *, image=None, k: int = 10, **filters
    ) -> list[dict]:
        """Frames of the indexed recordings matching ``query`` (words or a paraphrase) or
        ``image`` (a path, bytes or an RGB array), best first, each with the step, the nodes
        running and the chat turn before it. Filters: ``corpus``, ``session``, ``t0``,
        ``t1``, ``step``, ``actor`` ("human" / "ai"), ``during_ai``. Needs ``graphlake
        frames index`` first (vision extra)."""
        from graphlake.search import SearchFilters, search_frames

        return search_frames(
            self.lake.root, self._duck(), query, image=image, filters=SearchFilters(**filters), k=k
        )

    def search_text(self, query: str, *, k: int = 10, **filters) -> list[dict]:
        """Node labels, details and chat turns matching ``query``, with the same context and
        filters as :meth:`search_frames` (``during_ai`` aside)."""
        from graphlake.search import SearchFilters, search_text

        return search_text(
            self.lake.root, self._duck(), query, filters=SearchFilters(**filters), k=k
        )

    def _duck(self):
        if self._con is None:
            raise GraphlakeError("search runs on the DuckDB engine: connect without engine='spark'")
        return self._con

    # ---------------------------------------------------------------- primitives
    def _macro(self, name: str, args: dict, output: str):
        names = ", ".join(f"${k}" for k in args)
        return self.sql(f"SELECT * FROM {name}({names})", args, output=output)

    def descendants(
        self,
        corpus: str,
        session: str,
        node: str,
        max_hops: int | None = None,
        *,
        output: str = "arrow",
    ):
        """Nodes reachable from ``node`` with their fewest hops."""
        return self._macro(
            "descendants", {"c": corpus, "s": session, "n": node, "k": max_hops}, output
        )

    def ancestors(
        self,
        corpus: str,
        session: str,
        node: str,
        max_hops: int | None = None,
        *,
        output: str = "arrow",
    ):
        """Nodes that reach ``node``, with their fewest hops."""
        return self._macro(
            "ancestors", {"c": corpus, "s": session, "n": node, "k": max_hops}, output
        )

    def neighborhood(
        self, corpus: str, session: str, node: str, hops: int = 1, *, output: str = "arrow"
    ):
        """The k-hop context around ``node``, edges followed either way."""
        return self._macro(
            "neighborhood", {"c": corpus, "s": session, "n": node, "k": hops}, output
        )

    def window(self, corpus: str, session: str, t0: float, t1: float, *, output: str = "arrow"):
        """Node occurrences overlapping the time window [t0, t1] (seconds)."""
        return self._macro("window_nodes", {"c": corpus, "s": session, "t0": t0, "t1": t1}, output)

    def step(self, corpus: str, session: str, step_id: str, *, output: str = "arrow"):
        """The subgraph of one step (segment)."""
        return self._macro("step_nodes", {"c": corpus, "s": session, "st": step_id}, output)

    def cycles(self, corpus: str, session: str, max_len: int = 8, *, output: str = "arrow"):
        """Simple cycles of at most ``max_len`` nodes (loops are cycles of 1)."""
        return self._macro("cycles", {"c": corpus, "s": session, "m": max_len}, output)

    def adoption_chains(self, corpus: str | None = None, *, output: str = "arrow"):
        """Each request followed through its AI outputs and responses, across steps."""
        return self.sql(
            "SELECT * FROM adoption_chains WHERE corpus = coalesce($c, corpus)",
            {"c": corpus},
            output=output,
        )

    def co_occurrences(
        self,
        corpus: str | None = None,
        session: str | None = None,
        *,
        actor_type: str | None = None,
        other_actor_type: str | None = None,
        output: str = "arrow",
    ):
        """Pairs of occurrences of a session that overlap in time, with Allen's relation of the
        other to the first; ``actor_type="ai", other_actor_type="human"`` is what the human
        did while the agent worked."""
        return self.sql(
            "SELECT * FROM co_occurrences WHERE corpus = coalesce($c, corpus) "
            "AND session_id = coalesce($s, session_id) "
            "AND actor_type IS NOT DISTINCT FROM coalesce($a, actor_type) "
            "AND other_actor_type IS NOT DISTINCT FROM coalesce($o, other_actor_type)",
            {"c": corpus, "s": session, "a": actor_type, "o": other_actor_type},
            output=output,
        )

    # ---------------------------------------------------------------- graph libraries
    def networkx(self, corpus: str, session: str):
        """The session's action graph as a ``networkx.MultiDiGraph``."""
        from graphlake.query.export import session_graph

        return session_graph(self._con or self.lake, corpus, session, version=self.version)

    def rustworkx(self, corpus: str, session: str):
        """The session's action graph as a ``rustworkx.PyDiGraph`` (multigraph); node payloads
        are the node rows, ``graph.attrs["index"]`` maps node_id to node index."""
        from graphlake.query.export import session_graph_rx

        return session_graph_rx(self._con or self.lake, corpus, session, version=self.version)

    def betweenness(self, corpus: str, session: str, *, output: str = "arrow"):
        """Betweenness centrality of every node of a session (rustworkx): the actions most
        paths of the workflow run through."""
        rx = attempt_import("rustworkx", "graph")
        g = self.rustworkx(corpus, session)
        scores = rx.digraph_betweenness_centrality(g, normalized=True)
        table = pa.table(
            {
                "node_id": [g[i]["node_id"] for i in g.node_indices()],
                "betweenness": [float(scores[i]) for i in g.node_indices()],
            }
        )
        return _convert(
            table.sort_by([("betweenness", "descending"), ("node_id", "ascending")]), output
        )


def connect(
    path=None,
    *,
    version: int | None = None,
    engine: str = "duckdb",
    max_rows: int = DEFAULT_MAX_ROWS,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> GraphLake:
    """Open the lake at ``path`` ($GRAPHLAKE_LAKE or the user data folder when None), pinned
    to ``version`` (the newest when None).

    ``max_rows`` / ``timeout_s`` limit every ``sql()`` and ``query()`` with the CLI's defaults
    (100,000 rows, 300 s); 0 lifts a limit. A capped answer warns with
    :class:`ResultTruncatedWarning`."""
    from graphlake.config import resolve_lake_dir

    return GraphLake(
        Lake(resolve_lake_dir(path)), version, engine, max_rows=max_rows, timeout_s=timeout_s
    )
