"""Evaluation runs as lake data: a scored set of predictions, kept so runs can be compared.

``graphlake bench score ... --save`` writes one run into the lake (corpus ``evals``), with
no new table: the canonical ones hold it.

* ``runs``: the run (``run_id`` = the session's id; ``name``; ``agent_model`` = the model;
  ``settings`` = protocol, spec hash, condition, parameters and the lake version scored
  against; ``attrs`` = the whole score report but the id lists);
* ``sessions``: one per run (``scenario_id`` = the protocol, ``condition``, ``domain`` = the
  protocol's task), so the usual views and the workbench see it;
* ``annotations``: a ``metric`` row per number of the report (``accuracy``, ``macro_f1``,
  ``f1:<class>``, ``mae``, ...), and a ``prediction`` row per instance predicted
  (``target_id`` = the instance id, ``label`` = the label as scored, ``text`` = the answer as
  given, ``value`` = 1 when it equals the gold, 0 when not, empty when invalid; the gold in
  ``attrs``).

The run's id hashes the protocol, spec, condition, parameters, model and predictions: saving
the same run again replaces it, a run with other predictions is another run. The named query
``eval_runs`` lays the runs side by side.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from graphlake.lake import Lake
from graphlake.lake.writer import LakeRun
from graphlake.protocols import scoring
from graphlake.schema.emit import run_row, stable_id, to_json

CORPUS = "evals"


def _metrics(result: dict) -> list[tuple[str, float]]:
    """The report's numbers as (name, value): flat ones, and per-class ones as name:class."""
    out: list[tuple[str, float]] = []
    for key, value in result.items():
        if isinstance(value, bool) or key in ("lake_version",):
            continue
        if isinstance(value, (int, float)):
            out.append((key, float(value)))
        elif isinstance(value, dict) and key.startswith("per_class_"):
            short = key.removeprefix("per_class_")
            for cls, v in value.items():
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    out.append((f"{short}:{cls}", float(v)))
    return out


def save_score(
    lake: Lake | str | Path,
    result: dict,
    predictions: list[dict],
    gold: dict[str, dict],
    *,
    classes: tuple[str, ...] = (),
    rating: bool = False,
    model: str | None = None,
    condition: str | None = None,
    params: dict | None = None,
    name: str | None = None,
    source: str = "bench score",
) -> str:
    """Write the scored run into the lake as one version; return its id. ``gold`` maps each
    instance id to its gold columns (what the score was computed against)."""
    lake = lake if isinstance(lake, Lake) else Lake(lake)
    protocol = result["protocol"]
    seen: dict[str, dict] = {}
    for p in predictions:  # the first prediction of an id counts, as in the score
        seen.setdefault(str(p.get("id")), p)
    digest = stable_id(
        protocol,
        result.get("spec_hash"),
        condition,
        to_json(params or {}),
        model,
        to_json(sorted((i, str(p.get("label"))) for i, p in seen.items())),
    )
    run_id = f"{protocol}:{digest}"
    when = datetime.now(UTC)
    run = LakeRun(lake, CORPUS, f"{source}:{run_id}", replace=True)
    try:
        out = run.emitter("u0", 50_000)
        out.unit = 0
        out.row(
            "runs",
            run_row(
                run_id,
                name or f"{model or 'unnamed model'} on {protocol}",
                source,
                started_at=when,
                agent_model=model,
                settings={
                    "protocol": protocol,
                    "spec_hash": result.get("spec_hash"),
                    "condition": condition,
                    "params": params or {},
                    "lake_version": result.get("lake_version"),
                },
                attrs={
                    k: v
                    for k, v in result.items()
                    if k not in ("unknown", "missing", "invalid", "duplicate")
                }
                | {
                    k: len(result.get(k) or [])
                    for k in ("unknown", "missing", "invalid", "duplicate")
                },
            ),
        )
        out.row(
            "sessions",
            {
                "session_id": run_id,
                "title": name or f"{model or 'unnamed model'} on {protocol}",
                "condition": condition,
                "domain": protocol,
                "scenario_id": protocol,
                "started_at": when,
                "participants": [model] if model else [],
                "source_file": source,
                "run_id": run_id,
            },
        )
        for metric, value in _metrics(result):
            out.row(
                "annotations",
                {
                    "session_id": run_id,
                    "annotation_id": f"metric:{metric}",
                    "kind": "metric",
                    "target_kind": "session",
                    "target_id": run_id,
                    "label": metric,
                    "value": value,
                    "annotator": "graphlake bench score",
                },
            )
        for iid, p in seen.items():
            if iid not in gold:
                continue  # unknown ids are counted in the report, not kept
            g = gold[iid].get("gold")
            scored: object
            if rating:
                scored = scoring.parse_rating(p.get("label"))
                correct = None if scored is None or g is None else float(scored == int(g))
            else:
                scored = scoring.parse_label(p.get("label"), classes)
                valid = scored is not None and scored in classes
                correct = float(scored == str(g)) if valid else None
            out.row(
                "annotations",
                {
                    "session_id": run_id,
                    "annotation_id": f"prediction:{iid}",
                    "kind": "prediction",
                    "target_kind": "instance",
                    "target_id": iid,
                    "label": None if scored is None else str(scored),
                    "value": correct,
                    "text": p.get("label")
                    if isinstance(p.get("label"), str)
                    else to_json(p.get("label")),
                    "annotator": model or "unnamed model",
                    "attrs": to_json(
                        {"gold": g, **{k: v for k, v in p.items() if k not in ("id", "label")}}
                    ),
                },
            )
        summary = out.close()
        run.commit([summary])
    except BaseException:
        run.abort()
        raise
    return run_id
