"""Reciprocal rank fusion: one ranking out of several, without calibrating their scores.

BM25 scores, cosine distances and Hamming distances live on different scales; RRF uses only
each item's rank in each list: score = sum over lists of weight / (K + rank), K = 60 as in
Cormack, Clarke and Buettcher (SIGIR 2009). An item found by several rankings rises above one
found by a single ranking, whatever their raw scores.
"""

from __future__ import annotations

from collections import defaultdict

K = 60


def rrf(
    rankings: dict[str, tuple[list[str], float]], k: int = K
) -> list[tuple[str, float, list[str]]]:
    """``{name: (ids best first, weight)}`` -> ``[(id, score, names that found it)]``."""
    scores: dict[str, float] = defaultdict(float)
    found: dict[str, list[str]] = defaultdict(list)
    for name, (ids, weight) in rankings.items():
        for rank, item in enumerate(ids, start=1):
            scores[item] += weight / (k + rank)
            found[item].append(name)
    return sorted(((i, s, found[i]) for i, s in scores.items()), key=lambda x: (-x[1], x[0]))
