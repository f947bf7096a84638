#!/usr/bin/env bash
# Set up .venv and run the fast tests: unit and in-process API tests (tests needing ../shared/data skip cleanly
# without it). The tests marked `server` (real servers, CLI subprocesses, the browser, the reliability suite) are
# deselected here; run them with `./scripts/test.sh -m server -n 0` (a later -m replaces this one), as .ci/run does.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# They run in a worker process per core, up to 4 (pytest-xdist; a test file per worker, so that a module's fixtures
# are built once). A later -n replaces it: -n 0 runs them in this process, as .ci/run runs the server step.
exec .venv/bin/python -m pytest -m "not server" -n auto --maxprocesses 4 --dist loadfile "$@"
