"""Screen recordings for the demo corpus, rendered from the demo workflow itself (vision extra).

:func:`demo_screens` turns one generated Kolab session into what its screen would have shown:
the title bar names the software and the step, the document pane lists the step's goal, the
node being worked on and the nodes done so far, the chat pane shows the last chat turns, and an
AI node's output appears as a chart while it runs. The screen changes exactly at node starts
and chat turns, so frame search can be checked against the workflow. :func:`write_recording`
is the small shaded clip the media tests use. Without PyAV the demo has no recording.
"""

from __future__ import annotations

import re
from pathlib import Path

from graphlake.errors import importable
from graphlake.vision.screens import Screen, write_screen_recording

#: What an AI output looks like on screen, by node label (generic text otherwise).
AI_OUTPUT = {
    "Summarize sources": [
        "Summary of sources: three client interviews,",
        "two market reports and last year's budget.",
    ],
    "Produce first draft": [
        "First draft: outline, key messages and a",
        "timeline for the launch campaign.",
    ],
    "Generate design options": [
        "Design options: A minimal, B bold colour,",
        "C photographic; option B tests best.",
    ],
    "Explain churn": [
        "Churn explanation: customers leave after the",
        "price rise in March, mostly small accounts.",
    ],
}


def have_pyav() -> bool:
    return importable("av")


def _seconds(span: str) -> tuple[float, float] | None:
    m = re.fullmatch(r"(\d+):(\d+):(\d+)-(\d+):(\d+):(\d+)", span.strip())
    if not m:
        return None
    a = [int(x) for x in m.groups()]
    return a[0] * 3600 + a[1] * 60 + a[2], a[3] * 3600 + a[4] * 60 + a[5]


def demo_screens(graph: dict, chat: list[dict]) -> list[Screen]:
    """The screens of one generated session, one per node start or chat turn."""
    moments: list[tuple[float, str, dict]] = []
    for step in graph["steps"]:
        for node in step["nodes"]:
            for span in node.get("time", []):
                t = _seconds(span)
                if t:
                    moments.append((float(t[0]), "node", {**node, "_step": step, "_end": t[1]}))
    for turn in chat:
        moments.append((float(turn["t"]), "chat", turn))
    moments.sort(key=lambda m: (m[0], m[1]))
    screens = [
        Screen(
            0.0,
            "Desktop - " + graph.get("title", "session"),
            ["Waiting for the session to start"],
            shade=235,
        )
    ]
    turns: list[str] = []
    done: list[str] = []
    node, step = None, None
    for t, kind, item in moments:
        if kind == "chat":
            who = item.get("actor") or ("me" if item.get("role") == "human" else "AI")
            turns = (turns + [f"{who}: {item['text']}"])[-4:]
        else:
            if step is not item["_step"]:
                step, done = item["_step"], []
            if node is not None and node.get("_step") is step:
                done = (done + [f"done: {node['label']}"])[-5:]
            node = item
        if node is None:
            continue
        ai = node.get("actor_type") == "ai"
        body = [
            f"Step: {step['step_name']}",
            f"Now: {node['label']}",
            *(
                AI_OUTPUT.get(node["label"], [f"AI output: {node['label'].lower()}"])
                if ai
                else [node.get("detail", "")]
            ),
            *done,
        ]
        software = "AI assistant" if ai else (node.get("softwares") or "Editor")
        screens.append(
            Screen(
                t,
                f"{software} - {step['step_name']}",
                body,
                turns,
                shade=250 if ai else 245,
                chart=ai,
            )
        )
    return screens


def write_demo_recording(
    path: Path,
    graph: dict,
    chat: list[dict],
    *,
    fps: float = 1.0,
    size: tuple[int, int] = (1280, 720),
) -> Path:
    """The whole session as an H.264 screen recording (one frame per second by default)."""
    screens = demo_screens(graph, chat)
    end = max(s["end_seconds"] for s in graph["steps"]) + 5.0
    return write_screen_recording(
        path, screens, end, fps=fps, size=size, gop_seconds=60.0, jitter=False
    )


def write_recording(
    path: Path,
    shades: list[int],
    seconds_each: int = 2,
    fps: int = 5,
    size: tuple[int, int] = (96, 64),
) -> Path:
    """Encode an MPEG-4 video: ``seconds_each`` seconds per shade (0-255 grey levels)."""
    import av
    import numpy as np

    with av.open(str(path), "w") as container:
        stream = container.add_stream("mpeg4", rate=fps)
        stream.width, stream.height = size
        stream.pix_fmt = "yuv420p"
        for shade in shades:
            img = np.full((size[1], size[0], 3), shade % 256, dtype=np.uint8)
            img[: size[1] // 4, :, 0] = 255 - shade % 256  # a "title bar"
            frame = av.VideoFrame.from_ndarray(img, format="rgb24")
            for _ in range(seconds_each * fps):
                for packet in stream.encode(frame):
                    container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return path
