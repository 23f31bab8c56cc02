#!/usr/bin/env bash
# Set up and run the main job: examples/quickstart.ipynb executed end to end,
# headless, against the configured endpoint (OPENAI_API_KEY / OPENAI_BASE_URL).
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install -q --disable-pip-version-check -e ".[examples]"
python examples/run_quickstart.py
