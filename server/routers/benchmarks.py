"""Benchmark protocols: specs, instances (per condition, cursor-paginated) and scoring."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Query

from graphlake.server.models import Benchmark, Instance, Page, Score, ScoreRequest
from graphlake.server.state import State, get_state, json_response

router = APIRouter(prefix="/benchmarks", tags=["benchmarks"])
StateDep = Annotated[State, Depends(get_state)]


class ProtocolParams:
    """The protocols' parameters as query parameters (each protocol reads its own)."""

    def __init__(self,
                 corpus: Annotated[str | None, Query(description="Kolab protocols: corpus "
                                                     "of the triples / ratings")] = None,
                 k: Annotated[int | None, Query(ge=1, le=3, description="kolab-1c: "
                                                "preceding steps")] = None,
                 frames: Annotated[int | None, Query(ge=0, le=64, description="video "
                                                     "conditions: frames listed")] = None,
                 fraction: Annotated[float | None, Query(gt=0, le=1, description="*-prefix: "
                                                         "share of the trace")] = None,
                 role: Annotated[str | None, Query(description="almanac-*: guide, follower "
                                                   "or all")] = None,
                 dimension: Annotated[str | None, Query(description="almanac-mental-model: "
                                                        "dimension")] = None):
        self.values = {"corpus": corpus, "k": k, "frames": frames, "fraction": fraction,
                       "role": role, "dimension": dimension}

    def for_protocol(self, state: State, pid: str) -> dict:
        spec, _m = state.bench.spec(pid)
        names = {p.name for p in spec.params}
        return {k: v for k, v in self.values.items() if v is not None and k in names}


ParamsDep = Annotated[ProtocolParams, Depends()]


@router.get("", response_model=Page[Benchmark])
def list_benchmarks(state: StateDep):
    """Every protocol with its label set, conditions, window, cut-off and spec hash."""
    return {"items": state.bench.list(), "next_cursor": None}


@router.get("/{protocol}", response_model=Benchmark)
def get_benchmark(state: StateDep, protocol: str):
    spec, _m = state.bench.spec(protocol)
    return spec.summary()


@router.get("/{protocol}/instances", response_model=Page[Instance])
def list_instances(state: StateDep, protocol: str, params: ParamsDep,
                   condition: str | None = None,
                   limit: Annotated[int, Query(ge=1, le=1000)] = 100,
                   cursor: str | None = None):
    """Instances in id order with their prompt and inputs in ``condition`` (the protocol's
    first condition when omitted). Gold labels are never included."""
    page = state.bench.instances(protocol, condition=condition,
                                 params=params.for_protocol(state, protocol), limit=limit,
                                 cursor=cursor)
    return json_response({"items": page.items, "next_cursor": page.next_cursor})


@router.get("/{protocol}/instances/{instance_id}", response_model=Instance)
def get_instance(state: StateDep, protocol: str, instance_id: str, params: ParamsDep,
                 condition: str | None = None):
    """One instance in one condition."""
    return json_response(state.bench.instance(protocol, instance_id, condition=condition,
                                              params=params.for_protocol(state, protocol)))


@router.post("/{protocol}/score", response_model=Score)
def score(state: StateDep, protocol: str, params: ParamsDep,
          body: ScoreRequest | None = None,
          baseline: Literal["majority", "mode"] | None = None):
    """Score ``predictions`` (``{"id", "label"}``; Almanac draws may add ``cells``) with the
    paper's metrics; ``?baseline=majority`` (or ``mode`` for ratings) scores the built-in
    baseline instead. Unknown, missing, invalid and duplicate ids are listed."""
    bound = dict(params.for_protocol(state, protocol))
    if body and body.params:
        bound.update({k: v for k, v in body.params.items() if v is not None})
    if baseline:
        preds = state.bench.baseline(protocol, baseline, bound)
    else:
        preds = [p.model_dump() for p in (body.predictions if body else [])]
    return json_response(state.bench.score(protocol, preds, bound))
