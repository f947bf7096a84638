"""The one settings object, read from HINDSIGHT_* environment variables (and a .env file), in one part per component.

Each part reads the same variables as before it was a part (HINDSIGHT_CUTOFF is `settings.index.cutoff`); the two
retry groups read HINDSIGHT_FETCH_* and HINDSIGHT_VERIFIER_* into one `Retry` model."""

from datetime import date
from functools import lru_cache
from pathlib import Path
from typing import Any, TypeGuard

from pydantic import Field, SecretStr, model_validator
from pydantic.fields import FieldInfo
from pydantic_settings import (BaseSettings, DotEnvSettingsSource, EnvSettingsSource, PydanticBaseSettingsSource,
                               SettingsConfigDict)

DEFAULT_TOP_VENUES = [
    "ICLR", "NeurIPS", "ICML", "ACL", "EMNLP", "NAACL", "CVPR", "ICCV", "ECCV",
    "AAAI", "IJCAI", "KDD", "COLT", "WWW", "SIGIR",
]


def _is_part(kind: Any) -> TypeGuard[type[BaseSettings]]:
    return isinstance(kind, type) and issubclass(kind, BaseSettings)


def _leaf_value(source: EnvSettingsSource, field: FieldInfo, name: str) -> tuple[Any, str, bool]:
    """A field's variable; none for a nested part (HINDSIGHT_FETCH is no setting), which reads its own."""
    if _is_part(field.annotation):
        return None, name, False
    return EnvSettingsSource.get_field_value(source, field, name)


class _Env(EnvSettingsSource):
    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return _leaf_value(self, field, field_name)


class _DotEnv(DotEnvSettingsSource):
    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return _leaf_value(self, field, field_name)


class Part(BaseSettings):
    """A component's settings: HINDSIGHT_<FIELD> from the environment or .env; a nested part given as a dict is
    built by its own class, so the environment still fills the fields the dict leaves out."""
    model_config = SettingsConfigDict(env_prefix="HINDSIGHT_", env_file=".env", extra="ignore")

    @classmethod
    def settings_customise_sources(cls, settings_cls: type[BaseSettings], init_settings: PydanticBaseSettingsSource,
                                   env_settings: PydanticBaseSettingsSource,
                                   dotenv_settings: PydanticBaseSettingsSource,
                                   file_secret_settings: PydanticBaseSettingsSource,
                                   ) -> tuple[PydanticBaseSettingsSource, ...]:
        env_file = getattr(dotenv_settings, "env_file", ".env")
        return init_settings, _Env(settings_cls), _DotEnv(settings_cls, env_file=env_file), file_secret_settings

    @model_validator(mode="before")
    @classmethod
    def _build_parts(cls, values: Any) -> Any:
        if not isinstance(values, dict):
            return values
        built = dict(values)
        for name, field in cls.model_fields.items():
            kind = field.annotation
            if _is_part(kind) and isinstance(built.get(name), dict):
                built[name] = kind(**built[name])
        return built


class Retry(Part):
    """How a client retries one request: a timeout per attempt, attempts, a doubling backoff with jitter between
    min and max (a Retry-After is honoured instead), and the longest Retry-After it sleeps on."""
    timeout: float
    attempts: int
    backoff_min: float
    backoff_max: float
    max_wait: float


class FetchRetry(Retry):
    """The scholarly APIs' retries (HINDSIGHT_FETCH_*)."""
    model_config = SettingsConfigDict(env_prefix="HINDSIGHT_FETCH_")

    timeout: float = Field(60.0, gt=0, description="Seconds to wait for a response before retrying.")
    attempts: int = Field(8, ge=1, description="Attempts per request before the fetch stops.")
    backoff_min: float = Field(2.0, ge=0, description="First backoff in seconds (then doubled, with jitter).")
    backoff_max: float = Field(120.0, ge=0, description="Longest backoff between two attempts, in seconds.")
    max_wait: float = Field(900.0, ge=0, description="A longer Retry-After stops the fetch instead of sleeping "
                                                     "(resume later with the same command).")


class VerifierRetry(Retry):
    """The OpenAI-compatible endpoint's retries (HINDSIGHT_VERIFIER_*), the verifier's and the judge's."""
    model_config = SettingsConfigDict(env_prefix="HINDSIGHT_VERIFIER_")

    timeout: float = Field(60.0, gt=0, description="Seconds to wait for one verifier answer.")
    attempts: int = Field(6, ge=1, description="Attempts per verifier request (429, 5xx, timeouts, malformed bodies) "
                                               "before it fails.")
    backoff_min: float = Field(1.0, ge=0, description="First backoff of the openai verifier in seconds (then "
                                                      "doubled, with jitter).")
    backoff_max: float = Field(30.0, ge=0, description="Longest backoff between two openai verifier attempts, in "
                                                       "seconds.")
    max_wait: float = Field(120.0, ge=0, description="A longer Retry-After from the openai verifier's endpoint stops "
                                                     "the job instead of sleeping (rerun later to resume).")


class IndexSettings(Part):
    """What a build embeds and how (model, backend, workers, vector store), its window and its h-index inputs."""

    model: str = Field("minilm", description="Embedder key used by index builds (minilm, specter2).")
    specter2_base: str = Field("allenai/specter2_base", description="Local folder or hub id of the SPECTER2 base.")
    specter2_adapter: str = Field("allenai/specter2", description="Local folder or hub id of the proximity adapter.")
    device: str = Field("cpu", description="cpu, or cuda / cuda:N (then `auto` backends run fp16 with batches of 128).")
    minilm_backend: str = Field("auto",
                                pattern="^(auto|torch|torch-bf16|torch-int8|cuda-fp16|onnx|onnx-int8|openvino-int8)$",
                                description="MiniLM runtime for builds: auto (the fastest within the drift bound: "
                                            "openvino-int8 where installed on CPUs with int8 dot products, else bf16 "
                                            "on CPUs with native bf16, else int8 ONNX when installed, else fp32 "
                                            "torch; fp16 on CUDA) or a named one; each has its own revision.")
    specter2_backend: str = Field("auto", pattern="^(auto|torch|torch-bf16|torch-int8|cuda-fp16|openvino-int8)$",
                                  description="SPECTER2 runtime: auto (openvino-int8 where installed on CPUs with "
                                              "int8 dot products, else bf16 on CPUs with native bf16, else fp32 "
                                              "torch; fp16 on CUDA) or a named one; each has its own revision.")
    allow_failed_backend: bool = Field(False, description="Use an embedding backend named explicitly (a setting, "
                                                          "an index's manifest) even where it fails this machine's "
                                                          "backend check (docs/cpu-checks.md); a warning says so.")
    backend_check_dir: Path | None = Field(None, description="Where backend check verdicts are cached, shared by "
                                                             "every HINDSIGHT_HOME; unset: "
                                                             "$XDG_CACHE_HOME/hindsight/backend-checks (else "
                                                             "~/.cache/hindsight/backend-checks).")
    embed_workers: int = Field(0, ge=0, le=64,
                               description="Processes that embed a build with a torch backend (one torch thread each); "
                                           "0 = auto: one per CPU core for builds of 512+ new texts on CPU, else "
                                           "in-process. ONNX and openvino-int8 builds ignore it: they run on every "
                                           "core in-process.")
    batch_size: int = Field(16, ge=1, le=1024, description="Texts per encoder batch in builds (16: measured fastest "
                                                           "for bf16 MiniLM on CPU, less padding than 32).")

    vector_backend: str = Field("faiss", pattern="^(faiss|qdrant)$",
                                description="Where builds put the vectors: faiss (files in the version folder) or "
                                            "qdrant (a collection per version, an alias for the published one).")
    qdrant_url: str | None = Field(None, description="Qdrant server URL (shared by several API processes); unset: "
                                                     "local mode in HINDSIGHT_HOME/qdrant, one process at a time.")
    qdrant_api_key: SecretStr | None = Field(None, description="Sent to the Qdrant server as its api-key.")
    qdrant_prefix: str = Field("hindsight", pattern=r"^[A-Za-z0-9_-]{1,64}$",
                               description="Collection names are <prefix>-<version>; one prefix per HINDSIGHT_HOME "
                                           "sharing a server.")
    qdrant_alias: str = Field("hindsight-current", pattern=r"^[A-Za-z0-9_-]{1,64}$",
                              description="The alias a build flips to the collection it publishes.")

    cutoff: date = date(2023, 6, 1)
    until: date = date(2025, 12, 31)
    top_venues: list[str] = Field(default_factory=lambda: list(DEFAULT_TOP_VENUES))
    citation_transform: str = Field("none", pattern="^(none|log1p)$", description="Applied before min-max.")
    citation_normalisation: str = Field(
        "global", pattern="^(global|cohort)$",
        description="c_hat min-max over the whole window (global, the paper's) or within each publication "
                    "half-year of it (cohort: age-fair); recorded in the manifest, applied to every window.")
    citation_weight: float = 0.6
    venue_weight: float = 0.4


class MatcherSettings(Part):
    """What scoring considers per idea: top K papers, the look-back window of prior art, the verifier step."""

    top_k: int = Field(20, ge=1, le=200)
    prior_art: bool = Field(True, description="Score each idea's look-back window [cutoff - lookback, cutoff) too "
                                              "(docs/prior-art.md); a request or run may turn it off.")
    prior_art_lookback_days: int = Field(730, ge=1, le=36_500, description="Days the look-back window reaches "
                                                                           "before the cutoff.")
    verifier: str = Field("auto", pattern="^(auto|none|local|openai)$",
                          description="auto: local where the packaged model and its runtime are installed, else "
                                      "none (embedding-only decisions); local, openai, or none.")
    verifier_top_k: int = Field(5, ge=1, le=50, description="Candidates per idea the verifier reads.")


class LLMSettings(Part):
    """The language model runtimes: the local model (verifier and judge), the openai verifier's endpoint with its
    pace, budget and retries, and the LLM judge's own endpoint (unset: the verifier's) and audit cut."""

    verifier_model_path: Path | None = Field(None, description="A GGUF file for the local verifier instead of the "
                                                               "packaged Qwen2.5-Coder-1.5B-Instruct Q4_K_M.")
    verifier_threads: int = Field(0, ge=0, le=256, description="llama.cpp threads of the local verifier; 0 = one "
                                                               "per core.")
    verifier_ctx: int = Field(4096, ge=512, le=32768, description="Context tokens of the local verifier.")
    llm_probe: bool = Field(True, description="Probe the local model (verifier and judge) in a child process on "
                                              "first use on a machine, against its shipped reference answer; "
                                              "false skips the probe (docs/llm.md).")
    verifier_url: str | None = Field(None, description="OpenAI-compatible base URL (…/v1) of the openai verifier: "
                                                       "vLLM, Ollama, a llama.cpp server or a hosted API.")
    verifier_model: str | None = Field(None, description="The model name sent to the openai verifier's endpoint.")
    verifier_api_key: SecretStr | None = Field(None, description="Bearer key of the openai verifier's endpoint.")
    verifier_pace: float = Field(0.0, ge=0, description="Seconds between two requests to the openai verifier.")
    verifier_budget: int = Field(10_000, ge=0, description="Most verifier requests one command or job may make "
                                                           "(cached verdicts are free); past it the job stops, "
                                                           "resumable.")
    retry: VerifierRetry = Field(default_factory=VerifierRetry)
    judge_url: str | None = Field(None, description="OpenAI-compatible base URL (…/v1) of the openai judge; unset: "
                                                    "HINDSIGHT_VERIFIER_URL.")
    judge_model: str | None = Field(None, description="The model name sent to the openai judge's endpoint; unset: "
                                                      "HINDSIGHT_VERIFIER_MODEL.")
    judge_api_key: SecretStr | None = Field(None, description="Bearer key of the openai judge's endpoint; unset: "
                                                              "HINDSIGHT_VERIFIER_API_KEY.")
    judge_cut: float = Field(6.0, ge=1, le=10, description="The audit's cut: a judge's verdict is its score >= "
                                                           "the cut (reported with every audit).")


class ServiceSettings(Part):
    """The HTTP service: admin token, request limits, SQLite write retries, scoring threads."""

    admin_token: SecretStr | None = Field(None, description="Bearer token for mutating endpoints; unset: `hindsight "
                                                            "serve` on a loopback host makes a one-time one, other "
                                                            "hosts disable them.")
    max_ideas_per_request: int = 256
    max_text_chars: int = 20_000
    max_upload_bytes: int = 50 * 1024 * 1024
    write_retry_seconds: float = Field(30.0, gt=0, description="How long a write retries while SQLite is locked "
                                                               "before the API answers 503 with Retry-After.")
    scoring_threads: int = Field(1, ge=0, le=256, description="Threads one request's encode (torch) and matrix work "
                                                              "(numpy BLAS) use in the server: 1 (measured fastest "
                                                              "for one idea per request, idle or loaded); 0 = the "
                                                              "libraries' default (one per core).")

    def admin_secret(self) -> str | None:
        """The admin token's value; None when it is unset or empty (the admin endpoints are off)."""
        return (self.admin_token.get_secret_value() or None) if self.admin_token is not None else None


class LabelsSettings(Part):
    """The labelling view."""

    labels_top_k: int = Field(5, ge=1, le=50, description="Candidates per idea the labelling view shows; shown "
                                                          "candidates left unlabelled count as none.")


class FetchSettings(Part):
    """Fetching papers from the scholarly APIs (indexing.fetch): URLs, keys, contact, pacing, retries."""

    openalex_url: str = Field("https://api.openalex.org", description="OpenAlex base URL (a mirror or proxy).")
    s2_url: str = Field("https://api.semanticscholar.org/graph/v1", description="Semantic Scholar Graph API base URL.")
    openalex_api_key: SecretStr | None = Field(None, description="OpenAlex key, sent as api_key= (required since "
                                                                 "2026-02-13; free).")
    s2_api_key: SecretStr | None = Field(None, description="Semantic Scholar key, sent as the x-api-key header.")
    contact_email: str | None = Field(None, description="Sent as OpenAlex mailto= and in the User-Agent.")
    openalex_pace: float = Field(0.1, ge=0, description="Seconds between OpenAlex requests (limit: 100/s).")
    s2_pace: float = Field(1.0, ge=0, description="Seconds between Semantic Scholar requests (a key gets 1/s).")
    retry: FetchRetry = Field(default_factory=FetchRetry)


class Settings(Part):
    """HINDSIGHT_HOME and the paths under it, and one part per component."""

    home: Path = Field(Path("var"), description="Root of all state: database, embedding cache, index versions.")
    index: IndexSettings = Field(default_factory=IndexSettings)
    matcher: MatcherSettings = Field(default_factory=MatcherSettings)
    llm: LLMSettings = Field(default_factory=LLMSettings)
    service: ServiceSettings = Field(default_factory=ServiceSettings)
    labels: LabelsSettings = Field(default_factory=LabelsSettings)
    fetch: FetchSettings = Field(default_factory=FetchSettings)

    @property
    def db_path(self) -> Path:
        return self.home / "hindsight.db"

    @property
    def indexes_dir(self) -> Path:
        return self.home / "indexes"

    @property
    def qdrant_dir(self) -> Path:
        """Qdrant local mode's folder (locked by the one process that opens it)."""
        return self.home / "qdrant"

    @property
    def raw_dir(self) -> Path:
        return self.home / "raw"



@lru_cache
def get_settings() -> Settings:
    return Settings()
