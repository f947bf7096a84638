"""Versioned index folders, manifests with checksums, and the atomic "current" pointer."""

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from indexing.lexical import LexicalDamaged, LexicalIndex, load_lexical
from indexing.matcher.model import HybridMatcher
from indexing.vectorindex.base import IndexUnavailable, VectorIndex
from indexing.vectorindex.factory import open_index
from indexing.windows import DATE_ORDER, PaperTable, Window, WindowImpact, resolve_window

CURRENT = "CURRENT"
MANIFEST = "manifest.json"
PAPERS = "papers.json"
VERSION_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


class IndexDamaged(RuntimeError):
    """A published version failed verification; the message says what and what to do."""


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path: Path, data: bytes) -> None:
    """Write to a temporary file, fsync, then rename over the target: readers see old or new, never half."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with tmp.open("wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    fsync_dir(path.parent)


def current_version(indexes_dir: Path) -> str | None:
    try:
        # a damaged pointer reads as a bad name that load_version refuses, never as a decode error
        return (indexes_dir / CURRENT).read_text(errors="replace").strip() or None
    except FileNotFoundError:
        return None


def set_current(indexes_dir: Path, version: str) -> None:
    write_atomic(indexes_dir / CURRENT, version.encode() + b"\n")


def list_versions(indexes_dir: Path) -> list[str]:
    if not indexes_dir.is_dir():
        return []
    return sorted(p.name for p in indexes_dir.iterdir() if p.is_dir() and (p / MANIFEST).exists()
                  and not p.name.startswith("."))


@dataclass
class LoadedIndex:
    """One published version, loaded: the vectors, the paper snapshot and the manifest."""

    version: str
    manifest: dict
    index: VectorIndex
    papers: dict[int, dict]  # vector id ("key": the position for date-ordered versions, else the pk) -> paper
    rows: list[dict] = field(default_factory=list)  # papers.json in file order (position i = entry i)
    table: PaperTable = field(init=False, repr=False)  # built from rows and the manifest in __post_init__
    lexical: LexicalIndex | None = None  # BM25 over title + abstract; None in versions built before it existed
    hybrid: HybridMatcher | None = None  # the fitted hybrid matcher recorded in the manifest, if any
    # what the layers above build once per version and keep with it (the matcher's corpus: matcher.corpus_of)
    views: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.rows:
            self.rows = list(self.papers.values())
        impact = self.manifest.get("impact", {})
        self.table = PaperTable.of(
            self.rows, transform=impact.get("citation_transform", "none"),
            normalisation=impact.get("citation_normalisation", "global"),
            citation_weight=impact.get("citation_weight", 0.6), venue_weight=impact.get("venue_weight", 0.4))
        # vector id -> position in rows: the identity for date-ordered versions, the pk for older ones
        self._position = None if self.date_ordered else {int(r["key"]): i for i, r in enumerate(self.rows)}

    @property
    def date_ordered(self) -> bool:
        """Vector ids are positions in date order, so any date window is one id range."""
        return self.manifest.get("vector_ids") == DATE_ORDER

    @property
    def built_window(self) -> tuple[str, str]:
        w = self.manifest["window"]
        return w["start"], w["end"]

    def resolve_window(self, cutoff: str | date | None = None, until: str | date | None = None, *,
                       cutoff_field: str = "cutoff", until_field: str = "until") -> Window:
        """The window [cutoff, until] (defaults: the built edges) with its id range; raises WindowError."""
        return resolve_window(built=self.built_window, dates=self.table.dates, ordered=self.date_ordered,
                              version=self.version, cutoff=cutoff, until=until, cutoff_field=cutoff_field,
                              until_field=until_field)

    def window_range(self, cutoff: str | date | None = None, until: str | date | None = None) -> tuple[int, int]:
        """The position range [lo, hi) of papers published in [cutoff, until]: what every retriever restricts to."""
        return self.resolve_window(cutoff, until).range

    def window_impacts(self, window: Window) -> WindowImpact:
        """c_hat and impact of the window's papers, computed once per window and cached with this version."""
        if not self.date_ordered:  # only the built window: the impacts the build stored
            return WindowImpact(window, _column(self.rows, "c_hat"), _column(self.rows, "impact"),
                                {"citation_normalisation": self.table.normalisation,
                                 "citation_min": self.manifest["impact"].get("citation_min"),
                                 "citation_max": self.manifest["impact"].get("citation_max"),
                                 "papers": len(self.rows)})
        return self.table.impacts(window)

    def position_of(self, vector_id: int) -> int:
        return int(vector_id) if self._position is None else self._position[int(vector_id)]

    def search_positions(self, vectors: np.ndarray, k: int,
                         allowed: tuple[int, int] | None = None) -> list[list[tuple[int, float]]]:
        """Top-k per query vector as (position, cosine), best first, only among positions in [lo, hi)."""
        if len(self.index) == 0:
            return [[] for _ in range(len(vectors))]
        if allowed is not None and tuple(allowed) != (0, len(self.rows)):
            if not self.date_ordered:
                raise ValueError(f"index {self.version} has no date-ordered ids: it cannot restrict to {allowed}")
            sims, ids = self.index.search(vectors, k, allowed=(int(allowed[0]), int(allowed[1])))
        else:
            sims, ids = self.index.search(vectors, k)
        return [[(self.position_of(i), float(s)) for s, i in zip(row_s, row_i) if i >= 0]
                for row_s, row_i in zip(sims, ids)]

    def search(self, vectors: np.ndarray, k: int,
               allowed: tuple[int, int] | None = None) -> list[list[tuple[dict, float]]]:
        """Top-k papers per query vector, best first, as (paper snapshot, cosine); allowed restricts positions."""
        return [[(self.rows[p], s) for p, s in row] for row in self.search_positions(vectors, k, allowed)]


def _column(rows: list[dict], name: str) -> np.ndarray:
    return np.array([float(r[name]) for r in rows], dtype=np.float64)


def load_version(indexes_dir: Path, version: str) -> LoadedIndex:
    """Load and verify a version (checksums, counts); raises IndexDamaged with the reason, or IndexUnavailable
    when the version's vector store (a Qdrant server or local folder) cannot be reached now."""
    if not VERSION_NAME.fullmatch(version):
        raise IndexDamaged(f"{version[:40]!r} is not an index version name (like v0003); point the current pointer "
                           "at a good version with `hindsight index use VERSION`")
    folder = indexes_dir / version
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
    except FileNotFoundError:
        raise IndexDamaged(f"index version {version}: manifest missing; rebuild with `hindsight index build`") from None
    except (ValueError, OSError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else exc  # an OSError's text carries the full path
        raise IndexDamaged(f"index version {version}: manifest unreadable ({reason}); rebuild the index") from None
    _check_manifest(manifest, version)
    for name, expected in manifest["checksums"].items():
        path = folder / name
        if not path.exists():
            raise IndexDamaged(f"index version {version}: file {name} is missing; rebuild the index")
        if sha256_file(path) != expected:
            raise IndexDamaged(f"index version {version}: checksum mismatch in {name} (damaged file); "
                               "publish a good version with `hindsight index use VERSION` or rebuild")
    try:
        index = open_index(folder, manifest["index"])
        rows = orjson.loads((folder / PAPERS).read_bytes())
    except IndexUnavailable:  # the store is down or locked, not damaged: a later load may succeed
        raise
    except Exception as exc:  # faiss raises RuntimeError, orjson its own: any failure means damaged
        raise IndexDamaged(f"index version {version}: cannot be read ({type(exc).__name__}); "
                           "rebuild the index") from None
    papers = _papers(rows, version)
    if len(index) != manifest["counts"]["indexed"] or len(papers) != len(index):
        raise IndexDamaged(f"index version {version}: holds {len(index)} vectors and {len(papers)} papers, "
                           f"manifest says {manifest['counts']['indexed']}; rebuild the index")
    if manifest.get("vector_ids") == DATE_ORDER and any(int(r["key"]) != i for i, r in enumerate(rows)):
        raise IndexDamaged(f"index version {version}: {PAPERS} is not keyed by position; rebuild the index")
    lexical, hybrid = _matcher_parts(folder, manifest, version, len(papers))
    try:
        return LoadedIndex(version=version, manifest=manifest, index=index, papers=papers, rows=rows,
                           lexical=lexical, hybrid=hybrid)
    except (TypeError, KeyError, ValueError, AttributeError):
        raise IndexDamaged(f"index version {version}: {PAPERS} or the manifest's impact block is malformed; "
                           "rebuild the index") from None


def _matcher_parts(folder: Path, manifest: dict, version: str, n_papers: int):
    """The lexical index and hybrid matcher a manifest names; a version without them serves the dense matcher."""
    lexical = hybrid = None
    if manifest.get("lexical") is not None:
        missing = [n for n in manifest["lexical"].get("files", []) if n not in manifest["checksums"]] \
            if isinstance(manifest["lexical"], dict) else ["?"]
        if missing:
            raise IndexDamaged(f"index version {version}: manifest does not checksum the lexical index "
                               f"({', '.join(missing)}); rebuild the index")
        try:
            lexical = load_lexical(folder, n_papers)
        except LexicalDamaged as exc:
            raise IndexDamaged(f"index version {version}: {exc}; rebuild the index") from None
    block = manifest.get("matcher")
    if isinstance(block, dict) and block.get("hybrid") is not None:
        try:
            hybrid = HybridMatcher.from_entry(block["hybrid"])
        except ValueError as exc:
            raise IndexDamaged(f"index version {version}: manifest matcher {exc}; rebuild the index") from None
    return lexical, hybrid


REQUIRED = ("model", "model_id", "revision", "dim", "theta", "cutoff", "window", "impact")


def _check_manifest(manifest, version: str) -> None:
    """Refuse a hand-edited, copied or foreign manifest with a reason, instead of failing later with a KeyError."""
    def damaged(what: str) -> IndexDamaged:
        return IndexDamaged(f"index version {version}: manifest {what}; rebuild the index or publish a good version "
                            "with `hindsight index use VERSION`")

    if not isinstance(manifest, dict):
        raise damaged("is not a JSON object")
    if manifest.get("version", version) != version:
        raise damaged(f"names version {str(manifest['version'])[:40]!r} (was the folder copied or renamed?)")
    missing = [key for key in REQUIRED if key not in manifest]
    if missing:
        raise damaged(f"lacks {', '.join(missing)}")
    checksums = manifest.get("checksums")
    # every name is a plain file of this folder, and the paper snapshot is always covered
    if not isinstance(checksums, dict) or PAPERS not in checksums or not all(
            isinstance(n, str) and isinstance(h, str) and n == Path(n).name and not n.startswith(".")
            for n, h in checksums.items()):
        raise damaged("has no valid checksums")
    counts = manifest.get("counts")
    if not isinstance(manifest.get("index"), dict) or not isinstance(counts, dict) or \
            not isinstance(counts.get("indexed"), int):
        raise damaged("lacks its index description or counts")


def _papers(rows, version: str) -> dict[int, dict]:
    try:
        return {int(r["key"]): r for r in rows}
    except (TypeError, KeyError, ValueError):
        raise IndexDamaged(f"index version {version}: {PAPERS} is malformed; rebuild the index") from None


def use_version(indexes_dir: Path, version: str, loaded: LoadedIndex | None = None) -> LoadedIndex:
    """Publish a version (a build's, or a rollback): verify it (unless given loaded), flip its backend's alias
    (Qdrant), then CURRENT; the alias goes back if CURRENT cannot be written."""
    loaded = loaded or load_version(indexes_dir, version)
    alias = loaded.index.params.get("alias")
    previous = loaded.index.publish(alias) if alias else None
    try:
        set_current(indexes_dir, version)
    except BaseException:
        if alias:
            from indexing.vectorindex.qdrant import restore_alias

            restore_alias(loaded.index.client, alias, previous)  # type: ignore[attr-defined]
        raise
    return loaded


def load_current(indexes_dir: Path) -> LoadedIndex | None:
    version = current_version(indexes_dir)
    return load_version(indexes_dir, version) if version else None
