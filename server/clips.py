"""The clip cache: windows of recordings cut once and served again, bounded and race-free.

Clips live under the lake's own cache folder (``<lake>/_graphlake/cache/clips``), not in a
shared, predictable folder of the system's temp dir. A clip is written to a temporary file of
its own and renamed into place, so two requests cutting the same clip at once never share a
partial file (the last rename wins; both files are whole). After each write the folder is
trimmed to its byte budget, least recently served first.
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path


class ClipCache:
    def __init__(self, lake_root: Path, max_bytes: int):
        self.dir = Path(lake_root) / "_graphlake" / "cache" / "clips"
        self.max_bytes = max_bytes
        self._trim_lock = threading.Lock()

    def get(self, key: str, make: Callable[[Path], None]) -> Path:
        """The clip named ``key``, made by ``make(path)`` when it is not cached yet."""
        out = self.dir / f"{key}.mp4"
        try:
            os.utime(out)  # served again: the most recently used
            return out
        except FileNotFoundError:
            pass
        self.dir.mkdir(parents=True, exist_ok=True)
        # a dot name: never served, never counted; .mp4 so the writer knows the format
        fd, tmp = tempfile.mkstemp(dir=self.dir, prefix=".part-", suffix=".mp4")
        os.close(fd)
        try:
            make(Path(tmp))
            os.replace(tmp, out)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        self._trim(keep=out)
        return out

    def _trim(self, keep: Path) -> None:
        with self._trim_lock:
            clips = []
            for path in self.dir.glob("[!.]*.mp4"):
                try:
                    st = path.stat()
                except FileNotFoundError:
                    continue
                clips.append((st.st_mtime_ns, st.st_size, path))
            total = sum(size for _t, size, _p in clips)
            for _t, size, path in sorted(clips):
                if total <= self.max_bytes:
                    break
                if path != keep:
                    path.unlink(missing_ok=True)
                    total -= size
