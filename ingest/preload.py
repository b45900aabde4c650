"""What a parsing worker needs before its first unit, imported once by the forkserver that
forks the workers (:mod:`graphlake.workers`), so each worker starts warm.

A worker forked without these imported them on its first unit: every reader, their XML and
JSON libraries, DuckDB, and pandas, which PyArrow imports the first time it converts a Python
list. At 100k Map Task expressions on 2 cores that was 0.25 s of a 0.9 s worker. Importing
them starts no threads and opens nothing, so the fork stays safe.
"""

from __future__ import annotations

import duckdb  # noqa: F401
import pandas  # noqa: F401  (pyarrow's list conversion checks for pandas types)
import pyarrow.compute  # noqa: F401
import pyarrow.parquet  # noqa: F401

from graphlake import ingest
from graphlake.ingest import (  # noqa: F401  (the vectorised readers the readers call)
    almanac_fast,
    kolab_fast,
    maptask_fast,
    vectorised,
)

ingest.names()  # every reader registered
