"""The loop's own time per attempt: everything except waiting for the model
and running the code, with the scripted HTTP server answering instantly.

Runs `%%ask` in a real IPython shell with the real openai client, over
schedules "fail k times, then succeed".  Baseline in the same run: the same
code run directly with `shell.run_cell`.  Target: own time <= 20 ms/attempt.
"""

from __future__ import annotations

import os
import statistics
import time
from contextlib import redirect_stderr, redirect_stdout

from jupyter_ai_ci.testing import ScriptedOpenAIServer

REPEATS = 20


def main() -> None:
    from IPython.core.interactiveshell import InteractiveShell

    with ScriptedOpenAIServer() as server:
        os.environ["OPENAI_BASE_URL"] = server.base_url
        ip = InteractiveShell.instance()
        ip.run_line_magic("load_ext", "jupyter_ai_ci")
        magics = ip.magics_manager.registry["AskMagics"]
        ip.run_line_magic("config", "AskMagics.retries = 5")
        # Every run repeats the same request: without this, replay answers and no model is called.
        ip.run_line_magic("config", "AskMagics.replay = False")
        # Warm up: the first request imports the SDK and opens the connection.
        server.script("```python\nwarm = 1\n```")
        with open(os.devnull, "w") as null, redirect_stdout(null):
            ip.run_cell("%%ask\nwarm up")

        print(f"{'failures':>8} {'attempts':>8} {'own ms/attempt':>15} {'model ms':>9} {'exec ms':>8}")
        for k in (0, 1, 3, 5):
            own, model, execute = [], [], []
            for _ in range(REPEATS):
                replies = [f"```python\nx = undefined_{i}\n```" for i in range(k)] + ["```python\nx = 42\n```"]
                server.script(*replies)
                with open(os.devnull, "w") as null, redirect_stdout(null), redirect_stderr(null):
                    assert ip.run_cell("%%ask\nset x").success
                t = magics.last_timings
                attempts = len(magics.last_outcome.attempts)
                own.append(t.own / attempts)
                model.append(t.model / attempts)
                execute.append(t.execute / attempts)
            print(f"{k:>8} {k + 1:>8} {statistics.median(own) * 1000:>15.2f} "
                  f"{statistics.median(model) * 1000:>9.2f} {statistics.median(execute) * 1000:>8.2f}")

        baseline = []
        for _ in range(REPEATS):
            t0 = time.perf_counter()
            ip.run_cell("x = 42", store_history=False)
            baseline.append(time.perf_counter() - t0)
        print(f"baseline: the same code with shell.run_cell alone: {statistics.median(baseline) * 1000:.2f} ms")
        print("target: own time <= 20 ms per attempt")


if __name__ == "__main__":
    main()
