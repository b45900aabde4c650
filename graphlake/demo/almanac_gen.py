"""Deterministic Almanac corpus in graphlake's formats: maps (appendix D) and sessions of a
Guide describing a route and a Follower drawing it, with mental models whose alignment grows
as the task progresses (as Almanac's Figure 4 shows) and is lower when the Follower cannot see
the Guide's map (C_not_visible)."""

from __future__ import annotations

import json
import random
from pathlib import Path

GOALS = ["Executing agreed plan", "Still figuring out task", "Establishing shared reference"]
INTENTS = ["Waiting for more information", "Following instructions", "Checking position"]
ACTS = ["initiate", "continue", "acknowledge", "repair", "request_repair", "other"]
ACT_WEIGHTS = [3, 4, 3, 1, 1, 2]
ACT_SHIFT = {"acknowledge": 0.2, "repair": -0.25, "request_repair": -0.3}
SELF = ["Explaining the route", "Drawing as told", "Asking for clarification"]
LANDMARKS = ["pyramid", "suspension bridge", "old mill", "caravan park", "picket fence"]


def write_map(root: Path, map_id: str, r: random.Random, size=(12, 12)) -> dict:
    landmarks = {}
    for name in r.sample(LANDMARKS, 4):
        r0, c0 = r.randrange(1, size[0] - 2), r.randrange(1, size[1] - 2)
        cells = [[r0, c0], [r0, c0 + 1], [r0 + 1, c0], [r0 + 1, c0 + 1]]
        landmarks[name] = {
            "summary": {
                "bbox": {"row_min": r0, "row_max": r0 + 1, "col_min": c0, "col_max": c0 + 1},
                "centroid": [r0 + 0.5, c0 + 0.5],
                "boundary_cells": cells,
            },
            "cells": cells,
            "type": r.choice(["blocked", "passable"]),
            "on_guide_map": True,
            "on_follower_map": r.random() < 0.75,
        }
    m = {"map_id": map_id, "grid_size": list(size), "start_cell": [0, 0], "landmarks": landmarks}
    (root / "maps").mkdir(parents=True, exist_ok=True)
    (root / "maps" / f"{map_id}.json").write_text(json.dumps(m))
    return m


def session_lines(
    sid: str, map_id: str, condition: str, r: random.Random, n_actions: int
) -> list[dict]:
    guide, follower = f"{sid}-G", f"{sid}-F"
    lines = [
        {
            "type": "session",
            "session_id": sid,
            "map_id": map_id,
            "condition": condition,
            "split": "test" if r.random() < 0.2 else "train",
            "participants": [
                {
                    "id": guide,
                    "role": "guide",
                    "persona": {"teamq": {"share_information": r.randint(0, 4)}},
                },
                {
                    "id": follower,
                    "role": "follower",
                    "persona": {"teamq": {"share_information": r.randint(0, 4)}},
                },
            ],
        }
    ]
    route, canvas, t = [(0, 0)], [], 0.0
    acts = random.Random(f"{sid}/grounding")
    visible_bonus = 0.15 if condition == "C_visible" else 0.0
    for k in range(n_actions):
        progress = k / max(1, n_actions - 1)
        t += r.uniform(2, 9)
        # grounding acts come from their own stream so the rest of the corpus stays as it was;
        # acknowledgements go with alignment and repairs with misalignment (Almanac Fig. 4)
        act = acts.choices(ACTS, weights=ACT_WEIGHTS)[0]
        aligned = r.random() < 0.45 + 0.4 * progress + visible_bonus + ACT_SHIFT.get(act, 0.0)
        mm = {
            "rationale": "…",
            "team_goal": r.choice(GOALS),
            "partner_intent": r.choice(INTENTS),
            "self_reasoning": r.choice(SELF),
            "alignment": "aligned" if aligned else r.choice(["misaligned", "unsure"]),
        }
        if k % 2 == 0:
            lines.append(
                {
                    "type": "action",
                    "t": round(t, 2),
                    "actor": guide,
                    "action": "message",
                    "grounding_act": act,
                    "text": f"Go {r.choice(['down', 'right'])} past the {r.choice(LANDMARKS)}.",
                    "mental_model": mm,
                }
            )
            continue
        roll = r.random()
        if roll < 0.75 or not canvas:
            last = route[-1]
            nxt = (last[0] + 1, last[1]) if r.random() < 0.5 else (last[0], last[1] + 1)
            route.append(nxt)
            canvas = canvas + [list(nxt)]
            action = "draw"
        elif roll < 0.9:
            canvas = canvas[:-1]
            action = "erase"
        else:
            canvas = []
            action = "reset"
        lines.append(
            {
                "type": "action",
                "t": round(t, 2),
                "actor": follower,
                "action": action,
                "grounding_act": act,
                "canvas": [list(c) for c in canvas],
                "mental_model": mm,
            }
        )
    return lines


def write_almanac_corpus(out: Path, sessions: int = 12, actions: int = 24, seed: int = 7) -> Path:
    """Write ``almanac/maps/*.json`` and ``almanac/sessions/*.jsonl`` under ``out``."""
    r = random.Random(seed)
    root = Path(out) / "almanac"
    (root / "sessions").mkdir(parents=True, exist_ok=True)
    maps = [f"m{k}" for k in range(1, 4)]
    for map_id in maps:
        write_map(root, map_id, r)
    for i in range(sessions):
        sid = f"alm{i:04d}"
        lines = session_lines(
            sid,
            maps[i % len(maps)],
            "C_visible" if i % 2 else "C_not_visible",
            random.Random(f"{seed}/{sid}"),
            actions,
        )
        (root / "sessions" / f"{sid}.jsonl").write_text(
            "".join(json.dumps(x) + "\n" for x in lines)
        )
    return root
