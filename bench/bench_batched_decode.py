"""Would two candidates generated side by side cost little more than one?  (Issue #37: two
candidates by default "at today's price".)

With the prompt in llama.cpp's cache, a second candidate costs its own decoding.  On a GPU, or a
CPU whose decoding waits on memory, decoding K sequences in one batch reads the weights once per
step for all K, so K candidates cost little more than one; llama-cpp-python's server cannot do
that (one sequence at a time), llama.cpp's ``llama-server`` with slots could.  This measures it
on this machine, in this process, with llama.cpp's own batch API: a prompt of the loop's size
(the system text and a data file's context) read once into sequence 0, copied to the others,
then ``--steps`` greedy steps for 1, 2 and 3 sequences at once.  It prints ms per step and the
ratio to one sequence: near 1 means a batch makes candidates cheap here, near K that it does not.

    python bench/bench_batched_decode.py [--steps 64] [--rows 60]
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

import numpy as np

from jupyter_ai_ci.core.prompts import SYSTEM
from jupyter_ai_ci.model import local
from jupyter_ai_ci.model.llama_server import LocalServer

WIDTHS = (1, 2, 3)


def prompt_text(rows: int) -> str:
    regions = ("north", "south", "east")
    lines = "\n".join(f"    {i}  {regions[i % 3]}  {i * 7 % 50}  {i * 1.25:.2f}" for i in range(rows))
    return (f"{SYSTEM}\n## Notebook context (live kernel state)\n### Data files in the working directory\n"
            f"orders.csv ({rows} rows)\n  columns: region: str, units: int64, price: float64\n  first rows:\n"
            f"{lines}\n## Request\nWhich region had the largest total of units * price? Print its name.\n")


class Batch:
    """One llama.cpp context, sequences sharing one prompt, greedy decoding in batches."""

    def __init__(self, llama: Any, path: str, tokens: int) -> None:
        self.L = llama
        llama.llama_backend_init()
        self.model = llama.llama_model_load_from_file(path.encode(), llama.llama_model_default_params())
        params = llama.llama_context_default_params()
        # Each sequence has its own n_ctx / n_seq_max of the cache (llama.cpp's default, not unified).
        params.n_ctx, params.n_seq_max = (tokens + 512) * max(WIDTHS), max(WIDTHS)
        params.n_batch = params.n_ubatch = 512
        params.n_threads = params.n_threads_batch = LocalServer.threads  # as the server is started
        self.ctx = llama.llama_init_from_model(self.model, params)
        self.vocab = llama.llama_model_get_vocab(self.model)
        self.n_vocab = llama.llama_vocab_n_tokens(self.vocab)  # once: argmax runs in the timed steps
        self.memory = llama.llama_get_memory(self.ctx)
        self.batch = llama.llama_batch_init(512, 0, max(WIDTHS))
        self.prompt_last = 0

    def tokenize(self, text: str) -> list[int]:
        data = text.encode()
        out = (self.L.llama_token * (len(data) + 16))()
        n = self.L.llama_tokenize(self.vocab, data, len(data), out, len(out), True, True)
        return list(out[:n])

    def decode(self, items: list[tuple[int, int, int]]) -> None:
        """``items``: (token, position, sequence); logits for the last of each sequence."""
        b = self.batch
        b.n_tokens = len(items)
        last = {seq: i for i, (_, _, seq) in enumerate(items)}
        for i, (token, pos, seq) in enumerate(items):
            b.token[i], b.pos[i], b.n_seq_id[i], b.logits[i] = token, pos, 1, last[seq] == i
            b.seq_id[i][0] = seq
        if self.L.llama_decode(self.ctx, b) != 0:
            sys.exit("llama_decode failed (context too small?)")

    def argmax(self, i: int) -> int:
        logits = np.ctypeslib.as_array(self.L.llama_get_logits_ith(self.ctx, i), shape=(self.n_vocab,))
        return int(logits.argmax())

    def read(self, prompt: list[int]) -> float:
        self.L.llama_memory_clear(self.memory, True)
        self.prompt_last = prompt[-1]
        start = time.perf_counter()
        for at in range(0, len(prompt), 512):
            self.decode([(t, at + i, 0) for i, t in enumerate(prompt[at:at + 512])])
        return time.perf_counter() - start

    def generate(self, width: int, at: int, steps: int) -> tuple[float, list[list[int]]]:
        """``steps`` greedy steps for ``width`` sequences at once: the seconds they took, and each
        sequence's tokens (all the same, greedy from one prompt, if the prompt was copied)."""
        for seq in range(1, width):
            self.L.llama_memory_seq_cp(self.memory, 0, seq, -1, -1)
        last = [self.argmax(-1)] * width
        tokens: list[list[int]] = [[] for _ in range(width)]
        start = time.perf_counter()
        for k in range(steps):
            self.decode([(last[s], at + k, s) for s in range(width)])
            last = [self.argmax(s) for s in range(width)]
            for s in range(width):
                tokens[s].append(last[s])
        seconds = time.perf_counter() - start
        # Back to the prompt alone, in sequence 0, with its last logits: the next width starts there.
        for seq in range(1, width):
            self.L.llama_memory_seq_rm(self.memory, seq, -1, -1)
        self.L.llama_memory_seq_rm(self.memory, 0, at - 1, -1)
        self.decode([(self.prompt_last, at - 1, 0)])
        return seconds, tokens


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=64, help="tokens generated per sequence")
    parser.add_argument("--rows", type=int, default=60, help="rows of the data file shown in the prompt")
    args = parser.parse_args(argv)
    try:
        import llama_cpp
    except ImportError:
        sys.exit("needs pip install 'jupyter-ai-ci[local]'")
    path = local.bundled_model()
    if path is None:
        sys.exit("the [local] extra's model is not installed")
    path = local.materialize(path)
    text = prompt_text(args.rows)
    batch = Batch(llama_cpp, str(path), len(text) // 2 + args.steps)  # a bound for the context
    prompt = batch.tokenize(text)
    print(f"prompt: {len(prompt)} tokens, read in {batch.read(prompt):.1f} s; {args.steps} steps per sequence")
    print(f"{'sequences':>9} {'ms/step':>8} {'tokens/s':>9} {'× one':>6}  same tokens as one")
    one, alone = 0.0, list[int]()
    for width in WIDTHS:  # each from the same cache: the prompt, read once
        seconds, tokens = batch.generate(width, len(prompt), args.steps)
        one, alone = one or seconds, alone or tokens[0]
        # Greedy from the same prompt, each sequence should say what one alone said: if not, the
        # copy of the prompt or the batch is wrong (or the batch's arithmetic rounds differently).
        same = sum(t == alone for t in tokens)
        print(f"{width:>9} {seconds / args.steps * 1000:>8.0f} {width * args.steps / seconds:>9.1f} "
              f"{seconds / one:>6.2f}  {same} of {width}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
