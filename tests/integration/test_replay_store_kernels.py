"""Two real kernels in one folder run their ``%%ask`` cells at the same time (two notebooks'
Run All), and every record is kept: run again with the model unreachable, both replay every
request (issue 30; before, 55 of 160 were left)."""

from __future__ import annotations

import json
import tempfile
import threading
from pathlib import Path
from typing import Any

from jupyter_ai_ci.testing import ScriptedOpenAIServer

from .kernel_helpers import run_cell, start_kernel

N = 12  # requests per kernel


def cell(name: str) -> str:
    # One execution per kernel holding every request, so the two kernels' puts interleave.
    return (f"for i in range({N}):\n"
            f"    get_ipython().run_cell_magic('ask', '--no-answer', f'set {name}{{i}} to {{i}}')\n")


def run_both(folder: Path, base_url: str) -> list[Any]:
    kernels = [start_kernel({"OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "",
                             "JUPYTER_AI_CI_MODEL": "scripted-model"}, cwd=str(folder)) for _ in range(2)]
    results: list[Any] = [None, None]
    try:
        for _, kc in kernels:
            assert run_cell(kc, "%load_ext jupyter_ai_ci").status == "ok"

        def go(n: int) -> None:
            results[n] = run_cell(kernels[n][1], cell("ab"[n]), timeout=300)

        threads = [threading.Thread(target=go, args=(n,)) for n in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        for km, kc in kernels:
            kc.stop_channels()
            km.shutdown_kernel(now=True)
    return results


def test_two_kernels_in_one_folder_keep_every_record(model_server: ScriptedOpenAIServer) -> None:
    # Any reply fits any request here: the two kernels take them in whatever order they ask.
    model_server.script(*["```python\nv = 1\n```"] * (2 * N))
    with tempfile.TemporaryDirectory(prefix="aici-two-kernels-") as d:
        folder = Path(d)
        first = run_both(folder, model_server.base_url)
        for r in first:
            assert r.status == "ok", r.stderr + r.stdout
        assert len(model_server.requests) == 2 * N
        files = sorted((folder / ".jupyter-ai-ci-replay").glob("*.json"))
        assert len(files) == 2 * N
        requests = sorted(json.loads(p.read_text())["request"] for p in files)
        assert requests == sorted(f"set {k}{i} to {i}" for k in "ab" for i in range(N))
        # Again in fresh kernels, with nothing listening where the model was.
        again = run_both(folder, "http://127.0.0.1:9/v1")
        for r in again:
            assert r.status == "ok", r.stderr + r.stdout
            assert r.shown.count("replayed — generated") == N, r.shown
        assert len(model_server.requests) == 2 * N


def test_planted_names_at_a_requests_record_neither_hang_nor_exhaust_a_real_kernel(
        model_server: ScriptedOpenAIServer) -> None:
    # Issue 38, item 2: a link to /dev/zero at the record's path was read without end (MemoryError
    # under a 1.5 GB limit), a named pipe there kept the kernel busy for good.  Every cell has a
    # deadline, so a regression fails here (and the kernel is shut down) instead of hanging.
    import os

    from .kernel_helpers import ask_kernel

    model_server.script(*["```python\ntotal = 40 + 2\n```"] * 3)
    with ask_kernel(model_server.base_url) as kc:
        cwd = Path(run_cell(kc, "import os; print(os.getcwd(), end='')").stdout)
        assert run_cell(kc, "%%ask --no-answer\nset total").status == "ok"
        [record] = (cwd / ".jupyter-ai-ci-replay").glob("*.json")
        # Reading /dev/zero fails at this limit; everything the run needs is imported already.
        limit = ("import resource\nvm = int([l.split()[1] for l in open('/proc/self/status') "
                 "if l.startswith('VmSize:')][0]) * 1024\n"
                 "resource.setrlimit(resource.RLIMIT_AS, (vm + (1536 << 20), resource.RLIM_INFINITY))\n"
                 "del total")  # the request names it: gone, so the key is the first run's again
        assert run_cell(kc, limit).status == "ok"

        record.unlink()
        record.symlink_to("/dev/zero")
        linked = run_cell(kc, "%%ask --no-answer --new\nset total", timeout=60)
        assert linked.status == "ok", linked.stderr + linked.shown
        assert f"the replay record {record.name} is a symbolic link, not a record file: it was not read" \
            in linked.shown, linked.shown
        assert len(model_server.requests) == 2 and os.readlink(f"{record}.not-read") == "/dev/zero"

        assert run_cell(kc, "del total").status == "ok"
        record.unlink()  # the record the run above kept, replaced by a pipe nobody writes
        os.mkfifo(record)
        piped = run_cell(kc, "%%ask --no-answer --new\nset total", timeout=30)
        assert piped.status == "ok", piped.stderr + piped.shown
        assert f"the replay record {record.name} is a named pipe, not a record file" in piped.shown, piped.shown
        assert len(model_server.requests) == 3
        assert run_cell(kc, "print(total)").stdout == "42\n"
