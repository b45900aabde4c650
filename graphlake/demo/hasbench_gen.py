"""Deterministic HAS-Bench corpus in graphlake's formats: task YAML (B.3.2) plus JSON Lines
traces of every task run under agency levels A1 (autonomous) and A3 (human on all channels).

Under A3 the simulated user answers clarifications, gives feedback and approves risky actions,
so some tasks that fail under A1 are rescued (HAS-Bench 5, Table 4) and a few break.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import yaml

DOMAINS = {
    "retail": ["get_order", "refund", "exchange_item"],
    "airline": ["search_flights", "book", "cancel"],
    "coding": ["run_tests", "edit_file", "open_pr"],
    "research": ["search_papers", "summarize", "write_section"],
}
LEVELS = ("A1", "A3")


def task(domain: str, k: int, r: random.Random) -> dict:
    tid = f"{domain}_{r.choice('ABCDEF')}_{k:03d}"
    return {
        "task_id": tid,
        "adaptation_pattern": tid.split("_")[1],
        "coordination_mode": r.choice(["star", "chain"]),
        "relationships": [["user_0", "agent_0", "supervises"], ["agent_0", "agent_1", "handoff"]],
        "environment": {"max_iterations": 20},
        "agents": [
            {
                "agent_id": "agent_0",
                "type": "BaseAgent",
                "profile": f"{domain.title()} agent with tools {DOMAINS[domain]}.",
            },
            {"agent_id": "agent_1", "type": "BaseAgent", "profile": "Specialist."},
        ],
        "users": [
            {
                "user_id": "user_0",
                "type": "SimulatedUser",
                "goal": f"Complete {domain} request {k}.",
                "task_instructions": "Share details only when asked.",
                "known_info": {"request_id": f"R{k}"},
                "unknown_info": ["email"],
            }
        ],
        "memory": {"type": "shared"},
        "evaluation_criteria": {
            "actions": [{"action_id": "1", "requestor": "agent_1", "arguments": {}, "info": "done"}]
        },
    }


def trace(t: dict, level: str, r: random.Random, difficulty: float) -> list[dict]:
    rid = f"{t['task_id']}-{level}"
    domain = t["task_id"].split("_")[0]
    human = level != "A1"
    lines = [
        {
            "type": "run",
            "run_id": rid,
            "task_id": t["task_id"],
            "domain": domain,
            "agent_model": "gpt-4.1",
            "user_simulator": "gpt-4.1-mini",
            "agency_level": level,
            "channels": ["clarification", "feedback", "control"] if human else [],
            "participants": [
                {"id": "agent_0", "kind": "ai"},
                {"id": "agent_1", "kind": "ai"},
                {"id": "user_0", "kind": "human"},
            ],
        }
    ]
    tt, step, req = 0.0, 0, 0
    lines.append(
        {
            "type": "step",
            "run_id": rid,
            "step": step,
            "t": tt,
            "actions": [
                {"actor": "user_0", "kind": "message", "text": t["users"][0]["goal"], "tokens": 20}
            ],
        }
    )
    for _ in range(r.randint(3, 7)):
        step += 1
        tt += r.uniform(1, 6)
        actions = [
            {
                "actor": r.choice(["agent_0", "agent_1"]),
                "kind": "tool_call",
                "tool": r.choice(DOMAINS[domain]),
                "arguments": {"n": step},
                "tokens": r.randint(30, 200),
            }
        ]
        if r.random() < 0.4:
            actions.append(
                {
                    "actor": "agent_0",
                    "kind": "message",
                    "text": "Working on it.",
                    "tokens": r.randint(10, 40),
                }
            )
        lines.append(
            {"type": "step", "run_id": rid, "step": step, "t": round(tt, 2), "actions": actions}
        )
        if human and r.random() < 0.5:
            req += 1
            channel = r.choice(["clarification", "feedback", "control"])
            initiator = "agent" if channel == "clarification" else r.choice(["agent", "human"])
            asker = "agent_0" if initiator == "agent" else "user_0"
            lines.append(
                {
                    "type": "channel_event",
                    "run_id": rid,
                    "event_id": f"e{req}a",
                    "step": step,
                    "t": round(tt + 0.5, 2),
                    "channel": channel,
                    "initiator": initiator,
                    "actor": asker,
                    "request_id": f"q{req}",
                    "status": "pending",
                    "text": f"{channel} request",
                }
            )
            status = "expired" if r.random() < 0.15 else "answered"
            lines.append(
                {
                    "type": "channel_event",
                    "run_id": rid,
                    "event_id": f"e{req}b",
                    "step": step,
                    "t": round(tt + 2.0, 2),
                    "channel": channel,
                    "initiator": initiator,
                    "actor": "user_0" if asker == "agent_0" else "agent_0",
                    "request_id": f"q{req}",
                    "status": status,
                    "text": "reply",
                }
            )
            if channel == "control":
                lines.append(
                    {
                        "type": "step",
                        "run_id": rid,
                        "step": step + 1,
                        "t": round(tt + 2.5, 2),
                        "actions": [
                            {
                                "actor": "user_0",
                                "kind": "user_action",
                                "tool": "approve",
                                "arguments": {},
                            }
                        ],
                    }
                )
                step += 1
    skill = 0.55 + (0.25 if human else 0.0)
    passed = r.random() < skill - difficulty
    score = 1.0 if passed else round(r.uniform(0.1, 0.8), 2)
    lines.append(
        {
            "type": "outcome",
            "run_id": rid,
            "pass": passed,
            "task_score": score,
            "delivered": passed or r.random() < 0.6,
            "safety": r.random() < 0.95,
            "dimensions": {"action": 1.0 if passed else 0.0, "communicate": score},
            **(
                {
                    "judge": {
                        "CQS": round(r.uniform(2, 5), 1),
                        "FUR": round(r.uniform(2, 5), 1),
                        "CRJ": round(r.uniform(2, 5), 1),
                    }
                }
                if human
                else {}
            ),
        }
    )
    return lines


def write_hasbench_corpus(out: Path, tasks_per_domain: int = 6, seed: int = 7) -> Path:
    """Write ``hasbench/tasks.yaml`` and ``hasbench/traces/<domain>.jsonl`` under ``out``."""
    r = random.Random(seed)
    root = Path(out) / "hasbench"
    (root / "traces").mkdir(parents=True, exist_ok=True)
    tasks = [task(d, k, r) for d in DOMAINS for k in range(tasks_per_domain)]
    (root / "tasks.yaml").write_text(yaml.safe_dump(tasks, sort_keys=False))
    for domain in DOMAINS:
        lines = []
        for t in (t for t in tasks if t["task_id"].startswith(domain)):
            difficulty = r.uniform(0.0, 0.4)
            for level in LEVELS:
                lines += trace(
                    t, level, random.Random(f"{seed}/{t['task_id']}/{level}"), difficulty
                )
        (root / "traces" / f"{domain}.jsonl").write_text(
            "".join(json.dumps(x) + "\n" for x in lines)
        )
    return root
