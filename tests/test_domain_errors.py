"""Every refusal of the domain derives from indexing.errors.DomainError (status, field, message), and one handler
answers it as the documented ErrorOut: the routes hold the happy path, with no HTTPException raised and no domain
error caught."""

import ast
import importlib

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from indexing.errors import ConflictError, DomainError, NotFoundError, NotReady, TooLarge
from indexing.ingest import IngestRejected
from indexing.llm import ModelUnavailable
from indexing.matcher.corpus import MatcherUnavailable
from indexing.vectorindex.base import IndexUnavailable
from indexing.windows import WindowError
from service import errors
from service.analyses.selection import AnalysisError, Conflict, NotFound
from service.ideas.records import LayoutError, UploadRefused
from service.llm_judge.audit import AuditError
from service.labels.draws import LabelError
from service.metrics.parsing import MetricsInputError
from service.rejections import ImportRejected
from service.runs import RunNotFound
from service.state import NoIndex
from service.systems import SystemInputError
from tests.helpers import ROOT

ROUTERS = sorted((ROOT / "service" / "routers").glob("*.py"))


@pytest.mark.parametrize("kind", [
    AnalysisError, AuditError, ConflictError, IndexUnavailable, IngestRejected, ImportRejected, LabelError,
    LayoutError, MatcherUnavailable, MetricsInputError, ModelUnavailable, NoIndex, NotFoundError, RunNotFound,
    SystemInputError, TooLarge, UploadRefused, WindowError])
def test_every_domain_exception_derives_from_the_one_base(kind):
    assert issubclass(kind, DomainError)


def test_the_statuses_the_exceptions_carry():
    assert (NotFound("run", "x").status, Conflict("judge", "x").status, AnalysisError("x", "y").status) == (404, 409,
                                                                                                           422)
    assert (MatcherUnavailable("x").status, ModelUnavailable("x").status, NoIndex("x").status) == (409, 409, 503)
    assert (RunNotFound("r1").status, LabelError("run", "x", 404).status, TooLarge("x").status) == (404, 404, 413)
    error = WindowError("cutoff", "outside", ("2023-01-01", "2024-01-01"))
    assert (error.status, error.field, error.message, str(error)) == (409, "cutoff", "outside", "cutoff: outside")


def _raised_and_caught(path):
    """(HTTPException raises, names of the exceptions an `except` clause catches) in one router module."""
    raises, caught = [], []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Raise) and node.exc is not None:
            call = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if isinstance(call, ast.Name) and call.id == "HTTPException":
                raises.append(node.lineno)
        if isinstance(node, ast.ExceptHandler) and node.type is not None:
            types = node.type.elts if isinstance(node.type, ast.Tuple) else [node.type]
            caught += [ast.unparse(t) for t in types]
    return raises, caught


@pytest.mark.parametrize("path", ROUTERS, ids=lambda p: p.name)
def test_routes_raise_no_http_exception_and_catch_no_domain_error(path):
    raises, caught = _raised_and_caught(path)
    assert raises == [], f"{path.name}: raise HTTPException at lines {raises}: raise a DomainError instead"
    module = importlib.import_module(f"service.routers.{path.stem}")
    for name in caught:
        kind = eval(name, vars(module))  # a name or an attribute path the module imported
        assert not (isinstance(kind, type) and issubclass(kind, DomainError)), f"{path.name}: except {name}"


def _raising(exc: Exception):
    def route() -> None:
        raise exc
    return route


def test_one_handler_answers_every_domain_error_as_error_out():
    app = FastAPI()
    errors.install(app)

    class Refused(DomainError):
        status = 409

    cases = {
        "/plain": (LabelError("run", "no run 'x'", 404), 404, "run: no run 'x'"),
        "/window": (WindowError("until", "before the cutoff", ("2023-01-01", "2024-01-01")), 409,
                    {"field": "until", "message": "until: before the cutoff",
                     "allowed": {"start": "2023-01-01", "end": "2024-01-01"}}),
        "/system": (SystemInputError("knowledge_cutoff", "not a date"), 422,
                    {"field": "knowledge_cutoff", "message": "knowledge_cutoff: not a date"}),
        "/new": (Refused("held by another job"), 409, "held by another job"),
        "/later": (NotReady("no index loaded"), 503, "no index loaded"),
        "/metrics": (MetricsInputError("missing", source="gold", index=2, field="score"), 422,
                     [{"loc": ["body", "gold", 2, "score"], "msg": "gold[2].score: missing", "type": "value_error"}]),
    }
    for path, (exc, _, _) in cases.items():
        app.get(path)(_raising(exc))
    with TestClient(app) as client:
        for path, (_, status, detail) in cases.items():
            r = client.get(path)
            assert (r.status_code, r.json()) == (status, {"detail": detail}), path
            errors.ErrorOut.model_validate(r.json())
            assert ("retry-after" in r.headers) == (status == 503), path
