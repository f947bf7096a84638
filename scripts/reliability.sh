#!/usr/bin/env bash
# The reliability suite in one command. Default: the fast subset (CI runs it in its second step, `-m server`).
#   --full   50 kills, 10 rebuilds under load, more fuzzing examples, schemathesis --checks all with 60 examples
#            per operation, 60 s of 8 parallel scoring clients (about 40 minutes on 2 cores)
#   --out D  write the figures of each test as JSON into folder D (default: reliability-report/)
# Extra arguments go to pytest, e.g. scripts/reliability.sh -k kills
set -euo pipefail
cd "$(dirname "$0")/.."
out=reliability-report
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --full) export HINDSIGHT_RELIABILITY_FULL=1 ;;
    --out) out="$2"; shift ;;
    *) args+=("$1") ;;
  esac
  shift
done
export HINDSIGHT_RELIABILITY_OUT="$out"
mkdir -p "$out"
started=$(date +%s)
status=0
.venv/bin/python -m pytest tests/reliability -q -s -p no:cacheprovider "${args[@]}" | tee "$out/pytest.log" || status=$?
echo "reliability suite: exit $status in $(( $(date +%s) - started ))s; figures in $out/" >&2
exit $status
