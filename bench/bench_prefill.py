"""Prompt tokens the local model reads anew (prefills) for a first request, a follow-up in the
same notebook, a fix after a failed attempt, and a second candidate (issue #37: the follow-up
≤ 25 % of the first's, the second candidate ≤ 10 %).

A real kernel runs ``%%ask`` with no endpoint set, so the run uses the managed local model; the
figures are the llama.cpp server's own: for each model request, the tokens its log says it
evaluated ("prompt eval time = … / N tokens"), and the prefix it kept from the request before
("N prefix-match hit").  Slow (minutes: the first prompt is read whole on the CPU).

    python bench/bench_prefill.py            # the request loads the data: the smallest notebook
    python bench/bench_prefill.py --loaded   # a notebook that loaded a 14-column table before
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import NamedTuple

from bench_real_kernel import timed

from jupyter_ai_ci.executors.local_kernel import LocalKernel
from jupyter_ai_ci.model import runtime
from jupyter_ai_ci.model.local import bundled_model

EVAL = re.compile(r"prompt eval time =\s*[\d.]+ ms /\s*(\d+) tokens")
KEPT = re.compile(r"(\d+) prefix-match hit, remaining (\d+) prompt tokens")

# Each notebook's requests, in this order (main() reads the follow-up and the second candidate by it).
LABELS = ("first request", "follow-up", "a request that may need a fix", "two candidates (the default)",
          "a question: the same, and words")


class Notebook(NamedTuple):
    csv: str  # sales.csv in the kernel's folder
    setup: str  # the cells run before the first request ("": none)
    cells: tuple[str, str, str, str, str]  # the %%ask cells, one per label


COLUMNS = ["region", "price", "units", "store", "product", "category", "discount", "returned", "date",
           "customer_age", "channel", "margin", "rating", "shipping_days"]


def table(rows: int) -> str:
    """A table of every kind of column the context describes (numbers, text, dates, flags)."""
    lines = [",".join(COLUMNS)]
    for i in range(rows):
        lines.append(",".join(map(str, [
            f"r{i % 3}", i * 1.5, i % 11, f"s{i % 7}", f"p{i % 13}", ["toys", "food", "tools"][i % 3],
            round((i % 5) * 0.05, 2), i % 4 == 0, f"2024-{i % 12 + 1:02d}-{i % 28 + 1:02d}", 18 + i % 60,
            ["web", "shop"][i % 2], round(i * 0.3 % 7, 2), i % 5 + 1, i % 9])))
    return "\n".join(lines) + "\n"


# The smallest notebook: the first request loads the data itself.
SMALLEST = Notebook(
    "region,price\n" + "".join(f"r{i % 3},{i * 1.5}\n" for i in range(40)), "",
    ("%%ask --candidates 1\nLoad sales.csv into a DataFrame df and print the mean price",
     "%%ask --candidates 1\nNow print the median price of df",
     # The column is 'price': a fix when the model takes the request's word (two calls), else one.
     "%%ask --candidates 1\nPrint the mean of df['Price']",
     # The default on the local model: two candidates for a question about data.
     "%%ask\nPrint the largest price in df",
     # A question: two candidates and the answer in words (asked before the check, from the cache).
     "%%ask\nWhat is the smallest price in df?"))
# --loaded: the notebook a data question usually comes from. Its cells loaded a table of 14
# columns and derived two names before the first request, so the context describes them in full
# (the DABench prompts are about 1.8k tokens); the requests ask of that table.
LOADED = Notebook(
    table(200),
    "import pandas as pd\nimport numpy as np\nsales = pd.read_csv('sales.csv')\n"
    "by_region = sales.groupby('region')['price'].mean()\nbig = sales[sales['units'] > 5]",
    ("%%ask --candidates 1\nPrint the mean price per region of sales",
     "%%ask --candidates 1\nNow print the median price of sales",
     "%%ask --candidates 1\nPrint the mean of sales['Price']",
     "%%ask\nPrint the largest price in sales",
     "%%ask\nWhat is the smallest price in sales?"))


def read_new(log: Path, offset: int) -> tuple[str, int]:
    data = log.read_bytes()
    return data[offset:].decode(errors="replace"), len(data)


def calls(text: str) -> tuple[list[int], list[int]]:
    """Per model call in the log: tokens evaluated, and tokens kept (0: no prefix line before it)."""
    evaluated: list[int] = []
    kept: list[int] = []
    pending = 0
    for line in text.splitlines():
        if found := KEPT.search(line):
            pending = int(found.group(1))
        elif found := EVAL.search(line):
            evaluated.append(int(found.group(1)))
            kept.append(pending)
            pending = 0
    return evaluated, kept


async def measure(notebook: Notebook) -> list[tuple[str, list[int], list[int], float]]:
    folder = Path(tempfile.mkdtemp(prefix="bench-prefill-"))
    (folder / "sales.csv").write_text(notebook.csv)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_") and k != "JUPYTER_AI_CI_MODEL"}
    kernel = await LocalKernel.start("python3", cwd=str(folder), env=env)
    model = bundled_model()
    if model is None:
        sys.exit("the [local] extra's model is not installed")
    rows = []
    try:
        await timed(kernel.client, "%load_ext jupyter_ai_ci\n%config AskMagics.replay = False")
        if notebook.setup:
            await timed(kernel.client, notebook.setup)
        # A model server another run left (it is shared, and kept until idle): its log so far is not ours.
        before = runtime.read(model)
        offset = Path(before.log).stat().st_size if before is not None and Path(before.log).exists() else 0
        for label, cell in zip(LABELS, notebook.cells, strict=True):
            seconds = await timed(kernel.client, cell)
            entry = runtime.read(model)
            if entry is None:
                sys.exit("no runtime file for the local model: did the request reach it?")
            text, offset = read_new(Path(entry.log), offset)
            rows.append((label, *calls(text), seconds))
    finally:
        await kernel.shutdown()
    return rows


def main() -> None:
    rows = asyncio.run(measure(LOADED if "--loaded" in sys.argv[1:] else SMALLEST))
    # The first request's whole prompt (what it read plus what a server left running already held).
    first = rows[0][1][0] + rows[0][2][0] if rows and rows[0][1] else 0
    print("request                         seconds  model calls: tokens prefilled (kept from the call before)")
    for label, evaluated, kept, seconds in rows:
        shown = ", ".join(f"{n} (kept {k})" for n, k in zip(evaluated, kept, strict=True))
        print(f"{label:32s} {seconds:6.1f}  {shown}")
    if first:
        follow = rows[1][1][0] if rows[1][1] else 0
        second = rows[3][1][1] if len(rows[3][1]) > 1 else 0
        print(f"first prompt: {first} tokens; follow-up prefill / first: {follow / first:.0%} (target ≤ 25 %); "
              f"second candidate / first: {second / first:.0%} (target ≤ 10 %)")


if __name__ == "__main__":
    main()
