"""graphlake: one lake for human-agent collaboration corpora.

Data flows ingest -> lake -> query -> serve:

* ``graphlake.ingest``  parses one source format into canonical Arrow rows plus rejects;
* ``graphlake.lake``    is the only writer: versioned Delta tables, one lake snapshot per run;
* ``graphlake.query``   is DuckDB over a lake snapshot, guarded and transpiled by sqlglot;
* ``graphlake.server``  (later) serves sliced contexts over HTTP.
"""

__version__ = "0.1.0"
