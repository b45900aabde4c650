"""Frames and clips of a recording, decoded with PyAV (the vision extra).

``frame_jpeg`` seeks to the keyframe before ``t`` and decodes forward to the first frame at or
after it, instead of decoding the whole file. ``write_clip`` copies the packets of a window
into a new MP4 without re-encoding: it starts at the keyframe before ``t0`` (a decoder needs
it) and stops before the first packet at or after ``t1``, so nothing after the cut-off is in
the clip.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

from graphlake.errors import attempt_import


def _av():
    return attempt_import("av", "frames")


def _seek(container, stream, t: float) -> None:
    if stream.time_base:
        container.seek(max(0, int(t / stream.time_base)), stream=stream, backward=True)


def frame_jpeg(path: str | Path, t: float, *, max_width: int = 1280) -> bytes:
    """The frame shown at ``t`` seconds as JPEG bytes (the last frame when ``t`` is past
    the end); scaled down to ``max_width`` pixels wide when wider."""
    av = _av()
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        _seek(container, stream, t)
        chosen = None
        for frame in container.decode(stream):
            if frame.time is not None and frame.time > t + 1e-6 and chosen is not None:
                break
            chosen = frame
        if chosen is None:
            raise LookupError(f"no frame at {t:g} s in {Path(path).name}")
        width, height = chosen.width, chosen.height
        if width > max_width:
            height = max(2, int(height * max_width / width) // 2 * 2)
            width = max_width
        enc = av.CodecContext.create("mjpeg", "w")
        enc.width, enc.height = width, height
        enc.pix_fmt = "yuvj420p"
        enc.time_base = Fraction(1, 25)
        img = chosen.reformat(width=width, height=height, format="yuvj420p")
        packets = list(enc.encode(img)) + list(enc.encode(None))
        return b"".join(bytes(p) for p in packets)


def write_clip(path: str | Path, t0: float, t1: float, out: str | Path) -> Path:
    """The packets of [t0, t1) of the first video stream, remuxed into ``out`` (MP4)."""
    av = _av()
    out = Path(out)
    tmp = out.with_suffix(".part.mp4")
    with av.open(str(path)) as src, av.open(str(tmp), "w", format="mp4") as dst:
        stream = src.streams.video[0]
        ostream = dst.add_stream_from_template(stream)
        _seek(src, stream, t0)
        for packet in src.demux(stream):
            if packet.dts is None:
                continue
            pt = packet.pts if packet.pts is not None else packet.dts
            if pt * stream.time_base >= t1:
                break
            packet.stream = ostream
            dst.mux(packet)
    tmp.replace(out)
    return out
