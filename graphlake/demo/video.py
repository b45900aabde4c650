"""A short synthetic screen recording for the demo corpus, encoded with PyAV (vision extra).

Each step segment of the session gets its own background shade, so later frame-search
features have something to tell apart. Without PyAV the demo simply has no recording.
"""

from __future__ import annotations

from pathlib import Path


def have_pyav() -> bool:
    try:
        import av  # noqa: F401
    except ImportError:
        return False
    return True


def write_recording(path: Path, shades: list[int], seconds_each: int = 2, fps: int = 5,
                    size: tuple[int, int] = (96, 64)) -> Path:
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
