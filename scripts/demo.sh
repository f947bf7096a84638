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
# each generator declares what it may know (the sample's LLM cutoffs are invented); its runs default to that cutoff
$hs system set rag-generator --knowledge-cutoff 2023-12-01 --model "sample LLM trained to 2023-11"
$hs system set vanilla-generator --knowledge-cutoff 2024-06-01 --model "sample LLM trained to 2024-05"
$hs score data/ideas/rag.jsonl --system rag-generator --run own-cutoff
$hs score data/ideas/vanilla.jsonl --system vanilla-generator --run own-cutoff
$hs analyze systems --run own-cutoff --by window
# compared at one cutoff no earlier than either's knowledge: no leak, one window
$hs score data/ideas/rag.jsonl --system rag-generator --run demo --cutoff 2024-06-01
$hs score data/ideas/vanilla.jsonl --system vanilla-generator --run demo --cutoff 2024-06-01
$hs judge import data/judge_scores.csv --run demo
$hs analyze systems --run demo
$hs analyze quadrants --run demo --judge gpt-judge --dimension overall
# does the comparison survive a shift of the split? (earlier cutoffs are flagged as leak risks)
$hs analyze cutoffs --run demo --cutoffs 2023-06-01,2023-12-01,2024-06-01 --plot "$HINDSIGHT_HOME/cutoffs.png"
if [ "${1:-}" != "--no-serve" ]; then
  # without HINDSIGHT_ADMIN_TOKEN, serve makes a one-time token and prints the dashboard's URL with it, so the
  # dashboard can draw and label
  echo "serving on 127.0.0.1:8000: open the dashboard URL printed below (API docs at /docs); Ctrl-C stops"
  exec $hs serve --host 127.0.0.1 --port 8000
fi
