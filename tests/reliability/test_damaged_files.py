"""Damaged files: a published version with a truncated, corrupted or missing file, a manifest that lies, a broken or
missing current pointer, a full disk during a build. The service refuses the damaged version with a clear reason in
/readyz and keeps serving the good one; the CLI says what to do."""

import errno
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import faiss
import httpx
import orjson
import pytest

from indexing.build import BuildFailed, build_index
from indexing.db import migrate
from indexing.ingest import ingest_bytes
from indexing.settings import Settings
from indexing.versions import CURRENT, MANIFEST, PAPERS, current_version, load_version, set_current, sha256_file
from tests.helpers import run_cli
from tests.reliability.helpers import (
    FULL, LEAK, SEED, jsonl, paper_lines, sample_ideas, synthetic_papers, write_report,
)

INDEX_FILE = "index.faiss"


@pytest.fixture(scope="module")
def template(tmp_path_factory, minilm) -> Path:
    """A home with 30 sample papers and one published version, copied by each test."""
    home = tmp_path_factory.mktemp("damaged") / "home"
    settings = Settings(home=home)
    migrate(settings.db_path)
    ingest_bytes(("\n".join(paper_lines(0, 30)) + "\n").encode(), "seed.jsonl", db_path=settings.db_path)
    build_index(settings, embedder=minilm)
    return home


def copy_home(template: Path, dest: Path) -> Path:
    shutil.copytree(template, dest)
    return dest


def edit_manifest(fn: Callable[[dict], object], *, replace: bool = False) -> Callable[[Path], None]:
    """Change the manifest in place with fn (or, with replace, write what fn returns instead)."""
    def damage(folder: Path) -> None:
        manifest = orjson.loads((folder / MANIFEST).read_bytes())
        out = fn(manifest)
        (folder / MANIFEST).write_bytes(orjson.dumps(out if replace else manifest))
    return damage


def truncate(name: str) -> Callable[[Path], None]:
    def damage(folder: Path) -> None:
        data = (folder / name).read_bytes()
        (folder / name).write_bytes(data[: len(data) // 2])
    return damage


def flip_byte(folder: Path) -> None:
    data = bytearray((folder / INDEX_FILE).read_bytes())
    data[len(data) // 2] ^= 0xFF
    (folder / INDEX_FILE).write_bytes(bytes(data))


def truncate_with_matching_checksum(folder: Path) -> None:
    """A truncated index whose manifest was rewritten to match, so only reading it can tell."""
    truncate(INDEX_FILE)(folder)
    edit_manifest(lambda m: m["checksums"].update({INDEX_FILE: sha256_file(folder / INDEX_FILE)}))(folder)


def malformed_papers_with_matching_checksum(folder: Path) -> None:
    (folder / PAPERS).write_bytes(b'[{"no_key": 1}]')
    edit_manifest(lambda m: m["checksums"].update({PAPERS: sha256_file(folder / PAPERS)}))(folder)


LEX_DATA, LEX_ABSTRACTS, LEX_INDPTR = "lexical.data.npy", "lexical.abstracts.json", "lexical.indptr.npy"


def rewritten(name: str, data: Callable[[bytes], bytes]) -> Callable[[Path], None]:
    """Replace a file's bytes and rewrite its checksum to match, so only reading it can tell."""
    def damage(folder: Path) -> None:
        (folder / name).write_bytes(data((folder / name).read_bytes()))
        edit_manifest(lambda m: m["checksums"].update({name: sha256_file(folder / name)}))(folder)
    return damage


def flip(name: str) -> Callable[[Path], None]:
    def damage(folder: Path) -> None:
        data = bytearray((folder / name).read_bytes())
        data[len(data) // 2] ^= 0xFF
        (folder / name).write_bytes(bytes(data))
    return damage


def set_count(m: dict) -> None:
    m["counts"]["indexed"] += 1


# name -> (damage applied to a copy of the good version, phrase the refusal must contain)
DAMAGES: dict[str, tuple[Callable[[Path], None], str]] = {
    "truncated index file": (truncate(INDEX_FILE), f"checksum mismatch in {INDEX_FILE}"),
    "flipped byte in index file": (flip_byte, f"checksum mismatch in {INDEX_FILE}"),
    "truncated paper snapshot": (truncate(PAPERS), f"checksum mismatch in {PAPERS}"),
    "checksum edited in manifest": (edit_manifest(lambda m: m["checksums"].update({INDEX_FILE: "0" * 64})),
                                    "checksum mismatch"),
    "index file missing": (lambda f: (f / INDEX_FILE).unlink(), f"file {INDEX_FILE} is missing"),
    "manifest truncated": (truncate(MANIFEST), "manifest unreadable"),
    "manifest missing": (lambda f: (f / MANIFEST).unlink(), "manifest missing"),
    "manifest without checksums": (edit_manifest(lambda m: m.pop("checksums")), "no valid checksums"),
    "checksum naming a file outside": (edit_manifest(lambda m: m["checksums"].update({"../CURRENT": "0" * 64})),
                                       "no valid checksums"),
    "manifest is an array": (edit_manifest(lambda m: [m], replace=True), "not a JSON object"),
    "manifest lacks theta": (edit_manifest(lambda m: m.pop("theta")), "lacks theta"),
    "manifest count differs": (edit_manifest(set_count), "manifest says"),
    "folder copied under a new name": (edit_manifest(lambda m: m.update(version="v0001")), "copied or renamed"),
    "truncated index, checksum rewritten": (truncate_with_matching_checksum, "cannot be read"),
    "malformed snapshot, checksum rewritten": (malformed_papers_with_matching_checksum, f"{PAPERS} is malformed"),
    # the lexical (BM25) index is verified and refused like the FAISS file
    "truncated lexical index": (truncate(LEX_DATA), f"checksum mismatch in {LEX_DATA}"),
    "flipped byte in lexical index": (flip(LEX_INDPTR), f"checksum mismatch in {LEX_INDPTR}"),
    "lexical file missing": (lambda f: (f / LEX_ABSTRACTS).unlink(), f"file {LEX_ABSTRACTS} is missing"),
    "lexical checksum dropped from manifest": (edit_manifest(lambda m: m["checksums"].pop(LEX_DATA)),
                                               "does not checksum the lexical index"),
    "truncated lexical index, checksum rewritten": (rewritten(LEX_DATA, lambda b: b[: len(b) // 2]),
                                                    "lexical index cannot be read"),
    "lexical abstracts of another corpus, checksum rewritten": (rewritten(LEX_ABSTRACTS, lambda b: b"[]"),
                                                                "lexical index does not fit"),
}


def publish_damaged(indexes: Path, good: str, name: str, damage: Callable[[Path], None]) -> None:
    shutil.copytree(indexes / good, indexes / name)
    edit_manifest(lambda m: m.update(version=name))(indexes / name)
    damage(indexes / name)
    set_current(indexes, name)


def readyz(url: str) -> tuple[int, dict]:
    r = httpx.get(f"{url}/readyz", timeout=60)
    assert not LEAK.search(r.text), f"/readyz leaks a path or trace: {r.text}"
    return r.status_code, r.json()


def score_version(url: str) -> str:
    r = httpx.post(f"{url}/v1/score", json={"system": "damaged", "ideas": [sample_ideas()[0]]}, timeout=120)
    assert r.status_code == 200, r.text
    return r.json()["index_version"]


def test_damaged_versions_are_refused_and_the_good_one_serves(template: Path, tmp_path: Path, live_server):
    home = copy_home(template, tmp_path / "home")
    indexes = home / "indexes"
    good = current_version(indexes)
    server = live_server(home)
    assert score_version(server.url) == good
    refused = {}
    for i, (label, (damage, phrase)) in enumerate(DAMAGES.items()):
        name = f"v9{i:03d}"
        publish_damaged(indexes, good, name, damage)
        code, body = readyz(server.url)
        assert code == 200 and body["status"] == "degraded", (label, body)
        assert body["loaded_version"] == good and body["current_pointer"] == name, (label, body)
        assert phrase in body["warning"] and name in body["warning"], (label, body["warning"])
        assert "hindsight index use" in body["warning"] or "rebuild" in body["warning"], (label, body["warning"])
        assert score_version(server.url) == good, label
        refused[label] = body["warning"]
        set_current(indexes, good)
        code, body = readyz(server.url)
        assert code == 200 and body["status"] == "ready" and body["warning"] is None, (label, body)

    for label, raw in {"binary junk": b"\xff\xfe\x00garbage\n", "path escape": b"../../etc\n",
                       "unknown version": b"v7777\n"}.items():
        (indexes / CURRENT).write_bytes(raw)
        code, body = readyz(server.url)
        assert code == 200 and body["status"] == "degraded" and body["loaded_version"] == good, (label, body)
        assert "hindsight index use" in body["warning"] or "manifest missing" in body["warning"], (label, body)
        assert score_version(server.url) == good, label
        refused[f"pointer: {label}"] = body["warning"]
    set_current(indexes, good)
    for folder in indexes.glob("v9*"):
        shutil.rmtree(folder)

    # a fresh server whose pointer names a damaged version: not ready, and told how to roll back
    publish_damaged(indexes, good, "v9999", truncate(INDEX_FILE))
    fresh = live_server(home)
    code, body = readyz(fresh.url)
    assert code == 503 and "checksum mismatch" in body["reason"] and good in body["reason"], body
    assert httpx.post(f"{fresh.url}/v1/score", json={"ideas": [sample_ideas()[0]]}, timeout=60).status_code == 503

    status = run_cli(home, "index", "status")
    assert status.returncode == 1 and "checksum mismatch" in status.stderr, status.stderr
    assert f"hindsight index use {good}" in " ".join(status.stderr.split()), status.stderr
    if FULL:  # publishing the damaged version by hand is refused too
        use_bad = run_cli(home, "index", "use", "v9999")
        assert use_bad.returncode == 1 and "checksum mismatch" in use_bad.stderr, use_bad.stderr
    use_good = run_cli(home, "index", "use", good)
    assert use_good.returncode == 0 and current_version(indexes) == good, use_good.stderr
    assert readyz(fresh.url)[1]["loaded_version"] == good
    for out in (status, use_good):
        assert "Traceback" not in out.stderr + out.stdout
    write_report("damaged_files", {"scenarios": len(refused) + 1, "refusals": refused})


def test_missing_current_pointer(template: Path, tmp_path: Path, live_server):
    home = copy_home(template, tmp_path / "home")
    indexes = home / "indexes"
    good = current_version(indexes)
    server = live_server(home)
    assert score_version(server.url) == good
    (indexes / CURRENT).unlink()
    code, body = readyz(server.url)
    assert code == 200 and body["status"] == "degraded" and "missing" in body["warning"], body
    assert f"hindsight index use {good}" in body["warning"]
    assert score_version(server.url) == good  # keeps serving what it had

    fresh = live_server(home)
    code, body = readyz(fresh.url)
    assert code == 503 and f"hindsight index use {good}" in body["reason"], body
    status = run_cli(home, "index", "status")
    assert status.returncode == 1 and f"hindsight index use {good}" in " ".join(status.stderr.split()), status.stderr


def fill_disk(mount: Path, leave: int) -> Path:
    """Fill the file system until only `leave` bytes are free."""
    filler = mount / "filler"
    st = os.statvfs(mount)
    size = max(0, st.f_bavail * st.f_frsize - leave)
    with filler.open("wb") as fh:
        block = b"\0" * (1 << 16)
        while size > 0:
            try:
                fh.write(block[: min(len(block), size)])
            except OSError:
                break
            size -= len(block)
    return filler


def assert_failed_cleanly(settings: Settings, good: str, message: str) -> None:
    assert current_version(settings.indexes_dir) == good, message
    load_version(settings.indexes_dir, good)
    assert not list(settings.indexes_dir.glob(".build-*")), "staging folder left behind"
    assert not LEAK.search(message), f"the error leaks a path: {message}"


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a size-limited tmpfs needs root")
def test_disk_full_during_build(template: Path, tmp_path: Path, live_server, minilm):
    mount = tmp_path / "small"
    mount.mkdir()
    size_mb = 24
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_mb}m", "tmpfs", str(mount)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({mounted.stderr.strip()}); injected write errors cover this")
    server = None
    try:
        home = copy_home(template, mount / "home")
        settings = Settings(home=home)
        good = current_version(settings.indexes_dir)
        server = live_server(home)
        assert score_version(server.url) == good
        rng = __import__("random").Random(SEED)
        outcomes = {}
        for leave_kb in (0, 8, 24, 48, 96) if FULL else (0, 48):  # the database fills first, then the index write
            ingest_bytes(jsonl(synthetic_papers(f"full{leave_kb}", 3, rng)), "new.jsonl", db_path=settings.db_path)
            filler = fill_disk(mount, leave_kb * 1024)
            try:
                result = build_index(settings, embedder=minilm)
                outcomes[f"{leave_kb} KB free"] = f"published {result.version}"
                good = result.version
            except BuildFailed as exc:
                outcomes[f"{leave_kb} KB free"] = str(exc)
                assert "No space left" in str(exc) or "disk is full" in str(exc), str(exc)
                assert_failed_cleanly(settings, good, str(exc))
            finally:
                filler.unlink()
            code, body = readyz(server.url)
            assert code == 200 and body["loaded_version"] == good, body

        filler = fill_disk(mount, 16 * 1024)
        ingest_failed = None
        try:
            built = run_cli(home, "index", "build")
            during = httpx.post(f"{server.url}/v1/score", json={"ideas": [sample_ideas()[1]]}, timeout=120)
            big = tmp_path / "big.jsonl"
            big.write_bytes(jsonl(synthetic_papers("fullingest", 200, rng))[: 8 * 1024 * 1024])
            ingested = run_cli(home, "ingest", str(big))
            ingest_failed = " ".join(ingested.stderr.split())[-300:] if ingested.returncode else None
        finally:
            filler.unlink()
        assert "Traceback" not in ingested.stderr, ingested.stderr[-2000:]
        if ingested.returncode:
            assert "nothing written" in ingest_failed and "disk is full" in ingest_failed, ingest_failed
        assert built.returncode == 1 and "Traceback" not in built.stderr, built.stderr
        text = " ".join(built.stderr.split())
        assert ("No space left" in text or "disk is full" in text) and "stays current" in text, text
        assert during.status_code in (200, 503), during.text  # a full disk is never a 500
        con = __import__("sqlite3").connect(settings.db_path)
        stored = con.execute("SELECT count(*) FROM papers WHERE paper_id LIKE 'fullingest-%'").fetchone()[0]
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        con.close()
        assert stored in (0, 200), f"partial ingest on a full disk: {stored}"
        assert_failed_cleanly(settings, good, built.stderr)
        rebuilt = run_cli(home, "index", "build")  # space is back: the next build completes
        assert rebuilt.returncode == 0, rebuilt.stderr
        assert readyz(server.url)[1]["loaded_version"] == current_version(settings.indexes_dir) != good
        write_report("disk_full", {"tmpfs_mb": size_mb, "builds": outcomes, "cli": text[-300:],
                                   "score_while_full": during.status_code, "ingest_while_full": ingest_failed})
    finally:
        if server:
            server.stop()
        subprocess.run(["umount", "-l", str(mount)], check=False)


@pytest.mark.parametrize("target", ["write_index", "write_bytes", "fsync", "rename"])
def test_injected_write_errors(template: Path, tmp_path: Path, minilm, monkeypatch, target: str):
    """The same guarantees where no small file system can be mounted: each write step fails with ENOSPC in turn."""
    home = copy_home(template, tmp_path / "home")
    settings = Settings(home=home)
    good = current_version(settings.indexes_dir)
    ingest_bytes(jsonl(synthetic_papers("inj", 3, __import__("random").Random(SEED))), "n.jsonl",
                 db_path=settings.db_path)

    def no_space(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(home / "indexes" / "somewhere"))

    owner = {"write_index": faiss, "write_bytes": Path, "fsync": os, "rename": os}[target]
    monkeypatch.setattr(owner, target, no_space)
    with pytest.raises(BuildFailed) as failed:
        build_index(settings, embedder=minilm)
    monkeypatch.undo()
    message = str(failed.value)
    assert "No space left" in message and f"previous version ({good}) stays current" in message, message
    assert_failed_cleanly(settings, good, message)
    con = __import__("sqlite3").connect(settings.db_path)
    errors = [r[0] for r in con.execute("SELECT error FROM index_builds WHERE status = 'failed'")]
    con.close()
    assert errors and not any(LEAK.search(e) for e in errors), errors
    assert build_index(settings, embedder=minilm).version != good
