"""The matcher against outside expert labels: the Idea Novelty Checker benchmark (simra-shahid/idea_novelty_checker,
`data/benchmark_data/{train,test}.csv`: ideas written by an idea generator, each with the 10 papers an expert read
and the expert's verdict, "novel" or "not novel").

    .venv/bin/python bench/novelty_checker.py --data DIR [--split train|test] [--home DIR] [--json OUT]

--data: the benchmark's `data/benchmark_data` folder of a checkout (nothing of it is copied into this project).
`train` is the outside dev set; `test` is the outside check: nothing is fitted, tuned or picked on it. Neither split
is in the matcher's fit.

Every paper the experts read is ingested as prior art, dated a year before the cutoff (2024-06-01), under its
Semantic Scholar id; each idea is scored as one text (`hindsight score`, the default path with its 730-day
look-back). The forward window must hold papers to score at all: the bundled sample corpus (data/papers.jsonl),
dated a month after the cutoff, stands there; it plays no part in the figures, which read the look-back side.
An idea is called "in print" at realised level when its class is `already_published` or `recalled` (at direction
level, by `class_direction`). Printed: balanced accuracy of each call against "not novel", and the
ROC AUC of the largest look-back `p_realised` among the idea's listed candidates.
"""

import argparse
import csv
import json
import re
import sys
import tempfile
from datetime import date, timedelta
from pathlib import Path

from sklearn.metrics import balanced_accuracy_score, confusion_matrix, roc_auc_score

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from real_text import cli  # noqa: E402
CUTOFF = date(2024, 6, 1)
IN_PRINT = {"already_published", "recalled"}


def read_split(path: Path) -> tuple[list[dict], dict[str, dict]]:
    """The split's ideas ({id, text, not_novel}) and the papers its experts read, by Semantic Scholar id."""
    csv.field_size_limit(1 << 30)
    ideas, papers = [], {}
    with path.open(encoding="utf-8-sig", newline="") as f:
        for n, row in enumerate(csv.DictReader(f), start=1):
            label = (row.get("class") or "").strip().lower()
            if label not in ("novel", "not novel"):
                raise SystemExit(f"{path}: row {n}: field class is {row.get('class')!r}, not novel / not novel")
            for k in range(10):
                url, title = (row.get(f"paper{k}_url") or "").strip(), (row.get(f"paper{k}_title") or "").strip()
                if not title:
                    continue
                pid = url.rstrip("/").rsplit("/", 1)[-1] or re.sub(r"\W+", "-", title.lower())[:60]
                papers[pid] = {"id": pid, "title": title, "abstract": (row.get(f"paper{k}_abstract") or "").strip(),
                               "publication_date": (CUTOFF - timedelta(days=365)).isoformat(), "venue": None,
                               "citation_count": None}
            # the file marks key phrases with Markdown bold; the idea's words are the rest
            ideas.append({"id": f"{path.stem}-{n}", "text": row["idea"].replace("**", "").strip(),
                          "not_novel": label == "not novel"})
    return ideas, papers


def figures(ideas: list[dict], answer: dict) -> dict:
    by_id = {r["id"]: r for r in answer["ideas"]}
    truth, called_r, called_d, best = [], [], [], []
    for idea in ideas:
        art = by_id[idea["id"]].get("prior_art") or {}
        truth.append(idea["not_novel"])
        called_r.append(art.get("class_realised") in IN_PRINT)
        called_d.append(art.get("class_direction") in IN_PRINT)
        best.append(max((m.get("p_realised") or 0.0 for m in art.get("matches", [])), default=0.0))

    def call(called: list[bool]) -> dict:
        tn, fp, fn, tp = (int(v) for v in confusion_matrix(truth, called, labels=[False, True]).ravel())
        return {"balanced_accuracy": round(float(balanced_accuracy_score(truth, called)), 3),
                "not_novel_caught": f"{tp} of {tp + fn}", "novel_flagged": f"{fp} of {fp + tn}"}

    return {"ideas": len(ideas), "not_novel": sum(truth), "realised": call(called_r), "direction": call(called_d),
            "auc_best_lookback_p_realised": round(float(roc_auc_score(truth, best)), 3),
            "largest_p_realised": round(max(best), 3)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--split", choices=("train", "test"), default="train")
    ap.add_argument("--home", type=Path)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    ideas, papers = read_split(args.data / f"{args.split}.csv")
    home = args.home or Path(tempfile.mkdtemp(prefix="hindsight-novelty-checker-"))
    home.mkdir(parents=True, exist_ok=True)
    later = (CUTOFF + timedelta(days=30)).isoformat()
    sample = [json.loads(line) | {"publication_date": later}
              for line in (ROOT / "data/papers.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
    (home / "papers.jsonl").write_text("".join(json.dumps(p) + "\n" for p in [*papers.values(), *sample]))
    (home / "ideas.jsonl").write_text("".join(json.dumps({"id": i["id"], "text": i["text"]}) + "\n" for i in ideas))
    cli(home, "ingest", str(home / "papers.jsonl"))
    cli(home, "index", "build", "--cutoff", (CUTOFF - timedelta(days=730)).isoformat())
    answer = json.loads(cli(home, "score", str(home / "ideas.jsonl"), "--system", "novelty-checker",
                            "--run", args.split, "--cutoff", CUTOFF.isoformat(), "--json"))
    report = {"split": args.split, "papers": len(papers), "matcher": answer.get("matcher_version"),
              "revision": answer.get("revision"), **figures(ideas, answer)}
    text = json.dumps(report, indent=2)
    if args.json:
        args.json.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
