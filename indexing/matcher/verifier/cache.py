"""Every verdict stored in SQLite, keyed by (verifier revision, idea text hash, paper id): re-scoring a run, a cutoff
sweep or an analysis asks the verifier nothing it has answered before."""

import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.dialects.sqlite import insert
from sqlalchemy.orm import Session

from indexing.db import session_scope, write_transaction
from indexing.matcher.verifier.base import Verdict
from indexing.models import StoredVerdict, utcnow


def idea_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class VerdictCache:
    """Reads and writes verdicts; each put is its own transaction, so a killed job keeps what it had verified."""

    def __init__(self, db_path: Path) -> None:
        self.db_path = db_path

    def get(self, revision: str, idea: str, paper_ids: Sequence[str]) -> dict[str, Verdict]:
        if not paper_ids:
            return {}
        with session_scope(self.db_path) as session:
            rows = session.scalars(select(StoredVerdict).where(
                StoredVerdict.revision == revision, StoredVerdict.idea_hash == idea_hash(idea),
                StoredVerdict.paper_id.in_(list(paper_ids)))).all()
            return {r.paper_id: Verdict(p_direction=r.p_direction, p_realised=r.p_realised, source=r.source)
                    for r in rows}

    def put(self, revision: str, idea: str, verdicts: Mapping[str, Verdict]) -> None:
        if not verdicts:
            return
        key, now = idea_hash(idea), utcnow()

        def work(session: Session) -> None:
            stmt = insert(StoredVerdict).values([
                {"revision": revision, "idea_hash": key, "paper_id": pid, "p_direction": v.p_direction,
                 "p_realised": v.p_realised, "source": v.source, "created_at": now} for pid, v in verdicts.items()])
            session.execute(stmt.on_conflict_do_update(
                index_elements=["revision", "idea_hash", "paper_id"],
                set_={c: getattr(stmt.excluded, c) for c in ("p_direction", "p_realised", "source", "created_at")}))

        write_transaction(self.db_path, work)
