#!/usr/bin/env bash
# Set up and run every test: the README's test command, and what CI runs.
# Everything is installed into the project's own .venv (scripts/venv.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

# Browser tests drive the system Chromium through Playwright; Playwright's own
# browser downloads are blocked here and never needed.
if [ ! -x /usr/bin/chromium ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        apt-get update -qq && apt-get install -y -qq chromium >/dev/null
    else
        echo "scripts/test.sh: /usr/bin/chromium is missing; browser tests will be skipped" >&2
    fi
fi
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1

# The [local] extra compiles llama.cpp once (~4 min; pip caches the wheel):
# the real-model smoke test needs it. LLAVA is not needed and doubles the build.
export CMAKE_ARGS="${CMAKE_ARGS:--DLLAVA_BUILD=OFF}"
# Builds the labextension too (node 20 + jlpm), and installs it with the
# server extension's config into this environment.
source scripts/venv.sh
python -m pip install -q --disable-pip-version-check -c requirements/dev-constraints.txt -e ".[test,local]"
python -m ruff check jupyter_ai_ci tests bench
python -m mypy
# The layers contract and no import cycles (pyproject.toml [tool.importlinter]).
lint-imports
python -m pytest "$@"
