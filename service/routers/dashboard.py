"""The dashboard: one static page over the JSON API, served from service/static (no build step, no CDN)."""

from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import FileResponse

STATIC_DIR = Path(__file__).resolve().parent.parent / "static"

router = APIRouter(include_in_schema=False)


@router.get("/")
def dashboard() -> FileResponse:
    """The dashboard page."""
    return FileResponse(STATIC_DIR / "index.html", media_type="text/html")
