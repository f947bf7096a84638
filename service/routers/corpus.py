"""GET /v1/corpus: what the current index version holds."""

from fastapi import APIRouter

from service.corpus import corpus_summary
from service.deps import HolderDep
from service.errors import errors

router = APIRouter(prefix="/v1", tags=["index"])


@router.get("/corpus", responses=errors(503))
def corpus(holder: HolderDep) -> dict:
    """Papers per month in the current version's window, its venues, and the share with known citation counts."""
    return corpus_summary(holder.current())
