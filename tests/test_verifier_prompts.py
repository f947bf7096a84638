"""The verifier reads what the two decisions turn on: the idea's problem and the core of its method, the abstract's
opening; each cut at a sentence end, so a long proposal costs a pair little more than a short idea."""

import json

from indexing.llm.text import clip
from indexing.matcher.verifier import prompts
from tests.helpers import ROOT

PLAN = ROOT.parent / "shared" / "data" / "generators" / "ai-researcher" / "experiment_plans"


def test_clip_cuts_at_a_sentence_end_inside_the_limit():
    assert clip("  Short   text.\n", 100) == "Short text."
    text = "First sentence here. Second one is longer than the first. Third never fits in the limit at all."
    assert clip(text, 60) == "First sentence here. Second one is longer than the first."
    words = "word " * 50  # no sentence end: cut at a word, marked
    cut = clip(words, 42)
    assert cut.endswith(" …") and len(cut) <= 44 and "wor …" not in cut


def test_a_long_proposal_is_read_as_its_problem_and_the_core_of_its_method():
    steps = " ".join(f"Step {i}: run baseline {i} on dataset {i} and report metric {i}." for i in range(1, 40))
    method = ("We prompt the model to critique its own answer against retrieved evidence, then revise it. " * 3
              + steps)
    problem = "Language models state false facts with confidence. " * 4
    text = prompts.idea_text(problem, method, None)
    assert text.startswith("Problem: Language models") and "\nMethod: We prompt the model" in text
    assert "Step 39" not in text and len(text) <= (len("Problem: \nMethod: ") + prompts.MAX_PROBLEM_CHARS
                                                   + prompts.MAX_METHOD_CHARS)
    assert prompts.idea_text(None, None, "x " * 2000).count("x") < prompts.MAX_TEXT_CHARS
    block = prompts.paper_block("A  title", "We study X. " * 200)
    assert block.startswith("Paper:\nTitle: A title\nAbstract: We study X.")
    assert len(block) < len("Paper:\nTitle: A title\nAbstract: ") + prompts.MAX_ABSTRACT_CHARS + 1
    assert prompts.PROMPT_VERSION == "p2"  # p1 read 6,000 + 3,000 characters: another revision, another cache key


def test_ai_researcher_proposals_fit_the_limits():
    """The 213 AI-Researcher proposals (median 3,551 characters as p1 read them) fit the limits; skips without the
    shared generator outputs."""
    files = sorted(PLAN.glob("*/*.json"))
    if not files:
        import pytest
        pytest.skip("the shared AI-Researcher outputs are missing")
    from service.ideas import read_path

    ideas = [r.idea for r in read_path(PLAN, "ai-researcher").ideas]
    lengths = sorted(len(prompts.idea_text(i.problem, i.method, i.text)) for i in ideas)
    assert len(ideas) == 213 and lengths[-1] <= prompts.MAX_PROBLEM_CHARS + prompts.MAX_METHOD_CHARS + 20
    assert json.loads(files[0].read_text())  # the files themselves are untouched
