"""When a run ends with an answer in words, and what that answer is.

A question ("Which region has the highest revenue?") is answered by code and
its printed output, and then in words by the model, which has seen that
output: one more model call.  A request to do something ("plot revenue per
region", "drop the empty rows of df") is answered by the cells themselves, and
costs no extra call.

The rule, kept simple so a user can predict it (docs/guide.md):

- ``--no-answer`` (``answer = 'never'``): never.
- ``--answer`` (``answer = 'always'``): whenever the last step showed text
  (printed, or the value of its last expression).
- the default (``answer = 'auto'``): when the request is a question -- it ends
  with ``?`` or starts with what, which, who, when, where, why or how -- and
  the last step showed text.  A figure counts as text when it was described (its
  description is what the model reads, ``context/figures.py``); an image nothing
  describes does not, nor a picture that is no chart (said by its size only): the model could not
  answer from it -- unless it is a model that sees the picture.

The model may already have ended in prose after seeing the output (``--steps``
above 1); then that prose is the answer and nothing more is asked.

Nor is it asked when the output already states the answer in the form the request asks for:
fields to fill in, ``@name[value]`` (InfiAgent-DABench's form, and an agent's way to get values it
can parse), each one printed with a value.  The model would only say those lines again, and on a
CPU that call is seconds of reading and writing (#37: "no model call the answer does not need").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from jupyter_ai_ci.events import ExecutionResult
from jupyter_ai_ci.notebook.figuretext import NOT_A_CHART

AnswerMode = Literal["auto", "always", "never"]

# Only the wh-words: "do", "can", "is" start commands as often ("Do a groupby", "Can you
# plot ..."); a yes/no question is still one by its "?".
QUESTION_WORDS = frozenset({"what", "which", "who", "whom", "whose", "when", "where", "why", "how"})
_FIRST_WORD = re.compile(r"[A-Za-z']+")
# A field to fill in: ``@mean_fare[...]`` in the request, ``@mean_fare[34.65]`` in the output; its
# ``@`` starts a word (``a@b[0]`` is code).
_FIELD = re.compile(r"(?<![\w)\]])@(\w+)\[([^\]\n]*)\]")
# "one @name[value] for each name" (DABench's words) describes the form: no field of its own.
_THE_FORM = ("name", "value")
# A fenced block, closed by the same fence or left open at the end (a reply cut short).
_FENCED = re.compile(r"^ {0,3}(`{3,}|~{3,})[^\n]*\n.*?(?:^ {0,3}\1[`~]*[ \t]*$|\Z)", re.M | re.S)


def is_question(request: str) -> bool:
    """The request's last line ends with ``?``, or its first word asks."""
    text = request.strip()
    if not text:
        return False
    if text.splitlines()[-1].rstrip().endswith("?"):
        return True
    first = _FIRST_WORD.match(text)
    return first is not None and first.group(0).lower() in QUESTION_WORDS


def showed_text(results: Sequence[ExecutionResult], sees: bool = False) -> bool:
    """The step printed something, its last expression had a value, or it drew a figure that
    was described; a picture that is no chart counts for a model that ``sees`` it."""
    return any(r.output.strip() or (r.result is not None and r.result.strip())
               or any(sees or not f.endswith(NOT_A_CHART) for f in r.figures) for r in results)


def wants_answer(mode: AnswerMode, request: str, results: Sequence[ExecutionResult], sees: bool = False) -> bool:
    if mode == "never" or not showed_text(results, sees):
        return False
    return mode == "always" or is_question(request)


def stated(request: str, results: Sequence[ExecutionResult]) -> str:
    """The output's lines that fill in every ``@name[value]`` field the request asks for (outside
    its code blocks), in the request's order (a name printed twice: its last line); "" when the
    request has no such field, or one is not printed with a value of its own: not empty, not the
    request's placeholder or the field's name (``mean_fare_value``, ``mean_fare``: any case or
    spacing), not an f-string left unformatted (``{mean_fare:.2f}``)."""
    asked = [field for field in fields_in(_FENCED.sub("", request)) if field != _THE_FORM]
    if not asked:
        return ""
    placeholders = {_bare(value) for _, value in asked} | {_bare(name) for name, _ in asked}
    found: dict[str, str] = {}
    for r in results:
        for text in (r.output, r.result or ""):
            for line in text.splitlines():
                for name, value in fields_in(line):
                    if _bare(value) and _bare(value) not in placeholders and "{" not in value:
                        found[name] = line.strip()
    names = dict.fromkeys(name for name, _ in asked)
    if any(name not in found for name in names):
        return ""
    return "\n".join(dict.fromkeys(found[name] for name in names))


def fields_in(text: str) -> list[tuple[str, str]]:
    """Every field ``@name[value]`` written in ``text``, as (name, value), in order."""
    return _FIELD.findall(text)


def _bare(text: str) -> str:
    return re.sub(r"[\s_]+", "", text).lower()


def to_say(mode: AnswerMode, request: str, results: Sequence[ExecutionResult], sees: bool = False) -> bool:
    """An answer in words is to be asked of the model: wanted, and not stated by the output."""
    return wants_answer(mode, request, results, sees) and not stated(request, results)


def prose(reply: str) -> str:
    """The reply without its fenced code: an answer in words runs nothing."""
    return re.sub(r"\n{3,}", "\n\n", _FENCED.sub("", reply)).strip()
