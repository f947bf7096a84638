"""The shared paperlists corpus for benchmarks and calibration, and title-derived ideas from it.

    .venv/bin/python bench/corpus.py --out DIR   # writes DIR/pairs.jsonl and DIR/ideas.jsonl

pairs.jsonl (for `hindsight calibrate`): every paper with an abstract, its title as the idea and itself as the
positive. ideas.jsonl (for `hindsight evaluate`): the title of every paper inside the default window
(2023-06-01..2025-12-31) with the paper as its source, and the titles of the papers dated before the cutoff
(AISTATS 2023, dated 2023-05-01 by the year-only rule) with no source: their true paper is not in the index,
so any match above theta is counted as a false match (an upper bound: a later paper may really be that close).
"""

import argparse
import json
import os
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAPERLISTS = Path(os.environ.get("HINDSIGHT_SHARED_DATA", ROOT.parent / "shared" / "data")) / "paperlists"


def paperlists_files() -> list[Path]:
    files = sorted(PAPERLISTS.glob("*/*.json"))
    if not files:
        raise SystemExit(f"no paperlists files under {PAPERLISTS}; set HINDSIGHT_SHARED_DATA to the shared data folder")
    return files


def papers(with_abstract: bool = True) -> list[dict]:
    """Records in file order, with the file's venue and year."""
    out = []
    for path in paperlists_files():
        venue, year = path.parent.name, int(path.stem[-4:])
        for r in json.loads(path.read_text()):
            if with_abstract and not (r.get("abstract") or "").strip():
                continue
            out.append({**r, "venue": venue, "year": year})
    return out


def texts(n: int | None = None, sep: str = "[SEP]") -> list[str]:
    """title + sep + abstract of the first n papers in corpus order (the index's input for MiniLM)."""
    rows = papers()[:n] if n else papers()
    return [f"{r['title'].strip()}{sep}{r['abstract'].strip()}" for r in rows]


VENUES = {"aistats": "AISTATS", "colt": "COLT", "corl": "CoRL", "uai": "UAI"}  # the venue names HindSight knows


def write_papers(path: Path, rows: list[dict], **fields) -> Path:
    """Papers as `hindsight ingest` JSONL (venues as HindSight names them), with `fields` added to every record."""
    with path.open("w") as fh:
        for r in rows:
            fh.write(json.dumps({"id": r["id"], "title": r["title"], "abstract": r["abstract"], "year": r["year"],
                                 "venue": VENUES.get(r["venue"], r["venue"]), **fields}) + "\n")
    return path


def before_cutoff(paper: dict, cutoff: date = date(2023, 6, 1)) -> bool:
    from indexing.sources.dates import date_from_year

    return date_from_year(paper["year"], paper["venue"])[0] < cutoff


def write_ideas(out: Path) -> tuple[int, int, int]:
    out.mkdir(parents=True, exist_ok=True)
    rows = papers()
    with (out / "pairs.jsonl").open("w") as fh:
        for r in rows:
            fh.write(json.dumps({"id": r["id"], "text": r["title"], "paper_id": r["id"]}) + "\n")
    sourced = unsourced = 0
    with (out / "ideas.jsonl").open("w") as fh:
        for r in rows:
            pre = before_cutoff(r)
            fh.write(json.dumps({"id": r["id"], "text": r["title"], "source": None if pre else r["id"]}) + "\n")
            unsourced += pre
            sourced += not pre
    return len(rows), sourced, unsourced


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Write title-derived pairs and ideas from the shared corpus.")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    n, sourced, unsourced = write_ideas(args.out)
    print(f"{args.out}/pairs.jsonl: {n} pairs; {args.out}/ideas.jsonl: {sourced} with a source, {unsourced} without")


COLING = ROOT.parent / "shared" / "data" / "generators" / "corpus" / "coling2025.json"


def coling_index(settings, cutoff: date):
    """COLING 2025 ingested and indexed at the cutoff in settings' home (once: a home that has an index keeps it);
    returns the current version and the embedder it is served with."""
    from indexing.build import build_index
    from indexing.db import migrate
    from indexing.ingest import ingest_path
    from service.state import IndexHolder

    migrate(settings.db_path)
    if not (settings.home / "indexes").exists():
        ingest_path(COLING, db_path=settings.db_path)
        build_index(settings, cutoff=cutoff, until=date(2025, 12, 31))
    holder = IndexHolder(settings)
    loaded = holder.current()
    return loaded, holder.embedder_for(loaded)
