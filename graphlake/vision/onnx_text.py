"""Sentence vectors from a BERT sentence-transformers model through ONNX Runtime, no PyTorch.

The frame pipeline's default text model (``all-MiniLM-L6-v2``) is a 6-layer BERT with mean
pooling. Running it through sentence-transformers costs an import of PyTorch and transformers
(seconds, and gigabytes of install) to embed a dozen words. This module reads the model's own
files (``config.json``, ``model.safetensors``, ``tokenizer.json``), writes the encoder as an
ONNX graph once (built with ``onnx.helper`` from the weights, cached per weights digest in the
user's cache folder), and runs it with ONNX Runtime, which OCR already brings. Tokenisation is
the model's own ``tokenizer.json`` through the ``tokenizers`` library; pooling and
normalisation are numpy. ``tests/test_frames.py`` checks the vectors against
sentence-transformers' within 1e-3 cosine where both are installed.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import numpy as np

from graphlake.errors import attempt_import

#: The ONNX opset the graph is written for (LayerNormalization arrived in 17).
OPSET = 17
#: Part of a cached graph's name: raise it whenever :func:`_bert_graph` changes what it writes.
GRAPH_VERSION = 1


def cache_dir() -> Path:
    """Where built ONNX graphs are kept: ``$GRAPHLAKE_MODEL_CACHE`` or the user cache."""
    from platformdirs import user_cache_dir

    return Path(os.environ.get("GRAPHLAKE_MODEL_CACHE") or user_cache_dir("graphlake")) / "onnx"


def _bert_graph(weights: dict[str, np.ndarray], config: dict):
    """The BERT encoder (embeddings and every layer) as an ONNX model: inputs ``input_ids``,
    ``attention_mask``, ``token_type_ids`` (int64, batch x tokens), output the last hidden
    state (float32, batch x tokens x hidden)."""
    onnx = attempt_import("onnx", "frames")
    from onnx import TensorProto, helper, numpy_helper

    hidden, n_heads = config["hidden_size"], config["num_attention_heads"]
    head_dim, eps = hidden // n_heads, float(config.get("layer_norm_eps", 1e-12))
    if config.get("hidden_act", "gelu") != "gelu":
        raise ValueError(f"hidden_act {config['hidden_act']!r}: only BERT's exact gelu is built")
    inits, nodes = [], []

    def const(name: str, value) -> str:
        inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def op(kind: str, inputs: list[str], out: str, **attrs) -> str:
        nodes.append(helper.make_node(kind, inputs, [out], **attrs))
        return out

    def linear(x: str, prefix: str, out: str) -> str:
        w = const(f"{prefix}.wT", weights[f"{prefix}.weight"].T.copy())  # y = x W^T + b
        b = const(f"{prefix}.b", weights[f"{prefix}.bias"])
        return op("Add", [op("MatMul", [x, w], f"{out}.mm"), b], out)

    def norm(x: str, prefix: str, out: str) -> str:
        g = const(f"{prefix}.g", weights[f"{prefix}.weight"])
        b = const(f"{prefix}.b", weights[f"{prefix}.bias"])
        return op("LayerNormalization", [x, g, b], out, axis=-1, epsilon=eps)

    e = "embeddings"
    word = op("Gather", [const("word", weights[f"{e}.word_embeddings.weight"]), "input_ids"], "w")
    kinds = op("Gather", [const("type", weights[f"{e}.token_type_embeddings.weight"]),
                          "token_type_ids"], "t")  # fmt: skip
    shape = op("Shape", ["input_ids"], "shape")
    length = op("Gather", [shape, const("one", np.array(1, np.int64))], "len")
    positions = op("Range", [const("zero", np.array(0, np.int64)), length, "one"], "pos_ids")
    pos = op("Gather", [const("pos", weights[f"{e}.position_embeddings.weight"]), positions], "p")
    x = norm(op("Add", [op("Add", [word, kinds], "wt"), pos], "emb"), f"{e}.LayerNorm", "x0")
    # padding: 0 where attended, a large negative number where not, as batch x 1 x 1 x tokens
    keep = op("Cast", ["attention_mask"], "keep", to=TensorProto.FLOAT)
    blocked = op("Sub", [const("onef", np.array(1.0, np.float32)), keep], "blocked")
    bias = op("Mul", [blocked, const("neg", np.array(np.finfo(np.float32).min, np.float32))],
              "bias2")  # fmt: skip
    bias = op("Unsqueeze", [bias, const("axes12", np.array([1, 2], np.int64))], "bias")
    split = const("split_heads", np.array([0, 0, n_heads, head_dim], np.int64))
    merge = const("merge_heads", np.array([0, 0, hidden], np.int64))
    scale = const("scale", np.array(1.0 / np.sqrt(head_dim), np.float32))
    half, root2 = const("half", np.array(0.5, np.float32)), const("r2", np.float32(np.sqrt(2)))

    def heads(x: str, prefix: str, tag: str, perm: list[int]) -> str:
        """One projection split into heads: batch x heads x tokens x head_dim (``perm``
        [0, 2, 3, 1] gives keys already transposed for the product with queries)."""
        y = op("Reshape", [linear(x, prefix, tag), split], f"{tag}.r")
        return op("Transpose", [y], f"{tag}.t", perm=perm)

    for i in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{i}"
        a = f"{p}.attention.self"
        q = heads(x, f"{a}.query", f"l{i}.q", [0, 2, 1, 3])
        k = heads(x, f"{a}.key", f"l{i}.k", [0, 2, 3, 1])
        v = heads(x, f"{a}.value", f"l{i}.v", [0, 2, 1, 3])
        scores = op("Mul", [op("MatMul", [q, k], f"l{i}.qk"), scale], f"l{i}.qks")
        probs = op("Softmax", [op("Add", [scores, bias], f"l{i}.masked")], f"l{i}.p", axis=-1)
        ctx = op("Transpose", [op("MatMul", [probs, v], f"l{i}.ctx")], f"l{i}.ctxt",
                 perm=[0, 2, 1, 3])  # fmt: skip
        ctx = op("Reshape", [ctx, merge], f"l{i}.ctxr")
        attn = linear(ctx, f"{p}.attention.output.dense", f"l{i}.ao")
        x = norm(op("Add", [attn, x], f"l{i}.res1"), f"{p}.attention.output.LayerNorm", f"l{i}.x1")
        inner = linear(x, f"{p}.intermediate.dense", f"l{i}.in")
        erf = op("Erf", [op("Div", [inner, root2], f"l{i}.sc")], f"l{i}.erf")
        gelu = op("Mul", [inner, op("Mul", [op("Add", [erf, "onef"], f"l{i}.e1"), half],
                                    f"l{i}.e2")], f"l{i}.gelu")  # fmt: skip
        out = linear(gelu, f"{p}.output.dense", f"l{i}.out")
        x = norm(op("Add", [out, x], f"l{i}.res2"), f"{p}.output.LayerNorm", f"l{i}.x2")
    ints = [
        helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "tokens"])
        for n in ("input_ids", "attention_mask", "token_type_ids")
    ]
    nodes.append(helper.make_node("Identity", [x], ["hidden"]))
    output = helper.make_tensor_value_info("hidden", TensorProto.FLOAT, ["batch", "tokens", hidden])
    graph = helper.make_graph(nodes, "bert_encoder", ints, [output], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = min(model.ir_version, 9)  # readable by older ONNX Runtime releases
    onnx.checker.check_model(model)
    return model


def _built_graph(folder: Path, digest: str) -> Path:
    """The ONNX file for the model in ``folder``, built once and kept under :func:`cache_dir`
    (written to a temporary name and renamed, so concurrent first uses never see half)."""
    target = cache_dir() / f"{folder.name}-{digest}-g{GRAPH_VERSION}.onnx"
    if target.is_file():
        return target
    safetensors = attempt_import("safetensors.numpy", "frames")
    config = json.loads((folder / "config.json").read_text())
    weights = safetensors.load_file(str(folder / "model.safetensors"))
    model = _bert_graph(weights, config)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".part")
    with os.fdopen(fd, "wb") as fh:
        fh.write(model.SerializeToString())
    os.replace(tmp, target)
    return target


class OnnxSentenceEncoder:
    """Mean-pooled, L2-normalised sentence vectors of a BERT model folder (the layout
    sentence-transformers saves: ``config.json``, ``model.safetensors``, ``tokenizer.json``,
    ``sentence_bert_config.json``, ``1_Pooling/config.json``)."""

    def __init__(self, folder: Path, digest: str):
        ort = attempt_import("onnxruntime", "frames")
        tokenizers = attempt_import("tokenizers", "frames")
        pooling = folder / "1_Pooling" / "config.json"
        if pooling.is_file() and not json.loads(pooling.read_text()).get(
            "pooling_mode_mean_tokens", False
        ):
            raise ValueError(f"{folder}: only mean pooling is supported on the ONNX path")
        st_config = folder / "sentence_bert_config.json"
        max_len = json.loads(st_config.read_text()).get("max_seq_length", 256) if (
            st_config.is_file()
        ) else 256  # fmt: skip
        self.tokenizer = tokenizers.Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=max_len)
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # noqa: S106 - a token
        options = ort.SessionOptions()
        options.log_severity_level = 3
        options.intra_op_num_threads = min(4, os.cpu_count() or 1)
        self.session = ort.InferenceSession(
            str(_built_graph(folder, digest)), options, providers=["CPUExecutionProvider"]
        )
        self.dim = int(json.loads((folder / "config.json").read_text())["hidden_size"])

    def encode(self, texts: list[str], batch: int = 64) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), np.float32)
        # similar lengths together: padding costs as much as text
        order = sorted(range(len(texts)), key=lambda k: len(texts[k]))
        for start in range(0, len(texts), batch):
            chunk = order[start : start + batch]
            enc = self.tokenizer.encode_batch([texts[k] for k in chunk])
            ids = np.array([e.ids for e in enc], np.int64)
            mask = np.array([e.attention_mask for e in enc], np.int64)
            types = np.array([e.type_ids for e in enc], np.int64)
            (hidden,) = self.session.run(
                ["hidden"], {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
            )
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(1) / np.clip(weights.sum(1), 1e-9, None)
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            out[chunk] = pooled / np.clip(norms, 1e-12, None)
        return out
