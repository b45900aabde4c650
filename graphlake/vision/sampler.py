"""Which frames of a recording are worth reading: a fixed grid, scene changes, no duplicates.

A screen recording mostly stands still, so reading every frame would OCR the same screen
thousands of times. The sampler decides, from the decoded pictures alone, which moments show
something new:

* **Grid targets** every ``every`` seconds. A group of pictures (keyframe to keyframe) that
  holds no target is demuxed but never decoded: with ``every`` longer than the keyframe
  interval most of the file is skipped without decoding.
* **Checkpoints** four times a second inside decoded stretches, so a screen that changes
  between two grid targets is caught within 0.25 s of when it appears, not at the next target.
* **Near-duplicates are skipped.** Each checkpoint gets a *block hash*: the picture shrunk to
  128x72 grey cells (10x10 pixels each on a 1280x720 screen). A picture is new when at least
  ``MIN_CELLS`` cells moved by more than ``change`` grey levels against the last kept picture:
  one short word covers 16-40 cells, a mouse pointer seen in two places at most 12 and
  encoder noise none, so a pointer drifting over a still screen does not count and a screen
  that stays still for ten minutes is kept once.
* **Changes are kept once they settle.** A change seen at a checkpoint is kept when the next
  checkpoint shows the same picture (the first moment of the new screen, not the middle of a
  window animation); a grid target that differs is kept as it is, so a screen that never
  settles (a playing video) is still sampled on the grid.

Everything is a function of the file and the parameters alone, so a run resumed after a kill
(``after=`` the last kept time and ``last_hash=`` its block hash) yields exactly the frames the
uninterrupted run would have.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from graphlake.errors import attempt_import

BLOCK_W, BLOCK_H = 128, 72
MIN_CELLS = 16
CHECKS_PER_SECOND = 4
DEFAULT_CHANGE = 16.0
MAX_WIDTH = 1280  # OCR reads 1280-wide screens well; wider ones are scaled down


@dataclass(frozen=True)
class SampledFrame:
    """One kept picture: its time, why it was kept, and what the indexer needs from it."""

    t: float
    kind: str  # "grid" (a grid target that differed) or "change" (a settled scene change)
    image: np.ndarray  # RGB, at most MAX_WIDTH wide
    block_hash: bytes  # BLOCK_H x BLOCK_W grey levels
    dhash: int  # 64-bit difference hash, signed (fits Arrow int64)


@dataclass
class SamplerStats:
    decoded: int = 0  # frames decoded
    checked: int = 0  # checkpoints compared against the last kept frame
    kept: int = 0
    skipped_gops: int = 0  # groups of pictures demuxed but not decoded


#: 8-bit formats whose first plane is the picture's luma: the grey picture, without conversion
_LUMA_FIRST = frozenset(
    {"yuv420p", "yuvj420p", "yuv422p", "yuvj422p", "yuv444p", "yuvj444p", "nv12", "nv21", "gray"}
)


def block_hash(frame) -> np.ndarray:
    """The 128x72 grey-cell picture of an ``av.VideoFrame``: each cell the mean of its pixels.

    The luma plane is averaged by OpenCV's area resampling in place (a quarter of a
    millisecond for 1280x720, four times cheaper than a swscale conversion); other pixel
    formats go through swscale.
    """
    if frame.format.name in _LUMA_FIRST:
        try:
            import cv2
        except ImportError:  # pragma: no cover - the vision extra brings OpenCV with RapidOCR
            cv2 = None
        if cv2 is not None:
            plane = frame.planes[0]
            luma = np.frombuffer(plane, np.uint8).reshape(frame.height, plane.line_size)
            return cv2.resize(
                luma[:, : frame.width], (BLOCK_W, BLOCK_H), interpolation=cv2.INTER_AREA
            )
    small = frame.reformat(width=BLOCK_W, height=BLOCK_H, format="gray")
    return small.to_ndarray()[:BLOCK_H, :BLOCK_W].astype(np.uint8)


def dhash_of_gray(gray9x8: np.ndarray) -> int:
    """64-bit difference hash: bit i is set where a pixel is brighter than its right neighbour."""
    bits = (gray9x8[:, 1:] > gray9x8[:, :-1]).flatten()
    value = int(np.packbits(bits).view(">u8")[0])
    return value - (1 << 64) if value >= 1 << 63 else value


def dhash_of_frame(frame) -> int:
    gray = frame.reformat(width=9, height=8, format="gray").to_ndarray()[:8, :9]
    return dhash_of_gray(gray.astype(np.int16))


def dhash_of_image(rgb: np.ndarray) -> int:
    """The same hash for an RGB array (an uploaded query image), shrunk with Pillow."""
    from PIL import Image

    gray = np.asarray(Image.fromarray(rgb).convert("L").resize((9, 8), Image.BILINEAR))
    return dhash_of_gray(gray.astype(np.int16))


def hamming(a: int, b: np.ndarray) -> np.ndarray:
    """Bits that differ between one hash and an array of hashes (int64)."""
    x = np.bitwise_xor(np.asarray(b, dtype=np.int64), np.int64(a)).view(np.uint64)
    return np.unpackbits(x.view(np.uint8).reshape(-1, 8), axis=1).sum(axis=1)


def differs(a: np.ndarray, b: np.ndarray | None, change: float) -> bool:
    if b is None:
        return True
    moved = np.abs(a.astype(np.int16) - b.astype(np.int16)) > change
    return int(np.count_nonzero(moved)) >= MIN_CELLS


def _rgb(frame) -> np.ndarray:
    width, height = frame.width, frame.height
    if width > MAX_WIDTH:
        height = max(2, int(height * MAX_WIDTH / width) // 2 * 2)
        width = MAX_WIDTH
    return frame.to_ndarray(width=width, height=height, format="rgb24")


def sample_frames(
    path: str | Path,
    every: float = 2.0,
    *,
    change: float = DEFAULT_CHANGE,
    after: float | None = None,
    last_hash: bytes | None = None,
    stats: SamplerStats | None = None,
) -> Iterator[SampledFrame]:
    """The kept frames of ``path``'s first video stream, in time order.

    ``after`` and ``last_hash`` resume a sampling: only frames later than ``after`` are
    considered, compared against ``last_hash`` as the last kept picture.
    """
    if every <= 0:
        raise ValueError("--every must be a positive number of seconds")
    av = attempt_import("av", "frames")
    stats = stats if stats is not None else SamplerStats()
    last = (
        np.frombuffer(last_hash, np.uint8).reshape(BLOCK_H, BLOCK_W)
        if last_hash is not None
        else None
    )
    start = -1.0 if after is None else after
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        stream.thread_type = "AUTO"
        ctx = stream.codec_context
        tb = stream.time_base
        next_target = (np.floor(start / every) + 1) * every if start >= 0 else 0.0
        next_check = (
            (np.floor(start * CHECKS_PER_SECOND) + 1) / CHECKS_PER_SECOND if start >= 0 else 0.0
        )
        pending: tuple[float, np.ndarray, object] | None = None  # (t, block hash, frame)
        gop: list = []
        decoding_since_flush = False

        def keep(t, bh, frame, kind):
            nonlocal last, pending
            last, pending = bh, None
            stats.kept += 1
            return SampledFrame(float(t), kind, _rgb(frame), bh.tobytes(), dhash_of_frame(frame))

        def frames_of(packets):
            for packet in packets:
                try:
                    yield from (ctx.decode(None) if packet is None else packet.decode())
                except av.error.InvalidDataError:
                    continue  # a damaged packet: the next keyframe recovers

        def consider(frames):
            nonlocal next_target, next_check, pending
            for frame in frames:
                stats.decoded += 1
                t = frame.time
                if t is None or t <= start:
                    continue
                on_grid = t >= next_target - 1e-9
                on_check = t >= next_check - 1e-9
                if not (on_grid or on_check):
                    continue
                if on_grid:
                    next_target = (np.floor(t / every + 1e-9) + 1) * every
                next_check = (np.floor(t * CHECKS_PER_SECOND + 1e-9) + 1) / CHECKS_PER_SECOND
                stats.checked += 1
                bh = block_hash(frame)
                if not differs(bh, last, change):
                    pending = None
                elif pending is not None and not differs(bh, pending[1], change):
                    pt, pbh, pframe = pending
                    yield keep(pt, pbh, pframe, "change")
                elif on_grid:
                    yield keep(t, bh, frame, "grid")
                else:
                    pending = (t, bh, frame)

        def finish_gop(gop_packets, gop_end):
            """Decode one group of pictures when a grid target falls inside it."""
            nonlocal decoding_since_flush
            if not gop_packets:
                return
            g0 = gop_packets[0].pts
            g0 = float(g0 * tb) if g0 is not None else 0.0
            if gop_end is not None and gop_end <= start:
                wanted = False  # before the resume point
            else:  # holds a grid target, or the resume point (an uninterrupted run decoded it)
                wanted = gop_end is None or next_target < gop_end or g0 <= start
            if not wanted:
                stats.skipped_gops += 1
                if decoding_since_flush:  # drain what the decoder still holds, then reset
                    yield from consider(frames_of([None]))
                    ctx.flush_buffers()
                    decoding_since_flush = False
                return
            decoding_since_flush = True
            yield from consider(frames_of(gop_packets))

        for packet in container.demux(stream):
            if packet.dts is None and packet.size == 0:
                continue
            if packet.is_keyframe and gop:
                kt = float(packet.pts * tb) if packet.pts is not None else None
                yield from finish_gop(gop, kt)
                gop = []
            gop.append(packet)
        yield from finish_gop(gop, None)
        if decoding_since_flush:
            yield from consider(frames_of([None]))
        if pending is not None:  # the recording ended on a change that had no time to settle
            pt, pbh, pframe = pending
            yield keep(pt, pbh, pframe, "change")
