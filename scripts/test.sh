#!/usr/bin/env bash
# Set up .venv and run the fast tests: unit and in-process API tests (tests needing ../shared/data skip cleanly
# without it). The tests marked `server` (real servers, CLI subprocesses, the browser, the reliability suite) are
# deselected here; run them with `./scripts/test.sh -m server` (a later -m replaces this one), as .ci/run does.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python -m pytest -m "not server" "$@"
