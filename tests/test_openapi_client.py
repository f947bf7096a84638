"""The OpenAPI document names a schema for every JSON success answer (no bare object), validates as OpenAPI, and a
client generated from it by openapi-python-client types what a script reads: scoring ideas, `analyze systems` with
labels and the prior-art block, labelling an idea; attributes, not dict lookups (mypy, every expression typed)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from openapi_spec_validator import validate

from service.app import create_app

BIN = Path(sys.executable).parent


def json_success_answers(doc: dict) -> list[tuple[str, str, str, dict]]:
    """(method, path, status, schema) of every 2xx application/json answer."""
    return [(method.upper(), path, status, content["application/json"].get("schema", {}))
            for path, operations in doc["paths"].items() for method, operation in operations.items()
            for status, answer in operation.get("responses", {}).items()
            if status.startswith("2") and "application/json" in (content := answer.get("content", {}))]


def named(schema: dict, components: dict) -> bool:
    """A $ref to a component with properties, or an array of them."""
    if schema.get("type") == "array":
        schema = schema.get("items", {})
    ref = schema.get("$ref", "")
    return ref.startswith("#/components/schemas/") and "properties" in components[ref.rsplit("/", 1)[1]]


def test_every_json_success_answer_is_a_named_schema(settings):
    doc = create_app(settings).openapi()
    answers = json_success_answers(doc)
    assert len(answers) >= 39
    bare = [(m, p, s, json.dumps(schema)[:80]) for m, p, s, schema in answers
            if not named(schema, doc["components"]["schemas"])]
    assert bare == []
    open_objects = [name for name, schema in doc["components"]["schemas"].items()
                    if schema.get("additionalProperties") is True and "properties" not in schema]
    assert open_objects == []


def test_the_document_validates_as_openapi(settings):
    validate(create_app(settings).openapi())


SCRIPT = '''
"""Score two ideas, read analyze systems with labels and the prior-art block, and label an idea."""

from hindsight_client import AuthenticatedClient
from hindsight_client.api.analysis import systems_v1_analysis_systems_get
from hindsight_client.api.labels import estimates_v1_labels_estimates_get, label_one_v1_labels_post
from hindsight_client.api.scoring import score_v1_score_post
from hindsight_client.models import (
    EstimatesOut, IdeaInType0, IdeaInType1, IdeaInType2, LabelOut, LabelRequest, LabelRequestLabel, ScoreRequest,
    ScoreResponse, SystemsOut,
)


def main(client: AuthenticatedClient) -> None:
    ideas: list[IdeaInType0 | IdeaInType1 | IdeaInType2] = [
        IdeaInType1(id=f"idea-{i}", problem="Retrieval for long documents", method=f"Method {i}") for i in range(2)]
    scored = score_v1_score_post.sync(client=client, body=ScoreRequest(ideas=ideas, system="rag", run="r1"))
    assert isinstance(scored, ScoreResponse)
    best: float = max(idea.score for idea in scored.ideas)
    first = scored.ideas[0]
    papers: list[str] = [match.paper_id for match in first.matches if match.above_threshold]
    if first.prior_art:
        before: str = first.prior_art.class_realised.value
        print(before)
    print(scored.index_version, scored.run_id, best, papers)

    systems = systems_v1_analysis_systems_get.sync(client=client)
    assert isinstance(systems, SystemsOut)
    for group in systems.groups:
        mean: float | None = group.mean_score
        if group.prior_art:
            anticipation: float | None = group.prior_art.anticipation_score
            print(group.prior_art.known, anticipation)
        print(group.group, group.ideas, mean, group.match_rate)
    if systems.prior_art:
        classes: list[str] = systems.prior_art.classes
        print(classes, systems.prior_art.unknown_ideas)

    labelled = estimates_v1_labels_estimates_get.sync(client=client)
    assert isinstance(labelled, EstimatesOut)
    for estimate in labelled.groups:
        rate = estimate.realised_rate
        ppi = rate.ppi
        value: float | None = ppi.value if ppi else None
        known: int = estimate.classes.known
        print(estimate.group, rate.matcher, rate.n_labelled, value, known)
    print(labelled.agreement.annotator, [w.code for w in labelled.warnings])

    label = label_one_v1_labels_post.sync(client=client, body=LabelRequest(
        run="r1", idea_id="idea-0", paper_id=papers[0] if papers else "p1", label=LabelRequestLabel.REALISED,
        annotator="ann"))
    assert isinstance(label, LabelOut)
    when: str = label.time
    print(label.idea_pk, label.label, when)


if __name__ == "__main__":
    main(AuthenticatedClient(base_url="http://127.0.0.1:8000", token="token"))
'''


def _mypy(folder: Path, script: str) -> subprocess.CompletedProcess:
    (folder / "script.py").write_text(script)
    # the generated package is read for its types and not itself checked; the script is, with no Any allowed
    return subprocess.run([sys.executable, "-m", "mypy", "--strict", "--disallow-any-expr", "--follow-imports=silent",
                           "--no-incremental", "--config-file", os.devnull, "script.py"],
                          cwd=folder, capture_output=True, text=True, timeout=600)


@pytest.mark.server
def test_a_client_generated_from_the_document_types_a_script(settings, tmp_path):
    (tmp_path / "openapi.json").write_text(json.dumps(create_app(settings).openapi()))
    made = subprocess.run([str(BIN / "openapi-python-client"), "generate", "--path", "openapi.json",
                           "--output-path", "hindsight_client", "--meta", "none"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=600, env={**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"})
    assert made.returncode == 0, made.stdout[-3000:] + made.stderr[-3000:]
    checked = _mypy(tmp_path, SCRIPT)
    assert checked.returncode == 0, checked.stdout[-4000:]
    # the check has teeth: a field the answer does not have, or a dict lookup, is refused
    wrong = SCRIPT.replace("group.match_rate)", "group.match_rates)").replace(
        "known: int = estimate.classes.known", 'known = estimate.classes["known"]')
    refused = _mypy(tmp_path, wrong)
    lookup = next(i for i, line in enumerate(wrong.splitlines(), 1) if 'classes["known"]' in line)
    assert '"SystemGroup" has no attribute "match_rates"' in refused.stdout, refused.stdout[-3000:]
    assert f'script.py:{lookup}: error: Expression has type "Any"' in refused.stdout, refused.stdout[-3000:]
