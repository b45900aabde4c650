"""Benchmark protocols: deterministic instances, leakage-safe contexts and scoring.

``SPECS`` maps every protocol id to its declarative spec; :class:`Benchmarks` serves them over
one pinned :class:`~graphlake.query.connection.Connection` (the HTTP server and ``graphlake
bench`` both use it)::

    from graphlake.protocols import Benchmarks
    bench = Benchmarks(graphlake.connect(lake).connection)
    page = bench.instances("kolab-1b", condition="graph-chat", limit=50)
    bench.score("kolab-1b", [{"id": page.items[0]["id"], "label": "ADOPT"}])
"""

from graphlake.protocols import kolab, traces
from graphlake.protocols.service import Benchmarks, Page
from graphlake.protocols.spec import KOLAB_CONDITIONS, ProtocolError, ProtocolSpec

#: protocol id -> (spec, module with targets_sql() and build())
REGISTRY = {
    **{pid: (spec, kolab) for pid, spec in kolab.SPECS.items()},
    **{pid: (spec, traces) for pid, spec in traces.SPECS.items()},
}
SPECS = {pid: spec for pid, (spec, _module) in REGISTRY.items()}

__all__ = [
    "KOLAB_CONDITIONS",
    "REGISTRY",
    "SPECS",
    "Benchmarks",
    "Page",
    "ProtocolError",
    "ProtocolSpec",
]
