"""`hindsight label suggest`: a model asked the labelling question for each candidate of a draw, through the judge's
backends and answer cache, against a loopback server replaying chat replies (tests/fixtures/judge); its answers are
stored as its own annotator, never a person's, and its agreement with a person is Cohen's kappa."""

import json
from pathlib import Path

import pytest
from sqlalchemy import select

from indexing.db import session_scope
from indexing.settings import Settings
from service.llm_judge.backends import OpenAIJudge
from service.labels.draws import LabelError, draw
from service.labels.models import Label
from service.labels.store import import_labels
from service.labels.suggest import QUESTION, SYSTEM, suggest
from tests.factories import labels_store
from tests.helpers import FIXTURES, run_cli

REPLIES = {"realised": "label_logprobs_1.json", "direction": "label_text_2.json", "none": "label_text_3.json"}


def responder(planted: dict, wrong: str, unreadable: str):
    """Answers each candidate with its planted label, except `wrong` (answered realised) and `unreadable`."""
    def answer(body: dict) -> bytes:
        assert body["messages"][0]["content"] == SYSTEM and body["messages"][-1]["content"].endswith(QUESTION)
        asked = body["messages"][-1]["content"]
        paper = asked.split("Title: Paper ")[1].split("\n")[0]
        if paper == unreadable:
            return (FIXTURES / "judge" / "rating_text_refusal.json").read_bytes()
        if paper == wrong:
            return (FIXTURES / "judge" / REPLIES["realised"]).read_bytes()
        idea = paper.rsplit("-c", 1)[0]
        return (FIXTURES / "judge" / REPLIES[planted[idea]["truth"][paper]]).read_bytes()
    return answer


def _person(planted: dict, ideas: list[str]) -> bytes:
    return "".join(json.dumps({"run": "r1", "idea_id": i, "paper_id": p, "label": lab, "annotator": "ann"}) + "\n"
                   for i in ideas for p, lab in planted[i]["truth"].items()).encode()


def test_suggested_labels_are_the_models_own_and_cached(settings, replay, tmp_path):
    planted = labels_store(settings.home, per_system=12)
    with session_scope(settings.db_path) as s:
        made = draw(s, run="r1", n=4, seed=2, system="sys-a")["draws"][0]
        import_labels(s, _person(planted, made["ideas"]), name="ann.jsonl")
    first, second = made["ideas"][:2]
    chat = replay(chat=responder(planted, wrong=f"{first}-c5", unreadable=f"{second}-c4"))
    judge = OpenAIJudge.from_settings(Settings(home=settings.home,
                                               llm={"judge_url": chat.url + "/v1", "judge_model": "strong"}))
    report = suggest(settings.db_path, draws=[made["draw"]], judge=judge, candidates=5)
    assert report.annotator == "strong@label-v1" and report.rows == 20 and report.new_calls == 20
    assert (report.labelled, report.invalid, report.ideas) == (19, 1, 4)
    with session_scope(settings.db_path) as s:
        mine = {lab.paper_id: lab.label for lab in s.scalars(select(Label).where(Label.annotator == report.annotator))}
        people = s.scalars(select(Label).where(Label.annotator == "ann")).all()
    assert len(mine) == 19 and f"{second}-c4" not in mine and mine[f"{first}-c5"] == "realised"
    assert all(mine[p] == planted[p.rsplit("-c", 1)[0]]["truth"][p] for p in mine if p != f"{first}-c5")
    assert len(people) == 20  # the person's labels untouched
    pair = report.agreement[0]
    assert {pair["a"], pair["b"]} == {"ann", report.annotator} and pair["ideas"] == 4
    # one answer wrong; the unreadable one is left unlabelled, so the pair counts only the 19 both labelled
    assert pair["pair"]["n"] == 19 and pair["pair"]["agree"] == 18
    assert {pair["pair"]["only_a"], pair["pair"]["only_b"]} == {0, 1}
    assert 0 < pair["pair"]["kappa"] < 1
    again = suggest(settings.db_path, draws=[made["draw"]], judge=judge, candidates=5)
    assert again.new_calls == 0 and again.cached == 20 and again.labelled == 19
    assert len(chat.requests("v1/chat/completions")) == 20
    # never as a person's: a name a person labels under is refused, and writes nothing
    with pytest.raises(LabelError, match="a person wrote"):
        suggest(settings.db_path, draws=[made["draw"]], judge=judge, candidates=5, annotator="ann")


@pytest.mark.server
def test_cli_suggests_labels_through_the_replayed_endpoint(tmp_path, replay):
    home = tmp_path / "home"
    planted = labels_store(home, per_system=12)
    res = run_cli(home, "label", "draw", "--run", "r1", "--n", "3", "--seed", "4", "--system", "sys-b", "--json")
    made = json.loads(res.stdout)["draws"][0]
    person = Path(tmp_path / "ann.jsonl")
    person.write_bytes(_person(planted, made["ideas"]))
    assert run_cli(home, "label", "import", str(person)).returncode == 0
    chat = replay(chat=responder(planted, wrong=f"{made['ideas'][0]}-c2", unreadable=""))
    env = {"HINDSIGHT_JUDGE_URL": f"{chat.url}/v1", "HINDSIGHT_JUDGE_MODEL": "strong"}
    done = run_cli(home, "label", "suggest", "--draw", str(made["draw"]), "--backend", "openai", "--annotator",
                   "strong-model", "--candidates", "3", "--json", env=env)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert (report["annotator"], report["rows"], report["labelled"], report["new_calls"]) == ("strong-model", 9, 9, 9)
    pair = report["agreement"][0]
    assert {pair["a"], pair["b"]} == {"ann", "strong-model"} and pair["ideas"] == 3
    status = json.loads(run_cli(home, "label", "status", "--run", "r1", "--system", "sys-b", "--json").stdout)
    assert status["strata"][0]["draws"][0]["labelled"] == {"ann": 3, "strong-model": 3}
    shown = run_cli(home, "analyze", "systems", "--labels", "--system", "sys-b", "--annotator", "ann", env=env)
    assert "ann vs strong-model on 3 ideas: pair kappa" in shown.stderr
    refused = run_cli(home, "label", "suggest", "--draw", str(made["draw"]), "--backend", "openai", "--annotator",
                      "ann", env=env)
    assert refused.returncode == 2 and "--annotator" in refused.stderr and "person" in refused.stderr
