#!/usr/bin/env bash
# Set up and run every test: the README's test command, and what CI runs.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install -q --disable-pip-version-check -e ".[test]"
python -m ruff check jupyter_ai_ci tests bench
python -m mypy
python -m pytest "$@"
