"""GET /v1/corpus: what the current index version holds."""

from fastapi import APIRouter, HTTPException

from service.corpus import corpus_summary
from service.deps import HolderDep
from service.errors import errors
from service.state import NoIndex

router = APIRouter(prefix="/v1", tags=["index"])


@router.get("/corpus", responses=errors(503))
def corpus(holder: HolderDep) -> dict:
    """Papers per month in the current version's window, its venues, and the share with known citation counts."""
    try:
        loaded = holder.current()
    except NoIndex as exc:
        raise HTTPException(503, str(exc)) from None
    return corpus_summary(loaded)
