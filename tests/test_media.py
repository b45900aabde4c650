"""A screen recording in a session folder lands in `media`, probed from a real encoded video
that the test writes with PyAV."""

from __future__ import annotations

import hashlib
import shutil

import pytest

from conftest import HAND
from graphlake.demo.video import write_recording
from graphlake.pipeline import ingest_path
from graphlake.query import run_sql

pytestmark = pytest.mark.frames

av = pytest.importorskip("av")


def test_recording_is_hashed_and_probed(lake, tmp_path):
    folder = tmp_path / "session"
    shutil.copytree(HAND, folder)
    video = folder / "recording.mp4"
    write_recording(video, shades=[40, 200], seconds_each=1, fps=10, size=(64, 48))
    ingest_path("kolab", folder, lake)
    (row,) = run_sql("SELECT * FROM media", lake).table.to_pylist()
    digest = hashlib.sha256(video.read_bytes()).hexdigest()
    assert row["sha256"] == digest and row["media_id"] == digest[:16]
    assert row["kind"] == "screen_recording" and row["session_id"] == "hand-1"
    assert (row["width"], row["height"], row["fps"]) == (64, 48, 10.0)
    assert row["duration_s"] == pytest.approx(2.0, abs=0.2)
    assert row["size_bytes"] == video.stat().st_size
