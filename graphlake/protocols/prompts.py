"""The Kolab evaluation prompts, word for word as appendix A.6 of the Kolab paper prints them.

The paper shows the video-only, graph-only and chat-only prompt of each experiment and says the
combined conditions "reuse the parts of the single-source prompts". So each prompt here is
assembled from those parts, in the order the single-source prompts use them:

* the opening names the first modality (video when present); graph-and-chat without video
  joins the two no-video openings ("the workflow graph and the chat ... rely only on the
  workflow graph and the chat below");
* the step lines (1a: the AI and user steps, plus the target timestamp, which only the
  video prompt carries; 1b-1d: the AI step; 2a/2b: the step name);
* the graph section, then the chat section, for the modalities in the condition;
* the question: with a graph in the context it points at "the node above matching the 'AI
  Action Step' described earlier", as the graph-only prompt does.

Experiments 2a and 2b open with "You are given a video snippet" in every condition, as the
paper's own prompts do. A test pins every assembled prompt against golden files.
"""

from __future__ import annotations

WORKFLOW = (
    "The workflow consists of multiple steps that contribute to achieving this goal. "
    "The AI may produce an output in one step, and the user may act on that output "
    "either within the same step or in a later step."
)

OPEN_VIDEO = (
    "You are given a video snippet of {profession} working with an AI agent toward "
    "the following goal:"
)
OPEN_NO_VIDEO = (
    "You are given {what} of {profession} working with an AI agent toward the "
    "following goal (no video is provided for this task – rely only on {what_ref} "
    "below):"
)

GRAPH_SECTION = (
    "Workflow graph for this portion of the workflow is defined as follows (each node is one "
    "action taken by the human or the agent; edges show the order they happened in):\n"
    "{nodes}\n"
    "A directed edge X → Y means that action Y follows from or depends on action X. The graph "
    "is directed and may contain branches.\n"
    "Edges (order of actions):\n"
    "{edges}"
)

CHAT_SECTION = (
    "Chat between the human and the AI agent during this portion of the workflow, in "
    "chronological order (each message from the human is wrapped in `<human>` tags, each "
    "message from the AI agent in `<ai>` tags):\n"
    "{chat}"
)

ADOPTION_LABELS = (
    "* ADOPT: Use the AI output as provided, without any modification.\n"
    "* MODIFY: Use the AI output but modify it in any way, including minor edits, formatting "
    "changes, or other adjustments.\n"
    "* REJECT/BYPASS: Do not use the AI output; reject, ignore, replace, or proceed without it.\n"
    "Use the workflow context available to make your prediction.\n"
    "Output exactly one label: `ADOPT`, `MODIFY`, or `REJECT/BYPASS`"
)

COLLAB_CRITERIA = (
    "Examine whether the agent understood the task, context, and instructions; whether it "
    "adapted appropriately when given feedback or corrections; whether it reduced the human’s "
    "effort, time, or cognitive load; whether it proactively suggested useful ideas or next "
    "steps; whether its output was accurate, relevant, and trustworthy with minimal correction "
    "needed; whether the interaction felt smooth, with the agent contributing at the right "
    "moments without creating unnecessary work; and whether the human was able to guide, "
    "redirect, or override the agent’s actions when desired. Based on this, rate the overall "
    "collaboration experience for this step on a scale from 1 to 5, where 1 means that the "
    "user is not satisfied with the collaboration experience with the AI agent and 5 means "
    "that the user is satisfied with the collaboration experience with the AI agent. Output "
    "exactly one integer, with no other text: 1, 2, 3, 4, or 5"
)

QUALITY_CRITERIA = (
    "Examine whether the output was accurate, relevant, and directly usable for the task; "
    "whether it required significant correction, rework, or was discarded; and whether it met "
    "the specific requirements of this step. Based on this, rate the output quality for this "
    "step on a scale from 1 to 5, where 1 means that the user is not satisfied with the output "
    "quality and 5 means that the user is satisfied with the output quality. Output exactly "
    "one integer, with no other text: 1, 2, 3, 4, or 5"
)


def _opening(modes: set[str], profession: str, *, always_video: bool = False) -> str:
    if "video" in modes or always_video:
        return OPEN_VIDEO.format(profession=profession)
    if modes == {"graph"}:
        what = "the workflow graph"
    elif modes == {"chat"}:
        what = "the chat"
    else:
        what = "the workflow graph and the chat"
    return OPEN_NO_VIDEO.format(what=what, what_ref=what, profession=profession)


def _sections(modes: set[str], graph_nodes: str, graph_edges: str, chat: str) -> list[str]:
    out = []
    if "graph" in modes:
        out.append(GRAPH_SECTION.format(nodes=graph_nodes, edges=graph_edges))
    if "chat" in modes:
        out.append(CHAT_SECTION.format(chat=chat))
    return out


def adoption_prompt(
    modes: set[str],
    *,
    recognition: bool,
    profession: str,
    goal: str,
    ai_step: str,
    user_step: str | None = None,
    start: str = "",
    end: str = "",
    graph_nodes: str = "",
    graph_edges: str = "",
    chat: str = "",
) -> str:
    """Experiment 1a (``recognition``) or 1b/1c/1d, in the condition ``modes``."""
    parts = [_opening(modes, profession), f"Goal: {goal}", WORKFLOW, f"AI Action Step: {ai_step}"]
    if recognition:
        parts.append(f"User Action Step: {user_step}")
        if "video" in modes:
            parts.append(f"Target AI Action Timestamp: {start}–{end}")
    parts += _sections(modes, graph_nodes, graph_edges, chat)
    if "graph" in modes:
        question = (
            "You must predict how the user will respond to the output of the target AI "
            "action (the node above matching the “AI Action Step” described earlier):"
        )
    elif recognition or "chat" in modes:
        question = (
            "You must predict how the user will respond to the output of the target AI action:"
        )
    else:
        question = "You must predict how the user will respond to the output of this AI action:"
    parts += [question, ADOPTION_LABELS]
    return "\n".join(parts)


def rating_prompt(
    modes: set[str],
    *,
    quality: bool,
    profession: str,
    goal: str,
    step_name: str,
    graph_nodes: str = "",
    graph_edges: str = "",
    chat: str = "",
) -> str:
    """Experiment 2a (collaboration) or 2b (``quality``), in the condition ``modes``."""
    parts = [
        _opening(modes, profession, always_video=True),
        f"Goal: {goal}",
        "The video shows a step of a multi-step workflow for accomplishing the goal: "
        f"Step: {step_name}",
    ]
    if "graph" in modes:
        parts.append(WORKFLOW)
    parts += _sections(modes, graph_nodes, graph_edges, chat)
    if "video" in modes:
        lead = (
            "Watch the output the AI agent produced and how it was used during this step."
            if quality
            else "Watch how the human and the AI agent interact throughout this step."
        )
    else:
        read = " and the ".join(m for m in ("graph", "chat") if m in modes)
        lead = f"Read the {read} above" + (
            ", focusing on the output the AI agent produced and how it was used during this step."
            if quality
            else "."
        )
    parts += [lead, QUALITY_CRITERIA if quality else COLLAB_CRITERIA]
    return "\n".join(parts)
