"""The context's kept work follows the state: forms kept across requests, the secrets
found once per snapshot, the close-name search's shortcut (same answers as difflib)."""

from __future__ import annotations

import builtins
import difflib
import random

from jupyter_ai_ci.context import snapshot
from jupyter_ai_ci.context.build import CellRecord, fit_context
from jupyter_ai_ci.context.closenames import _abbreviates, _close_matches
from jupyter_ai_ci.context.closenames import close as _close
from jupyter_ai_ci.context.snapshot import Query
from jupyter_ai_ci.events import Message

KEY = "sk-" + "Q7wE9rT2yU4iO6pA8sD1fG3hJ5kL0zXc"


def test_a_changed_output_a_new_turn_and_a_new_secret_reach_the_next_context() -> None:
    cells = [CellRecord("total = load()", "41 rows", label="In [1]")]
    turns = [Message("user", "count rows"), Message("assistant", "```python\nlen(df)\n```")]
    first = fit_context("plot it", [], cells, 3000, conversation=turns)
    assert "41 rows" in first.text and [m.content for m in first.history] == [t.content for t in turns]
    # The same cell, its output changed; one more exchange; the output now holds a key.
    cells = [CellRecord("total = load()", f"42 rows, token {KEY}", label="In [1]")]
    turns += [Message("user", "now the mean"), Message("assistant", "mean is 3")]
    second = fit_context("plot it", [], cells, 3000, conversation=turns, secrets=(KEY,))
    assert "42 rows" in second.text and "41 rows" not in second.text
    assert KEY not in second.text and "now the mean" in [m.content for m in second.history]
    # A secret no pattern knows (a passphrase) is masked only when it is known: the kept
    # forms are keyed on the secrets, so knowing it, then not, gives each its own text.
    phrase = "correct horse battery staple"
    cells = [CellRecord("login()", f"connected with {phrase}", label="In [2]")]
    assert phrase in fit_context("log in", [], cells, 3000).text
    assert phrase not in fit_context("log in", [], cells, 3000, secrets=(phrase,)).text
    assert phrase in fit_context("log in", [], cells, 3000).text


def test_a_snapshot_follows_the_namespace_between_two_requests() -> None:
    # The test process's one shell (IPython's test app): a plain InteractiveShell.instance()
    # here would take the singleton, and on IPython 8 every later start_ipython() would fail.
    from IPython import get_ipython
    from IPython.testing.globalipapp import start_ipython

    start_ipython()
    shell = get_ipython()
    ns = shell.user_ns
    ns["rows"] = [1, 2, 3]
    query = Query("sum rows")
    before = snapshot.take(shell, query)
    assert "len=3" in before.context.text and not any(KEY in s for s in before.secrets)
    ns["rows"].append(4)  # in place: the same object, another value
    ns["api_token"] = KEY  # secrets created between the two requests
    ns["db_password"] = "correct horse battery staple"
    shell.run_cell(f"print('{KEY}')", store_history=True)
    after = snapshot.take(shell, query)
    assert "len=4" in after.context.text and KEY in after.secrets and ns["db_password"] in after.secrets
    assert KEY not in after.context.text + "".join(m.content for m in after.context.history)
    del ns["rows"], ns["api_token"], ns["db_password"]


def test_the_close_name_shortcut_answers_as_difflib_does() -> None:
    rng = random.Random(7)
    names = [n for n in dir(builtins)] + ["département", "dept", "line\nbreak", "revenue", "Revenue_2024"]
    letters = "abcdefghijklmnopqrstuvwxyz_0123456789éE"
    for _ in range(400):
        pool = rng.sample(names, rng.randint(0, 60))
        if rng.random() < 0.5 and pool:  # a misspelling of a real name
            base = rng.choice(pool)
            word = "".join(ch for ch in base if rng.random() > 0.2) + rng.choice(letters)
        else:
            word = "".join(rng.choice(letters) for _ in range(rng.randint(0, 12)))
        for cutoff in (0.6, 0.8):
            assert _close_matches(word, pool, cutoff) == difflib.get_close_matches(word, pool, 3, cutoff), (word, pool)


def test_a_text_found_clean_is_still_masked_for_a_secret_known_later() -> None:
    from jupyter_ai_ci.context.privacy import mask_secrets
    from jupyter_ai_ci.context.secretnames import MASK

    phrase = "correct horse battery staple"
    text = f"the password was {phrase} all along"
    assert mask_secrets(text) == text and mask_secrets(text) == text  # the second from the kept verdict
    assert mask_secrets(text, (phrase,)) == f"the password was {MASK} all along"
    keyed = f"then {KEY} leaked"
    assert KEY not in mask_secrets(keyed) and KEY not in mask_secrets(keyed)  # never kept as clean


def _reference_close(word: str, candidates: list[str]) -> list[str]:
    """``failure._close`` as it was before its shortcuts and kept pools."""
    pool = [c for c in dict.fromkeys(candidates) if c != word]
    w = word.lower()
    lower = {c.lower(): c for c in pool}
    tiers = [
        [c for c in pool if c.lower() == w],
        difflib.get_close_matches(word, pool, n=3, cutoff=0.6)
        + [lower[m] for m in difflib.get_close_matches(w, list(lower), n=3, cutoff=0.6)],
        [c for c in pool if len(w) >= 3 and len(c) >= 3 and (w in c.lower() or c.lower() in w)],
        [c for c in pool if _abbreviates(c.lower(), w) or _abbreviates(w, c.lower())],
    ]
    return next((list(dict.fromkeys(t))[:3] for t in tiers if t), [])


def test_close_names_are_the_same_with_kept_pools_as_before() -> None:
    rng = random.Random(11)
    names = [*dir(builtins), "département", "Dept", "dept", "DEPT", "line\nbreak", "revenue", "Revenue", "rev"]
    pools = [rng.sample(names, rng.randint(0, 80)) for _ in range(12)]  # each asked many times
    for _ in range(600):
        pool = rng.choice(pools)
        base = rng.choice(pool or ["x"])
        word = rng.choice([base, base.upper(), base[:4], base[1:], base + "s", "", "zq", rng.choice(names)])
        assert _close(word, pool) == _reference_close(word, pool), (word, pool)


def test_a_rebound_plain_variable_is_described_anew() -> None:
    def text(value: object, secrets: tuple[str, ...] = ()) -> str:
        return fit_context("show n", [("n", value)], [], 3000, secrets=secrets).text

    assert "n: int = 1" in text(1)
    assert "n: bool = True" in text(True)  # 1 == True: the type is part of the key
    assert "n: int = 2" in text(2) and "n: int = 1" in text(1)
    phrase = "correct horse battery staple"
    assert phrase in text(phrase) and phrase not in text(phrase, (phrase,)) and phrase in text(phrase)
    assert "-0.0" in text(-0.0) and "-0.0" not in text(0.0)  # floats are never kept: 0.0 == -0.0
