"""The `onnx` and `onnx-int8` backends run by ONNX Runtime itself: one single-thread InferenceSession per core on the
exported model file (minilm.onnx_model), each fed from its own thread (percore.py), then the pooling and
normalisation sentence-transformers applies (its Pooling and Normalize modules, the same torch operations).

int8 here is dynamic quantisation: activation scales are taken over the whole input tensor at run time, so a text
runs in an inference of its own (runtime.PER_TEXT, solo.py). One session with ONNX Runtime's own intra-op threads
spreads that one small inference over the cores, which gains little; a session per core runs two texts at once.
The vectors are bit-identical to those of the sentence-transformers ONNX model (one multi-thread session) on the
same inputs: one intra-op thread instead of two changed no bit of the hidden states on 50 real abstracts (both
backends), and the pooling is its torch code (a numpy mean moved every vector by one float32 ulp). On this AVX2-only
2-core machine under load: 1.64-1.75x the naive encode against 0.62-0.85x with one session (bench/build_speed.py,
docs/benchmarks.md). A request's few texts go to one more session that spreads each text over every core (the
same bits): on the copies a dense query's HTTP median rose by a fifth.
"""

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from indexing.embedders import cpu, percore


def optimized_model(path: Path) -> Path:
    """ONNX Runtime's optimised graph of the model file at `path`, saved once beside it and loaded by later processes
    instead of optimising again (0.26 s a session here, 0.09 s from the saved graph; the same bits). Keyed by ONNX
    Runtime's version and this CPU's flags (the graph may hold kernels laid out for them). Where the folder cannot be
    written, the model itself (optimised in memory, as before)."""
    import os

    import onnxruntime as ort

    target = path.parent / "optimized" / f"{path.stem}-ort{ort.__version__}-{cpu.fingerprint()[:8]}.onnx"
    if target.exists():
        return target
    tmp = target.with_name(f".{target.stem}-{os.getpid()}.onnx")
    try:
        target.parent.mkdir(exist_ok=True)
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.log_severity_level = 3  # its warning that the graph suits this machine: the key says so
        options.optimized_model_filepath = str(tmp)
        ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])
        os.replace(tmp, target)
    except OSError:
        tmp.unlink(missing_ok=True)
        return path
    return target


class ONNXEncoder(percore.PerCoreEncoder):
    """A mean-pooled, L2-normalised sentence encoder from an ONNX file whose output is last_hidden_state."""

    name = "onnx"

    def __init__(self, path: Path, tokenize: Callable[[list[str]], dict[str, np.ndarray]], *, max_tokens: int,
                 pad_id: int = 0, per_text: bool) -> None:
        import onnxruntime as ort

        source = optimized_model(path)
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        if source != path:  # optimised already: ONNX Runtime would find nothing left to do, after looking
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        sessions = [ort.InferenceSession(str(source), sess_options=options, providers=["CPUExecutionProvider"])
                    for _ in range(cpu.cores())]
        # a request's few texts (an idea's facets) run faster one at a time on a session that spreads each over every
        # core: p50 18% lower for three facets on 2 cores (on the copies a dense query's HTTP median rose by a fifth)
        wide = None
        if len(sessions) > 1:
            spread = ort.SessionOptions()
            spread.intra_op_num_threads = len(sessions)
            spread.graph_optimization_level = options.graph_optimization_level
            wide = ort.InferenceSession(str(source), sess_options=spread, providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in sessions[0].get_inputs()}
        (output,) = [o for o in sessions[0].get_outputs() if o.name == "last_hidden_state"]
        super().__init__(sessions, tokenize, dim=int(output.shape[-1]), max_tokens=max_tokens, pad_id=pad_id,
                         wide=wide)
        self.per_text = per_text

    def encode(self, texts: list[str], *, batch_size: int = 32, progress=None) -> np.ndarray:
        """A text per inference for int8 (its scales are the batch's); fp32 rows are their own at one padded length,
        so it runs batch_size texts of a length at a time."""
        return super().encode(texts, batch_size=1 if self.per_text else batch_size, progress=progress)

    def _run_copy(self, copy: Any, feeds: dict[str, np.ndarray]) -> np.ndarray:
        import torch
        import torch.nn.functional as F

        if "token_type_ids" in self._inputs and "token_type_ids" not in feeds:
            feeds = {**feeds, "token_type_ids": np.zeros_like(feeds["input_ids"])}
        (hidden,) = copy.run(["last_hidden_state"], {k: v for k, v in feeds.items() if k in self._inputs})
        # sentence-transformers' Pooling (mean) and Normalize, operation for operation: the same bits
        tokens = torch.from_numpy(hidden)
        with torch.inference_mode():
            mask = torch.from_numpy(feeds["attention_mask"]).unsqueeze(-1).expand_as(tokens).to(tokens.dtype)
            pooled = (tokens * mask).sum(dim=1) / torch.clamp(mask.sum(dim=1), min=1e-9)
            return F.normalize(pooled, p=2, dim=1).numpy()
