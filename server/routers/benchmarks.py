"""Benchmark protocols: specs, instances (per condition, cursor-paginated) and scoring."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Query, Request
from starlette.concurrency import run_in_threadpool

from graphlake.server.errors import ReadOnly
from graphlake.server.models import Benchmark, Instance, Page, Score, ScoreRequest
from graphlake.server.state import Serving, get_state, json_response

router = APIRouter(prefix="/benchmarks", tags=["benchmarks"])
StateDep = Annotated[Serving, Depends(get_state)]


class ProtocolParams(dict):
    """The protocols' parameters given as query parameters (each protocol reads its own)."""

    @classmethod
    def from_query(cls, query) -> ProtocolParams:
        return cls({n: query.get(n) for n, _t, _d in _PARAM_DOCS})

    def for_protocol(self, state: Serving, pid: str) -> dict:
        spec, _m = state.bench.spec(pid)
        names = spec.param_names
        return {k: v for k, v in self.items() if v is not None and k in names}


#: The protocols' parameters as query parameters, documented in the OpenAPI spec here and read
#: by ``protocol_params`` straight from the query string: each protocol's spec types and checks
#: its own (``ProtocolSpec.bind``), so FastAPI need not validate six optional parameters on
#: every instance fetch (the hot path of an evaluation run).
_PARAM_DOCS = [
    ("corpus", "string", "Kolab protocols: corpus of the triples / ratings"),
    ("k", "integer", "kolab-1c: preceding steps (1-3)"),
    ("frames", "integer", "video conditions: frames listed"),
    ("fraction", "number", "*-prefix: share of the trace before the cut-off, in (0, 1]"),
    ("event", "string", "*-prefix: cut at this event_id instead"),
    ("role", "string", "almanac-*: guide, follower or all"),
    ("dimension", "string", "almanac-mental-model: team_goal, partner_intent or self_reasoning"),
]
PARAMS_OPENAPI = {
    "parameters": [
        {"name": n, "in": "query", "required": False, "description": d, "schema": {"type": t}}
        for n, t, d in _PARAM_DOCS
    ]
}


async def protocol_params(request: Request) -> ProtocolParams:
    return ProtocolParams.from_query(request.query_params)


ParamsDep = Annotated[ProtocolParams, Depends(protocol_params)]


@router.get("", response_model=Page[Benchmark])
def list_benchmarks(state: StateDep):
    """Every protocol with its label set, conditions, window, cut-off and spec hash."""
    return {"items": state.bench.specs(), "next_cursor": None}


@router.get("/{protocol}", response_model=Benchmark)
def get_benchmark(state: StateDep, protocol: str):
    spec, _m = state.bench.spec(protocol)
    return spec.summary()


@router.get("/{protocol}/instances", response_model=Page[Instance], openapi_extra=PARAMS_OPENAPI)
def list_instances(
    state: StateDep,
    protocol: str,
    params: ParamsDep,
    condition: str | None = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    cursor: str | None = None,
):
    """Instances in id order with their prompt and inputs in ``condition`` (the protocol's
    first condition when omitted). Gold labels are never included."""
    page = state.bench.instances(
        protocol,
        condition=condition,
        params=params.for_protocol(state, protocol),
        limit=limit,
        cursor=cursor,
    )
    return json_response({"items": page.items, "next_cursor": page.next_cursor})


#: the instance route's parameters, documented here because the route reads them itself
_INSTANCE_OPENAPI = {
    "parameters": [
        {
            "in": "path",
            "name": "protocol",
            "required": True,
            "schema": {"title": "Protocol", "type": "string"},
        },
        {
            "in": "path",
            "name": "instance_id",
            "required": True,
            "schema": {"title": "Instance Id", "type": "string"},
        },
        {
            "in": "query",
            "name": "condition",
            "required": False,
            "schema": {"anyOf": [{"type": "string"}, {"type": "null"}], "title": "Condition"},
        },
        *PARAMS_OPENAPI["parameters"],
    ]
}


@router.get(
    "/{protocol}/instances/{instance_id}", response_model=Instance, openapi_extra=_INSTANCE_OPENAPI
)
async def get_instance(request: Request):
    """One instance in one condition."""
    # the evaluation hot path: no dependencies to solve and no parameters for FastAPI to
    # validate (a tenth of a warm fetch): the path and query are read here, the protocol's
    # parameters as protocol_params reads them
    protocol = request.path_params["protocol"]
    instance_id = request.path_params["instance_id"]
    condition = request.query_params.get("condition")
    state = await get_state(request)
    bench = state.bench
    bound = ProtocolParams.from_query(request.query_params).for_protocol(state, protocol)
    # rows in memory: pure CPU work, done on the event loop without a thread hop
    found = bench.instance_if_warm(protocol, instance_id, condition=condition, params=bound)
    if found is not None:
        return json_response(found)
    return json_response(
        await run_in_threadpool(
            bench.instance, protocol, instance_id, condition=condition, params=bound
        )
    )


@router.post("/{protocol}/score", response_model=Score, openapi_extra=PARAMS_OPENAPI)
def score(
    state: StateDep,
    protocol: str,
    params: ParamsDep,
    body: ScoreRequest | None = None,
    baseline: Literal["majority", "mode"] | None = None,
    subset: bool = False,
    save: bool = False,
    model: Annotated[str | None, Query(max_length=200)] = None,
    condition: Annotated[str | None, Query(max_length=100)] = None,
    name: Annotated[str | None, Query(max_length=200)] = None,
):
    """Score ``predictions`` (``{"id", "label"}``; Almanac draws may add ``cells``) with the
    paper's metrics; ``?baseline=majority`` (or ``mode`` for ratings) scores the built-in
    baseline instead. Unknown, missing, invalid and duplicate ids are listed; ``?subset=true``
    scores only the instances predicted (the others are not missing).

    ``?save=true`` also keeps the run in the lake (corpus ``evals``, with ``model``,
    ``condition`` and ``name``), as ``graphlake bench score --save`` does, and answers its
    id as ``saved_run``; the named query ``eval_runs`` compares runs once the service reads
    the new version (``POST /refresh``). Saving needs a service started with
    ``graphlake serve --allow-writes`` (403 otherwise)."""
    bound = dict(params.for_protocol(state, protocol))
    if body and body.params:
        bound.update({k: v for k, v in body.params.items() if v is not None})
    if baseline:
        preds = state.bench.baseline(protocol, baseline, bound)
    else:
        preds = [p.model_dump() for p in (body.predictions if body else [])]
    if not save:
        return json_response(state.bench.score(protocol, preds, bound, subset=subset))
    if not state.settings.allow_writes:
        raise ReadOnly(
            "this service only reads the lake: start it with `graphlake serve --allow-writes` "
            "to save runs, or save from the CLI with `graphlake bench score --save`"
        )
    if condition is not None:
        condition = state.bench.spec(protocol)[0].check_condition(condition)
    result, run_id = state.bench.save(
        protocol,
        preds,
        bound,
        model=model or (f"baseline:{baseline}" if baseline else None),
        condition=condition,
        name=name,
        source="POST /benchmarks/score",
        subset=subset,
    )
    return json_response({**result, "saved_run": run_id})
