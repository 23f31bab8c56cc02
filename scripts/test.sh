#!/usr/bin/env bash
# Set up and run every test: the README's test command, and what CI runs.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install -q --disable-pip-version-check -e ".[test]"
python -m pytest "$@"
