"""What a screen says: OCR with RapidOCR (PP-OCRv4 detection and recognition, ONNX Runtime).

The weights ship inside the ``rapidocr-onnxruntime`` wheel, so reading works offline. Lines
come back in reading order, pane by pane (a document beside a chat is not interleaved line by
line), top to bottom within a pane, one per line of the returned text, so full-text search and
MiniLM see whole lines.
"""

from __future__ import annotations

from functools import cache
from importlib import metadata

import numpy as np

from graphlake.errors import attempt_import


class ScreenReader:
    """One RapidOCR engine, loaded once and reused for every frame."""

    def __init__(self, min_score: float = 0.5, threads: int | None = None):
        """``threads``: ONNX Runtime threads per model (None: every core). A pool of readers
        on one machine gives each one thread: OCR scales better across processes than
        across threads (two one-thread readers on 2 cores read 1.5x as many frames a second
        as one two-thread reader), and the texts and scores are the same either way."""
        module = attempt_import("rapidocr_onnxruntime", "frames")
        # no angle classifier: screen text is upright, and skipping it gave the same texts on
        # the demo recording's frames, 7-15% faster
        limits = {"intra_op_num_threads": threads, "inter_op_num_threads": 1} if threads else {}
        self._engine = module.RapidOCR(use_cls=False, **limits)
        self.min_score = min_score
        self.identity = (
            f"rapidocr-onnxruntime {metadata.version('rapidocr-onnxruntime')} (PP-OCRv4 det+rec)"
        )

    def read(self, rgb: np.ndarray) -> tuple[str, float | None]:
        """The text on ``rgb`` (H x W x 3) and its mean line confidence (None: no text)."""
        result, _elapsed = self._engine(np.ascontiguousarray(rgb))
        if not result:
            return "", None
        lines = []
        for box, text, score in result:
            if float(score) < self.min_score or not text.strip():
                continue
            ys = [p[1] for p in box]
            xs = [p[0] for p in box]
            height = max(ys) - min(ys)
            lines.append((min(ys), max(height, 1.0), min(xs), max(xs), text.strip(), float(score)))
        if not lines:
            return "", None
        ordered = [line for column in _columns(lines) for line in _bands(column)]
        text = "\n".join(line[4] for line in ordered)
        return text, float(np.mean([line[5] for line in ordered]))


def _columns(lines: list[tuple]) -> list[list[tuple]]:
    """Panes side by side: lines whose horizontal extents overlap (directly or through other
    lines) form one column; columns are read left to right. A line spanning several panes
    (a title bar) joins them into one."""
    spans: list[list] = []  # [x0, x1, lines]
    for line in sorted(lines, key=lambda ln: ln[2]):
        if spans and line[2] < spans[-1][1]:
            spans[-1][1] = max(spans[-1][1], line[3])
            spans[-1][2].append(line)
        else:
            spans.append([line[2], line[3], [line]])
    return [span[2] for span in spans]


def _bands(lines: list[tuple]) -> list[tuple]:
    """Top to bottom; lines whose tops lie within half a line height share a band and are
    read left to right."""
    lines = sorted(lines, key=lambda ln: (ln[0], ln[2]))
    bands: list[list[tuple]] = []
    for line in lines:
        if bands and line[0] - bands[-1][0][0] < 0.5 * bands[-1][0][1]:
            bands[-1].append(line)
        else:
            bands.append([line])
    return [line for band in bands for line in sorted(band, key=lambda x: x[2])]


@cache
def screen_reader(threads: int | None = None) -> ScreenReader:
    """One engine per process (and thread count): image searches in the service reuse it."""
    return ScreenReader(threads=threads)
