"""The `openvino-int8` backend: a torch encoder converted once to OpenVINO IR and quantised to int8, run on every
core of this process.

Static int8 (nncf post-training quantisation, transformer preset: SmoothQuant, per-channel weights, activation
scales calibrated once on the 128 sample abstracts in int8_calibration.jsonl, fast bias correction); the products
run on VNNI int8 kernels, everything nncf leaves in float runs in f32 on every CPU (precision()). Mean drift on the
real MiniLM weights 0.0028 against fp32 (bf16 torch 0.00005, int8 torch 0.019). On BERT-base, 200 build texts:
12.0 texts/s against 10.3 for weight-only int8 with activations quantised on the fly per token, which itself ran
1.3x the groups of 32 used before (docs/benchmarks.md).

One single-thread compiled copy per core, each fed from its own thread (percore.py, inference releases the GIL): the
layout of the torch worker processes without their start-up, a model load each. Batches are small (2-4 texts: they
pad less and these kernels gain nothing from more rows). Measured by bench/build_speed.py and bench/specter2_build.py.
"""

import contextlib
import hashlib
import json
import logging
import os
import shutil
import sys
import tempfile
import threading
from collections.abc import Callable
from importlib.metadata import version
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import numpy as np

from indexing.embedders import cpu, percore, solo
from indexing.embedders.base import serialised_load

BACKENDS = ("openvino-int8",)
CALIBRATION = Path(__file__).with_name("int8_calibration.jsonl")  # frozen: its hash is part of every IR's name
CALIBRATION_BATCH = 2  # texts per calibration sample, the batch SPECTER2 runs with


def available() -> bool:
    """True where the backend is installed (the `[openvino]` extra) and this CPU has int8 dot products."""
    # found, not imported: importing nncf takes seconds, and it is needed only to convert a model
    return cpu.int8_dot() and all(find_spec(name) for name in ("openvino", "nncf"))


def precision() -> str:
    """The precision of everything but the int8 products: part of the revision, since the vectors differ by it.

    f32 on every CPU. With bf16 (the CPU plugin's default where the CPU has AVX-512 BF16 or AMX) OpenVINO 2026.4's
    fused attention was wrong at an input length of exactly 32 tokens on a Sapphire Rapids class CPU (MiniLM's heads
    are 32 wide): worst drift 0.148 against fp32 there, 0.004 at every other length, 0.004 at every length in f32,
    at the same speed within the noise of a shared machine (docs/cpu-checks.md). So the revision that bf16 made,
    "-openvino-int8-static-bf16", is never made again and nothing cached under it is reused."""
    return "f32"


def variant() -> str:
    """Static int8 ("-openvino-int8-bf16" was weight-only int8 with activations quantised in groups of 32,
    "-openvino-int8-static-bf16" static int8 with bf16 around it: see precision())."""
    return f"-openvino-int8-static-{precision()}"


def calibration_texts(sep: str) -> list[str]:
    """The calibration inputs, joined as the model's build inputs are (title + sep + abstract)."""
    rows = [json.loads(line) for line in CALIBRATION.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [f"{r['title']}{sep}{r['abstract']}" for r in rows]


@serialised_load
def converted(export_dir: Path, name: str, make: Callable[[], tuple[Any, dict]],
              tokenize: Callable[[list[str]], dict[str, np.ndarray]], sep: str) -> Path:
    """The int8 IR of `make()`'s (torch module, example inputs), quantised with activation ranges from the
    calibration texts joined with `sep` and tokenised as the encoder's batches are; converted once into
    export_dir/name."""
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
            texts = calibration_texts(sep)
            feeds = [tokenize(texts[i:i + CALIBRATION_BATCH]) for i in range(0, len(texts), CALIBRATION_BATCH)]
            model = nncf.quantize(model, nncf.Dataset(feeds), model_type=nncf.ModelType.TRANSFORMER,
                                  subset_size=len(feeds))
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
    """Folder of a model's IR: the weights, the calibration texts and the converter versions all change it."""
    texts = hashlib.sha256(CALIBRATION.read_bytes()).hexdigest()[:8]
    return f"{key}-{fingerprint}-openvino-int8-static-{texts}-{version('openvino')}-nncf{version('nncf')}"



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


class OpenVINOEncoder(percore.PerCoreEncoder):
    """One single-thread compiled copy of the int8 IR per core, each fed from its own thread (percore.py); encode()
    is safe to call from several threads at once.

    Not one compiled model with a stream per core: OpenVINO 2026.4's CPU plugin returned wrong vectors with two
    streams in bf16 (cosine 0.30 to fp32 on the tiny test model; one stream, or f32, was right).
    """

    name = "openvino"

    def __init__(self, xml: Path, tokenize: Callable[[list[str]], dict[str, np.ndarray]], *,
                 max_tokens: int) -> None:
        import openvino as ov

        core = ov.Core()
        model = core.read_model(str(xml))
        # the compiled model is cached beside its IR, whose folder names the OpenVINO version; OpenVINO keys each blob
        # by the model, this config and its own version: a second process compiles its copies in a quarter of the time
        config = {"PERFORMANCE_HINT": "LATENCY", "NUM_STREAMS": 1, "INFERENCE_NUM_THREADS": 1,
                  "ENABLE_CPU_PINNING": False, "INFERENCE_PRECISION_HINT": precision(),
                  "CACHE_DIR": str(Path(xml).parent / "compiled")}
        requests = [core.compile_model(model, "CPU", config).create_infer_request() for _ in range(cpu.cores())]
        super().__init__(requests, tokenize, dim=int(model.outputs[0].get_partial_shape()[1].get_length()),
                         max_tokens=max_tokens)
        self._met: set[int] = set()  # the input lengths every copy has run
        self._warm_lock = threading.Lock()

    def _run_copy(self, copy: Any, feeds: dict[str, np.ndarray]) -> np.ndarray:
        copy.infer(feeds)
        return copy.get_output_tensor(0).data.copy()

    def encode(self, texts: list[str], *, batch_size: int = 0, progress=None) -> np.ndarray:
        """Every text in an inference of its own at one of solo's padded lengths, a build's papers as a query's
        facets (batch_size is ignored): a vector never depends on a batch-mate (these kernels round by the batch's
        shape). Batch 1 costs the build's throughput under 10% against the batches of 4 used before on CPUs with
        VNNI, 12% on an AVX2-only one (docs/benchmarks.md).

        The lengths these texts need and the copies have not met are run through every copy first (_warm)."""
        return super().encode(texts, batch_size=1, progress=progress)

    def warm(self) -> None:
        """Every input length through every copy, once (1.6 s for MiniLM here): the server does it at start, for its
        p99. The CPU plugin prepares its kernels for each input shape it meets, which doubled a query of a length it
        had not met yet (p99 of 200 new ideas' facets 68 ms, 34 ms once met). A length at a time: a request coming
        meanwhile waits for one length, not for all."""
        for length in solo.lengths(self._max_tokens):
            self._prepare([length])

    def _warm(self, texts: list[str]) -> None:
        """The lengths these texts need, through every copy that has not met them (a one-shot command's dozen ideas
        meet a few lengths: it runs those, not all 32 on every copy)."""
        if len(self._met) >= len(solo.lengths(self._max_tokens)):
            return
        counts: list[int] = []
        with self._tokenizer_lock:
            for start in range(0, len(texts), solo.CHUNK):
                counts += self._tokenize(texts[start:start + solo.CHUNK])["attention_mask"].sum(axis=1).tolist()
        self._prepare({solo.padded_length(n, self._max_tokens) for n in counts})

    def _prepare(self, lengths) -> None:
        """Run each length a copy has not met through every copy, one copy after another with every copy held: two
        fresh copies meeting a shape at the same moment hung in OpenVINO's first tensor updates (1 run in 3, both
        threads inside `infer`), so no copy meets a new length while another runs."""
        if set(lengths) <= self._met:
            return
        with self._warm_lock:
            todo = sorted(set(lengths) - self._met)
            if not todo:
                return
            with self._tokenizer_lock:
                probe = self._tokenize(["a"])
            held = [self._copies.get() for _ in range(self.streams)]  # waits out any inference in flight
            try:
                for request in held:
                    for length in todo:
                        request.infer({k: np.resize(v, (1, length)) for k, v in probe.items()})
            finally:
                for request in held:
                    self._copies.put(request)
            self._met.update(todo)
