#!/usr/bin/env bash
# Set up and run every test: the README's test command, and what CI runs.
set -euo pipefail
cd "$(dirname "$0")/.."
# The [local] extra compiles llama.cpp once (~4 min; pip caches the wheel):
# the real-model smoke test needs it. LLAVA is not needed and doubles the build.
export CMAKE_ARGS="${CMAKE_ARGS:--DLLAVA_BUILD=OFF}"
python -m pip install -q --disable-pip-version-check -e ".[test,local]"
python -m ruff check jupyter_ai_ci tests bench
python -m mypy
python -m pytest "$@"
