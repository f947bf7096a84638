"""A model's fast tokenizer read from its tokenizer.json by the `tokenizers` library alone, without transformers (and
the torch it imports): what the converted backends (openvino-int8, onnx-int8) need to run a text (docs/startup.md).

It gives what transformers' fast tokenizer gives for `tokenizer(texts, padding=True, truncation=True,
max_length=max_tokens, return_tensors="np")`: the same Rust tokenizer, truncated to max_tokens and padded to the
longest text of the call (tokenizer.json may carry other defaults, which that call replaces too), int64 arrays.
tests/test_startup.py checks the ids against transformers' on the sample and dev ideas and odd texts.
"""

import json
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer


class FastTokenizer:
    """The parts of a Hugging Face fast tokenizer the embedders and the matcher use: call, sep_token, pad_token_id,
    backend_tokenizer (the Rust tokenizer without truncation or padding, for token counts)."""

    def __init__(self, folder: Path, max_tokens: int) -> None:
        folder = Path(folder)
        config: dict[str, str] = {}
        for name in ("special_tokens_map.json", "tokenizer_config.json"):  # the second wins, as in transformers
            path = folder / name
            if path.exists():
                config |= {k: v for k, v in json.loads(path.read_text(encoding="utf-8")).items()
                           if k.endswith("_token") and isinstance(v, str)}
        self.backend_tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.backend_tokenizer.no_truncation()
        self.backend_tokenizer.no_padding()
        self.sep_token: str = config["sep_token"]
        self.pad_token: str = config["pad_token"]
        pad_id = self.backend_tokenizer.token_to_id(self.pad_token)
        if pad_id is None:
            raise ValueError(f"{folder / 'tokenizer.json'}: no id for the pad token {self.pad_token!r}")
        self.pad_token_id: int = pad_id
        self.max_tokens = max_tokens
        self._padded = Tokenizer.from_str(self.backend_tokenizer.to_str())
        self._padded.enable_truncation(max_tokens, stride=0, strategy="longest_first", direction="right")
        self._padded.enable_padding(direction="right", pad_id=pad_id, pad_type_id=0, pad_token=self.pad_token)

    def __call__(self, texts: list[str], *, return_token_type_ids: bool = True) -> dict[str, np.ndarray]:
        """input_ids, token_type_ids (unless asked not to) and attention_mask, padded to the longest text."""
        found = self._padded.encode_batch(texts, add_special_tokens=True)
        out = {"input_ids": np.array([e.ids for e in found], dtype=np.int64)}
        if return_token_type_ids:
            out["token_type_ids"] = np.array([e.type_ids for e in found], dtype=np.int64)
        out["attention_mask"] = np.array([e.attention_mask for e in found], dtype=np.int64)
        return out
