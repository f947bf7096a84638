"""A 405 answer's Allow header lists every method the path takes, across the routers that serve it."""

import pytest
from fastapi.testclient import TestClient

from indexing.settings import Settings


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    from service.app import create_app

    with TestClient(create_app(Settings(home=tmp_path_factory.mktemp("home")))) as c:
        yield c


@pytest.mark.parametrize("method, path, allowed", [
    ("DELETE", "/v1/score", "POST"),
    ("PATCH", "/v1/runs/1/ideas", "GET"),
    ("PUT", "/v1/judge-scores", "GET, POST"),
    ("DELETE", "/v1/systems/some-system", "GET, PUT"),
    ("POST", "/openapi.json", "GET, HEAD"),
    # its own route's method, not also GET /v1/papers/{paper_id:path}'s (another resource in the OpenAPI document)
    ("OPTIONS", "/v1/papers/fetch", "POST"),
    ("DELETE", "/v1/papers/10.5555/some.paper", "GET"),
])
def test_405_names_the_allowed_methods(client, method, path, allowed):
    r = client.request(method, path)
    assert r.status_code == 405 and r.json() == {"detail": "Method Not Allowed"}
    assert r.headers["allow"] == allowed
