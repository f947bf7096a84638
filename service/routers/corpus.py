"""GET /v1/corpus: what the current index version holds."""

from fastapi import APIRouter

from service.answers import CorpusOut
from service.corpus import corpus_summary
from service.deps import HolderDep
from service.errors import errors
from service.schemas import json_answer

router = APIRouter(prefix="/v1", tags=["index"])


@router.get("/corpus", **json_answer(CorpusOut), responses=errors(503))
def corpus(holder: HolderDep) -> dict:
    """Papers per month in the current version's window, its venues, and the share with known citation counts."""
    return corpus_summary(holder.current())
