"""Is the managed local model's temperature-0 reply the same whether or not llama.cpp finds the
whole prompt in its cache?  (Issue #37: two candidates lost accuracy to the loop in one run, and
their first candidate is the loop's own request, asked second with its prompt cached.)

Each question (the system text, a 60-row data file's context, a request about it) is asked three
times through the person's shared llama.cpp server, as the run asks it: after another prompt (its
own part read anew), right after itself (the whole prompt cached), after another prompt again.
The first and third must agree with each other for the check to mean anything; the second is
the one in question.  About a minute on 2 cores.

    python bench/bench_cache_determinism.py
"""

from __future__ import annotations

import hashlib
import sys

from jupyter_ai_ci.config import AICISettings
from jupyter_ai_ci.core.prompts import SYSTEM
from jupyter_ai_ci.events import Message
from jupyter_ai_ci.model import local
from jupyter_ai_ci.model.endpoint import Endpoint

ROWS = "\n".join(f"    {i}  {['north', 'south', 'east'][i % 3]}  {i * 7 % 50}  {i * 1.25:.2f}  "
                 f"2024-0{1 + i % 9}-1{i % 9}" for i in range(60))
CONTEXT = ("## Notebook context (live kernel state)\n### Data files in the working directory\n"
           "orders.csv (4 KB, 60 rows)\n  columns: region: str, units: int64, price: float64, date: str\n"
           "  first rows:\n" + ROWS +
           "\n### Variables\nnone: no file above is loaded yet\n## Request\n")
QUESTIONS = ["What is the median units per region in orders.csv for orders dated in March or later, "
             "as a dict region -> float? Print it.",
             "Which region had the largest total of units * price in orders.csv? Print its name."]
OTHER = [Message("system", SYSTEM), Message("user", "Write a function that reverses a string, in python.")]
WAYS = ("after another prompt", "whole prompt cached", "after another prompt again")


def main() -> int:
    path = local.bundled_model()
    if path is None:
        sys.exit("the [local] extra's model is not installed")
    path = local.materialize(path, lambda text: None)
    endpoint = Endpoint.from_settings(AICISettings(), model="local")
    client = local.LocalClient(endpoint, path, lambda text: print(text.strip(), file=sys.stderr))
    differed = 0
    for question in QUESTIONS:
        messages = [Message("system", SYSTEM), Message("user", CONTEXT + question)]
        texts = []
        for way in WAYS:
            if way != "whole prompt cached":
                client.complete(OTHER)
            texts.append(client.complete(messages).text)
            print(f"{way:28} {hashlib.sha1(texts[-1].encode()).hexdigest()[:10]}  {len(texts[-1])} chars")
        cold_agree, cached_same = texts[0] == texts[2], texts[1] == texts[0]
        differed += cold_agree and not cached_same
        print(f"  read anew twice: {'same' if cold_agree else 'DIFFERENT'}; whole prompt cached: "
              f"{'same' if cached_same else 'different'}\n")
    print(f"{differed} of {len(QUESTIONS)} questions: the cached prompt's reply differs from the one read anew")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
