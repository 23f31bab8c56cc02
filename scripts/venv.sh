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

# The [local] extra compiles llama.cpp (~4 min; pip caches the wheel). Built for this CPU
# (GGML_NATIVE, -march=native) it takes its AMX kernels where the CPU has AMX, and on such a
# machine (the CI's, 5 Dec) the model server died at its first request (SIGSEGV in
# ggml_backend_amx_mul_mat): the portable build (AVX2, FMA, F16C) is asked for instead.
# LLAVA (multimodal) is not needed and doubles the build.
export CMAKE_ARGS="${CMAKE_ARGS:--DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF}"

# A build made before this (an older environment, or pip's cache of built wheels, which does not
# look at CMAKE_ARGS) may still be the native one: built again, once, the portable way.
rebuild_native_llama() {
    local version
    version=$(python -c 'import llama_cpp
print(llama_cpp.__version__ if b"AMX_INT8 = 1" in llama_cpp.llama_print_system_info() else "")' 2>/dev/null) \
        || return 0
    if [ -n "$version" ]; then
        echo "building llama.cpp $version again without AMX (its native build crashes on this CPU)" >&2
        # pip's cached wheel goes first, so the next environment gets the portable build at once.
        python -m pip cache remove llama_cpp_python >/dev/null 2>&1 || true
        CMAKE_ARGS="$CMAKE_ARGS -DGGML_NATIVE=OFF" python -m pip install -q --disable-pip-version-check \
            --force-reinstall --no-deps "llama-cpp-python==$version"
    fi
}
