#!/usr/bin/env bash
# The main job on the bundled sample: ingest data/, build the index if needed, score two sample systems,
# import their LLM-judge scores, then serve the API and dashboard on 127.0.0.1:8000 (--no-serve: stop after
# printing the tables).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export HINDSIGHT_HOME=${HINDSIGHT_HOME:-var}
hs=.venv/bin/hindsight
$hs ingest data/papers.jsonl
if ! $hs index status --json | .venv/bin/python -c 'import json,sys; sys.exit(0 if json.load(sys.stdin)["manifest"] else 1)'; then
  $hs index build
fi
$hs score data/ideas/rag.jsonl --system rag-generator --run demo
$hs score data/ideas/vanilla.jsonl --system vanilla-generator --run demo
$hs judge import data/judge_scores.csv
$hs analyze systems
$hs analyze quadrants --judge gpt-judge --dimension overall
if [ "${1:-}" != "--no-serve" ]; then
  echo "serving on http://127.0.0.1:8000 (dashboard at /, API docs at /docs); Ctrl-C stops"
  exec $hs serve --host 127.0.0.1 --port 8000
fi
