"""Which source files a lake already read, so a re-ingest of an unchanged source reads nothing.

Re-ingesting a folder cost as much as ingesting it: every byte was parsed again to find that
nothing had changed. After each ingest the lake keeps a manifest of the source (one JSON file
per corpus and source path under ``_graphlake/manifests/``): every file its units read, with
size, modification time and a content hash (XXH3-128), and a fingerprint of the readers (the
ingestors' code and the limits that change what they emit). The next ingest of the same path
compares: sizes first, then the hash of every file whose size or time moved (a file touched
but not changed is found unchanged by its content; a file whose time was set back after an
edit is found by its size or, when it was written too recently to trust its time, its hash).

When every unit is as it was, nothing is parsed and nothing is committed. When anything
differs the whole source is read again, as before: a unit may read files of another unit (a
task list beside its traces), so only the whole source is known to be unchanged. An ingestor
whose units stand alone (``independent_units``: Kolab's graph files and session folders)
reads only the units that changed or are new.

The manifest is a cache, never the truth: it is written only after a commit and is
disregarded when the readers changed or when a later ingest of another source replaced rows
of the same corpus (the unchanged files would then not be what the lake holds).
``graphlake ingest --force`` reads everything regardless.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import xxhash

from graphlake.schema.emit import stable_id

#: Variables that change what a reader emits for the same bytes.
_READER_ENV = (
    "GRAPHLAKE_MAX_FILE_BYTES",
    "GRAPHLAKE_MAX_ATTRS_BYTES",
    "GRAPHLAKE_MAX_REJECT_RAW",
    "GRAPHLAKE_MOVE_SPAN_FACTOR",
    "GRAPHLAKE_YAML_MAX_DEPTH",
    "GRAPHLAKE_YAML_MAX_NODES",
)
#: A file modified this close to when it was hashed may change again within the same
#: timestamp tick: its time proves nothing, so its content is hashed again.
_RACY_NS = 2_000_000_000
FORMAT = 2  # 2: content hashes are XXH3-128 (1: blake2b)


def reader_fingerprint(reader_files: list[Path]) -> str:
    """The readers' code (``reader_files``: the ingestors' modules) and the limits they read:
    a change re-reads every source."""
    h = hashlib.blake2b(digest_size=12)
    for path in sorted(reader_files):
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    for name in _READER_ENV:
        h.update(f"{name}={os.environ.get(name, '')}\0".encode())
    return h.hexdigest()


def _hash(path: Path) -> str:
    """A file's content hash: XXH3-128, which tells changed content apart (it does not
    need to resist forgery) at about 15 times blake2b's speed; it runs beside the parse."""
    h = xxhash.xxh3_128()
    with path.open("rb") as fh:
        while block := fh.read(1 << 20):
            h.update(block)
    return h.hexdigest()


@dataclass
class SourceManifest:
    """The files one source's last ingest read, and whether they are still the same."""

    path: Path
    reader: str
    files: dict[str, list] = field(default_factory=dict)  # path -> [size, mtime_ns, hash, at]
    lake_version: int | None = None
    rehashed: bool = False  # unchanged() hashed a file whose time moved: worth saving again

    @classmethod
    def open(cls, lake_root: Path, corpus: str, source: str, reader: str) -> SourceManifest:
        """The manifest of ``source``, empty when none was written with this ``reader``
        fingerprint (:func:`reader_fingerprint`)."""
        folder = Path(lake_root) / "_graphlake" / "manifests"
        path = folder / f"{corpus}-{stable_id(corpus, source)}.json"
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            return cls(path, reader)
        if data.get("format") != FORMAT or data.get("reader") != reader:
            return cls(path, reader)
        return cls(path, reader, data.get("files", {}), data.get("lake_version"))

    def unchanged(
        self, files: list[Path], *, every: bool = True, stats: dict | None = None
    ) -> bool:
        """Whether exactly these files were read last time, byte for byte (``every``: and
        no other; else these may be some of them, one unit's). Hashes only the files whose
        size matches but whose time moved or cannot be trusted. ``stats``: files' stat
        results taken just before, not taken again."""
        if self.lake_version is None or (every and len(files) != len(self.files)):
            return False
        for f in files:
            known = self.files.get(str(f))
            if known is None:
                return False
            size, mtime_ns, digest, at = known
            try:
                st = stats.get(f) if stats else None
                st = st or f.stat()
            except OSError:
                return False
            if st.st_size != size:
                return False
            if st.st_mtime_ns == mtime_ns and mtime_ns < at - _RACY_NS:
                continue
            self.rehashed = True
            if _hash(f) != digest:
                return False
        return True

    def holds_for(self, snapshots, corpus: str, source: str) -> bool:
        """Whether the lake still holds what this source's files gave: no later ingest of
        another source replaced or pruned rows of the corpus."""
        return self.lake_version is not None and not any(
            s.lake_version > self.lake_version
            and s.operation == "ingest"
            and s.corpus == corpus
            and s.source != source
            and s.rows_removed
            for s in snapshots
        )

    def record(self, files: list[Path]) -> dict[str, list]:
        """Fingerprints of ``files`` as they are now, reusing the hash of a file whose size
        and time are as recorded (and old enough to trust)."""
        now = time.time_ns()
        out: dict[str, list] = {}
        for f in files:
            try:
                st = f.stat()
            except OSError:
                continue
            known = self.files.get(str(f))
            if (
                known
                and known[0] == st.st_size
                and known[1] == st.st_mtime_ns
                and st.st_mtime_ns < known[3] - _RACY_NS
            ):
                out[str(f)] = [st.st_size, st.st_mtime_ns, known[2], known[3]]
            else:
                out[str(f)] = [st.st_size, st.st_mtime_ns, _hash(f), now]
        return out

    def save(self, files: dict[str, list], lake_version: int) -> None:
        """Write atomically (a reader never sees half a manifest)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(f".{os.getpid()}.part")
        tmp.write_text(
            json.dumps(
                {
                    "format": FORMAT,
                    "reader": self.reader,
                    "lake_version": lake_version,
                    "files": files,
                }
            )
        )
        os.replace(tmp, self.path)
        self.files, self.lake_version = files, lake_version
