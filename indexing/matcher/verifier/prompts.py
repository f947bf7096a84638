"""The verifier's prompts, versioned: a change here is a new PROMPT_VERSION and so a new verifier revision.

The two questions carry the definitions of docs/matching.md. Each is asked on its own, after the idea and the paper,
so a backend can keep the idea (and then the idea + paper) as a shared prefix and ask both questions on top of it.
"""

from indexing.llm.text import clip, text_of_idea

PROMPT_VERSION = "p2"

# The definitions live in the system turn, the one prefix every pair shares (a backend evaluates it once per
# process); the questions stay short, since each pair pays for them (measured: the pair's own tokens dominate).
SYSTEM = ("You compare a research idea with a published paper, as a careful reviewer would.\n"
          "Same problem: the paper works on the idea's concrete problem, by any means. A shared broad area (such as "
          "'LLM safety', 'bias' or 'robotics') is not a shared problem.\n"
          "Same approach: the paper works on that problem AND its core mechanism is the idea's method; details, "
          "datasets and names may differ. The same method on another problem, or the same problem by other means, "
          "is not the same approach.\n"
          "Answer each question with one word: Yes or No.")

QUESTIONS = {
    "direction": "Question: Does the paper work on the same problem as the idea?",
    "realised": "Question: Does the paper take the same approach to the same problem as the idea?",
}

# What a pair costs is its own tokens (the paper's, the questions' and its share of the idea's), so the verifier
# reads what the two decisions turn on: the problem and the core of the method (a long proposal's experiment plan,
# datasets and metrics come after it) and the abstract's opening (where papers state their problem and approach).
# p1 read up to 6,000 characters of the idea and 3,000 of the abstract: 475 tokens per pair on AI-Researcher's
# proposals at K = 5. Each text is cut at its last sentence end inside the limit (characters).
MAX_PROBLEM_CHARS = 600
MAX_METHOD_CHARS = 900
MAX_TEXT_CHARS = 1500  # an idea given as one free text
MAX_ABSTRACT_CHARS = 800


YES = ("Yes", "yes", "YES", " Yes", " yes")
NO = ("No", "no", "NO", " No", " no")


def idea_block(idea: str) -> str:
    return "Research idea:\n" + idea.strip()


def paper_block(title: str, abstract: str) -> str:
    return f"Paper:\nTitle: {' '.join(title.split())}\nAbstract: {clip(abstract, MAX_ABSTRACT_CHARS)}"


def user_message(idea: str, title: str, abstract: str, question: str) -> str:
    """The user turn: idea, then paper, then the question (in this order, for prefix sharing)."""
    return f"{idea_block(idea)}\n\n{paper_block(title, abstract)}\n\n{QUESTIONS[question]}"


def messages(idea: str, title: str, abstract: str, question: str) -> list[dict[str, str]]:
    """The chat messages of one question about one pair (OpenAI format)."""
    return [{"role": "system", "content": SYSTEM},
            {"role": "user", "content": user_message(idea, title, abstract, question)}]


def parse_answer(text: str) -> float | None:
    """1.0 for an answer that starts with Yes, 0.0 for No, None for anything else."""
    word = text.strip().lstrip("*\"'`").split(maxsplit=1)[0].strip(".,:;!*\"'`").lower() if text.strip() else ""
    return 1.0 if word == "yes" else 0.0 if word == "no" else None


def idea_text(problem: str | None, method: str | None, text: str | None) -> str:
    """The idea as the verifier reads it (and as the verdict cache hashes it)."""
    return text_of_idea(problem, method, text, limits=(MAX_PROBLEM_CHARS, MAX_METHOD_CHARS, MAX_TEXT_CHARS))
