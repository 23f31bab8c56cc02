"""When two candidates computed the same result: what each showed, normalised.

A candidate's result is what a user would read as its answer: the value of its
last expression when it has one (a print beside it is commentary), else what it
printed, else the value of the last variable it set (``answer = …``, described
in the kernel before the rollback: ``Inspect``).  The same answer computed two
ways must compare equal, so the text is reduced to its numbers, sorted (dict order,
a Series against a dict), with pandas' own labels (``dtype: int64``, ``Name: …``,
``[5 rows x 3 columns]``) left out; two numbers are the same when the one
written with fewer decimals is the other rounded (``34.65`` and ``34.6543``,
``76`` and ``76.0``; not ``1000`` and ``1004``).  A result with no number
compares by its last line's last value, case and quotes left out (``'Male'`` is
``male``).  Nothing shown (a figure, no output): ``None``, nothing to compare.

Beside its numbers, a result's fields in the form a request may ask for, ``@name[value]``
(core/answer.py), compare by their words: ``@relationship[none]`` is not
``@relationship[nonlinear]`` though every number of the two is the same (DABench question 429:
two candidates "agreed" on a wrong answer).  Case, spaces, punctuation and the order of a
list's items do not count (``non-linear`` is ``Nonlinear``, ``Age, Fare`` is ``Fare, Age``), nor
a field only one of the two shows; a word with a digit in it is a word (``col2`` is not
``col3``).  A result of fields with no number compares by them all and by its last other line.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from jupyter_ai_ci.core.answer import fields_in
from jupyter_ai_ci.core.grounding import numbers_in, without_numbers
from jupyter_ai_ci.events import ExecutionResult, FailureNotes

SHOWN_CHARS = 60  # of the one line that stands for a result in the status and the notices
# pandas' and the kernel description's own words, not the result: dtypes, lengths, shapes.
_LABELS = re.compile(r"(?m)(?:^|,\s*)(?:Name: [^\n,]*|dtype: \w+|Length: \d+|Freq: \w+)\s*$"
                     r"|^\[\d+ rows x \d+ columns\]$|\b(?:dtype|shape|len)=\S+")
_SET_MARK = "   (set by the failed code)"  # context/failure.py marks the names the code set with it
# NumPy 2's scalar repr: ``np.int64(3)`` is 3, ``np.str_('male')`` is 'male'.
_NUMPY_SCALAR = re.compile(r"\bnp\.(?:u?int|float|complex|bool|str)\w*\(([^()]*)\)")
_NAN = re.compile(r"(?<!\w)(?:nan|NaN|<NA>|NaT|None)(?!\w)")


def shown(results: Sequence[ExecutionResult]) -> str:
    """What the candidate showed as its result: its last value, else its printed output."""
    values = [r.result for r in results if r.result and r.result.strip()]
    text = values[-1] if values else "\n".join(r.output for r in results if r.output.strip())
    return _NUMPY_SCALAR.sub(r"\1", text)


def from_notes(notes: FailureNotes | None) -> str:
    """The value of the last variable the code set, as the kernel described it ("" for none)."""
    set_here = [v for v in (notes.variables if notes else ()) if _SET_MARK in v.partition("\n")[0]]
    if not set_here:
        return ""
    first, _, rest = set_here[-1].replace(_SET_MARK, "").partition("\n")
    name, _, value = first.partition(":")  # "answer: int = 76": the name is not the result
    value = value.split("=", 1)[1] if "=" in value.split("{")[0].split("[")[0] else value
    return (value.strip() + ("\n" + rest if rest else "")).strip() if name else first


# A result for comparison: its numbers (value, decimals written) sorted, with how many NaN and the
# words of its fields; or its last word(s); None for nothing to compare.
Numbers = tuple[tuple[float, int], ...]
Fields = tuple[tuple[str, str], ...]
Key = tuple[Numbers, int, Fields] | str | None


def key(text: str) -> Key:
    """The result normalised for comparison; None when it shows nothing to compare."""
    body = _LABELS.sub("", text)
    numbers = tuple(sorted(numbers_in(body)))
    written = fields_in(body)
    # A field's None or nan is in its words (any case), not counted twice here.
    nans = len(_NAN.findall(body)) - sum(len(_NAN.findall(value)) for _, value in written)
    fields = _field_words(written)
    lines = [line.strip() for line in body.splitlines() if line.strip()]
    rest = [line for line in lines if not fields_in(line)]
    if fields and not (numbers or nans) and rest:  # fields and words: the words' last line counts too
        fields += (("", _last_words(rest[-1])),)
    if numbers or nans or fields:
        return numbers, nans, fields
    return _last_words(lines[-1]) or None if lines else None


def same(a: Key, b: Key) -> bool:
    """Whether two results are the same answer (never for nothing to compare)."""
    if a is None or b is None or isinstance(a, str) or isinstance(b, str):
        return a is not None and a == b
    (xs, nan_a, fields_a), (ys, nan_b, fields_b) = a, b
    if nan_a != nan_b or len(xs) != len(ys) or not all(_close(x, y) for x, y in zip(xs, ys, strict=True)):
        return False
    words_b = dict(fields_b)
    common = [name for name, _ in fields_a if name in words_b]
    if not (xs or nan_a or common):  # fields only, none of them in both: nothing compared
        return False
    return all(words_b[name] == words for name, words in fields_a if name in words_b)


def _last_words(line: str) -> str:
    """A line's last value (after its last colon), case and quotes left out."""
    last = line.rsplit(":", 1)[-1] if not line.endswith(":") else line
    return re.sub(r"[\s'\"`.,;!()\[\]{}]+", " ", last).strip().lower()


def _field_words(written: Sequence[tuple[str, str]]) -> Fields:
    """Each field's words, its numbers left out (they are compared above), by name: the items of a
    list in any order, case, spaces and punctuation aside; a field shown twice counts as its last
    line (an earlier print may be a step on the way)."""
    found: dict[str, str] = {}
    for name, value in written:
        items = (re.sub(r"[\W_]+", "", item).lower() for item in re.split(r"[,;/|]", without_numbers(value)))
        found[name.lower()] = " ".join(sorted(filter(None, items)))
    return tuple(sorted((name, words) for name, words in found.items() if words))


def _close(x: tuple[float, int], y: tuple[float, int]) -> bool:
    """The one written with fewer decimals is the other rounded to them (half a unit either way)."""
    (a, da), (b, db) = x, y
    unit = 0.5 * 10.0 ** -min(da, db, 12)
    return abs(a - b) <= unit * (1 + 1e-9) + 1e-9 * max(abs(a), abs(b))


def brief(text: str) -> str:
    """The result in one short line: the last non-empty line, cut."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    line = lines[-1] if len(lines) == 1 else " / ".join(lines[-2:]) if len(lines) <= 3 else \
        f"{lines[0]} … {lines[-1]}"
    return line if len(line) <= SHOWN_CHARS else line[:SHOWN_CHARS - 1] + "…"
