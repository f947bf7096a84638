"""The `openvino-int8` backend: a torch encoder converted once to OpenVINO IR with int8 weights, run on every core
of this process.

Weights are int8 per output channel (nncf weight compression); the CPU plugin quantises activations on the fly,
one scale per token and hidden-width group, and multiplies with VNNI int8 kernels; everything else runs in bf16
where the CPU has it (f32 elsewhere, a different revision). Mean drift on the real MiniLM weights 0.0024 (bf16
torch 0.00005, int8 torch 0.019: scales per token are what keep it small; groups of 32 drifted 0.0009 but ran
1.3x slower). One single-thread compiled copy per core, each fed
from its own thread (inference releases the GIL): the layout of the torch worker processes without their start-up,
a model load each. Batches are small (2-4 texts: they pad less and these kernels gain nothing from more rows).
Measured in bench/build_speed.py and real builds, docs/benchmarks.md.
"""

import contextlib
import logging
import os
import queue
import shutil
import sys
import tempfile
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from importlib.metadata import version
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import numpy as np

from indexing.embedders import runtime
from indexing.embedders.base import length_sorted_batches, normalise, serialised_load
from indexing.embedders.workers import cores

BACKENDS = ("openvino-int8",)
INT8_DOT = {"avx512_vnni", "avx_vnni", "amx_int8", "asimddp"}  # CPUs with int8 dot-product instructions


def available() -> bool:
    """True where the backend is installed (the `[openvino]` extra) and this CPU has int8 dot products."""
    # found, not imported: importing nncf takes seconds, and it is needed only to convert a model
    return bool(runtime.cpu_flags() & INT8_DOT) and all(find_spec(name) for name in ("openvino", "nncf"))


def precision() -> str:
    """The precision of everything but the int8 products: part of the revision, since the vectors differ by it."""
    return "bf16" if runtime.native_bf16() else "f32"


def variant() -> str:
    """Per-token activation scales ("token"; "-openvino-int8-bf16" was groups of 32): the vectors differ by it."""
    return f"-openvino-int8-token-{precision()}"


@serialised_load
def converted(export_dir: Path, name: str, make: Callable[[], tuple[Any, dict]]) -> Path:
    """The int8 IR of `make()`'s (torch module, example inputs), converted once into export_dir/name."""
    target = Path(export_dir) / name
    if (target / "model.xml").exists():
        return target / "model.xml"
    import openvino as ov
    import torch

    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=target.parent))
    try:
        module, example = make()
        with torch.inference_mode():
            model = ov.convert_model(module.eval(), example_input=example)
        # nncf logs and draws its progress on stdout, which is the JSON answer of `hindsight index build --json`
        with contextlib.redirect_stdout(sys.stderr):
            import nncf

            nncf.set_log_level(logging.WARNING)  # its per-layer bitwidth table, in case it was imported before
            model = nncf.compress_weights(model, mode=nncf.CompressWeightsMode.INT8_SYM)
        ov.save_model(model, str(tmp / "model.xml"), compress_to_fp16=False)
        tmp.chmod(0o755)  # mkdtemp makes it private; the export is shared by every user of this home
        os.rename(tmp, target)
    except OSError:
        if not (target / "model.xml").exists():
            raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target / "model.xml"


def ir_name(key: str, fingerprint: str) -> str:
    """Folder of a model's IR: the weights, the backend and the converter versions all change it."""
    return f"{key}-{fingerprint}-openvino-int8-{version('openvino')}-nncf{version('nncf')}"


def pooled_module(encoder, pooling: str):
    """The torch graph that is converted: `encoder` with its output pooled (CLS, or the masked mean)."""
    import torch

    class Pooled(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.encoder = encoder

        def forward(self, input_ids, attention_mask):
            hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
            if pooling == "cls":
                return hidden[:, 0]
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)

    return Pooled()


class OpenVINOEncoder:
    """One single-thread compiled copy of the int8 IR per core, each fed from its own thread; encode() is safe to
    call from several threads at once.

    Not one compiled model with a stream per core: OpenVINO 2026.4's CPU plugin returned wrong vectors with two
    streams in bf16 (cosine 0.30 to fp32 on the tiny test model; one stream, or f32, was right).
    """

    def __init__(self, xml: Path, tokenize: Callable[[list[str]], dict[str, np.ndarray]], *, batch: int) -> None:
        import openvino as ov

        core = ov.Core()
        model = core.read_model(str(xml))
        self.streams = cores()
        self.dim = int(model.outputs[0].get_partial_shape()[1].get_length())
        # one activation scale per token: groups of the hidden width (the pooled output's); measured on BERT-base
        # 13.4 texts/s against 10.0 for groups of 32, and no dynamic quantisation at all (a larger group) 7.5
        config = {"PERFORMANCE_HINT": "LATENCY", "NUM_STREAMS": 1, "INFERENCE_NUM_THREADS": 1,
                  "ENABLE_CPU_PINNING": False, "INFERENCE_PRECISION_HINT": precision(),
                  "DYNAMIC_QUANTIZATION_GROUP_SIZE": self.dim}
        self._requests: queue.SimpleQueue = queue.SimpleQueue()
        for _ in range(self.streams):
            self._requests.put(core.compile_model(model, "CPU", config).create_infer_request())
        self._tokenize, self.batch = tokenize, batch
        self._tokenizer_lock = threading.Lock()  # a fast tokenizer called from two threads raises "Already borrowed"
        self._pool = ThreadPoolExecutor(self.streams, thread_name_prefix="openvino")

    def _run(self, feeds: dict[str, np.ndarray]) -> np.ndarray:
        request = self._requests.get()
        try:
            request.infer(feeds)
            return request.get_output_tensor(0).data.copy()
        finally:
            self._requests.put(request)

    def encode(self, texts: list[str], *, batch_size: int, progress=None) -> np.ndarray:
        """Batches of at most self.batch: smaller than torch's, since these kernels gain nothing from more rows
        and a small batch pads less."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        batch_size = min(batch_size, self.batch)
        pending: deque[tuple[list[int], Future[np.ndarray]]] = deque()

        def collect() -> None:
            batch, future = pending.popleft()
            out[batch] = future.result()
            if progress:
                progress(len(batch))

        for batch in length_sorted_batches(texts, batch_size):
            with self._tokenizer_lock:
                feeds = self._tokenize([texts[i] for i in batch])
            pending.append((batch, self._pool.submit(self._run, feeds)))
            if len(pending) > 2 * self.streams:  # tokenised batches in flight stay few, whatever the build's size
                collect()
        while pending:
            collect()
        return normalise(out)
