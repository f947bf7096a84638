"""The index the service answers from: loaded at start, swapped when a new version is published."""

import threading
from pathlib import Path

from indexing.embedders import Embedder, load_embedder
from indexing.embedders import check as backend_check
from indexing.embedders.runtime import manifest_backend
from indexing.errors import NotReady
from indexing.settings import Settings
from indexing.vectorindex.base import IndexUnavailable
from indexing.versions import CURRENT, IndexDamaged, LoadedIndex, current_version, list_versions, load_version
from service import heap


class NoIndex(NotReady, RuntimeError):
    """No usable index version; the message says why and what to do."""


class IndexHolder:
    """Holds the current LoadedIndex; a request keeps the object it got, so a swap never disturbs it."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._loaded: LoadedIndex | None = None
        self._failed: dict[str, str] = {}  # version -> why it was refused
        self._unavailable: dict[str, str] = {}  # version -> why its vector store cannot be reached (retried)
        self._lock = threading.Lock()  # guards version loads
        self._embedder_lock = threading.Lock()  # separate: scoring must not wait behind a version load
        self._embedders: dict[tuple[str, str], Embedder] = {}
        self._pointer_stamp: tuple[int, int] | None = None

    @property
    def indexes_dir(self) -> Path:
        return self.settings.indexes_dir

    def refresh(self) -> None:
        """Follow the current pointer; a damaged version is refused and the previous one kept."""
        self._forget_refusals_on_republish()
        wanted = current_version(self.indexes_dir)
        if wanted is None or (self._loaded and self._loaded.version == wanted) or wanted in self._failed:
            return
        with self._lock:
            # the pointer may have moved again while we waited for another thread's load: follow it now
            wanted = current_version(self.indexes_dir)
            if wanted is None or (self._loaded and self._loaded.version == wanted) or wanted in self._failed:
                return
            try:
                self._loaded = load_version(self.indexes_dir, wanted)
                self._unavailable.pop(wanted, None)
                heap.settle()  # the old version goes, the new one stays out of the collector's walks
            except IndexUnavailable as exc:  # an outage, not damage: the next request tries again
                self._unavailable[wanted] = str(exc)
            except IndexDamaged as exc:
                self._failed[wanted] = self._with_rollback_hint(str(exc), wanted)
            except Exception as exc:  # whatever is on disk, a request must never fail with a 500 for it
                self._failed[wanted] = self._with_rollback_hint(
                    f"index version {wanted} cannot be loaded ({type(exc).__name__})", wanted)

    def _forget_refusals_on_republish(self) -> None:
        """A rewritten pointer (`hindsight index use`, a new build) gets a fresh try, e.g. after a repair."""
        try:
            st = (self.indexes_dir / CURRENT).stat()
            stamp = (st.st_ino, st.st_mtime_ns)
        except OSError:
            stamp = None
        if stamp != self._pointer_stamp:
            self._pointer_stamp = stamp
            self._failed.clear()

    def _with_rollback_hint(self, reason: str, refused: str) -> str:
        others = [v for v in list_versions(self.indexes_dir) if v != refused]
        return f"{reason} (other versions on disk: {', '.join(others[-5:])})" if others else reason

    def current(self) -> LoadedIndex:
        loaded = self.loaded()
        if loaded is None:
            raise NoIndex(self.not_ready_reason() or "no index loaded")
        return loaded

    def loaded(self) -> LoadedIndex | None:
        """The version the pointer names when it is loaded (else the one still served), or None."""
        self.refresh()
        return self._loaded

    def not_ready_reason(self) -> str | None:
        if self._loaded is not None:
            return None
        wanted = current_version(self.indexes_dir)
        if wanted is None:
            on_disk = list_versions(self.indexes_dir)
            if on_disk:
                return (f"the current pointer ({CURRENT}) is missing; versions on disk: {', '.join(on_disk[-5:])}; "
                        f"publish one with `hindsight index use {on_disk[-1]}`")
            return "no index has been published yet: run `hindsight index build` (or POST /v1/index/rebuild)"
        return self._failed.get(wanted) or self._unavailable.get(wanted) or f"index version {wanted} is not loaded"

    def warning(self) -> str | None:
        """Why the loaded version is not the one the pointer names, while it keeps serving."""
        loaded = self._loaded
        if loaded is None:
            return None
        wanted = current_version(self.indexes_dir)
        if wanted is None:
            return (f"the current pointer ({CURRENT}) is missing; still serving {loaded.version}; "
                    f"restore it with `hindsight index use {loaded.version}`")
        if wanted != loaded.version and wanted in self._failed:
            return f"refused {wanted}: {self._failed[wanted]}; still serving {loaded.version}"
        if wanted != loaded.version and wanted in self._unavailable:
            return f"cannot load {wanted}: {self._unavailable[wanted]}; still serving {loaded.version}"
        return None

    def status(self) -> dict:
        """The versions, and the served index as its backend describes it (Qdrant: collection, alias and where the
        alias points, read from the store: `unavailable` gives the reason when it cannot be reached)."""
        self.refresh()
        wanted = current_version(self.indexes_dir)
        loaded, index, unavailable, checked = self._loaded, None, None, None
        if loaded is not None:
            try:
                index = loaded.index.describe()
            except IndexUnavailable as exc:
                unavailable = str(exc)
            m = loaded.manifest
            checked = backend_check.status(m["model"], manifest_backend(m), m["revision"], self.settings)
        return {
            "loaded_version": loaded.version if loaded else None,
            "current_pointer": wanted,
            "warning": self.warning(),
            "refused": dict(self._failed),
            "index": index,
            "unavailable": unavailable,
            "backend_check": checked,
        }

    def embedder_for(self, loaded: LoadedIndex) -> Embedder:
        """The model that built this version, loaded once; its revision must match the manifest's."""
        m = loaded.manifest
        key = (m["model"], m["revision"])
        if key in self._embedders:
            return self._embedders[key]
        with self._embedder_lock:
            if key not in self._embedders:
                # ideas are embedded with the backend that embedded the index, whatever this server's default is
                try:
                    embedder = load_embedder(m["model"], self.settings, theta=m["theta"], backend=manifest_backend(m))
                except ValueError as exc:  # e.g. a cuda-fp16 index on a CPU-only server
                    raise NoIndex(f"index {loaded.version} cannot be served here: {exc}") from None
                if embedder.revision != m["revision"]:
                    raise NoIndex(f"index {loaded.version} was built with {m['model']} revision {m['revision']}, "
                                  f"but this server loads revision {embedder.revision}; rebuild the index")
                # every input length once, for the p99 of the requests to come. In this thread, before any request
                # runs (other threads wait on the lock until it is published): warmed from a background thread
                # instead, the hybrid p99 over HTTP was 190-250 ms against 39 ms (bench/scoring.py, docs/startup.md)
                embedder.warm()
                heap.settle()
                self._embedders[key] = embedder
            return self._embedders[key]
