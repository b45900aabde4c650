"""graphlake: one lake for human-agent collaboration corpora.

Data flows ingest -> lake -> query -> serve:

* ``graphlake.ingest``  parses one source format into canonical Arrow rows plus rejects;
* ``graphlake.lake``    is the only writer: versioned Delta tables, one lake snapshot per run;
* ``graphlake.query``   is DuckDB over a lake snapshot, guarded and transpiled by sqlglot,
  with graph patterns and primitives, and the same SQL on Spark;
* ``graphlake.api``     (``graphlake.connect``) is the Python API over all of that;
* ``graphlake.server``  serves sliced contexts, scoring, search and the workbench over HTTP.
"""

__version__ = "0.1.0"

__all__ = ["GraphLake", "connect"]


def __getattr__(name: str):
    # the Python API (graphlake.connect) loads on first use, so the CLI starts fast
    if name in __all__:
        from graphlake import api

        return getattr(api, name)
    raise AttributeError(f"module 'graphlake' has no attribute {name!r}")
