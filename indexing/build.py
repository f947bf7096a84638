"""Index build: select the window, embed (through the cache), index, write a version, verify, publish."""

import errno
import fcntl
import os
import shutil
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from pathlib import Path

import numpy as np
import orjson
from sqlalchemy import func, select
from sqlalchemy.exc import SQLAlchemyError

from indexing.db import session_scope
from indexing.embed_cache import Progress, embed_with_cache
from indexing.embedders import Embedder, join, load_embedder
from indexing.errors import describe_error
from indexing.impact import is_top_venue, top_venue_keys
from indexing.lexical import build_lexical, describe as describe_lexical, save_lexical
from indexing.matcher import MATCHERS, default_matcher, find_entry
from indexing.matcher.vectors import stored_vectors
from indexing.models import IndexBuild, Paper, utcnow
from indexing.settings import Settings
from indexing.vectorindex.base import VectorIndex
from indexing.vectorindex.factory import check_backend, create_index, drop_index, drop_version, qdrant_target
from indexing.versions import (
    MANIFEST, PAPERS, IndexDamaged, LoadedIndex, current_version, fsync_dir, list_versions, load_version, sha256_file,
    use_version,
)
from indexing.windows import DATE_ORDER, PaperTable, Window, WindowImpact

KEEP_VERSIONS = 5
LOCK_POLL = 0.5


class BuildBusy(RuntimeError):
    """Another build holds the lock."""


class BuildFailed(RuntimeError):
    """The build stopped; the previous version stays current."""


@dataclass
class BuildResult:
    version: str
    manifest: dict
    seconds: float
    # where the seconds went: "start" (model load), "embed" (the papers the cache lacked), "rest" (index, BM25,
    # verify, publish); a projection to a larger corpus scales "embed" alone
    stages: dict[str, float] = field(default_factory=dict)


@contextmanager
def build_lock(indexes_dir: Path, wait: float = 0.0, progress: Progress | None = None):
    """One build at a time per HINDSIGHT_HOME, across processes; waits up to `wait` seconds for another build to end
    (a queued API rebuild waits behind a CLI build; the CLI itself is refused at once)."""
    indexes_dir.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + wait
    with (indexes_dir / ".build.lock").open("a+") as fh:
        while True:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise BuildBusy("another index build is running in this HINDSIGHT_HOME; wait for it to "
                                    "finish") from None
                if progress:
                    progress("waiting for another build", 0, 0)
                time.sleep(LOCK_POLL)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _next_version(indexes_dir: Path, build_id: int) -> str:
    version = f"v{build_id:04d}"
    while (indexes_dir / version).exists():
        version += "x"
    return version


def build_index(settings: Settings, *, model: str | None = None, cutoff: date | None = None,
                until: date | None = None, theta: float | None = None, embedder: Embedder | None = None,
                progress: Progress | None = None, engine: str = "local", address: str | None = None,
                factory: str | None = None, matcher: str | None = None, backend: str | None = None,
                qdrant_url: str | None = None, wait: float = 0.0) -> BuildResult:
    """Build, verify and publish a new index version; on any failure the previous version stays current.

    factory: a FAISS index factory string instead of the size-based choice (flat while small, else IVF).
    backend: faiss or qdrant (default: settings.index.vector_backend); qdrant_url: a server instead of the setting's
    (unset both: local mode in HINDSIGHT_HOME/qdrant); wait: seconds to wait for another build to end before
    refusing."""
    started = time.perf_counter()
    cutoff, until = cutoff or settings.index.cutoff, until or settings.index.until
    if until < cutoff:
        raise BuildFailed(f"--until {until} is before --cutoff {cutoff}")
    if matcher is not None and matcher not in MATCHERS:
        raise BuildFailed(f"unknown matcher {matcher!r}; use {' or '.join(MATCHERS)}")
    backend = backend or settings.index.vector_backend
    try:
        check_backend(backend, factory)
    except ValueError as exc:
        raise BuildFailed(str(exc)) from None
    indexes_dir, db_path = settings.indexes_dir, settings.db_path
    with build_lock(indexes_dir, wait, progress):
        embedder, build_id = _start(settings, embedder, model, theta)
        loaded = time.perf_counter()
        staging = indexes_dir / f".build-{build_id}-{os.getpid()}"
        created: list[tuple[str, VectorIndex]] = []
        try:
            result = _build(settings, embedder, cutoff, until, build_id, staging, progress, engine, address,
                            factory, matcher, backend, qdrant_url, created)
        except BaseException as exc:
            shutil.rmtree(staging, ignore_errors=True)
            _drop_unpublished(indexes_dir, created)
            _record(db_path, build_id, status="failed", error=describe_error(exc, settings.home))
            if isinstance(exc, (BuildFailed, KeyboardInterrupt)):
                raise
            raise BuildFailed(f"index build failed ({describe_error(exc, settings.home)}); the previous version "
                              f"({current_version(indexes_dir) or 'none'}) stays current{_hint(exc)}") from exc
        _record(db_path, build_id, status="published", version=result.version, manifest=result.manifest)
        _prune(indexes_dir)
        result.seconds = time.perf_counter() - started
        result.stages = {"start": loaded - started, **result.stages}  # _build's "embed"
        result.stages["rest"] = result.seconds - sum(result.stages.values())
        return result


def _hint(exc: BaseException) -> str:
    full = (isinstance(exc, OSError) and exc.errno == errno.ENOSPC) or any(
        sign in str(exc) for sign in ("disk is full", "No space left"))
    return "; free disk space under HINDSIGHT_HOME and build again" if full else ""


def _start(settings: Settings, embedder: Embedder | None, model: str | None,
           theta: float | None) -> tuple[Embedder, int]:
    """Clear what killed builds left, load the model and record the build; a failure here (a full disk, a locked
    or damaged database) is a BuildFailed that says what happened."""
    try:
        _clear_interrupted(settings.indexes_dir, settings.db_path)
        embedder = embedder or load_embedder(model or settings.index.model, settings, theta=theta)
        with session_scope(settings.db_path) as session:
            build = IndexBuild(status="running", model=embedder.key)
            session.add(build)
            session.flush()
            return embedder, build.id
    except (OSError, SQLAlchemyError) as exc:
        raise BuildFailed(f"index build could not start ({describe_error(exc, settings.home)}); the previous version "
                          f"({current_version(settings.indexes_dir) or 'none'}) stays current{_hint(exc)}") from exc


def _record(db_path: Path, build_id: int, **fields) -> None:
    """Note a build's outcome on its row. Failing to note it (a full disk) must not hide the outcome itself: the row
    then stays 'running' and the next build marks it interrupted."""
    try:
        with session_scope(db_path) as session:
            row = session.get(IndexBuild, build_id)
            if row is None:
                raise LookupError(f"{db_path}: index build {build_id} has no row to note its outcome on")
            for name, value in fields.items():
                setattr(row, name, value)
            row.finished_at = utcnow()
    except SQLAlchemyError:
        pass


def _clear_interrupted(indexes_dir: Path, db_path: Path) -> None:
    """Debris of builds that were killed: we hold the lock, so no staging folder or 'running' row is live."""
    for folder in indexes_dir.glob(".build-*"):
        shutil.rmtree(folder, ignore_errors=True)
    for tmp in indexes_dir.glob(".CURRENT.*.tmp"):
        tmp.unlink(missing_ok=True)
    with session_scope(db_path) as session:
        for row in session.scalars(select(IndexBuild).where(IndexBuild.status == "running")):
            row.status, row.finished_at = "interrupted", utcnow()
            row.error = "the build process stopped before recording its outcome (killed or crashed)"


@dataclass
class _Selection:
    papers: list  # rows in date order: position i is vector id i, BM25 document i, papers.json entry i
    counts: dict


def _build(settings: Settings, embedder: Embedder, cutoff: date, until: date, build_id: int, staging: Path,
           progress: Progress | None, engine: str = "local", address: str | None = None,
           factory: str | None = None, matcher: str | None = None, backend: str = "faiss",
           qdrant_url: str | None = None, created: list | None = None) -> BuildResult:
    """Select, embed, index, write the version, verify, publish. `created`: the (version, index) this build made
    (the caller drops it if the build fails)."""
    matcher_block = matcher_manifest(settings, embedder, matcher)
    chosen = _select(settings, cutoff, until)
    papers = chosen.papers
    texts = [join(embedder, p.title, p.abstract) for p in papers]
    if engine == "ray":  # pre-fill the cache on Ray; embed_with_cache below then finds every vector cached
        from indexing.distributed import embed_on_ray

        embed_on_ray(embedder, texts, settings=settings, address=address, progress=progress)
    elif engine != "local":
        raise BuildFailed(f"unknown engine {engine!r}; use local or ray")
    embedding = time.perf_counter()
    vectors, embedded = embed_with_cache(embedder, texts, db_path=settings.db_path,
                                         batch_size=settings.index.batch_size, progress=progress,
                                         workers=settings.index.embed_workers)
    embedding = time.perf_counter() - embedding
    if progress:
        progress("index", 0, len(papers))
    snapshot, built = _snapshot(settings, papers, cutoff, until)
    version = _next_version(settings.indexes_dir, build_id)
    staging.mkdir(parents=True)
    # FAISS: flat while small, IVF beyond, PQ with a float16 re-rank store (in staging) past 2M; or a new collection
    index = create_index(vectors, backend=backend, factory=factory, folder=staging, version=version,
                         qdrant=qdrant_target(settings, qdrant_url), payloads=(
                             {"publication_date": r["publication_date"], "impact": r["impact"]} for r in snapshot))
    if created is not None:
        created.append((version, index))
    if matcher_block["default"] == "hybrid" and stored_vectors(index, np.array([0])) is None:
        matcher_block["default"] = "dense"  # the facet cosines need the stored vectors back
        matcher_block["warning"] = f"index kind {index.kind} cannot return stored vectors: dense matcher by default"
    if progress:
        progress("index", len(papers), len(papers))

    # BM25 document i is snapshot entry i: both follow `papers`
    lexical = build_lexical([p.title for p in papers], [p.abstract or "" for p in papers])
    files = index.save(staging)
    (staging / PAPERS).write_bytes(orjson.dumps(snapshot))
    files.append(staging / PAPERS)
    files += save_lexical(lexical, staging)
    manifest = {
        "version": version,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "model": embedder.key, "model_id": embedder.model_id, "revision": embedder.revision,
        "backend": getattr(embedder, "backend", None),
        "backend_check": getattr(embedder, "backend_check", None),  # this machine's verdict (embedders/check.py)
        "dim": embedder.dim, "theta": embedder.theta, "max_tokens": getattr(embedder, "max_tokens", None),
        "cutoff": cutoff.isoformat(), "window": {"start": cutoff.isoformat(), "end": until.isoformat()},
        "index": {"kind": index.kind, "factory": index.factory, "metric": "inner_product", **index.params},
        "lexical": describe_lexical(lexical),
        "matcher": matcher_block,
        "impact": {
            "formula": f"{settings.index.citation_weight} * c_hat + {settings.index.venue_weight} * top_venue",
            "citation_weight": settings.index.citation_weight, "venue_weight": settings.index.venue_weight,
            "citation_transform": settings.index.citation_transform, "missing_citations": "counted as 0 and flagged",
            "top_venues": list(settings.index.top_venues), "citation_snapshot": _snapshot_range(papers),
            **built.stats,  # citation_normalisation, citation_min/max (and per-cohort ones), papers
        },
        "vector_ids": DATE_ORDER,
        "counts": {
            **chosen.counts, "indexed": len(papers),
            "missing_citations": sum(p.citation_count is None for p in papers),
            "top_venue": sum(s["top_venue"] for s in snapshot),
            "year_only_dates": sum(p.date_rule != "exact" for p in papers),
            "embedded_new": embedded, "embedded_from_cache": len(papers) - embedded,
        },
        "build_id": build_id,
        "checksums": {f.name: sha256_file(f) for f in files},
    }
    (staging / MANIFEST).write_bytes(orjson.dumps(manifest, option=orjson.OPT_INDENT_2))
    _publish(settings.indexes_dir, staging, version, files, probe=vectors[0])
    return BuildResult(version=version, manifest=manifest, seconds=0.0, stages={"embed": embedding})


def _select(settings: Settings, cutoff: date, until: date) -> _Selection:
    """The papers published in [cutoff, until], in date order, and what was left out."""
    with session_scope(settings.db_path) as session:
        total = session.scalar(select(func.count()).select_from(Paper)) or 0
        before = session.scalar(select(func.count()).where(Paper.publication_date < cutoff)) or 0
        after = session.scalar(select(func.count()).where(Paper.publication_date > until)) or 0
        papers = session.execute(select(
            Paper.pk, Paper.paper_id, Paper.title, Paper.abstract, Paper.venue, Paper.year, Paper.publication_date,
            Paper.citation_count, Paper.date_rule, Paper.citations_at,
        # date order: a vector's id is its position, so any date window inside this one is one id range
        ).where(Paper.publication_date >= cutoff, Paper.publication_date <= until)
          .order_by(Paper.publication_date, Paper.pk)).all()
    if not papers:
        raise BuildFailed(f"no papers published in the window {cutoff}..{until} ({total} in the database); "
                          "ingest papers first with `hindsight ingest`")
    return _Selection(list(papers), {"papers_in_database": total, "excluded_before_cutoff": before,
                                     "excluded_after_window": after})


def _snapshot(settings: Settings, papers: list, cutoff: date, until: date) -> tuple[list[dict], WindowImpact]:
    """papers.json entries (key = position) with the built window's c_hat and impact."""
    top_keys = top_venue_keys(settings.index.top_venues)
    snapshot = [{
        "key": position, "pk": p.pk, "paper_id": p.paper_id, "title": p.title, "venue": p.venue, "year": p.year,
        "publication_date": p.publication_date.isoformat(), "citations": p.citation_count,
        "citations_missing": p.citation_count is None, "top_venue": is_top_venue(p.venue, top_keys),
    } for position, p in enumerate(papers)]
    # the same code computes c_hat for any window of this version at request time
    table = PaperTable.of(snapshot, transform=settings.index.citation_transform,
                          normalisation=settings.index.citation_normalisation,
                          citation_weight=settings.index.citation_weight, venue_weight=settings.index.venue_weight)
    built = table.impacts(Window(cutoff, until, 0, len(snapshot)))
    for row, c, h in zip(snapshot, built.c_hat.tolist(), built.impact.tolist()):
        row["c_hat"], row["impact"] = c, h
    return snapshot, built


def _publish(indexes_dir: Path, staging: Path, version: str, files: list[Path], probe: np.ndarray) -> None:
    """fsync, rename the staging folder to the version, verify it by reloading, flip the backend's alias (Qdrant),
    then the CURRENT pointer. A failure before the flip leaves both pointers as they were; a failure of the CURRENT
    write puts the alias back, so the two never disagree."""
    for f in [*files, staging / MANIFEST]:
        with f.open("rb") as fh:
            os.fsync(fh.fileno())
    fsync_dir(staging)
    os.rename(staging, indexes_dir / version)
    fsync_dir(indexes_dir)
    use_version(indexes_dir, version, _verify(indexes_dir, version, probe, 0))


def _snapshot_range(papers) -> dict:
    """The days the indexed citation counts were taken (None when no count has a date, e.g. file ingests)."""
    days = sorted(p.citations_at for p in papers if p.citations_at is not None)
    return {"from": days[0].isoformat() if days else None, "to": days[-1].isoformat() if days else None,
            "undated": len(papers) - len(days)}


def matcher_manifest(settings: Settings, embedder: Embedder, matcher: str | None) -> dict:
    """The manifest's `matcher` block: the default decision rule of this version and, when a fitted hybrid model
    exists for the embedder, the whole registry entry (so the version keeps scoring the same way)."""
    try:
        entry = find_entry(embedder.key, embedder.revision, home=settings.home)
    except ValueError as exc:
        raise BuildFailed(str(exc)) from None
    chosen = matcher or default_matcher(embedder.key)
    if chosen == "hybrid" and entry is None:
        if matcher == "hybrid":
            raise BuildFailed(f"no hybrid matcher is fitted for {embedder.key} (revision {embedder.revision}); fit "
                              "one with `hindsight calibrate --matcher hybrid --pairs FILE` or build with "
                              "--matcher dense")
        chosen = "dense"
    block = {"default": chosen, "dense": {"theta": embedder.theta}, "hybrid": entry}
    if entry is not None and entry.get("fitted_on_revision") != embedder.revision:
        block["warning"] = (f"hybrid model fitted on revision {entry.get('fitted_on_revision')}, this index is "
                            f"{embedder.revision}: recalibrate with `hindsight calibrate --matcher hybrid`")
    return block


def _drop_unpublished(indexes_dir: Path, created: list[tuple[str, VectorIndex]]) -> None:
    """A failed build's collection, and the version folder naming it, unless that version became current."""
    current = current_version(indexes_dir)
    for version, index in created:
        if version != current and drop_index(index):
            shutil.rmtree(indexes_dir / version, ignore_errors=True)


def _verify(indexes_dir: Path, version: str, probe: np.ndarray, key: int) -> LoadedIndex:
    """Reload the written version and run a smoke query: the first paper must find itself."""
    loaded = load_version(indexes_dir, version)
    hits = loaded.search(probe[None, :], 10)[0]
    # an exact index returns the probe at cosine 1; a compressed (IVF) one must at least rank it near the top
    if not hits or (hits[0][1] < 0.999 and all(p["key"] != key for p, _ in hits)):
        shutil.rmtree(indexes_dir / version, ignore_errors=True)
        raise IndexDamaged(f"index version {version} failed its smoke query; not published")
    return loaded


def _prune(indexes_dir: Path) -> None:
    """Keep the newest versions and the current one."""
    current = current_version(indexes_dir)
    versions = list_versions(indexes_dir)
    for old in versions[:-KEEP_VERSIONS]:
        if old != current:
            try:  # a Qdrant version's collection goes with its folder
                drop_version(indexes_dir / old, orjson.loads((indexes_dir / old / MANIFEST).read_bytes())["index"])
            except Exception:  # an unreadable manifest: the folder goes all the same
                pass
            shutil.rmtree(indexes_dir / old, ignore_errors=True)
