"""Agent traces of the tools that cannot run here, written after the shapes their projects
document: a Langfuse trace export (the public API's trace object, ``GET
/api/public/traces/{id}``: the trace with its observations and scores), a SWE-agent
trajectory (``trajectory``, ``history``, ``info``) and an OpenHands event stream (``id``,
``source``, ``action`` / ``observation``, ``cause``, ``llm_metrics``). The demo ingests them
and the trace tests check every row they give."""

from __future__ import annotations

#: A Langfuse trace: a support agent plans, calls a tool, answers; scored twice.
TRACE = {
    "id": "lf-trace-1",
    "timestamp": "2026-03-02T09:00:00.000Z",
    "name": "support-agent",
    "userId": "u-42",
    "sessionId": "chat-9",
    "input": "My export to PDF fails, can you help?",
    "output": {"role": "assistant", "content": "Unlock the plotter queue, then export again."},
    "tags": ["prod"],
    "release": "v1.2",
    "latency": 4.2,
    "totalCost": 0.0031,
}
OBSERVATIONS = [
    {
        "id": "obs-agent",
        "traceId": "lf-trace-1",
        "type": "AGENT",
        "name": "support",
        "startTime": "2026-03-02T09:00:00.100Z",
        "endTime": "2026-03-02T09:00:04.100Z",
        "parentObservationId": None,
        "level": "DEFAULT",
    },
    {
        "id": "obs-gen-1",
        "traceId": "lf-trace-1",
        "type": "GENERATION",
        "name": "plan",
        "startTime": "2026-03-02T09:00:00.200Z",
        "endTime": "2026-03-02T09:00:01.200Z",
        "completionStartTime": "2026-03-02T09:00:00.900Z",
        "parentObservationId": "obs-agent",
        "model": "gpt-4o",
        "modelParameters": {"temperature": 0},
        "input": [
            {"role": "system", "content": "You are a support agent."},
            {"role": "user", "content": "My export to PDF fails, can you help?"},
        ],
        "output": {"role": "assistant", "content": "Let me check the plotter queue."},
        "usageDetails": {"input": 31, "output": 9, "total": 40},
        "costDetails": {"input": 0.0008, "output": 0.0009, "total": 0.0017},
        "level": "DEFAULT",
    },
    {
        "id": "obs-tool",
        "traceId": "lf-trace-1",
        "type": "TOOL",
        "name": "queue_status",
        "startTime": "2026-03-02T09:00:01.300Z",
        "endTime": "2026-03-02T09:00:01.500Z",
        "parentObservationId": "obs-agent",
        "input": {"printer": "plotter-1"},
        "output": {"locked": True},
        "level": "WARNING",
        "statusMessage": "queue locked",
    },
    {
        "id": "obs-gen-2",
        "traceId": "lf-trace-1",
        "type": "GENERATION",
        "name": "answer",
        "startTime": "2026-03-02T09:00:01.600Z",
        "endTime": "2026-03-02T09:00:04.000Z",
        "parentObservationId": "obs-agent",
        "model": "gpt-4o",
        "input": [
            {"role": "user", "content": "My export to PDF fails, can you help?"},
            {"role": "tool", "content": '{"locked": true}'},
        ],
        "output": "Unlock the plotter queue, then export again.",
        "usageDetails": {"input": 52, "output": 12},
        "level": "DEFAULT",
    },
    {
        "id": "obs-broken",
        "traceId": "lf-trace-1",
        "type": "SPAN",
        "name": "oops",
        "startTime": "not a time",
    },
]
SCORES = [
    {
        "id": "s1",
        "traceId": "lf-trace-1",
        "name": "helpfulness",
        "value": 0.9,
        "source": "EVAL",
        "dataType": "NUMERIC",
        "comment": "solved",
    },  # fmt: skip
    {
        "id": "s2",
        "traceId": "lf-trace-1",
        "observationId": "obs-gen-2",
        "name": "correct",
        "value": 1,
        "stringValue": "True",
        "source": "ANNOTATION",
        "dataType": "BOOLEAN",
    },  # fmt: skip
]

#: A SWE-agent trajectory: the issue (a human turn), three steps, the submission.
TRAJ = {
    "environment": "swe_main",
    "trajectory": [
        {
            "thought": "Find where the separability matrix is built.",
            "action": "find_file separable.py",
            "observation": "Found 1 matches: astropy/modeling/separable.py",
            "response": "Find where ...\n```\nfind_file separable.py\n```",
            "state": {"open_file": "n/a", "working_dir": "/astropy"},
            "execution_time": 0.4,
        },
        {
            "thought": "Fix the nested compound case.",
            "action": "edit 242:242\n"
            "    cright[-right.shape[0]:, -right.shape[1]:] = right\nend_of_edit",
            "observation": "File updated.",
            "response": "...",
            "state": {"open_file": "astropy/modeling/separable.py"},
            "execution_time": 1.1,
        },
        {
            "thought": "Done.",
            "action": "submit",
            "observation": "diff --git ...",
            "execution_time": 0.2,
        },  # fmt: skip
    ],
    "history": [
        {
            "role": "system",
            "content": "You are an autonomous programmer.",
            "agent": "main",
            "message_type": "system_prompt",
        },  # fmt: skip
        {
            "role": "user",
            "content": "separability_matrix does not compute separability "
            "correctly for nested CompoundModels",
            "agent": "main",
            "message_type": "observation0",
        },  # fmt: skip
        {
            "role": "assistant",
            "content": "Find where ...",
            "agent": "main",
            "message_type": "action",
            "thought": "Find ...",
            "action": "find_file separable.py",
        },  # fmt: skip
        {
            "role": "user",
            "content": "Found 1 matches",
            "agent": "main",
            "message_type": "observation",
        },  # fmt: skip
    ],
    "info": {
        "exit_status": "submitted",
        "submission": "diff --git a/astropy/modeling/separable.py ...",
        "model_stats": {
            "instance_cost": 0.42,
            "tokens_sent": 51234,
            "tokens_received": 812,
            "api_calls": 3,
        },  # fmt: skip
        "swe_agent_version": "1.0.1",
    },
}

#: An OpenHands event stream: the user's request, actions, observations (one an error).
EVENTS = [
    {
        "id": 0,
        "timestamp": "2026-05-01T10:00:00",
        "source": "user",
        "message": "Add a --dry-run flag",
        "action": "message",
        "args": {"content": "Add a --dry-run flag", "image_urls": None},
    },  # fmt: skip
    {
        "id": 1,
        "timestamp": "2026-05-01T10:00:02",
        "source": "agent",
        "message": "Running command",
        "action": "run",
        "args": {"command": "grep -rn argparse cli.py", "thought": "look"},
        "tool_call_metadata": {"function_name": "execute_bash", "tool_call_id": "toolu_1"},
    },  # fmt: skip
    {
        "id": 2,
        "timestamp": "2026-05-01T10:00:03",
        "source": "environment",
        "observation": "run",
        "content": "cli.py:3:import argparse",
        "extras": {"command": "grep ...", "exit_code": 0},
        "cause": 1,
        "message": "Command finished",
    },  # fmt: skip
    {
        "id": 3,
        "timestamp": "2026-05-01T10:00:09",
        "source": "agent",
        "action": "edit",
        "args": {"path": "cli.py", "old_str": "x", "new_str": "y"},
        "llm_metrics": {
            "accumulated_cost": 0.01,
            "accumulated_token_usage": {"prompt_tokens": 900, "completion_tokens": 40},
        },
    },  # fmt: skip
    {
        "id": 4,
        "timestamp": "2026-05-01T10:00:10",
        "source": "environment",
        "observation": "error",
        "content": "old_str not found",
        "cause": 3,
    },  # fmt: skip
    {
        "id": 5,
        "timestamp": "2026-05-01T10:00:20",
        "source": "agent",
        "action": "finish",
        "args": {"final_thought": "done"},
        "llm_metrics": {
            "accumulated_cost": 0.03,
            "accumulated_token_usage": {"prompt_tokens": 2100, "completion_tokens": 95},
        },
    },  # fmt: skip
    {"id": 5, "timestamp": "2026-05-01T10:00:21", "source": "agent", "action": "finish"},
    {"timestamp": "2026-05-01T10:00:22", "source": "agent"},
]
