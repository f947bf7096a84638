"""Settings: one part per component, each reading the HINDSIGHT_* variables it always read (and .env), and one Retry
model for the fetch client's and the LLM endpoint's retries, each with its own variables and defaults."""

import os
from datetime import date
from pathlib import Path

import pytest
from pydantic import SecretStr

from indexing.settings import DEFAULT_TOP_VENUES, FetchRetry, Retry, Settings, VerifierRetry

# every variable's default, as before the settings had parts
DEFAULTS = {
    "home": Path("var"),
    "index": {"model": "minilm", "specter2_base": "allenai/specter2_base", "specter2_adapter": "allenai/specter2",
              "device": "cpu", "minilm_backend": "auto", "specter2_backend": "auto", "allow_failed_backend": False,
              "backend_check_dir": None, "embed_workers": 0, "batch_size": 16, "vector_backend": "faiss",
              "qdrant_url": None, "qdrant_api_key": None, "qdrant_prefix": "hindsight",
              "qdrant_alias": "hindsight-current", "cutoff": date(2023, 6, 1), "until": date(2025, 12, 31),
              "top_venues": DEFAULT_TOP_VENUES, "citation_transform": "none", "citation_normalisation": "global",
              "citation_weight": 0.6, "venue_weight": 0.4},
    "matcher": {"top_k": 20, "prior_art": True, "prior_art_lookback_days": 730, "verifier": "auto",
                "verifier_top_k": 5},
    "llm": {"verifier_model_path": None, "verifier_threads": 0, "verifier_ctx": 4096, "llm_probe": True,
            "verifier_url": None, "verifier_model": None, "verifier_api_key": None, "verifier_pace": 0.0,
            "verifier_budget": 10_000,
            "retry": {"timeout": 60.0, "attempts": 6, "backoff_min": 1.0, "backoff_max": 30.0, "max_wait": 120.0},
            "judge_url": None, "judge_model": None, "judge_api_key": None, "judge_cut": 6.0},
    "service": {"admin_token": None, "max_ideas_per_request": 256, "max_text_chars": 20_000,
                "max_upload_bytes": 50 * 1024 * 1024, "write_retry_seconds": 30.0, "scoring_threads": 1},
    "labels": {"labels_top_k": 5},
    "fetch": {"openalex_url": "https://api.openalex.org", "s2_url": "https://api.semanticscholar.org/graph/v1",
              "openalex_api_key": None, "s2_api_key": None, "contact_email": None, "openalex_pace": 0.1,
              "s2_pace": 1.0,
              "retry": {"timeout": 60.0, "attempts": 8, "backoff_min": 2.0, "backoff_max": 120.0, "max_wait": 900.0}},
}


@pytest.fixture
def bare(monkeypatch, tmp_path):
    """No HINDSIGHT_* variable and no .env: a working directory of its own."""
    for name in [n for n in os.environ if n.startswith("HINDSIGHT_")]:
        monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    return monkeypatch


def test_no_environment_gives_the_defaults(bare):
    assert Settings().model_dump() == DEFAULTS
    assert Settings() == Settings()


def test_each_component_reads_its_variables(bare):
    for name, value in {"HINDSIGHT_CUTOFF": "2022-01-01", "HINDSIGHT_TOP_K": "7", "HINDSIGHT_JUDGE_URL": "http://j/v1",
                        "HINDSIGHT_VERIFIER_ATTEMPTS": "2", "HINDSIGHT_VERIFIER_MAX_WAIT": "9",
                        "HINDSIGHT_ADMIN_TOKEN": "tok", "HINDSIGHT_LABELS_TOP_K": "3",
                        "HINDSIGHT_OPENALEX_PACE": "0.5", "HINDSIGHT_FETCH_ATTEMPTS": "3",
                        "HINDSIGHT_FETCH_BACKOFF_MIN": "0.25", "HINDSIGHT_HOME": "elsewhere"}.items():
        bare.setenv(name, value)
    s = Settings()
    assert s.home == Path("elsewhere") and s.index.cutoff == date(2022, 1, 1) and s.matcher.top_k == 7
    assert s.llm.judge_url == "http://j/v1" and s.llm.retry.attempts == 2 and s.llm.retry.max_wait == 9
    assert s.service.admin_token == SecretStr("tok") and s.labels.labels_top_k == 3 and s.fetch.openalex_pace == 0.5
    assert (s.fetch.retry.attempts, s.fetch.retry.backoff_min, s.fetch.retry.backoff_max) == (3, 0.25, 120.0)
    assert s.llm.retry.backoff_min == 1.0  # the groups do not share variables
    assert isinstance(s.fetch.retry, FetchRetry) and isinstance(s.llm.retry, VerifierRetry)
    assert isinstance(s.fetch.retry, Retry) and isinstance(s.llm.retry, Retry)


def test_dotenv_and_a_name_of_a_component_alone(bare, tmp_path):
    (tmp_path / ".env").write_text("HINDSIGHT_FETCH_MAX_WAIT=30\nHINDSIGHT_PRIOR_ART=false\n")
    bare.setenv("HINDSIGHT_FETCH", "not a setting")  # a part's own name reads nothing
    s = Settings()
    assert s.fetch.retry.max_wait == 30 and s.matcher.prior_art is False


def test_a_part_given_in_part_keeps_the_environment_for_the_rest(bare):
    bare.setenv("HINDSIGHT_FETCH_TIMEOUT", "5")
    bare.setenv("HINDSIGHT_S2_PACE", "0.2")
    s = Settings(home=Path("h"), fetch={"openalex_pace": 0, "retry": {"attempts": 1}})
    assert (s.fetch.openalex_pace, s.fetch.s2_pace) == (0, 0.2)
    assert (s.fetch.retry.attempts, s.fetch.retry.timeout) == (1, 5)
