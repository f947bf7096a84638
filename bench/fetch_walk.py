"""Fetch overhead: an OpenAlex walk over loopback HTTP vs ingesting the same pages as files.

    .venv/bin/python bench/fetch_walk.py [--pages 20] [--per-page 200] [--rounds 2]

Pages of recorded OpenAlex works (the shared recordings, each cloned under new ids, DOIs and titles so that every
record is a new paper) are served by the tests' replay server on loopback, and walked by `hindsight fetch`'s code
(httpx, retries, raw gzip, checkpoint in the page's transaction, ingest). The baseline, measured in the same run,
ingests the same pages as files through `ingest_bytes` (one transaction a page). The ratio is the local cost of
fetching on top of ingesting; the network's share (the API's response time and the pace) comes on top, see README.
"""

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def works(n: int) -> list[dict]:
    from tests.replay_server import recorded

    base = recorded("openalex/works_cursor_first_page.json")["results"] + [recorded("openalex/work_single.json")]
    out = []
    for i in range(n):
        w = json.loads(json.dumps(base[i % len(base)]))
        w["id"] = f"https://openalex.org/W9{i:09d}"
        w["doi"] = f"https://doi.org/10.5555/bench.{i}"
        w["ids"] = {"openalex": w["id"], "doi": w["doi"]}
        w["title"] = w["display_name"] = f"{w['title']} (copy {i})"
        out.append(w)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=20)
    parser.add_argument("--per-page", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()

    from indexing.db import migrate
    from indexing.fetch import openalex
    from indexing.fetch.walk import run
    from indexing.ingest import ingest_bytes
    from indexing.settings import Settings
    from tests.replay_server import Replay, openalex_pages

    n = args.pages * args.per_page
    pages = openalex_pages(works(n), per_page=args.per_page)
    ingest_times, fetch_times = [], []
    for _ in range(args.rounds):  # alternated, best of each: the machine is shared
        with tempfile.TemporaryDirectory() as tmp:
            base = Settings(home=Path(tmp) / "ingest")
            migrate(base.db_path)
            started = time.perf_counter()
            for i, page in enumerate(pages[:-1], start=1):
                ingest_bytes(page, f"page-{i}.json", db_path=base.db_path, fmt="openalex")
            ingest_times.append(time.perf_counter() - started)

            fetch = Settings(home=Path(tmp) / "fetch", fetch={"openalex_pace": 0})
            migrate(fetch.db_path)
            server = Replay(openalex=pages)
            try:
                started = time.perf_counter()
                result = run(fetch, openalex.plan(fetch, base_url=server.url))
                fetch_times.append(time.perf_counter() - started)
            finally:
                server.close()
    ingest_s, fetch_s = min(ingest_times), min(fetch_times)
    assert result.state["counts"]["inserted"] == n, result.state["counts"]
    ratio = fetch_s / ingest_s
    print(f"{n} works in {args.pages} pages of {args.per_page}")
    print(f"baseline  ingest pages as files: {ingest_s:7.2f} s ({ingest_s / args.pages * 1000:6.1f} ms/page)")
    print(f"fetch     loopback walk:         {fetch_s:7.2f} s ({fetch_s / args.pages * 1000:6.1f} ms/page, "
          f"{len(pages)} requests)")
    print(f"ratio fetch/ingest: {ratio:.2f}x; local cost of a 27,589-work walk: "
          f"{fetch_s / n * 27_589:.0f} s (+ the API's response time and the pace)")
    print(json.dumps({"works": n, "pages": args.pages, "ingest_s": round(ingest_s, 3), "fetch_s": round(fetch_s, 3),
                      "ratio": round(ratio, 3)}))


if __name__ == "__main__":
    main()
