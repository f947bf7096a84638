"""What schemathesis found refused although the schema allowed it (ST202, issue 42): the schema of POST
/v1/runs/{run}/llm-judge names the prompt versions it accepts, so an unknown one is a schema error and a schema-valid
request is never refused for its prompt."""

from fastapi.testclient import TestClient

from service.app import create_app
from service.llm_judge import prompts

AUTH = {"Authorization": "Bearer test-token"}


def test_the_judge_requests_schema_names_its_prompts(settings):
    with TestClient(create_app(settings)) as c:
        schema = c.get("/openapi.json").json()["components"]["schemas"]["JudgeRequest"]["properties"]["prompt"]
        assert schema["enum"] == list(prompts.PROMPTS) and schema["default"] == prompts.DEFAULT
        r = c.post("/v1/runs/r1/llm-judge", json={"prompt": "\x82P"}, headers=AUTH)
        assert r.status_code == 422 and isinstance(r.json()["detail"], list)  # the schema's, not the handler's
        assert r.json()["detail"][0]["loc"] == ["body", "prompt"]
        # every prompt the schema allows gets past validation (here to the run's lookup)
        for name in prompts.PROMPTS:
            assert c.post("/v1/runs/r1/llm-judge", json={"prompt": name, "backend": "openai"},
                          headers=AUTH).status_code == 404
