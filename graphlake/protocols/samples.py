"""Exported instances (``graphlake bench export``) as inspect_ai ``Sample``s.

    from graphlake.protocols.samples import inspect_samples
    from inspect_ai.dataset import MemoryDataset
    dataset = MemoryDataset(inspect_samples("kolab-1b.graph-chat.jsonl"))

Each sample's ``input`` is the instance prompt and its ``id`` the instance id; the inputs
(graph, chat, frame URLs), protocol, condition and spec hash ride in ``metadata``. The export
holds no gold labels, so ``target`` is empty: score the outputs with ``graphlake bench score``
or ``POST /benchmarks/{id}/score``. For a run inspect scores itself (gold as ``target``, the
protocol's scorer and metrics, frames as images) use the task ``graphlake/bench``
(:mod:`graphlake.protocols.inspect_task`). inspect_ai is optional (``pip install inspect-ai``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import orjson

from graphlake.errors import MissingExtraError


def read_instances(path: str | Path) -> Iterator[dict]:
    """The instances of an exported JSON Lines file, in file order."""
    with Path(path).open("rb") as fh:
        for line in fh:
            if line.strip():
                yield orjson.loads(line)


def inspect_samples(path: str | Path) -> list:
    try:
        from inspect_ai.dataset import Sample
    except ImportError as exc:
        raise MissingExtraError(
            "inspect_ai is not installed; install it with: pip install inspect-ai"
        ) from exc
    return [
        Sample(
            input=i["prompt"],
            target="",
            id=i["id"],
            metadata={
                "protocol": i["protocol"],
                "condition": i["condition"],
                "spec_hash": i["spec_hash"],
                "corpus": i["corpus"],
                "session_id": i["session_id"],
                "inputs": i["inputs"],
            },
        )
        for i in read_instances(path)
    ]
