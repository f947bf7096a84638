"""Idea generators and their declared knowledge cutoffs: list, read, declare (admin)."""

from typing import Annotated

from fastapi import APIRouter, Path
from pydantic import BaseModel, Field

from service.answers import SystemOut
from service.deps import AdminDep, SessionDep
from service.errors import ADMIN, BODY, errors
from service.schemas import IsoDate, json_answer
from service.systems import as_dict, list_systems, set_system, system_named

router = APIRouter(prefix="/v1/systems", tags=["systems"])

Name = Annotated[str, Path(min_length=1, max_length=255)]


class SystemIn(BaseModel):
    knowledge_cutoff: IsoDate = Field(description="YYYY-MM-DD: the newest literature it may know.")
    model: str | None = Field(None, max_length=1000, description="e.g. the LLM behind the generator.")


@router.get("", **json_answer(list[SystemOut]), responses=errors(503))
def systems(session: SessionDep) -> list[dict]:
    """Every declared system with its knowledge cutoff."""
    return list_systems(session)


@router.get("/{name}", **json_answer(SystemOut), responses=errors(404, 422, 503))
def system(name: Name, session: SessionDep) -> dict:
    return as_dict(system_named(session, name))


@router.put("/{name}", dependencies=[AdminDep], **json_answer(SystemOut), responses=errors(*ADMIN, *BODY, 422, 503))
def declare(name: Name, body: SystemIn, session: SessionDep) -> dict:
    """Declare a system's knowledge cutoff: its runs default to it, and earlier cutoffs get a leak_risk warning."""
    return set_system(session, name=name, knowledge_cutoff=body.knowledge_cutoff, model=body.model)
