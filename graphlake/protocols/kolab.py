"""Kolab experiments 1a-1d (adopt / modify / reject) and 2a-2b (1-5 ratings), Kolab section 5.1,
Table 4 and appendix A.6.

Windows (Table 4; times of the resolved node occurrences in ``adoptions``):

* 1a recognition: source start -> response end; the target AI timestamps are given.
* 1b forecasting: source start -> AI end.
* 1c step-k forecasting: the start of the k-th step before the last -> AI end, for triples
  whose source and AI nodes both lie in the session's last step (as the paper selects them).
* 1d workflow forecasting: workflow start -> AI end, same triples as 1c.
* 2a / 2b: one rated step, its start -> its end.

The cut-off is the window's end. A triple without a source node starts at the AI node.
"""

from __future__ import annotations

from graphlake.protocols import prompts
from graphlake.protocols.kolab_sql import PRECOMPUTED, ordered_context, with_contexts
from graphlake.protocols.render import NODE_FIELDS, clock, render_chat, render_graph
from graphlake.protocols.spec import KOLAB_CONDITIONS, Param, ProtocolSpec

ADOPTION_LABELS = ("ADOPT", "MODIFY", "REJECT")
RATING_LABELS = ("1", "2", "3", "4", "5")
_CORPUS = Param("corpus", "str", "kolab", "corpus whose adoption triples / ratings to use")
_FRAMES = Param("frames", "int", 8, "evenly spaced frames listed for video conditions")
_PROMPT_PARTS = (
    prompts.WORKFLOW,
    prompts.OPEN_VIDEO,
    prompts.OPEN_NO_VIDEO,
    prompts.GRAPH_SECTION,
    prompts.CHAT_SECTION,
    prompts.ADOPTION_LABELS,
)
_SRC = "Kolab 5.1, Table 4, A.6"


def _adoption_spec(pid, description, window, extra=()):
    return ProtocolSpec(
        id=pid,
        description=description,
        task="adoption",
        unit="one annotated AI adoption triple (source, AI output, response)",
        window=window,
        cutoff=window.split("-> ")[-1],
        labels=ADOPTION_LABELS,
        conditions=KOLAB_CONDITIONS,
        source=_SRC,
        params=(_CORPUS, *extra, _FRAMES),
        prompt_parts=_PROMPT_PARTS,
    )


def _rating_spec(pid, description, item, criteria):
    return ProtocolSpec(
        id=pid,
        description=description,
        task="rating",
        unit=f"one step segment with a {item} rating",
        window="step start -> step end",
        cutoff="step end",
        labels=RATING_LABELS,
        conditions=KOLAB_CONDITIONS,
        source=_SRC,
        params=(_CORPUS, _FRAMES),
        prompt_parts=(*_PROMPT_PARTS, criteria),
    )


SPECS = {
    s.id: s
    for s in (
        _adoption_spec(
            "kolab-1a",
            "Recognise how the person responded to an AI output (the response is in the clip)",
            "source start -> response end",
        ),
        _adoption_spec(
            "kolab-1b",
            "Forecast how the person will respond to an AI output, at delivery time",
            "source start -> AI end",
        ),
        _adoption_spec(
            "kolab-1c",
            "Forecast with the preceding k steps as context (triples in the session's last step)",
            "start of the k-th preceding step -> AI end",
            (Param("k", "int", 1, "preceding steps given as context", (1, 2, 3)),),
        ),
        _adoption_spec(
            "kolab-1d",
            "Forecast with the whole workflow so far as context (triples in "
            "the session's last step)",
            "workflow start -> AI end",
        ),
        _rating_spec(
            "kolab-2a",
            "Rate the collaboration experience of one step (1-5)",
            "collaboration",
            prompts.COLLAB_CRITERIA,
        ),
        _rating_spec(
            "kolab-2b",
            "Rate the output quality of one step (1-5)",
            "output_quality",
            prompts.QUALITY_CRITERIA,
        ),
    )
}

_ADOPTION_TARGETS = """
SELECT a.corpus, a.session_id, a.annotation_id AS target, upper(a.label) AS gold,
       a.source_node, a.ai_node, a.response_node, a.source_step, a.ai_step, a.response_step,
       coalesce(a.source_t_start, a.ai_t_start) AS t_source, a.ai_t_start, a.ai_t_end,
       a.response_t_end
FROM adoptions a
WHERE a.corpus = $corpus AND a.label IN ('adopt', 'modify', 'reject')
  AND a.ai_t_end IS NOT NULL AND coalesce(a.source_t_start, a.ai_t_start) IS NOT NULL
"""
_LAST_STEP = """
WITH last AS (SELECT corpus, session_id, arg_max(step_id, ordinal) AS last_step
              FROM steps WHERE corpus = $corpus GROUP BY corpus, session_id)
SELECT t.* FROM ({inner}) t JOIN last l ON l.corpus = t.corpus AND l.session_id = t.session_id
WHERE t.ai_step = l.last_step AND coalesce(t.source_step, t.ai_step) = l.last_step
"""
_RATING_TARGETS = """
SELECT r.corpus, r.session_id, r.step_id AS target, CAST(round(min(r.value)) AS INTEGER) AS gold
FROM annotations r JOIN steps s ON s.corpus = r.corpus AND s.session_id = r.session_id
     AND s.step_id = r.step_id
WHERE r.corpus = $corpus AND r.kind = 'rating' AND r.label = $item AND r.value IS NOT NULL
  AND s.t_start IS NOT NULL AND s.t_end IS NOT NULL
GROUP BY r.corpus, r.session_id, r.step_id
"""


def targets_sql(spec: ProtocolSpec, params: dict) -> tuple[str, dict]:
    """SQL for every instance of ``spec`` in the lake (corpus, session_id, target, gold), with
    its window and the rows its context holds (``kolab_sql``); the gold label never leaves
    the server."""
    k = params.get("k") if spec.id == "kolab-1c" else None
    if spec.task == "rating":
        item = "collaboration" if spec.id == "kolab-2a" else "output_quality"
        return (
            with_contexts(spec.id, _RATING_TARGETS, rating=True),
            {"corpus": params["corpus"], "item": item, "k": k},
        )
    sql = _ADOPTION_TARGETS
    if spec.id in ("kolab-1c", "kolab-1d"):
        sql = _LAST_STEP.format(inner=sql)
    return with_contexts(spec.id, sql, rating=False), {"corpus": params["corpus"], "k": k}


def needs_session(spec: ProtocolSpec) -> bool:
    """Whether ``build`` cuts the context from the session's rows (1c, 1d) rather than from the
    rows the index already holds (``kolab_sql.PRECOMPUTED``)."""
    return spec.id not in PRECOMPUTED


def context_rows(spec: ProtocolSpec, data, ref: dict):
    """The instance's nodes, action edges and chat turns, in render order."""
    if spec.id in PRECOMPUTED:
        return ordered_context(ref)
    keep = frozenset([ref["ai_node"]]) if spec.task == "adoption" else frozenset()
    nodes, edges = data.graph(ref["t0"], ref["cutoff"], keep)
    nodes = [
        {k: n.get(k) for k in NODE_FIELDS}
        for n in sorted(nodes, key=lambda n: (n["t_start"], n["node_id"]))
    ]
    turns = [
        {k: m[k] for k in ("event_id", "t", "actor_type", "text")}
        for m in data.chat(ref["t0"], ref["cutoff"])
    ]
    return nodes, [{k: e[k] for k in ("src", "dst", "kind")} for e in edges], turns


def build(spec: ProtocolSpec, data, ref: dict, condition: str, params: dict) -> tuple[str, dict]:
    """The prompt and the inputs of one instance in one condition: the window, session facts
    and (1a, 1b, 2a, 2b) context rows come with the index row; ``data``, the session's rows,
    is read only for 1c and 1d."""
    modes = set(condition.split("-"))
    t0, cutoff = ref["t0"], ref["cutoff"]
    goal, profession = ref["goal"] or "", ref["profession"]
    inputs: dict = {
        "window": {"t0": t0, "t1": cutoff},
        "cutoff": cutoff,
        "goal": goal,
        "profession": profession,
    }
    graph_nodes = graph_edges = chat_text = ""
    nodes, edges, turns = context_rows(spec, data, ref)
    if "graph" in modes:
        g = render_graph(nodes, edges)
        graph_nodes, graph_edges = g.nodes, g.edges
        inputs["graph"] = {
            "text": g.text,
            "node_ids": g.node_ids,
            "nodes": nodes,
            "edges": edges,
        }  # nodes already in render order
    if "chat" in modes:
        chat_text = render_chat(turns)
        inputs["chat"] = {"text": chat_text, "turns": turns}
    if "video" in modes:
        inputs["video"] = video_inputs(
            ref["media_id"], ref["media_duration_s"], t0, cutoff, params["frames"]
        )
    if spec.task == "rating":
        name = ref["target_step_name"]
        inputs["step"] = {"step_id": ref["target"], "name": name}
        prompt = prompts.rating_prompt(
            modes,
            quality=spec.id == "kolab-2b",
            profession=profession,
            goal=goal,
            step_name=name,
            graph_nodes=graph_nodes,
            graph_edges=graph_edges,
            chat=chat_text,
        )
        return prompt, inputs
    ai_step = ref["ai_step_name"]
    inputs["target"] = {
        "ai_node": ref["ai_node"],
        "ai_step": ref["ai_step"],
        "ai_step_name": ai_step,
        "t_start": ref["ai_t_start"],
        "t_end": ref["ai_t_end"],
    }
    user_step = None
    if spec.id == "kolab-1a":
        user_step = ref["user_step_name"]
        inputs["target"]["user_step"] = ref["response_step"]
        inputs["target"]["user_step_name"] = user_step
    prompt = prompts.adoption_prompt(
        modes,
        recognition=spec.id == "kolab-1a",
        profession=profession,
        goal=goal,
        ai_step=ai_step,
        user_step=user_step,
        start=clock(ref["ai_t_start"]),
        end=clock(ref["ai_t_end"]),
        graph_nodes=graph_nodes,
        graph_edges=graph_edges,
        chat=chat_text,
    )
    return prompt, inputs


def frame_times(t0: float, t1: float, n: int) -> list[float]:
    """``n`` evenly spaced times inside [t0, t1): the midpoints of n equal slices, so none is
    at or after the cut-off."""
    if n <= 0 or t1 <= t0:
        return []
    step = (t1 - t0) / n
    return [round(t0 + (i + 0.5) * step, 3) for i in range(n)]


def video_inputs(
    media_id: str | None, duration_s: float | None, t0: float, t1: float, n_frames: int
) -> dict:
    """The clip window and its frame URLs on the session's recording (recording time is
    session time); ``available`` is false when the session has no recording."""
    out = {"t0": t0, "t1": t1, "available": media_id is not None}
    if media_id is None:
        return out
    out.update(
        {
            "media_id": media_id,
            "duration_s": duration_s,
            "clip_url": f"/media/{media_id}/clip?t0={t0}&t1={t1}",
            "frames": [
                {"t": t, "url": f"/media/{media_id}/frame.jpg?t={t}"}
                for t in frame_times(t0, t1, n_frames)
            ],
        }
    )
    return out
