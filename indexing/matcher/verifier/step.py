"""The verifier step of the matcher: the top K candidates of an idea, as the embedding features ranked them, are read
with the idea; the verdicts decide them. Candidates past K are not read and are not matches: with a verifier, a
match is a pair the verifier has read."""

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from indexing.matcher.verifier.base import Paper, Verdict, Verifier
from indexing.matcher.verifier.cache import VerdictCache
from indexing.matcher.verifier.rule import DEFAULT_RULE, VerifierRule


@dataclass(frozen=True)
class IdeaCandidates:
    """One idea as the verifier reads it, with its ranked candidates."""

    text: str  # prompts.idea_text of the idea
    papers: Sequence[Paper]
    can_realise: bool = True
    # per paper, the embedding matcher's probabilities (hybrid: p_direction, p_method), which a fitted rule reads
    embedding: Sequence[dict[str, float | None]] | None = None


@dataclass(frozen=True)
class VerifierStep:
    """What the matcher's verifier step needs: the backend, the verdict cache, how many candidates, the rule."""

    verifier: Verifier
    cache: VerdictCache | None
    top_k: int
    rule: VerifierRule = DEFAULT_RULE

    def context(self) -> dict:
        """How answers name it."""
        return {"verifier": self.verifier.revision, "verifier_top_k": self.top_k,
                "verifier_thresholds": self.rule.thresholds()}


@dataclass
class Verified:
    """Per candidate (in the given order): the final decisions and the verdict (None past K)."""

    realised: list[bool]
    direction: list[bool]
    verdicts: list[Verdict | None]
    new_calls: int  # pairs the verifier read now (not from the cache)


def verify_idea(idea: IdeaCandidates, *, verifier: Verifier, cache: VerdictCache | None, top_k: int,
                rule: VerifierRule = DEFAULT_RULE) -> Verified:
    read = list(idea.papers[:top_k])
    known = cache.get(verifier.revision, idea.text, [p.paper_id for p in read]) if cache else {}
    missing = [p for p in read if p.paper_id not in known]
    if missing:
        fresh = dict(zip([p.paper_id for p in missing], verifier.judge(idea.text, missing)))
        if cache:
            cache.put(verifier.revision, idea.text, fresh)
        known.update(fresh)
    verdicts: list[Verdict | None] = [known[p.paper_id] for p in read]
    emb = list(idea.embedding) if idea.embedding is not None else [None] * len(read)
    decisions = [rule.decide(v, can_realise=idea.can_realise, embedding=e) for v, e in zip(verdicts, emb)
                 if v is not None]
    unread = len(idea.papers) - len(read)
    return Verified(realised=[r for r, _ in decisions] + [False] * unread,
                    direction=[d for _, d in decisions] + [False] * unread,
                    verdicts=verdicts + [None] * unread, new_calls=len(missing))


def verify_ideas(ideas: Iterable[IdeaCandidates], *, verifier: Verifier, cache: VerdictCache | None, top_k: int,
                 rule: VerifierRule = DEFAULT_RULE,
                 progress: Callable[[Verified], None] | None = None) -> list[Verified]:
    """verify_idea over many ideas; progress(result) after each (a caller stores it, so a kill loses one idea)."""
    out = []
    for idea in ideas:
        result = verify_idea(idea, verifier=verifier, cache=cache, top_k=top_k, rule=rule)
        if progress:
            progress(result)
        out.append(result)
    return out
