"""An evaluator against `graphlake serve`, end to end: list the Kolab 1b instances, fetch each
in every input condition, "predict" with the majority class (ADOPT, the paper's baseline), post
the predictions and print the paper's metrics.

    graphlake demo && graphlake serve &
    python docs/examples/evaluate_majority.py --url http://127.0.0.1:8000

Swap `predict` for a call to your model: `instance.prompt` is the text, and
`instance.inputs` holds the graph, chat and video frame URLs the condition allows.
"""

from __future__ import annotations

import argparse
import json
import sys

from graphlake.client import Client

CONDITIONS = (
    "video",
    "graph",
    "chat",
    "video-graph",
    "video-chat",
    "graph-chat",
    "video-graph-chat",
)


def predict(instance) -> str:
    return "ADOPT"  # the majority-class baseline; a model would read instance.prompt


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", default="http://127.0.0.1:8000")
    ap.add_argument("--token", default=None)
    ap.add_argument("--protocol", default="kolab-1b")
    args = ap.parse_args(argv)
    with Client(args.url, token=args.token) as gl:
        spec = next(b for b in gl.benchmarks() if b["id"] == args.protocol)
        ids = [i.id for i in gl.iter_instances(args.protocol, condition="graph")]
        fetched = 0
        for condition in spec["conditions"]:
            for iid in ids:
                inst = gl.instance(args.protocol, iid, condition=condition)
                assert inst.condition == condition and inst.spec_hash == spec["spec_hash"]
                fetched += 1
        predictions = [{"id": iid, "label": predict(iid)} for iid in ids]
        result = gl.score(args.protocol, predictions)
    json.dump({"instances": len(ids), "fetched": fetched, "score": result}, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
