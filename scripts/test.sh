#!/usr/bin/env bash
# Set up and run every test: the README's test command, and what CI runs.
# `--oldest`: the fast tests again at the oldest supported versions (requirements/oldest.txt).
# Everything is installed into the project's own .venv (scripts/venv.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

# Builds the labextension too (node 20 + jlpm), and installs it with the
# server extension's config into this environment.
if [ "${1:-}" = "--oldest" ]; then
    # The oldest supported versions (requirements/oldest.txt), in their own environment:
    # type-check against their APIs and run the unit and kernel tests. Kernel Gateway and the
    # local model are extras above those floors; the newest run covers them and the browsers.
    shift
    export JUPYTER_AI_CI_VENV="${JUPYTER_AI_CI_VENV:-.venv-oldest}"
    # No browser runs here: when the newest run has built the labextension, do not build it
    # again (a yarn install and a webpack build, 1-2 minutes of CI).
    if [ -f jupyter_ai_ci/labextension/static/style.js ]; then
        export SKIP_JUPYTER_BUILDER=1
    fi
    source scripts/venv.sh
    python -m pip install -q --disable-pip-version-check -c requirements/dev-constraints.txt \
        -c requirements/oldest.txt -e ".[test]"
    python -m pip list 2>/dev/null | grep -iE '^(ipython|ipykernel|jupyter_client|jupyterlab|notebook|openai|traitlets) '
    # traitlets 5.9 ships no type hints: its calls are untyped there, which is not our bug.
    python -m mypy --allow-untyped-calls --allow-untyped-decorators
    # Also left to the newest run: the benchmarks' own tests and the MCP server over stdio (code of
    # ours that reaches the kernel through the command line's executor, which test_cli.py covers here),
    # and the scenarios that repeat one behaviour through every driver or every way of hiding a call
    # (conformance, the policy's scans, planted replay records): they test our logic, which the
    # versions do not change, and each driver's own tests still run here (8-9 of 21 minutes).
    # The command line's own tests too (test_cli.py: arguments, batches, exit codes, signals; 200 of
    # the 1,000 seconds left, 29 Nov): its kernel (test_local_kernel.py), Run All (test_run_all_once.py)
    # and files (test_auto_import_cli.py) still run here, at the floors.
    exec python -m pytest tests/unit tests/integration --ignore tests/integration/test_gateway.py \
        --ignore tests/integration/test_cli.py \
        --ignore tests/integration/test_local_model.py --ignore tests/integration/test_context_scale.py \
        --ignore tests/integration/test_success_bench.py --ignore tests/integration/test_dabench_bench.py \
        --ignore tests/integration/mcp --ignore tests/integration/drivers/test_conformance.py \
        --ignore tests/integration/drivers/test_hidden_calls.py --ignore tests/integration/drivers/test_planted_replay.py \
        --ignore tests/integration/test_cli_safety.py --ignore tests/integration/test_scan_hidden_calls_shell.py \
        --ignore tests/integration/test_scan_escapes_shell.py "$@"
fi
# Browser tests drive the system Chromium through Playwright; Playwright's own
# browser downloads are blocked here and never needed. Not for --oldest, which runs no
# browser: .ci/run starts both at once, and the second apt-get found the lock held.
if [ ! -x /usr/bin/chromium ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        apt-get update -qq && apt-get install -y -qq chromium >/dev/null
    else
        echo "scripts/test.sh: /usr/bin/chromium is missing; browser tests will be skipped" >&2
    fi
fi
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1
source scripts/venv.sh
# test-jupyter-server-mcp: Jupyter AI 3's MCP server, which registers our tools (~25 packages, ~40 MB).
python -m pip install -q --disable-pip-version-check -c requirements/dev-constraints.txt \
    -e ".[test,test-gateway,test-jupyter-server-mcp,local]"
rebuild_native_llama  # the real-model tests need a llama.cpp that runs here (scripts/venv.sh)
python -m ruff check jupyter_ai_ci tests bench
python -m mypy
# The layers contract and no import cycles (pyproject.toml [tool.importlinter]).
lint-imports
# Two workers (pytest-xdist): the tests mostly wait on kernels, servers and pages, so two at once
# take about half the wall time on 2 cores. tests/conftest.py keeps each file in one worker, and the
# browser tests, and those of the real local model, one at a time. JUPYTER_AI_CI_TEST_WORKERS=0
# runs them in this process, one by one (for --pdb, or to read a test's output live).
python -m pytest -n "${JUPYTER_AI_CI_TEST_WORKERS:-2}" --dist loadfile "$@"
