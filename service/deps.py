"""FastAPI dependencies: settings, database session, the index holder, the admin check."""

import hmac
from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, HTTPException, Request, Security
from fastapi.security import APIKeyHeader
from sqlalchemy.orm import Session

from indexing.db import session_scope
from indexing.settings import Settings
from service.jobs import Jobs
from service.state import IndexHolder


def get_settings(request: Request) -> Settings:
    return request.app.state.settings


def get_session(request: Request) -> Iterator[Session]:
    with session_scope(request.app.state.settings.db_path) as session:
        yield session


def get_holder(request: Request) -> IndexHolder:
    return request.app.state.holder


def get_jobs(request: Request) -> Jobs:
    return request.app.state.jobs


SettingsDep = Annotated[Settings, Depends(get_settings)]
SessionDep = Annotated[Session, Depends(get_session)]
HolderDep = Annotated[IndexHolder, Depends(get_holder)]
JobsDep = Annotated[Jobs, Depends(get_jobs)]


# declared as a security scheme, so the OpenAPI document says which operations need the token
ADMIN_TOKEN = APIKeyHeader(name="Authorization", scheme_name="AdminToken", auto_error=False,
                           description="'Bearer <HINDSIGHT_ADMIN_TOKEN>'")


def require_admin(settings: SettingsDep, authorization: Annotated[str | None, Security(ADMIN_TOKEN)] = None) -> None:
    """Bearer HINDSIGHT_ADMIN_TOKEN: 401 without a token, 403 with a wrong one or when none is configured."""
    secret = settings.service.admin_secret()
    if secret is None:
        raise HTTPException(403, "admin endpoints are disabled: set HINDSIGHT_ADMIN_TOKEN on the server")
    if not authorization or not authorization.startswith("Bearer "):
        raise HTTPException(401, "admin token required: send 'Authorization: Bearer <token>'",
                            headers={"WWW-Authenticate": "Bearer"})
    given = authorization.removeprefix("Bearer ").strip().encode()
    if not hmac.compare_digest(given, secret.encode()):
        raise HTTPException(403, "admin token is wrong")


AdminDep = Depends(require_admin)
