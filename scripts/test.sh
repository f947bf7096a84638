#!/usr/bin/env bash
# Set up .venv and run the test suite (tests needing ../shared/data skip cleanly without it).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if [ ! -x /usr/bin/chromium ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  # the dashboard's browser test drives Debian's Chromium; without it that one test skips
  (apt-get update -qq && apt-get install -y -qq chromium >/dev/null) || echo "chromium not installed; browser test will skip"
fi
exec .venv/bin/python -m pytest "$@"
