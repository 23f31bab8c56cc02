"""Small pure text helpers: fenced code extraction, ANSI stripping, head+tail cuts."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

# A fence opens with ``` or ~~~ (3 or more) and an optional info string; it is
# closed by the same character repeated at least as many times (CommonMark).
_FENCE_OPEN = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^\n`]*)$")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")

PYTHON_NAMES = frozenset({"python", "py", "python3", "ipython", "ipython3", "jupyter"})


@dataclass(frozen=True)
class CodeBlock:
    language: str  # lower-cased first word of the info string, "" when absent
    code: str

    @property
    def is_python(self) -> bool:
        return self.language in PYTHON_NAMES


def _fences(lines: Sequence[str]) -> Iterator[tuple[str, int, int, int]]:
    """Each fenced block of ``lines``: its language, the opening fence's indent, and the range of
    its body's lines (an unterminated final fence runs to the end)."""
    i = 0
    while i < len(lines):
        m = _FENCE_OPEN.match(lines[i])
        if not m:
            i += 1
            continue
        fence = m.group("fence")
        info = m.group("info").strip()
        language = info.split()[0].lower().lstrip("{.").rstrip("}") if info else ""
        start = i = i + 1
        while i < len(lines):
            stripped = lines[i].lstrip(" ")
            if (
                len(lines[i]) - len(stripped) <= 3
                and stripped.startswith(fence[0] * len(fence))
                and stripped.rstrip() == fence[0] * len(stripped.rstrip())
            ):
                break
            i += 1
        yield language, len(m.group("indent")), start, i
        i += 1


def extract_code_blocks(text: str) -> list[CodeBlock]:
    """Return the fenced code blocks of a Markdown reply, in order.

    An unterminated final fence still counts (a reply cut off by max tokens
    should not lose its code; the syntax check catches a real truncation).
    """
    lines = text.splitlines()
    # CommonMark: each body line loses up to the opening fence's indentation.
    return [CodeBlock(language, "\n".join(line[min(indent, len(line) - len(line.lstrip(" "))):]
                                          for line in lines[start:end]))
            for language, indent, start, end in _fences(lines)]


def fenced_lines(text: str) -> set[int]:
    """The numbers of ``text.split("\\n")``'s lines that are inside a fenced block's body."""
    return {n for _, _, start, end in _fences(text.split("\n")) for n in range(start, end)}


def python_blocks(text: str) -> list[str]:
    """The code of the reply's python blocks, in order.

    Tagged blocks (```python) are what the model asked to run.  Models also
    use untagged fences -- for the output they expect ("Output: ``` 155.0 ```")
    far more often than for code -- so untagged blocks run only when the reply
    has no tagged block and they parse as Python.
    """
    blocks = [b for b in extract_code_blocks(text) if b.code.strip()]
    tagged = [b.code for b in blocks if b.is_python]
    if tagged:
        return tagged
    return [b.code for b in blocks if b.language == "" and _parses(b.code)]


def _parses(code: str) -> bool:
    try:
        ast.parse(code)
    except (SyntaxError, ValueError):
        return False
    return True


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


def clean(text: str) -> str:
    """Text fit to send as JSON: no ANSI sequences, and bytes that were not
    UTF-8 (lone surrogates, as ``surrogateescape`` leaves them) shown as
    ``\\xff`` escapes instead of failing the request with UnicodeEncodeError."""
    text = strip_ansi(text)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        try:
            text = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        except UnicodeEncodeError:
            text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def human_size(n: int) -> str:
    """``900 B``, ``4.6 KB``, ``1.2 GB``: a file's or an object's size, read at a glance."""
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


_NEAR = 40
_CUT_MARK = re.compile(r"\n… (\d{1,15}) characters cut …\n")


def cut_size(middle: str) -> int:
    """How many characters of the original text ``middle`` stands for: a cut made earlier (the
    panel cuts each cell before sending it, the kernel's capture cuts a huge output) left a
    marker in it, so cutting again must not report only what was left of the text."""
    n = len(middle)
    for mark in _CUT_MARK.finditer(middle):
        n += int(mark.group(1)) - len(mark.group(0))
    return n


def head_tail(text: str, limit: int) -> str:
    """Keep the head and tail of ``text`` within ``limit`` characters.

    The cut is marked with how much was removed, so the model knows output
    is missing rather than absent.
    """
    if limit <= 0 or len(text) <= limit:
        return text
    marker_room = 60
    keep = max(limit - marker_room, 2)
    head = keep * 2 // 3
    tail = keep - head
    head, end = _around_marks(text, head, len(text) - tail)
    return f"{text[:head]}\n… {cut_size(text[head:end])} characters cut …\n{text[end:]}"


def _around_marks(text: str, head: int, end: int) -> tuple[int, int]:
    """Move the cut's ends off an earlier cut's marker, so none is kept in half ("… 8590 ch"); one
    within ``_NEAR`` characters of this cut joins it: one marker, one count, not two in a row."""
    for mark in _CUT_MARK.finditer(text, max(head - _NEAR - 50, 0), head + 50):
        if mark.start() < head <= mark.end() + _NEAR:
            head = mark.start()
    for mark in _CUT_MARK.finditer(text, max(end - 50, 0), end + _NEAR + 50):
        if mark.start() - _NEAR <= end < mark.end():
            end = mark.end()
    return head, max(end, head)
