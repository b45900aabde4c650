"""Deterministic generators for the public formats graphlake reads as they are published
(CoAuthor keystroke logs, GMMT Map Task dialogues, MultiAgentBench tasks), so each ingestor
can be exercised and benchmarked at any size. The shapes follow the real samples in
``shared/data`` field for field."""

from __future__ import annotations

import json
import random
from pathlib import Path

WORDS = "the animal welfare people care about suffering humans matter too because we".split()
LANDMARKS = ["caravan_park", "old_mill", "picket_fence", "pyramid", "stone_creek"]


def coauthor_log(r: random.Random, episodes: int) -> list[dict]:
    """One writing session: typing, and suggestion episodes that end in a select or a close."""
    t = 1_629_729_846_000
    doc = "Prompt title\n\nWrite about it.\n"
    events = [
        {
            "eventName": "system-initialize",
            "eventSource": "api",
            "eventTimestamp": t,
            "textDelta": "",
            "currentDoc": doc,
            "currentN": "5",
            "eventNum": 0,
        }
    ]

    def add(name, source, delta=""):
        nonlocal t
        t += r.randint(50, 3000)
        events.append(
            {
                "eventName": name,
                "eventSource": source,
                "eventTimestamp": t,
                "textDelta": delta,
                "currentSuggestions": [],
                "eventNum": len(events),
            }
        )

    length = len(doc) - 1  # Quill keeps the final newline last
    for _ in range(episodes):
        for _ in range(r.randint(3, 12)):
            w = r.choice(WORDS) + " "
            add("text-insert", "user", {"ops": [{"retain": length}, {"insert": w}]})
            length += len(w)
        add("suggestion-get", "user")
        add("suggestion-open", "api")
        events[-1]["currentSuggestions"] = [
            {"index": i, "trimmed": " ".join(r.choices(WORDS, k=6))} for i in range(3)
        ]
        if r.random() < 0.8:
            add("suggestion-select", "user")
            add("suggestion-close", "api")
            text = events[-3]["currentSuggestions"][0]["trimmed"]
            add("text-insert", "api", {"ops": [{"retain": length}, {"insert": text}]})
            start = length
            length += len(text)
            if r.random() < 0.3:  # edit inside the suggestion: a modify
                add("text-delete", "user", {"ops": [{"retain": start + 1}, {"delete": 2}]})
                length -= 2
        else:
            add("suggestion-close", "user")
    return events


def write_coauthor_corpus(out: Path, sessions: int, episodes: int = 15, seed: int = 7) -> Path:
    root = Path(out) / "coauthor"
    root.mkdir(parents=True, exist_ok=True)
    for i in range(sessions):
        r = random.Random(f"{seed}/{i}")
        (root / f"argumentative_{i:032x}.jsonl").write_text(
            "".join(json.dumps(e) + "\n" for e in coauthor_log(r, episodes))
        )
    return root


def write_maptask_corpus(out: Path, dialogues: int, refs: int = 30, seed: int = 7) -> Path:
    root = Path(out) / "gmmt"
    root.mkdir(parents=True, exist_ok=True)
    for d in range(dialogues):
        r, did, t = random.Random(f"{seed}/{d}"), f"q{d}ec", 0.0
        res, anns = [], []
        for k in range(refs):
            t += r.uniform(1, 8)
            lm = f"m{d % 20}_{r.choice(LANDMARKS)}"
            speaker = "giver" if r.random() < 0.85 else "follower"
            rid = f"{did}.ref.{k}"
            res.append(
                {
                    "ref_id_orig": f"{did}.g.ref.{k}",
                    "ref_id_unif": rid,
                    "utt_id": k,
                    "start_time": round(t, 3),
                    "end_time": round(t + r.uniform(0.3, 1.5), 3),
                    "speaker": speaker,
                    "addressee": "follower" if speaker == "giver" else "giver",
                    "reference expression": lm.split("_", 1)[1].replace("_", " "),
                    "lm_id_orig": lm,
                    "timed_unit_ids": [f"{did}.tu.{k}"],
                }
            )
            status = r.choices(["aligned", "pending", "misunderstood"], [0.65, 0.25, 0.1])[0]
            anns.append(
                {
                    "ref_id_unif": rid,
                    "is_quantificational": False,
                    "is_specified": True,
                    "interpretations": {
                        "giver": f"{lm}@g",
                        "follower": f"{lm}@f" if status == "aligned" else "",
                    },
                    "reason": "generated",
                    "extra": {"status": status},
                }
            )
        (root / f"{did}.reference_expressions.json").write_text(
            json.dumps({"dialogue_id": did, "landmark_reference_expressions": res})
        )
        (root / f"{did}.annotated.json").write_text(
            json.dumps({"dialogue_id": did, "landmark_reference_expressions": anns})
        )
    return root


def write_marble_corpus(out: Path, tasks: int, seed: int = 7) -> Path:
    root = Path(out) / "marble"
    root.mkdir(parents=True, exist_ok=True)
    r = random.Random(seed)
    lines = []
    for k in range(tasks):
        agents = [f"agent{i}" for i in range(1, r.randint(2, 5))]
        rel = [
            [a, b, r.choice(["collaborates with", "supervises"])]
            for a in agents
            for b in agents
            if a != b and r.random() < 0.5
        ]
        lines.append(
            {
                "scenario": "coding",
                "task_id": k + 1,
                "coordinate_mode": "graph",
                "relationships": rel,
                "llm": "",
                "environment": {"type": "Coding"},
                "task": {
                    "content": f"Software Development Task {k}: build a tool.",
                    "output_format": "solution.py",
                },
                "agents": [
                    {"type": "CodingAgent", "agent_id": a, "profile": "dev"} for a in agents
                ],
                "memory": {"type": "BaseMemory"},
                "metrics": {"code_quality": True},
            }
        )
    (root / "coding_main.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return root
