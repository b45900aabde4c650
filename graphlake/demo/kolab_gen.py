"""Deterministic generator of realistic Kolab-format sessions (graph JSON plus side files).

Used by ``graphlake demo`` (a small corpus with side files and a few planted errors) and by the
benchmarks (hundreds of thousands of sessions, graph JSON only). Same seed, same bytes.

Each session draws two latent traits that the headline analyses should recover:

* ``planning`` in [0, 1]: planners work alone longer before the first AI interaction in each
  step (solo lead-in) and then interact in tight bursts (high burstiness), as Kolab 4.3 #1 finds;
* ``branching`` in [0, 1]: how often the person works in parallel while the agent generates
  (branch nodes, topology W), which lowers the collaboration rating (Kolab 4.3 #2).

Sectors carry their own adopt/modify/reject mix (Legal modifies most, Kolab 4.3 #3).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from graphlake.ingest.timefmt import format_clock

SECTORS = {
    # sector: (occupations, softwares, (p_adopt, p_modify, p_reject))
    "Legal": (["attorney", "paralegal"], ["Word", "Westlaw", "Acrobat"], (0.57, 0.38, 0.05)),
    "Sciences": (
        ["bioinformatician", "GIS specialist"],
        ["RStudio", "QGIS", "Jupyter"],
        (0.79, 0.15, 0.06),
    ),
    "Computer & Mathematical": (
        ["data analyst", "statistician"],
        ["VS Code", "Excel"],
        (0.79, 0.14, 0.07),
    ),
    "Arts & Sports": (
        ["music producer", "sound designer", "film editor"],
        ["FL Studio", "Premiere Pro", "Artlist"],
        (0.65, 0.22, 0.13),
    ),
    "Architecture & Engineering": (
        ["architect", "aerospace engineer"],
        ["Revit", "AutoCAD", "MATLAB"],
        (0.70, 0.18, 0.12),
    ),
    "Business & Finance": (
        ["financial analyst", "marketing specialist"],
        ["Excel", "PowerPoint", "HubSpot"],
        (0.72, 0.17, 0.11),
    ),
    "Media & Communication": (
        ["graphic designer", "copywriter"],
        ["Figma", "Photoshop"],
        (0.68, 0.20, 0.12),
    ),
}
AI_BRANDS = (["claude"] * 8) + ["grok", "chatgpt", "gemini"]
HUMAN_ACTS = [
    "Define objective",
    "Plan approach",
    "Seek information",
    "Gather evidence",
    "Analyze information",
    "Compare alternatives",
    "Refine requirements",
    "Verify findings",
    "Make decision",
    "Implement solution",
    "Validate outcome",
    "Revise solution",
]
AI_ACTS = [
    "Draft outline",
    "Generate design options",
    "Summarize sources",
    "Propose revisions",
    "Write code",
    "Analyze data",
    "Suggest alternatives",
    "Produce first draft",
]
STEP_NAMES = [
    "Scope the project",
    "Collect inputs",
    "Develop the core work",
    "Review and revise",
    "Finalize deliverable",
    "Present results",
]
ITEMS = 7


clock = format_clock


def rng_range(a: float, b: float) -> str:
    return f"{clock(a)}-{clock(b)}"


@dataclass
class _Seg:
    key: str
    badge: str
    name: str
    start: int
    end: int = 0
    nodes: list[dict] = field(default_factory=list)
    edges: list[dict] = field(default_factory=list)


@dataclass
class GeneratedSession:
    graph: dict
    meta: dict
    chat: list[dict]
    ratings: dict
    survey: dict
    workflow_md: str


class KolabGenerator:
    """Generates one session at a time from ``seed``; ``session(i)`` is pure in (seed, i)."""

    def __init__(
        self, seed: int = 7, steps: tuple[int, int] = (3, 6), interactions: tuple[int, int] = (2, 4)
    ):
        self.seed = seed
        self.steps = steps
        self.interactions = interactions

    def session(self, i: int) -> GeneratedSession:
        r = random.Random(self.seed * 1_000_003 + i)
        sector = r.choice(sorted(SECTORS))
        occupations, softwares, mix = SECTORS[sector]
        brand = r.choice(AI_BRANDS)
        planning, branching = r.random(), r.random()
        n_steps = r.randint(*self.steps)
        order = list(range(1, n_steps + 1))
        if n_steps >= 3 and r.random() < 0.3:  # revisit a step: Step 2 -> Step 3 -> Step 2
            k = r.randint(2, n_steps - 1)
            order.insert(k + 1, k)
        segs: list[_Seg] = []
        t = r.randint(0, 20)
        chat: list[dict] = []
        visits: dict[int, int] = {}
        pending_ai: list[tuple[_Seg, dict, dict | None, tuple]] = []
        for pos, step in enumerate(order):
            visits[step] = visits.get(step, 0) + 1
            seg = _Seg(
                f"seg{step}{'abc'[visits[step] - 1]}",
                f"Step-{step}",
                STEP_NAMES[(step - 1) % len(STEP_NAMES)],
                t,
            )
            t = self._fill_segment(
                r,
                seg,
                t,
                planning,
                branching,
                brand,
                softwares,
                mix,
                chat,
                pending_ai,
                pos == len(order) - 1,
            )
            seg.end = t
            segs.append(seg)
            t += r.randint(5, 40)
        sid = f"kolab-{self.seed}-{i:06d}"
        graph = {
            "session_id": sid,
            "participant_id": f"P{i % 997:03d}",
            "title": f"{r.choice(occupations).title()} workflow {i}",
            "goal": f"Complete a {sector.lower()} deliverable with {brand}",
            "steps": [
                {
                    "key": s.key,
                    "badge": s.badge,
                    "step_name": s.name,
                    "step_action": f"{s.name} with AI support",
                    "time_range": rng_range(s.start, s.end),
                    "start_seconds": s.start,
                    "end_seconds": s.end,
                    "nodes": s.nodes,
                    "edges": s.edges,
                }
                for s in segs
            ],
        }
        badges = sorted({s.badge for s in segs}, key=lambda b: int(b.split("-")[1]))
        collab = _clip(round(4.4 - 2.2 * branching + r.gauss(0, 0.6)), 1, 5)
        ratings = {
            "steps": [
                {
                    "step": b,
                    "output_quality": _clip(round(3.6 + r.gauss(0, 0.9)), 1, 5),
                    "output_quality_reason": "Met most of the rubric.",
                    "collaboration": _clip(collab + r.choice([-1, 0, 0, 0, 1]), 1, 5),
                    "collaboration_items": [
                        _clip(collab + r.choice([-1, 0, 1]), 1, 5) for _ in range(ITEMS)
                    ],
                    "rubric": [f"Rubric item {k} for {b}" for k in range(1, r.randint(2, 4) + 1)],
                    "rubrics_satisfied": [1, 2],
                    "agent_completed": r.random() < 0.8,
                    "agent_completed_why": "It produced a usable draft.",
                }
                for b in badges
            ]
        }
        meta = {
            "domain": sector,
            "occupation": r.choice(occupations),
            "participant": {"years_experience": r.randint(2, 25)},
        }
        survey = {
            "clear_plan_before_ai": _clip(round(1 + 4 * planning + r.gauss(0, 0.5)), 1, 5),
            "would_use_again": r.choice(["yes", "maybe", "no"]),
        }
        md = f"# {graph['title']}\n\nGoal: {graph['goal']}\n\n" + "\n".join(
            f"## {s.badge}: {s.name}\nSoftwares: {', '.join(softwares)}\n" for s in segs
        )
        return GeneratedSession(graph, meta, chat, ratings, survey, md)

    def _fill_segment(
        self, r, seg, t, planning, branching, brand, softwares, mix, chat, pending_ai, last
    ) -> int:
        """Lay out one segment's nodes on the timeline; return the segment end time."""
        nid = 0

        def node(actor_type, label, start, end, **extra):
            nonlocal nid
            nid += 1
            n = {
                "id": f"n{nid}",
                "actor": "user" if actor_type == "user" else brand,
                "label": label,
                "detail": f"{label} during {seg.name.lower()}.",
                "time": [rng_range(start, end)],
                "actor_type": actor_type,
                "softwares": r.choice(softwares) if actor_type == "user" else brand.title(),
                "source_steps": seg.badge,
                **extra,
            }
            seg.nodes.append(n)
            return n

        def edge(a, b, kind="sequential"):
            seg.edges.append({"from": a["id"], "to": b["id"], "type": kind})

        dur = r.randint(300, 900)
        # solo work before the first AI interaction: longer for planners
        lead = dur * _clipf(0.1 + 0.6 * planning + r.gauss(0, 0.08), 0.02, 0.9)
        first = node("user", r.choice(HUMAN_ACTS), t, t + lead * 0.5)
        prev = node("user", r.choice(HUMAN_ACTS), t + lead * 0.5, t + lead)
        edge(first, prev)
        t += lead
        # outputs deferred from an earlier segment are acted on early in this one: the
        # response names the AI node by its local id and time, which resolve in that segment
        carried, pending_ai[:] = list(pending_ai), []
        for _old_seg, ai, prompt, (label,) in carried:
            resp = node("user", "Bring earlier output into this step", t, t + 60)
            resp["user_response"] = [
                [prompt["id"], ai["id"], label, prompt["time"][0], ai["time"][0], resp["time"][0]]
            ]
            edge(prev, resp)
            prev, t = resp, t + 62
        n_inter = r.randint(*self.interactions)
        remaining = max(60.0, seg.start + dur - t)
        # planners interact in one tight burst; others spread their interactions out
        even_pause = remaining / (2 * n_inter)
        for k in range(n_inter):
            if k:
                t += r.uniform(3, 15) if r.random() < planning else even_pause
            prompt = node("user", "Prompt the agent: " + r.choice(HUMAN_ACTS).lower(), t, t + 20)
            edge(prev, prompt)
            ai_start = t + 20
            ai = node("ai", r.choice(AI_ACTS), ai_start, ai_start + r.randint(30, 120))
            edge(prompt, ai)
            ai_end = _end(ai)
            chat.append({"t": t, "role": "human", "text": prompt["label"]})
            msg = {"t": ai_start, "role": "ai", "actor": brand, "text": ai["label"]}
            if r.random() < 0.4:
                msg["tool_calls"] = [
                    {
                        "id": f"tc{seg.key}{k}",
                        "name": "web_search",
                        "input": {"q": prompt["label"]},
                        "output": "3 results",
                    }
                ]
            chat.append(msg)
            if r.random() < branching:  # parallel human work while the agent generates
                side = node("user", r.choice(HUMAN_ACTS), ai_start + 5, ai_end)
                edge(prompt, side)
                after = side
            else:
                after = None
            label = r.choices(("adopt", "modify", "reject"), weights=mix)[0]
            if r.random() < 0.25 and k == n_inter - 1 and not last:
                # defer: the output is acted on in the next segment (cross-step adoption)
                pending_ai.append((seg, ai, prompt, (label,)))
                prev = ai if after is None else after
                t = ai_end + 5
                continue
            # adopting is quick; modifying takes a read first; rejecting varies most
            resp_start = (
                ai_end
                + {
                    "adopt": r.randint(2, 40),
                    "modify": r.randint(20, 120),
                    "reject": r.randint(5, 240),
                }[label]
            )
            resp = node(
                "user",
                {
                    "adopt": "Use the agent's output",
                    "modify": "Revise the agent's output",
                    "reject": "Discard and redo",
                }[label],
                resp_start,
                resp_start + r.randint(40, 150),
            )
            src = "" if r.random() < 0.05 else prompt["id"]
            resp["user_response"] = [
                [
                    src,
                    ai["id"],
                    label,
                    prompt["time"][0] if src else "",
                    ai["time"][0],
                    resp["time"][0],
                ]
            ]
            edge(ai, resp)
            if after is not None:
                edge(after, resp)  # merge
            if label == "modify" and r.random() < 0.5:  # refinement loop: AI node repeats
                again = _end(resp) + 2
                ai["time"].append(rng_range(again, again + r.randint(20, 60)))
                edge(resp, ai, "loop")
                t = _end(ai) + 2
            else:
                t = _end(resp) + 2
            prev = resp
        wrap = node("user", "Validate outcome", t, t + r.randint(30, 90))
        edge(prev, wrap)
        return int(_end(wrap))


def _end(n: dict) -> float:
    last = n["time"][-1].split("-")[1]
    h, m, s = (int(x) for x in last.split(":"))
    return float(h * 3600 + m * 60 + s)


def _clip(v, lo, hi):
    return max(lo, min(hi, v))


def _clipf(v: float, lo: float, hi: float) -> float:
    return max(lo, min(hi, v))
