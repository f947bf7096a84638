"""The openai verifier against a real loopback server replaying recorded chat endpoint replies, with faults."""

import math
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from indexing.db import migrate
from indexing.matcher.verifier import make_verifier, prompts
from indexing.matcher.verifier.base import Paper, VerifierUnavailable
from indexing.matcher.verifier.cache import VerdictCache
from indexing.matcher.verifier.openai import BudgetSpent, EndpointFailed, EndpointRefused, OpenAIVerifier
from indexing.matcher.verifier.step import IdeaCandidates, verify_ideas
from indexing.settings import Settings
from tests.helpers import ROOT
from tests.replay_server import Replay, chat_by_question, chat_reply

KEY = "sk-test-7Qm2Zx9Lp4Vb1Nc8Rt5Yw3Kd6Hf0Gj1234"
IDEA = "Problem: retrieval-augmented models hallucinate citations.\nMethod: verify each citation against the index."
PAPERS = [Paper("p1", "Citation checking for RAG", "We check every generated citation against the corpus."),
          Paper("p2", "Long-context summarisation", "A study of summarising books with long-context models."),
          Paper("p3", "Hallucinated references in LLMs", "We measure how often chat models invent references.")]



def share(yes: list[float], no: list[float]) -> float:
    return sum(map(math.exp, yes)) / (sum(map(math.exp, yes)) + sum(map(math.exp, no)))


# P(Yes) over the Yes and No forms of each recording's top logprobs, picked out by hand
P_OPENAI_YES = share([-0.0015052, -12.876505, -13.751505, -14.001505, -18.876505],  # Yes yes YES " Yes" " yes"
                     [-6.5015054, -17.251505])  # No no (0.9985)
P_VLLM_NO = share([-2.1269281, -14.376928], [-0.12692805, -10.251928, -11.126928, -12.251928])  # 0.1192
P_LLAMACPP_YES = share([-0.4519, -7.8304, -9.9906], [-1.0142, -9.0275])  # 0.6371
# captured from llama-cpp-python (the packaged Qwen2.5-Coder-1.5B, this module's IDEA and papers, the real prompts)
P_CAPTURED_YES = share([-0.3614, -7.1576, -7.3281, -7.4634, -9.3972], [-1.2091, -8.2456, -9.0291, -9.4097])  # 0.70
P_CAPTURED_NO = share([-0.9035, -7.5285, -7.581, -7.8209, -9.6868], [-0.5277, -7.4931, -8.1894, -8.8184])  # 0.41
P_BOLD_NO = share([-3.2402], [-0.0402, -9.3652])  # the answer token "No", 0.0392; the leading "**" would give 0.18




def fast(tmp_path: Path, url: str | None, **overrides) -> Settings:
    """Short waits: no pace, backoff 10..50 ms, a 0.3 s timeout, four attempts."""
    retry = {"timeout": 0.3, "attempts": 4, "backoff_min": 0.01, "backoff_max": 0.05, "max_wait": 5,
             **overrides.pop("retry", {})}
    llm = dict(verifier_url=url, verifier_model="test-model", verifier_api_key=KEY, verifier_pace=0,
               verifier_budget=100, retry=retry)
    return Settings(home=tmp_path / "home", llm={**llm, **overrides})


def verifier_for(r: Replay, tmp_path: Path, **overrides) -> OpenAIVerifier:
    return OpenAIVerifier.from_settings(fast(tmp_path, r.url + "/v1", **overrides))


def chat_requests(r: Replay) -> list[dict]:
    return r.requests("v1/chat/completions")


@pytest.mark.parametrize("reply,expected", [("openai_logprobs_yes.json", P_OPENAI_YES),
                                            ("vllm_logprobs_no.json", P_VLLM_NO),
                                            ("llamacpp_logprobs_yes.json", P_LLAMACPP_YES),
                                            ("openai_logprobs_bold_no.json", P_BOLD_NO),
                                            ("llama_cpp_python_captured_yes.json", P_CAPTURED_YES),
                                            ("llama_cpp_python_captured_no.json", P_CAPTURED_NO)])
def test_logprobs_replies_give_p_yes(replay, tmp_path, reply, expected):
    r = replay(chat=lambda body: chat_reply(reply))
    [verdict] = verifier_for(r, tmp_path).judge(IDEA, PAPERS[:1])
    assert verdict.source == "logprobs"
    assert verdict.p_direction == pytest.approx(expected, abs=2e-4)
    assert verdict.p_realised == pytest.approx(expected, abs=2e-4)


def test_request_carries_the_prompt_the_options_and_the_key(replay, tmp_path):
    r = replay(chat=lambda body: chat_reply("openai_logprobs_yes.json"))
    verifier = verifier_for(r, tmp_path)
    verifier.judge(IDEA, PAPERS[:1])
    sent = chat_requests(r)
    assert [e["method"] for e in sent] == ["POST", "POST"]
    for entry, question in zip(sent, prompts.QUESTIONS):
        body = entry["body"]
        assert entry["headers"]["Authorization"] == f"Bearer {KEY}"
        assert body["model"] == "test-model" and body["temperature"] == 0 and body["logprobs"] is True
        assert body["top_logprobs"] == 20 and 1 <= body["max_tokens"] <= 8
        assert body["messages"] == prompts.messages(IDEA, PAPERS[0].title, PAPERS[0].abstract, question)
        user = body["messages"][-1]["content"]
        assert IDEA.split("\n")[1] in user and PAPERS[0].title in user and PAPERS[0].abstract in user
        assert user.endswith(prompts.QUESTIONS[question])
    assert verifier.revision == f"openai:test-model@127.0.0.1:{r.url.rsplit(':', 1)[1]}:{prompts.PROMPT_VERSION}"
    assert verifier.name == "openai" and KEY not in repr(vars(verifier))


def test_no_key_sends_no_authorization(replay, tmp_path):
    r = replay(chat=lambda body: chat_reply("ollama_yes.json"))
    verifier_for(r, tmp_path, verifier_api_key=None).judge(IDEA, PAPERS[:1])
    assert all("Authorization" not in e["headers"] for e in chat_requests(r))


def test_each_question_gets_its_own_answer_and_pairs_go_in_a_row(replay, tmp_path):
    r = replay(chat=chat_by_question(direction="openai_logprobs_yes.json", realised="vllm_logprobs_no.json"))
    verdicts = verifier_for(r, tmp_path).judge(IDEA, PAPERS)
    assert [v.p_direction for v in verdicts] == pytest.approx([P_OPENAI_YES] * 3, abs=2e-4)
    assert [v.p_realised for v in verdicts] == pytest.approx([P_VLLM_NO] * 3, abs=2e-4)
    asked = [(e["body"]["messages"][-1]["content"], e["body"]["messages"][-1]["content"].rsplit("\n", 1)[1])
             for e in chat_requests(r)]
    # paper 1 direction, paper 1 realised, paper 2 direction, ...: the second question reuses idea + paper
    assert [(next(p.title for p in PAPERS if p.title in text), q) for text, q in asked] == [
        (p.title, prompts.QUESTIONS[q]) for p in PAPERS for q in ("direction", "realised")]


@pytest.mark.parametrize("reply,expected", [("ollama_yes.json", 1.0), ("ollama_text_yes_dot.json", 1.0),
                                            ("ollama_text_bold_no.json", 0.0)])
def test_replies_without_logprobs_are_read_from_the_text(replay, tmp_path, reply, expected):
    r = replay(chat=lambda body: chat_reply(reply))
    [verdict] = verifier_for(r, tmp_path).judge(IDEA, PAPERS[:1])
    assert (verdict.p_direction, verdict.p_realised, verdict.source) == (expected, expected, "parsed")
    assert len(chat_requests(r)) == 2


def test_one_question_parsed_makes_the_verdict_parsed(replay, tmp_path):
    r = replay(chat=chat_by_question(direction="openai_logprobs_yes.json", realised="ollama_text_bold_no.json"))
    [verdict] = verifier_for(r, tmp_path).judge(IDEA, PAPERS[:1])
    assert verdict.p_direction == pytest.approx(P_OPENAI_YES, abs=2e-4)
    assert (verdict.p_realised, verdict.source) == (0.0, "parsed")


@pytest.mark.parametrize("fault", ["reply:ollama_text_unsure.json", "reply:fault_200_no_choices.json",
                                   "truncate-short", "reply:fault_500_openai.json", "503", "slow:2.0", "reset"])
def test_a_transient_fault_is_retried_then_answered(replay, tmp_path, fault):
    r = replay(chat=lambda body: chat_reply("vllm_logprobs_no.json"))
    r.fault("chat", 0, fault)
    start = time.monotonic()
    [verdict] = verifier_for(r, tmp_path).judge(IDEA, PAPERS[:1])
    assert verdict.p_direction == pytest.approx(P_VLLM_NO, abs=2e-4) and verdict.source == "logprobs"
    assert len(chat_requests(r)) == 3  # the fault, its retry, the second question
    assert time.monotonic() - start < 1.5  # a timeout of 0.3 s, backoffs of 10..50 ms; the slow reply not awaited


@pytest.mark.parametrize("reply,said", [("ollama_text_unsure.json", "neither Yes nor No: 'The paper addresses'"),
                                        ("fault_200_no_choices.json", "without choices (Provider returned error)")])
def test_an_answer_never_readable_fails_clearly_after_the_attempts(replay, tmp_path, reply, said):
    r = replay(chat=lambda body: chat_reply("vllm_logprobs_no.json"))
    r.fault("chat", 0, *[f"reply:{reply}"] * 4)
    with pytest.raises(EndpointFailed) as err:
        verifier_for(r, tmp_path).judge(IDEA, PAPERS[:1])
    assert said in str(err.value) and "after 4 attempt(s)" in str(err.value) and "rerun" in str(err.value)
    assert len(chat_requests(r)) == 4


def test_429_waits_as_long_as_retry_after_says(replay, tmp_path):
    r = replay(chat=lambda body: chat_reply("openai_logprobs_yes.json"))
    r.fault("chat", 0, "reply:fault_429_openai.json")
    verifier_for(r, tmp_path).judge(IDEA, PAPERS[:1])
    first, second = chat_requests(r)[:2]
    assert second["t"] - first["t"] >= 0.95  # Retry-After: 1, against backoffs of at most 50 ms


def test_429_retry_after_ms_comes_before_retry_after(replay, tmp_path):
    r = replay(chat=lambda body: chat_reply("openai_logprobs_yes.json"))
    r.fault("chat", 0, "reply:fault_429_retry_after_ms.json")
    verifier_for(r, tmp_path).judge(IDEA, PAPERS[:1])
    first, second = chat_requests(r)[:2]
    assert 0.28 <= second["t"] - first["t"] < 0.9  # retry-after-ms: 300 beside retry-after: 1


def test_a_wait_longer_than_max_wait_stops_at_once(replay, tmp_path):
    r = replay(chat=lambda body: chat_reply("openai_logprobs_yes.json"))
    r.fault("chat", 0, "reply:fault_429_openai.json")
    with pytest.raises(EndpointRefused, match="HINDSIGHT_VERIFIER_MAX_WAIT") as err:
        verifier_for(r, tmp_path, retry={"max_wait": 0.5}).judge(IDEA, PAPERS[:1])
    assert "Rate limit reached for gpt-4o-mini" in str(err.value) and len(chat_requests(r)) == 1


def test_throttled_on_every_attempt_gives_up_with_the_endpoint_words(replay, tmp_path):
    r = replay(chat=lambda body: chat_reply("openai_logprobs_yes.json"))
    r.fault("chat", 0, *["reply:fault_500_openai.json"] * 4)
    with pytest.raises(EndpointFailed, match="500 The server had an error"):
        verifier_for(r, tmp_path).judge(IDEA, PAPERS[:1])
    assert len(chat_requests(r)) == 4


@pytest.mark.parametrize("fault,said", [("reply:fault_401_openai.json", "401 Incorrect API key provided"),
                                        ("reply:fault_400_vllm.json", "400 This model's maximum context length"),
                                        ("reply:fault_404_model.json", "404 The model `gpt-4o-mnii` does not exist")])
def test_other_4xx_stop_at_once_with_the_endpoint_message(replay, tmp_path, fault, said):
    r = replay(chat=lambda body: chat_reply("openai_logprobs_yes.json"))
    r.fault("chat", 0, fault)
    with pytest.raises(EndpointRefused, match="refused the request") as err:
        verifier_for(r, tmp_path).judge(IDEA, PAPERS[:1])
    assert said in str(err.value) and len(chat_requests(r)) == 1
    assert isinstance(err.value, VerifierUnavailable)  # the caller's stop-and-resume path


def test_a_spent_quota_is_not_retried(replay, tmp_path):
    r = replay(chat=lambda body: chat_reply("openai_logprobs_yes.json"))
    r.fault("chat", 0, "reply:fault_429_quota.json")
    with pytest.raises(EndpointRefused, match="quota is spent: 429 You exceeded your current quota"):
        verifier_for(r, tmp_path).judge(IDEA, PAPERS[:1])
    assert len(chat_requests(r)) == 1


def test_the_key_is_never_in_an_error(replay, tmp_path):
    r = replay(chat=lambda body: chat_reply("openai_logprobs_yes.json"))
    r.fault("chat", 0, "echo-key")
    with pytest.raises(EndpointRefused) as refused:
        verifier_for(r, tmp_path).judge(IDEA, PAPERS[:1])
    assert chat_requests(r)[0]["headers"]["Authorization"] == f"Bearer {KEY}"  # sent, and echoed back by the fault
    assert KEY not in str(refused.value) and "Bearer ***" in str(refused.value)
    r.fault("chat", 0, *["slow:1.0"] * 4)
    with pytest.raises(EndpointFailed, match="timed out") as failed:
        verifier_for(r, tmp_path).judge(IDEA, PAPERS[:1])
    assert KEY not in str(failed.value)


def test_connection_refused_gives_up_after_the_attempts(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    verifier = OpenAIVerifier.from_settings(fast(tmp_path, f"http://127.0.0.1:{port}/v1"))
    with pytest.raises(EndpointFailed, match="connection failed") as err:
        verifier.judge(IDEA, PAPERS[:1])
    assert verifier.requests == 4 and KEY not in str(err.value)


def test_pace_spaces_request_starts(replay, tmp_path):
    r = replay(chat=lambda body: chat_reply("ollama_yes.json"))
    verifier = verifier_for(r, tmp_path, verifier_pace=0.15)
    start = time.monotonic()
    verifier.judge(IDEA, PAPERS[:2])
    # timed on this side: arrivals on a busy machine's server thread can bunch up; four starts need three paces
    assert len(chat_requests(r)) == 4 and time.monotonic() - start >= 3 * 0.15


def test_budget_refuses_an_idea_it_cannot_cover_before_any_request(replay, tmp_path):
    r = replay(chat=lambda body: chat_reply("ollama_yes.json"))
    verifier = verifier_for(r, tmp_path, verifier_budget=5)
    verifier.judge(IDEA, PAPERS[:2])  # 4 requests
    with pytest.raises(BudgetSpent, match=r"budget spent: 4 of 5 .*rerun to resume"):
        verifier.judge(IDEA, PAPERS[:1])  # needs 2
    assert verifier.requests == 4 and len(chat_requests(r)) == 4
    with pytest.raises(BudgetSpent, match="smaller than the 6 requests one idea needs"):
        verifier_for(r, tmp_path, verifier_budget=5).judge(IDEA, PAPERS)


def test_retries_count_against_the_budget(replay, tmp_path):
    r = replay(chat=lambda body: chat_reply("ollama_yes.json"))
    r.fault("chat", 0, "reply:fault_500_openai.json")
    verifier = verifier_for(r, tmp_path, verifier_budget=4)
    with pytest.raises(BudgetSpent, match="retries count"):
        verifier.judge(IDEA, PAPERS[:2])
    assert verifier.requests == 4 and len(chat_requests(r)) == 4


def test_a_budget_stop_resumes_from_the_cache(replay, tmp_path):
    """A run stopped by the budget loses nothing: a rerun reads only the ideas it had not reached."""
    r = replay(chat=chat_by_question(direction="openai_logprobs_yes.json", realised="vllm_logprobs_no.json"))
    settings = fast(tmp_path, r.url + "/v1", verifier_budget=6)
    migrate(settings.db_path)
    cache = VerdictCache(settings.db_path)
    ideas = [IdeaCandidates(text=f"{IDEA}\nVariant {i}.", papers=PAPERS) for i in range(3)]
    done = []
    with pytest.raises(BudgetSpent):
        verify_ideas(ideas, verifier=OpenAIVerifier.from_settings(settings), cache=cache, top_k=3,
                     progress=done.append)
    assert len(done) == 1 and len(chat_requests(r)) == 6
    rerun = verify_ideas(ideas[:2], verifier=OpenAIVerifier.from_settings(settings), cache=cache, top_k=3)
    assert [v.new_calls for v in rerun] == [0, 3] and len(chat_requests(r)) == 12
    assert rerun[1].verdicts[0] is not None and rerun[1].verdicts[0].p_realised == pytest.approx(P_VLLM_NO, abs=2e-4)


@pytest.mark.parametrize("url,model,missing", [(None, "m", "HINDSIGHT_VERIFIER_URL"),
                                               ("http://127.0.0.1:9/v1", None, "HINDSIGHT_VERIFIER_MODEL"),
                                               (None, None, "HINDSIGHT_VERIFIER_URL and HINDSIGHT_VERIFIER_MODEL")])
def test_missing_endpoint_settings_name_the_variables(tmp_path, url, model, missing):
    with pytest.raises(VerifierUnavailable, match=f"not set: {missing}$") as err:
        make_verifier("openai", fast(tmp_path, url, verifier_model=model))
    assert "HINDSIGHT_VERIFIER_URL" in str(err.value) and "HINDSIGHT_VERIFIER_MODEL" in str(err.value)


def test_a_url_that_is_not_http_is_refused(tmp_path):
    with pytest.raises(VerifierUnavailable, match="must be an http"):
        make_verifier("openai", fast(tmp_path, "127.0.0.1:8000/v1"))


LABEL_SHARES = """
import math
from indexing.llm.endpoint import label_shares
first = [{"token": "1", "logprob": math.log(0.7)}, {"token": "2", "logprob": math.log(0.3)}]
after = [{"token": t, "logprob": math.log(p)} for t, p in (("0", 0.1), (".0", 0.2), ("-0", 0.3))]
content = [{"token": "1", "top_logprobs": first}, {"token": "0", "top_logprobs": after}]
print(repr(label_shares(content, {"1": ["1"], "10": ["10", "1.0", "1-0"], "2": ["2"]})))
"""


def test_label_shares_do_not_depend_on_the_processs_hash_seed():
    # the next token's alternatives towards a longer label were summed in a set's order, which string hashing
    # changes per process: 0.42 or 0.42000000000000004 for the same reply
    seen = {subprocess.run([sys.executable, "-c", LABEL_SHARES], cwd=ROOT, capture_output=True, text=True, check=True,
                           env={"PYTHONHASHSEED": str(seed), "PATH": "/usr/bin:/bin"}).stdout.strip()
            for seed in range(12)}
    assert seen == {"{'1': 0.27999999999999997, '10': 0.42, '2': 0.3}"}
