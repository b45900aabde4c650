"""inspect_ai runs of graphlake's own task, ingested back, kept as evaluation runs.

An inspect log of ``graphlake/bench`` (:mod:`graphlake.protocols.inspect_task`) lands as trace
sessions like any inspect log (``graphlake ingest inspect LOG``). Its samples carry the
instance they were cut from (sample id = instance id; protocol, condition, spec hash and
parameters in their metadata), so the run can also be scored as ``bench score --save`` scores
one: each sample's final answer is a prediction for its instance, scored against the lake's
gold with the same parsing, and the run is saved beside the others (corpus ``evals``), so
``graphlake query run eval_runs`` lays it next to baselines and other models. Only the
instances the log holds are scored (an inspect ``--limit`` run is a subset, not a run with
the rest missing).

A log whose spec hash is not the protocol's current one was cut by another definition of
the protocol: it is not scored (the reason is reported), its trace sessions stay.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from graphlake.lake import Lake

#: The samples of graphlake-task logs in the lake, with what a prediction needs.
_SAMPLES_SQL = """
SELECT s.corpus, s.run_id, r.name AS task, r.agent_model AS model,
       json_extract_string(s.attrs, '$.metadata.protocol') AS protocol,
       json_extract_string(s.attrs, '$.metadata.condition') AS condition,
       json_extract_string(s.attrs, '$.metadata.spec_hash') AS spec_hash,
       json_extract(s.attrs, '$.metadata.params')::VARCHAR AS params,
       s.scenario_id AS instance_id,
       json_extract_string(s.attrs, '$.output.completion') AS answer
FROM sessions s
JOIN runs r ON r.corpus = s.corpus AND r.run_id = s.run_id
WHERE s.run_id LIKE 'inspect:%'
  AND json_extract_string(s.attrs, '$.metadata.protocol') IS NOT NULL
ORDER BY s.corpus, s.run_id, s.session_id
"""
#: Eval runs already saved from an inspect run (their source names it).
_SAVED_SQL = "SELECT DISTINCT source FROM runs WHERE corpus = 'evals' AND source LIKE 'inspect:%'"


@dataclass
class Imported:
    saved: list[dict] = field(default_factory=list)  # run id, protocol, model, report
    skipped: list[str] = field(default_factory=list)  # why a log was not scored


def import_eval_runs(lake: Lake, *, force: bool = False) -> Imported:
    """Save every graphlake-task inspect run in the lake as an evaluation run, once (a run
    already saved from the same inspect run is left, unless ``force``)."""
    from graphlake.protocols.service import Benchmarks
    from graphlake.query.connection import Connection

    out = Imported()
    with Connection(lake) as con:
        rows = con.rows(_SAMPLES_SQL)
        if not rows:
            return out
        done = set() if force else {r["source"] for r in con.rows(_SAVED_SQL)}
        runs: dict[tuple, list[dict]] = {}
        for r in rows:
            key = (r["run_id"], r["protocol"], r["condition"], r["spec_hash"], r["params"])
            runs.setdefault(key, []).append(r)
        bench = Benchmarks(con)
        for (run_id, protocol, condition, spec_hash, params_json), samples in runs.items():
            source = f"{run_id}:{protocol}"
            if source in done:
                continue
            try:
                spec, _m = bench.spec(protocol)
            except LookupError as exc:
                out.skipped.append(f"{run_id}: {exc}")
                continue
            if spec_hash != spec.hash:
                out.skipped.append(
                    f"{run_id}: its {protocol} instances were cut with spec {spec_hash}, this "
                    f"graphlake's {protocol} is {spec.hash}; re-run the task to compare it"
                )
                continue
            params = json.loads(params_json) if params_json else {}
            preds = [{"id": s["instance_id"], "label": s["answer"]} for s in samples]
            first = samples[0]
            report, saved = bench.save(
                protocol,
                preds,
                params,
                model=first["model"],
                condition=condition,
                name=f"{first['task']} ({first['model']})",
                source=source,
                subset=True,
            )
            out.saved.append(
                {"run_id": saved, "protocol": protocol, "model": first["model"],
                 "condition": condition, "report": report}
            )  # fmt: skip
    return out
