"""Search over what the recordings showed and what the sessions said, with workflow context.

``frames``: OCR text, text vectors, image vectors and perceptual hashes of sampled frames
(LanceDB, built by ``graphlake frames index``); ``text``: node labels, details and chat
turns. Both fuse several rankings with reciprocal rank fusion and return each hit with the
step, the active nodes and the chat turn before it, read from the lake.
"""

from graphlake.search.filters import SearchFilters
from graphlake.search.frames import search_frames
from graphlake.search.text import search_text

__all__ = ["SearchFilters", "search_frames", "search_text"]
