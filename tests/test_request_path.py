"""A score request walks down its steps once each: plan the window -> the corpus view -> decide -> shape -> store
(docs/layout.md). Traced on a real one-idea request (scoring.flow.score_run, what POST /v1/score runs): the
orchestrator calls each step once, in that order, and no step's module is entered while another step runs (decide
reads the view it was handed through the view's methods; methods of the objects handed down are reads, not
visits)."""

import sys
from pathlib import Path

import pytest

from indexing.settings import Settings
from indexing.versions import load_version
from service.scoring.flow import score_run
from service.ideas import ReadResult
from service.schemas import IdeaIn
from tests.factories import sample_version
from tests.helpers import ROOT

ORCHESTRATOR = "service/scoring/flow.py"
STEPS = {"service/scoring/plan.py": "plan", "service/systems.py": "plan", "indexing/versions.py": "plan",
         "indexing/windows.py": "plan", "indexing/matcher/corpus.py": "view", "indexing/matcher/decide.py": "decide",
         "service/scoring/answer.py": "shape", "service/scoring/store.py": "store"}
IDEA = IdeaIn(id="one", problem="Language models state false facts in long answers.",
              method="Retrieve documents for each claim and rewrite the claims they contradict.")


def project_file(frame) -> str | None:
    name = frame.f_code.co_filename
    if not name.startswith(str(ROOT)) or "/.venv/" in name:
        return None
    return Path(name).relative_to(ROOT).as_posix()


def is_method(frame) -> bool:
    parts = frame.f_code.co_qualname.split(".")
    return len(parts) > 1 and parts[1] != "<locals>"


def trace(call) -> list[tuple[str, str | None, str]]:
    """(file, calling project file, qualified name) of every project function entered during call()."""
    events: list[tuple[str, str | None, str]] = []

    def profile(frame, event, arg) -> None:
        if event != "call" or (here := project_file(frame)) is None:
            return
        caller = frame.f_back
        while caller is not None and project_file(caller) is None:
            caller = caller.f_back
        events.append((here, project_file(caller) if caller else None,
                       ("method:" if is_method(frame) else "") + frame.f_code.co_qualname))

    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    return events


def walk(events: list[tuple[str, str | None, str]]) -> tuple[list[str], list[str]]:
    """The steps the orchestrator entered (in order, repeats of one step merged) and every visit out of turn."""
    order: list[str] = []
    out_of_turn = []
    for here, caller, name in events:
        step = STEPS.get(here)
        if step is None or here == caller or name.startswith("method:"):
            continue
        if caller == ORCHESTRATOR:
            if not order or order[-1] != step:
                order.append(step)
        elif not order or step != order[-1]:
            out_of_turn.append(f"{caller} -> {here}:{name} while {order[-1] if order else 'nothing'} runs")
    return order, out_of_turn


@pytest.fixture(scope="module")
def version(tmp_path_factory, minilm):
    home = tmp_path_factory.mktemp("path") / "home"
    built = sample_version(home, minilm, 40)
    settings = Settings(home=home)
    return settings, load_version(settings.indexes_dir, built.version)


@pytest.mark.parametrize("matcher", ["hybrid", "dense"])
def test_a_score_request_walks_down_its_steps_once(version, minilm, matcher):
    settings, loaded = version

    def request(run: str) -> None:
        score_run(settings, loaded=loaded, embedder=minilm, read=ReadResult.of([IDEA]), system="s", run=run,
                  matcher=matcher)

    request("warm")  # caches filled (the corpus, the window's impacts), as on a serving version
    events = trace(lambda: request("traced"))
    order, out_of_turn = walk(events)
    assert order == ["plan", "view", "decide", "shape", "store"]
    assert out_of_turn == []
    # the window's BM25 is the view's: decide never builds or looks one up
    assert not [e for e in events if e[2].endswith("lexical_for") and e[1] != "indexing/matcher/corpus.py"]


def test_the_walk_sees_a_step_entered_out_of_turn():
    events = [("indexing/matcher/decide.py", ORCHESTRATOR, "decide"),
              ("indexing/windows.py", "service/scoring/answer.py", "resolve_window"),  # shape reading the version again
              ("service/scoring/answer.py", ORCHESTRATOR, "shape"),
              ("indexing/windows.py", "service/scoring/answer.py", "resolve_window"),
              ("indexing/matcher/corpus.py", "indexing/matcher/decide.py", "method:IndexCorpus.dense")]
    assert walk(events) == (["decide", "shape"], [
        "service/scoring/answer.py -> indexing/windows.py:resolve_window while decide runs",
        "service/scoring/answer.py -> indexing/windows.py:resolve_window while shape runs"])


def test_the_answer_is_validated_once(version, monkeypatch):
    """POST /v1/score answers the ScoreResponse it made (validated as it was built), not a copy FastAPI validates
    again against response_model."""
    import fastapi.routing
    from fastapi.testclient import TestClient

    from service.app import create_app
    from service.schemas import ScoreResponse

    settings, _ = version
    seen = []
    again = fastapi.routing.serialize_response

    async def spy(**kwargs):
        seen.append(kwargs.get("field") is not None)
        return await again(**kwargs)

    monkeypatch.setattr(fastapi.routing, "serialize_response", spy)
    with TestClient(create_app(settings)) as client:
        resp = client.post("/v1/score", json={"system": "s", "run": "http", "ideas": [IDEA.model_dump()]})
    assert resp.status_code == 200 and resp.headers["content-type"] == "application/json"
    answer = ScoreResponse.model_validate(resp.json())
    assert answer.ideas[0].id == "one" and answer.ideas[0].matches and answer.run == "http"
    assert seen == []
