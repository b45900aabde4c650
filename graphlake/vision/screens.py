"""Screen recordings with real rendered text, encoded with PyAV: for the demo, tests, benchmarks.

A :class:`Screen` is what a desktop shows for a while: a window title bar, a document pane and
a chat pane. :func:`write_screen_recording` renders each screen once with Pillow (a TrueType
font when the system has DejaVu, Pillow's own scalable font otherwise) and encodes it with
H.264 for as long as it stays on screen, so an hour-long recording costs little more than its
distinct screens. ``jitter`` adds a moving mouse cursor, so a still screen is not bit-identical
from frame to frame (as in a real capture) and the sampler's near-duplicate test is exercised.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cache
from pathlib import Path

import numpy as np

from graphlake.errors import attempt_import

FONT_PATHS = (
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
)


@dataclass(frozen=True)
class Screen:
    """One screen state, shown from ``t0`` (seconds) until the next screen starts."""

    t0: float
    title: str
    document: Sequence[str] = ()
    chat: Sequence[str] = ()
    shade: int = 245  # background grey of the document pane
    chart: bool = False  # draw a bar chart under the document text
    extra: dict = field(default_factory=dict, compare=False)


@cache
def _font(size: int):
    from PIL import ImageFont

    for path in FONT_PATHS:
        if Path(path).exists():
            return ImageFont.truetype(path, size)
    return ImageFont.load_default(size=size + 4)


def render_screen(screen: Screen, size: tuple[int, int] = (1280, 720)) -> np.ndarray:
    """The screen as an RGB array: title bar, document pane (left), chat pane (right)."""
    from PIL import Image, ImageDraw

    w, h = size
    scale = w / 1280
    fs = max(10, int(26 * scale))
    img = Image.new("RGB", size, (screen.shade,) * 3)
    draw = ImageDraw.Draw(img)
    bar = int(48 * scale)
    draw.rectangle([0, 0, w, bar], fill=(32, 52, 96))
    draw.text((int(16 * scale), int(10 * scale)), screen.title, fill="white", font=_font(fs))
    split = int(w * 0.62)
    draw.rectangle([split, bar, w, h], fill=(228, 236, 246))
    y = bar + int(24 * scale)
    for line in screen.document:
        draw.text((int(24 * scale), y), line, fill=(15, 15, 15), font=_font(fs))
        y += int(fs * 1.6)
    if screen.chart:
        base = h - int(40 * scale)
        for i, v in enumerate((0.3, 0.55, 0.8, 0.45, 0.65)):
            x0 = int((60 + i * 90) * scale)
            draw.rectangle(
                [x0, base - int(v * 220 * scale), x0 + int(60 * scale), base],
                fill=(40 + 40 * i, 110, 180),
            )
    y = bar + int(24 * scale)
    for line in screen.chat:
        draw.text((split + int(16 * scale), y), line, fill=(20, 30, 60), font=_font(fs - 2))
        y += int(fs * 1.5)
    return np.asarray(img)


def write_screen_recording(
    path: str | Path,
    screens: Sequence[Screen],
    duration: float,
    *,
    fps: float = 10,
    size: tuple[int, int] = (1280, 720),
    gop_seconds: float = 2.0,
    jitter: bool = True,
    render: Callable[[Screen, tuple[int, int]], np.ndarray] | None = None,
) -> Path:
    """Encode ``screens`` into an H.264 MP4 of ``duration`` seconds at ``fps``, each drawn by
    ``render`` (:func:`render_screen` unless given)."""
    av = attempt_import("av", "frames")
    path = Path(path)
    screens = sorted(screens, key=lambda s: s.t0)
    rendered = [(render or render_screen)(s, size) for s in screens]
    starts = np.array([s.t0 for s in screens])
    scale = size[0] / 1280  # the capture is a scaled-down 1280x720 screen
    with av.open(str(path), "w") as container:
        rate = Fraction(fps).limit_denominator(1000)
        stream = container.add_stream("libx264", rate=rate)
        stream.width, stream.height = size
        stream.pix_fmt = "yuv420p"
        stream.time_base = 1 / rate
        stream.options = {
            "g": str(max(1, int(gop_seconds * fps))),
            "preset": "ultrafast",
            "crf": "23",
            "sc_threshold": "0",
        }
        still: dict[int, object] = {}  # without jitter each screen is converted once
        for i in range(int(round(duration * fps))):
            t = i / fps
            k = max(int(np.searchsorted(starts, t, side="right")) - 1, 0)
            if jitter:  # a mouse pointer (8x12 on a 1280x720 screen) drifting over it
                img = rendered[k].copy()
                x = int((40 + 7 * i) * scale % (size[0] // 2))
                y = int(size[1] * 0.8 + 10 * scale * np.sin(i / 5))
                img[y : y + max(1, round(12 * scale)), x : x + max(1, round(8 * scale))] = 0
                frame = av.VideoFrame.from_ndarray(img, format="rgb24")
            else:
                if k not in still:
                    still[k] = av.VideoFrame.from_ndarray(rendered[k], format="rgb24").reformat(
                        format="yuv420p"
                    )
                frame = still[k]
            frame.pts = i  # in 1 / rate units
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return path
