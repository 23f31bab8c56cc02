# Sourced by scripts/test.sh and scripts/quickstart.sh: create (once) and activate the
# project's own virtual environment, so nothing is installed into the user's Python and
# nothing already installed there can make a run pass that a newcomer's would fail.
# JUPYTER_AI_CI_VENV chooses another folder.
VENV="${JUPYTER_AI_CI_VENV:-.venv}"
if [ ! -x "$VENV/bin/python" ]; then
    echo "creating the virtual environment $VENV (once)" >&2
    python3 -m venv "$VENV"
fi
# shellcheck disable=SC1091
source "$VENV/bin/activate"
