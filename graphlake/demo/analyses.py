"""The headline analyses of Kolab section 4.3, computed from the lake.

Each returns plain data (rows and a Spearman correlation) so the CLI, notebooks and tests can
all use it; `graphlake demo` prints them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pyarrow as pa

from graphlake.query import named
from graphlake.query.engine import run_sql


@dataclass
class Correlation:
    x: str
    y: str
    n: int
    rho: float | None
    p: float | None

    def describe(self) -> str:
        if self.rho is None:
            return f"{self.x} vs {self.y}: too few sessions ({self.n})"
        return (
            f"{self.x} vs {self.y}: Spearman rho = {self.rho:+.2f} (p = {self.p:.3g}, n = {self.n})"
        )


def run_named(name: str, lake, **params) -> pa.Table:
    q = named.get(name)
    return run_sql(
        q.sql, lake, params=q.bind({k: str(v) for k, v in params.items()}), max_rows=None
    ).table


def spearman(table: pa.Table, x: str, y: str) -> Correlation:
    """Spearman's rho between two columns over the rows where both are present."""
    pairs = [
        (a, b)
        for a, b in zip(table[x].to_pylist(), table[y].to_pylist(), strict=True)
        if a is not None and b is not None
    ]
    if len(pairs) < 3:
        return Correlation(x, y, len(pairs), None, None)
    from scipy.stats import spearmanr  # about 1.5 s of imports, paid only here

    res = spearmanr([a for a, _ in pairs], [b for _, b in pairs])
    rho = float(res.statistic)
    return Correlation(
        x,
        y,
        len(pairs),
        None if math.isnan(rho) else rho,
        None if math.isnan(rho) else float(res.pvalue),
    )


def headline(lake, corpus: str = "kolab") -> dict:
    """Retention by sector, burstiness vs solo lead-in, branching W vs collaboration rating."""
    metrics = run_named("collab_metrics", lake, corpus=corpus)
    return {
        "retention": run_named("retention_by_domain", lake, corpus=corpus),
        "metrics": metrics,
        "burst_vs_lead": spearman(metrics, "burstiness", "solo_lead_in"),
        "w_vs_rating": spearman(metrics, "topology_w", "collaboration_rating"),
    }
