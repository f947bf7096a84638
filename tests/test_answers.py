"""Every JSON answer's model mirrors what the library returns: on a scored, judged and labelled store, each answer
read back through its route's model holds no field the model leaves undeclared, at any depth, and writes the same
JSON again, key order included."""

import json
from pathlib import Path

import pytest
from fastapi.routing import APIRoute, iter_route_contexts
from fastapi.testclient import TestClient
from pydantic import BaseModel, TypeAdapter
from starlette.routing import Match

from indexing.build import build_index
from indexing.db import migrate
from indexing.ingest import ingest_path
from indexing.settings import Settings
from service.app import create_app
from tests.helpers import ROOT

AUTH = {"Authorization": "Bearer test-token"}
GETS = ["/healthz", "/readyz", "/v1/index", "/v1/corpus", "/v1/runs", "/v1/runs/1/scores", "/v1/runs/3/scores",
        "/v1/runs/1/ideas", "/v1/runs/3/ideas", "/v1/judge-scores", "/v1/systems", "/v1/systems/rag",
        "/v1/analysis/systems?pool_windows=true", "/v1/analysis/systems?group_by=window&level=direction",
        "/v1/analysis/correlations?pool_windows=true", "/v1/analysis/quadrants?judge=gpt-judge&pool_windows=true",
        "/v1/analysis/quadrants?judge=gpt-judge&group_by=window&page_size=2",
        "/v1/analysis/cutoffs?cutoffs=2024-03-01,2024-06-01", "/v1/analysis/ideas/1", "/v1/labels/status?run=r1",
        "/v1/labels/draws/1/item?annotator=ann", "/v1/labels/estimates?pool_windows=true",
        "/v1/labels/estimates?predictor=cosine&pool_windows=true",
        "/v1/llm-judge/prompts", "/v1/llm-judge/revisions", "/v1/llm-judge/audit?judge=gpt-judge&judge=claude-judge",
        "/v1/metrics", "/v1/papers/hs-0001"]


def ideas(name: str) -> list[dict]:
    return [json.loads(line) for line in (ROOT / "data" / "ideas" / name).read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory, minilm):
    settings = Settings(home=tmp_path_factory.mktemp("answers") / "home", service={"admin_token": "test-token"})
    migrate(settings.db_path)
    ingest_path(ROOT / "data" / "papers.jsonl", db_path=settings.db_path)
    build_index(settings, embedder=minilm)
    with TestClient(create_app(settings)) as c:
        assert c.put("/v1/systems/rag", headers=AUTH, json={"knowledge_cutoff": "2023-09-01"}).status_code == 200
        for system, run, name in (("rag", "r1", "rag.jsonl"), ("vanilla", "r1", "vanilla.jsonl"),
                                  ("plain", "r2", "sample.jsonl")):
            body = {"system": system, "run": run, "ideas": ideas(name)} | ({"prior_art": False} if run == "r2" else {})
            assert c.post("/v1/score", json=body).status_code == 200
        scores = (ROOT / "data" / "judge_scores.csv").read_bytes()
        assert c.post("/v1/judge-scores", headers=AUTH, files={"file": ("s.csv", scores)}).status_code == 200
        assert c.post("/v1/labels/draws", headers=AUTH, json={"run": "r1", "n": 3, "seed": 1}).status_code == 201
        item = c.get("/v1/labels/draws/1/item", params={"annotator": "ann"}).json()["idea"]
        for candidate, label in zip(item["candidates"], ("realised", "none")):
            assert c.post("/v1/labels", headers=AUTH, json={
                "run": "r1", "system": "rag", "idea_id": item["idea_id"], "paper_id": candidate["paper_id"],
                "label": label, "annotator": "ann"}).status_code == 200
        yield c


def undeclared(value: object, where: str = "") -> list[str]:
    """The paths of every field a model instance (or one nested in it) holds without declaring it."""
    if isinstance(value, BaseModel):
        out = [f"{where}.{k}" for k in (value.model_extra or {})]
        return out + [p for name in type(value).model_fields for p in undeclared(getattr(value, name),
                                                                                 f"{where}.{name}")]
    if isinstance(value, (list, tuple)):
        return [p for i, v in enumerate(value) for p in undeclared(v, f"{where}[{i}]")]
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in undeclared(v, f"{where}.{k}")]
    return []


def route_of(client: TestClient, url: str) -> APIRoute:
    scope = {"type": "http", "method": "GET", "path": url.split("?")[0], "root_path": ""}
    found = [c.original_route for c in iter_route_contexts(client.app.router.routes)
             if c.matches(scope)[0] == Match.FULL]
    assert isinstance(found[0], APIRoute)
    return found[0]


@pytest.mark.parametrize("url", GETS)
def test_the_answer_is_its_model_field_for_field(client, url):
    r = client.get(url)
    assert r.status_code == 200, r.text
    route = route_of(client, url)
    assert route.response_model is not None, f"{route.path} has no response model"
    adapter = TypeAdapter(route.response_model)
    parsed = adapter.validate_json(r.content)
    assert undeclared(parsed) == []
    again = adapter.dump_python(parsed, mode="json", by_alias=True, exclude_unset=True)
    assert json.dumps(again) == json.dumps(r.json())


def test_the_prior_art_block_and_a_knowledge_cutoff_are_declared(client):
    """The answers above hold the blocks a generated client reads: the systems' prior art, the labels' classes."""
    systems = client.get("/v1/analysis/systems?pool_windows=true").json()
    assert systems["prior_art"] is not None and any(g["prior_art"] for g in systems["groups"])
    estimates = client.get("/v1/labels/estimates?pool_windows=true").json()
    assert estimates["groups"][0]["classes"]["realised"] and estimates["agreement"]["overall"]["matcher"]
    assert any(s["prior_art"] for s in client.get("/v1/runs/1/scores").json()["scores"])


def test_the_upload_form_and_the_json_body_share_their_bounds(client):
    """top_k and lookback_days are bounded once (ScoreOptions): the form refuses what the JSON body refuses."""
    files = {"files": ("ideas.jsonl", Path(ROOT / "data" / "ideas" / "sample.jsonl").read_bytes())}
    for field, value in (("top_k", 201), ("lookback_days", 0), ("lookback_days", 36_501)):
        form = client.post("/v1/score", files=files, data={field: str(value), "system": "x", "run": "y"})
        body = client.post("/v1/score", json={"ideas": ideas("sample.jsonl"), field: value})
        assert form.status_code == body.status_code == 422, (form.text, body.text)
        assert form.json()["detail"][0]["loc"] == body.json()["detail"][0]["loc"] == ["body", field]
    ok = client.post("/v1/score", files=files, data={"top_k": "3", "lookback_days": "365", "system": "u", "run": "1"})
    assert ok.status_code == 200 and ok.json()["top_k"] == 3
    assert ok.json()["lookback_window"]["lookback_days"] == 365


OLD_NAMES = {"/v1/judging/prompts": "/v1/llm-judge/prompts", "/v1/judging/revisions": "/v1/llm-judge/revisions",
             "/v1/judging/audit?judge=gpt-judge&judge=claude-judge":
             "/v1/llm-judge/audit?judge=gpt-judge&judge=claude-judge"}


@pytest.mark.parametrize("old", OLD_NAMES)
def test_an_old_name_of_the_llm_judge_answers_as_its_new_name(client, old):
    """The LLM judge's old routes stay served for one release: the same handler, answer and model, deprecated."""
    new = OLD_NAMES[old]
    answer, again = client.get(old), client.get(new)
    assert answer.status_code == again.status_code == 200 and answer.content == again.content
    old_route, new_route = route_of(client, old), route_of(client, new)
    assert old_route.endpoint is new_route.endpoint and old_route.response_model == new_route.response_model
    assert old_route.deprecated and not new_route.deprecated


def untitled(schema: object) -> object:
    """A schema without its titles (FastAPI names a list answer's schema after its operation)."""
    if isinstance(schema, dict):
        return {k: untitled(v) for k, v in schema.items() if k != "title"}
    return [untitled(v) for v in schema] if isinstance(schema, list) else schema


def test_the_old_names_of_the_llm_judge_are_deprecated_in_the_document(client):
    doc = client.app.openapi()
    operations = [(path, method, op) for path, ops in doc["paths"].items() for method, op in ops.items()]
    old = {(p, m) for p, m, op in operations if op.get("deprecated")}
    assert old == {("/v1/runs/{run}/judge", "post"), ("/v1/runs/{run}/judge", "get"), ("/v1/judging/prompts", "get"),
                   ("/v1/judging/revisions", "get"), ("/v1/judging/audit", "get")}
    for path, method in old:
        new = path.replace("/v1/judging/", "/v1/llm-judge/").replace("/judge", "/llm-judge")
        assert untitled(doc["paths"][path][method]["responses"]) == untitled(doc["paths"][new][method]["responses"])
    ids = [op["operationId"] for _, _, op in operations]
    assert len(ids) == len(set(ids))
    assert client.get("/v1/runs/r1/judge").status_code == client.get("/v1/runs/r1/llm-judge").status_code == 404
