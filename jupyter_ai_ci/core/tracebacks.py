"""A traceback as a fix needs it: the user's frames and the final exception.

A ``KeyError`` from ``df.groupby('department')`` is 60 lines of pandas
internals around two lines that matter: the cell's failing line and
``KeyError: 'department'``.  A small model reads the internals as something
to fix.  ``fold`` keeps every frame of the user's code (``Cell In[3]``,
``<ipython-input-…>``, files outside installed packages) and the exception
lines, and folds each run of library frames into one line that names the
package and the functions it went through.  An exception chained from one
raised inside a library keeps one line of it.  Text it cannot read as a
traceback comes back unchanged.
"""

from __future__ import annotations

import re

# IPython: "File ~/…/frame.py:4102, in DataFrame.__getitem__(self, key)", "Cell In[3], line 2",
# "Input In [3], in <cell line: 2>()", "<ipython-input-3-…> in <module>"; plain Python: '  File "x", line 3, in f'.
_FRAME = re.compile(r"^(?:File \S|Cell In\[|Input In \[|<ipython-input-|  File \")")
_USER = re.compile(r"^(?:Cell In\[|Input In \[|<ipython-input-|  File \"<(?:ipython-input|stdin|string))"
                   r"|/ipykernel_\d+/")
_LIBRARY_PATH = re.compile(r"[/\\](?:site-packages|dist-packages)[/\\]|[/\\]lib[/\\]python3[.\d]*[/\\]"
                           r"|^File [\w.]+\.(?:pyx|pxi|pxd):|<frozen |\.pyx\b|\.pxi\b")
_PACKAGE = re.compile(r"(?:site-packages|dist-packages)[/\\]([A-Za-z_][\w]*)|[/\\]lib[/\\]python3[.\d]*[/\\]"
                      r"(?!site-packages|dist-packages)([A-Za-z_]\w*)|, in ([A-Za-z_]\w*)\._libs")
# A frame's source lines: indented, or marked as the failing one ("---->", "->").
_SOURCE_LINE = re.compile(r"^(?:\s|-*>)")
_FUNCTION = re.compile(r", in ([\w.<>]+)")
_CHAIN = re.compile(r"^(The above exception was the direct cause of the following exception:"
                    r"|During handling of the above exception, another exception occurred:)\s*$", re.MULTILINE)
_RULE = re.compile(r"^-{20,}\s*$")
_HEADER = re.compile(r"^(\w[\w.]*)\s+Traceback \(most recent call last\)\s*$|^Traceback \(most recent call last\):\s*$")


def _is_user(frame: str) -> bool:
    first = frame.splitlines()[0]
    return bool(_USER.search(first)) or not _LIBRARY_PATH.search(first)


def _package(frame: str) -> str:
    found = _PACKAGE.search(frame.splitlines()[0])
    return next((g for g in found.groups() if g), "a library") if found else "a library"


def _fold(run: list[str]) -> str:
    packages = list(dict.fromkeys(_package(f) for f in run))
    # "decorate.<locals>.wrapper" says no more than "wrapper".
    names = [m.group(1).split(".<locals>.")[-1] for f in run if (m := _FUNCTION.search(f.splitlines()[0]))]
    path = names[0] if len(names) < 2 else f"{names[0]} → … → {names[-1]}" if len(names) > 2 else " → ".join(names)
    frames = f"{len(run)} frame{'s' if len(run) > 1 else ''}"
    return f"[… {frames} inside {', '.join(packages)}{': ' + path if path else ''}]"


def _paragraphs(section: str) -> tuple[list[str], list[str]]:
    """(frames, exception lines) of one traceback in the chain; frames are multi-line strings."""
    frames: list[str] = []
    tail: list[str] = []
    current: list[str] = []
    for line in section.splitlines():
        if _RULE.match(line) or _HEADER.match(line.strip()):
            continue
        if _FRAME.match(line):
            if current:
                frames.append("\n".join(current).rstrip())
            current, tail = [line], []
        elif current and (_SOURCE_LINE.match(line) or not line.strip()):
            if not line.strip() and current:  # a frame ends at a blank line
                frames.append("\n".join(current).rstrip())
                current = []
            else:
                current.append(line)
        elif line.strip():
            if current:
                frames.append("\n".join(current).rstrip())
                current = []
            tail.append(line)
    if current:
        frames.append("\n".join(current).rstrip())
    return frames, tail


def fold(traceback: str) -> str:
    """The traceback with library frames folded (see the module docstring)."""
    sections = _CHAIN.split(traceback)
    final = next((line.strip() for line in reversed(traceback.splitlines()) if line.strip()), "")
    # split() keeps the markers at odd indexes: [tb, marker, tb, marker, tb].
    parts: list[str] = []
    found_any = False
    for index in range(0, len(sections), 2):
        frames, tail = _paragraphs(sections[index])
        found_any = found_any or bool(frames)
        last = index == len(sections) - 1
        user = [f for f in frames if _is_user(f)]
        if not last and not user:
            # Raised and caught inside a library, then re-raised: one line says what it was.
            if tail and tail[-1].strip() != final:
                where = _package(frames[-1]) if frames else "a library"
                parts.append(f"(while handling {tail[-1].strip()[:200]} inside {where})")
            continue
        lines = ["Traceback (most recent call last):"]
        run: list[str] = []
        for frame in frames:
            if _is_user(frame):
                if run:
                    lines.append(_fold(run))
                    run = []
                lines.append(frame)
            else:
                run.append(frame)
        if run:
            lines.append(_fold(run))
        lines += tail
        parts.append("\n".join(lines))
        if not last:
            parts.append(sections[index + 1].strip())
    if not found_any:
        return traceback
    return "\n".join(parts).strip()
