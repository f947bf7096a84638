"""SPECTER2: allenai/specter2_base with the proximity adapter, loaded through `adapters`.

sentence-transformers cannot load the adapter (it silently mean-pools the bare base model), so this path uses
transformers + adapters directly: CLS vector of `title + sep + abstract`, at most 512 tokens, L2-normalised.
"""

import hashlib
from functools import lru_cache
from pathlib import Path

import numpy as np

from indexing.embedders import openvino_backend, runtime, solo
from indexing.embedders.base import normalise, serialised_load

SPECTER2_THETA = 0.96  # the paper's calibration; valid for SPECTER2 only
MAX_TOKENS = 512


def resolve(name_or_path: str, *, local_only: bool = False) -> Path:
    """A local folder as is, else the hub snapshot (from the cache when offline)."""
    path = Path(name_or_path).expanduser()
    if path.is_dir():
        return path
    from huggingface_hub import snapshot_download

    return Path(snapshot_download(name_or_path, local_files_only=local_only))


def folder_fingerprint(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(path.relative_to(folder).as_posix().encode())
        digest.update(str(path.stat().st_size).encode())
    return digest.hexdigest()[:16]


BACKENDS = (*runtime.TORCH_BACKENDS, *openvino_backend.BACKENDS)


def _adapter_model(base_dir: str, adapter_dir: str):
    """base + the proximity adapter, active, in fp32."""
    from adapters import AutoAdapterModel

    model = AutoAdapterModel.from_pretrained(base_dir)
    name = model.load_adapter(adapter_dir, load_as="specter2", set_active=True)
    model.set_active_adapters(name)
    return model


@serialised_load  # outside the cache: the first callers wait for one construction, then share its copy
@lru_cache(maxsize=4)
def _load(base_dir: str, adapter_dir: str, device: str, backend: str):
    """One converted copy of base + adapter per process and backend."""
    return runtime.prepare(_adapter_model(base_dir, adapter_dir), backend, device)


def tokenized(tokenizer, texts: list[str]) -> dict[str, np.ndarray]:
    """The model's inputs, padded to the longest text (solo.feeds re-pads each to a shared length)."""
    return dict(tokenizer(texts, padding=True, truncation=True, max_length=MAX_TOKENS, return_tensors="np",
                          return_token_type_ids=False))


@serialised_load
@lru_cache(maxsize=2)
def _openvino(base_dir: str, adapter_dir: str, fingerprint: str, export_dir: Path) -> openvino_backend.OpenVINOEncoder:
    """One compiled int8 IR of base + adapter (the adapter's layers in the graph) per process."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(base_dir)

    def graph():
        example = tokenizer(["a title[SEP]an abstract", "another"], padding=True, return_tensors="pt",
                            return_token_type_ids=False)
        return openvino_backend.pooled_module(_adapter_model(base_dir, adapter_dir), "cls"), dict(example)

    def tokenize(texts: list[str]) -> dict[str, np.ndarray]:
        return tokenized(tokenizer, texts)

    xml = openvino_backend.converted(
        export_dir, openvino_backend.ir_name("specter2", fingerprint), graph, tokenize,
        str(tokenizer.sep_token))
    return openvino_backend.OpenVINOEncoder(xml, tokenize, max_tokens=MAX_TOKENS)


class Specter2Embedder:
    key = "specter2"
    model_id = "allenai/specter2_base+allenai/specter2"

    def __init__(self, *, base: str = "allenai/specter2_base", adapter: str = "allenai/specter2",
                 device: str = "cpu", theta: float | None = None, local_only: bool = False,
                 backend: str = "torch", export_dir: Path | None = None) -> None:
        import torch
        from transformers import AutoTokenizer

        backend = runtime.resolve(backend, device, BACKENDS)
        base_dir, adapter_dir = resolve(base, local_only=local_only), resolve(adapter, local_only=local_only)
        self.tokenizer = AutoTokenizer.from_pretrained(str(base_dir))
        weights = f"{folder_fingerprint(base_dir)}+{folder_fingerprint(adapter_dir)}"
        self.openvino: openvino_backend.OpenVINOEncoder | None = None
        if backend in openvino_backend.BACKENDS:
            self.openvino = _openvino(str(base_dir), str(adapter_dir), weights.replace("+", "-"),
                                      Path(export_dir or Path.home() / ".cache" / "hindsight"))
            self.dim = self.openvino.dim
        else:
            self.model = _load(str(base_dir), str(adapter_dir), device, backend)
            self.dim = int(self.model.config.hidden_size)
        self._torch, self.device, self.backend = torch, device, backend
        self._spec = {"base": base, "adapter": adapter, "device": device, "theta": theta, "local_only": local_only,
                      "backend": backend, "export_dir": export_dir}
        self.model_id = f"{base}+{adapter}"
        # the backend is part of the revision, so the cache never mixes fp32 and bf16/int8 vectors
        self.revision = f"{weights}{runtime.variant(backend)}"
        self.theta = SPECTER2_THETA if theta is None else theta
        self.sep = self.tokenizer.sep_token
        self.max_tokens = MAX_TOKENS

    def spec(self) -> dict:
        """What a worker process needs to build the same embedder (see workers.py)."""
        return dict(self._spec)

    def warm(self) -> None:
        if self.openvino is not None:
            self.openvino.warm()

    def encode_many(self, groups: list[list[str]]) -> list[np.ndarray]:
        if self.openvino is not None:  # every text on its own, on every core at once
            return self.openvino.encode_many(groups)
        return [self.encode(g) for g in groups]  # a fast tokenizer is not shared between threads

    def encode(self, texts: list[str], *, batch_size: int = 16, progress=None) -> np.ndarray:
        """Each text's vector alone (solo.py): padded to a shared length, batched only with texts of that length,
        or a text per inference where int8 scales are taken from the whole batch."""
        if self.openvino is not None:
            return self.openvino.encode(texts, progress=progress)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        batch_size = 1 if self.backend in runtime.PER_TEXT else max(batch_size, runtime.DEFAULT_BATCH.get(
            self.backend, 0))
        runtime.one_thread(self.device)
        for rows, feeds in solo.feeds(texts, self._tokenize, max_tokens=MAX_TOKENS, batch_size=batch_size,
                                      pad_id=self.tokenizer.pad_token_id or 0):
            with self._torch.inference_mode():
                hidden = self.model(**{k: self._torch.from_numpy(v).to(self.device)
                                       for k, v in feeds.items()}).last_hidden_state
            out[rows] = hidden[:, 0, :].float().cpu().numpy()  # CLS pooling
            if progress:
                progress(len(rows))
        return normalise(out)

    def _tokenize(self, texts: list[str]) -> dict[str, np.ndarray]:
        return tokenized(self.tokenizer, texts)
