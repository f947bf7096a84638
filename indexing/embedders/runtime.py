"""How a torch embedder runs: the numeric backend (fp32, bf16, int8, CUDA fp16) and how `auto` picks one from the
CPU's facts (cpu.py).

A backend changes the vectors a little, so it is part of an embedder's revision (the embedding cache key and the
manifest): vectors of different backends never mix, and scoring loads the backend the index was built with.
`auto` picks the fastest backend measured within the drift bound (bench/build_speed.py, docs/benchmarks.md):
CUDA fp16 on a GPU; `openvino-int8` where the `[openvino]` extra is installed and the CPU has int8 dot products
(openvino_backend.py: static int8, mean drift 0.0028 on real MiniLM weights, faster than bf16 torch in worker
processes and without their start-up); bf16 weights where the CPU has native bf16 (AVX-512 BF16, AMX or Arm BF16:
mean drift 0.00005); else fp32 (torch int8 gave 1.5x but a mean drift of 0.019 on MiniLM, over both models' bounds).
"""

from indexing.embedders import openvino_backend
from indexing.embedders.cpu import native_bf16

TORCH_BACKENDS = ("torch", "torch-bf16", "torch-int8", "cuda-fp16")
DEFAULT_BATCH = {"cuda-fp16": 128}  # a GPU wants larger batches; CPU backends keep the caller's
# int8 with activation scales taken from the whole input tensor at run time: a batch-mate would move a text's vector
# (by up to 0.011 in cosine with ONNX Runtime's), so these run a text per inference (solo.py). So does bf16: oneDNN
# picks its bf16 kernels (AMX, AVX-512 BF16) by the rows of a product, batch x length, so the same text at the same
# padded length got other bits in a batch of 1-2 than of 3+ (at 64 tokens: 1-5 against 6+), on a Sapphire Rapids
# class CPU; one text per inference cost 35% of in-process bf16 throughput there (docs/cpu-checks.md).
PER_TEXT = frozenset({"onnx-int8", "torch-int8", "torch-bf16"})


def auto_order(device: str) -> list[str]:
    """The backends `auto` tries, fastest first, each where it can run here; fp32 torch, the reference, last (a
    backend that fails this machine's check is skipped: check.py)."""
    if device.startswith("cuda"):
        return ["cuda-fp16", "torch"]
    return (["openvino-int8"] if openvino_backend.available() else []) + (["torch-bf16"] if native_bf16() else []) \
        + ["torch"]


def auto_backend(device: str) -> str:
    return auto_order(device)[0]


def resolve(backend: str, device: str, known: tuple[str, ...]) -> str:
    """The concrete backend for a request (`auto` resolved); an unknown or device-mismatched one is an error."""
    chosen = auto_backend(device) if backend == "auto" else backend
    if chosen not in known:
        raise ValueError(f"unknown backend {backend!r}; known: auto, {', '.join(known)}")
    cuda = device.startswith("cuda")
    if (chosen == "cuda-fp16" and not cuda) or (chosen in ("torch-int8", "openvino-int8") and cuda):
        raise ValueError(f"backend {chosen!r} does not run on device {device!r} "
                         "(cuda-fp16 needs HINDSIGHT_DEVICE=cuda, openvino-int8 and torch-int8 a CPU)")
    return chosen


def variant(backend: str) -> str:
    """The revision suffix of a backend ("" for fp32 torch, so existing fp32 caches stay valid)."""
    if backend == "torch":
        return ""
    if backend == "openvino-int8":
        return openvino_backend.variant()
    if backend == "torch-int8":
        import torch

        return f"-int8-{torch.backends.quantized.engine}"  # kernels differ by engine, and so do the vectors
    if backend == "torch-bf16":
        return "-bf16-pertext"  # "-bf16" batched texts of a length, whose bits moved with the batch's size
    return "-" + backend.removeprefix("torch-")


def one_thread(device: str) -> None:
    """Torch inference on CPU on one intra-op thread. oneDNN and its GEMMs split a product over the threads by its
    shape, so on an AVX-512 CPU (Sapphire Rapids class) the same text got other bits at 2 threads than at 1 (41 of 80
    fp32 vectors differed, 18 of 80 bf16), and at 2 threads by its batch's size too: a build in the CLI (every core)
    and a query in the server (HINDSIGHT_SCORING_THREADS, 1) made different vectors of one text. The worker processes
    of a build run one thread each already (workers.py)."""
    if device == "cpu":
        import torch

        if torch.get_num_threads() != 1:
            torch.set_num_threads(1)


def prepare(module, backend: str, device: str):
    """The module converted for the backend, on its device, in eval mode."""
    import torch

    module = module.to(device).eval()
    if backend == "torch-bf16":
        return module.to(torch.bfloat16)
    if backend == "cuda-fp16":
        return module.to(torch.float16)
    if backend == "torch-int8":  # every nn.Linear, the adapter's bottleneck layers included
        # per output channel: per-tensor scales cost MiniLM a mean drift of 0.08
        qconfig = torch.ao.quantization.per_channel_dynamic_qconfig
        return torch.ao.quantization.quantize_dynamic(plain_linears(module), {torch.nn.Linear: qconfig},
                                                      dtype=torch.qint8)
    return module


def plain_linears(module):
    """Swap subclasses of nn.Linear that add nothing here for nn.Linear, so quantize_dynamic converts them.

    `adapters` wraps every attention and feed-forward projection in a LoRA-capable Linear subclass; with no LoRA
    loaded (SPECTER2's adapter is a bottleneck adapter) it computes exactly F.linear, but quantize_dynamic matches
    types exactly and would leave 10 of a layer's 17 projections in fp32.
    """
    import torch

    for parent in list(module.modules()):
        for name, child in list(parent.named_children()):
            if (isinstance(child, torch.nn.Linear) and hasattr(child, "loras") and not len(child.loras)
                    and not getattr(child, "fan_in_fan_out", False)):
                plain = torch.nn.Linear(child.in_features, child.out_features, bias=child.bias is not None,
                                        device=child.weight.device, dtype=child.weight.dtype)
                plain.weight, plain.bias = child.weight, child.bias
                setattr(parent, name, plain)
    return module


def manifest_backend(manifest: dict) -> str:
    """The backend a version was built with; manifests from before backends were recorded name it in the revision."""
    if manifest.get("backend"):
        return manifest["backend"]
    revision = manifest.get("revision", "")
    return next((b for b in ("onnx-int8", "onnx") if f"-{b}" in revision), "torch")
