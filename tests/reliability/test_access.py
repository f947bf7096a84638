"""Access: every mutating endpoint, found from the app's own routes, refuses without the admin token (401) and with a
wrong one (403); the comparison is constant-time; the token never shows in answers or logs; reading endpoints show
no file system paths or stack traces, even when builds fail and versions are damaged."""

import re
from pathlib import Path

import httpx
import pytest
from fastapi import HTTPException
from fastapi.routing import APIRoute
from pydantic import SecretStr

from indexing.settings import Settings
from service import deps
from service.app import create_app
from tests.reliability.helpers import LEAK, TOKEN, TOKEN_VALUE, seeded_server, upload, wait_job

WRITES = {"POST", "PUT", "PATCH", "DELETE"}
# by design (docs/api.md): scoring and the pure metric computations need no token; every other write does
PUBLIC_WRITES = {("POST", "/v1/score"), ("POST", "/v1/metrics/{benchmark}/{task}")}
WRONG = [f"Bearer {TOKEN_VALUE[:-1]}", f"Bearer {TOKEN_VALUE}x", "Bearer x", f"Bearer {TOKEN_VALUE.upper()}"]
MALFORMED = [f"Basic {TOKEN_VALUE}", f"bearer{TOKEN_VALUE}", "Bearer", TOKEN_VALUE]


def needs_admin(route: APIRoute, inherited=()) -> bool:
    stack = [*route.dependant.dependencies]
    if any(getattr(d, "dependency", None) is deps.require_admin for d in inherited):
        return True
    while stack:
        dep = stack.pop()
        if dep.call is deps.require_admin:
            return True
        stack.extend(dep.dependencies)
    return False


def walk(routes, prefix: str = "", inherited=()) -> list[tuple[str, set[str], bool]]:
    """(path, methods, needs admin) of every API route, through included routers (kept nested by newer FastAPI)."""
    out = []
    for route in routes:
        if isinstance(route, APIRoute):
            path = re.sub(r":\w+}", "}", prefix + route.path)  # "{paper_id:path}" as the schema writes it
            out.append((path, set(route.methods), needs_admin(route, inherited)))
        elif getattr(route, "original_router", None) is not None:
            ctx = route.include_context
            out += walk(route.original_router.routes, prefix + ctx.prefix, (*inherited, *ctx.dependencies))
    return out


def routes(tmp_path: Path) -> list[tuple[str, set[str], bool]]:
    app = create_app(Settings(home=tmp_path / "h"))
    found = walk(app.routes)
    documented = {(m.upper(), p) for p, ops in app.openapi()["paths"].items() for m in ops}
    listed = {(m, p) for p, methods, _ in found for m in methods if m != "HEAD"}
    assert documented <= listed, f"routes the walk missed: {sorted(documented - listed)}"
    return found


def concrete(path: str) -> str:
    return re.sub(r"\{[^}]+\}", "x", path)


def test_every_write_needs_the_token_unless_public_by_design(tmp_path):
    writes = {(m, path): guarded for path, methods, guarded in routes(tmp_path) for m in methods & WRITES}
    assert writes, "no mutating routes found"
    unguarded = {k for k, guarded in writes.items() if not guarded}
    assert unguarded == PUBLIC_WRITES, f"writes without the admin token: {sorted(unguarded - PUBLIC_WRITES)}"
    reads = [path for path, methods, guarded in routes(tmp_path) if methods <= {"GET", "HEAD"} and guarded]
    assert not reads, f"reading endpoints should not need the token: {reads}"


def test_comparison_is_constant_time(monkeypatch):
    calls = []
    real = deps.hmac.compare_digest

    def spy(a, b):
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(deps.hmac, "compare_digest", spy)
    settings = Settings(home=Path("/nonexistent"), service={"admin_token": SecretStr("s3cret")})
    with pytest.raises(HTTPException) as refused:
        deps.require_admin(settings, authorization="Bearer s3creT")
    assert refused.value.status_code == 403 and calls == [(b"s3creT", b"s3cret")]
    deps.require_admin(settings, authorization="Bearer s3cret")
    assert len(calls) == 2


def test_tokens_paths_and_traces_never_leak(tmp_path, live_server):
    home = tmp_path / "home"
    server, version = seeded_server(live_server, home, lines=20, env={"HF_HUB_OFFLINE": "1"})
    url = server.url
    guarded = [(m, path) for path, methods, admin in routes(tmp_path) for m in methods & WRITES if admin]
    assert len(guarded) >= 3, guarded
    bodies: list[str] = []
    with httpx.Client(base_url=url, timeout=60) as client:
        for method, path in guarded:
            for body in (None, {"x": 1}):
                r = client.request(method, concrete(path), json=body)
                assert r.status_code == 401 and r.headers.get("www-authenticate") == "Bearer", (method, path, r.text)
                bodies.append(r.text)
                for header in MALFORMED:
                    r = client.request(method, concrete(path), json=body, headers={"Authorization": header})
                    assert r.status_code in (401, 403), (method, path, header, r.status_code)
                    bodies.append(r.text)
                for header in WRONG:
                    r = client.request(method, concrete(path), json=body, headers={"Authorization": header})
                    assert r.status_code == 403, (method, path, header, r.status_code, r.text)
                    bodies.append(r.text)

        # failures reached with the right token: a rejected file, a model that cannot load, a build that cannot start
        bodies.append(upload(url, "bad.jsonl", b'{"id": 1}\n').text)
        unknown = client.post("/v1/index/rebuild", json={"model": "no-such-model"}, headers=TOKEN)
        assert unknown.status_code == 422 and "specter2" in unknown.text, unknown.text  # refused by the schema's enum
        bodies.append(unknown.text)
        for request in ({"model": "specter2"}, {"cutoff": "2030-01-01"}):
            job = client.post("/v1/index/rebuild", json=request, headers=TOKEN).json()
            done = wait_job(url, job["id"], timeout=300)
            assert done["status"] == "failed", done
            bodies.append(str(done))
        blocker = home / "indexes" / f".CURRENT.{server.proc.pid}.tmp"
        blocker.mkdir()
        (blocker / "inside").write_text("a directory where a file should be")
        done = wait_job(url, client.post("/v1/index/rebuild", headers=TOKEN).json()["id"], timeout=300)
        assert done["status"] == "failed" and "IsADirectoryError" in done["error"], done
        bodies.append(str(done))

        (home / "indexes" / version / "papers.json").write_bytes(b"[]")  # damaged: checksum mismatch
        (home / "indexes" / "CURRENT").write_text(version)
        reads = [path for path, methods, _ in routes(tmp_path) if "GET" in methods]
        for path in reads:
            for value in ("x", "0", "../../etc/passwd", "%00", "9" * 30):
                r = client.get(re.sub(r"\{[^}]+\}", value, path))
                assert r.status_code < 500, (path, value, r.status_code)
                if r.headers.get("content-type", "").startswith(("application/json", "text/")):
                    bodies.append(r.text)
        bodies += [client.get("/readyz").text, client.get("/v1/index").text]

    for text in bodies:
        assert TOKEN_VALUE not in text, text[:300]
        assert not LEAK.search(text), f"path or trace in an answer: {LEAK.search(text).group(0)!r} in {text[:600]}"
    log = server.log_text()
    assert TOKEN_VALUE not in log
    assert str(home) not in "".join(bodies)
    assert any("IsADirectoryError" in b for b in bodies)  # the check above saw a path-bearing failure
