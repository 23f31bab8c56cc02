"""``%ask undo``: a request's transactions, kept after it worked, undone later on demand.

Each committed attempt hands over what would undo it (``Transaction.handover``: the old values
of what it changed, never the rest of the namespace); the attempts of one request make one
entry.  The last ``keep`` entries are kept, within ``memory`` bytes in all, oldest dropped first;
a request too large to keep is said at its end.  The stack lives in the kernel, beside the
namespace it undoes: a restart takes it, and a notebook opened from elsewhere has none.

Undo never throws away the person's work: when a cell run after the request changed a name
the request made or changed, it is refused and the cell named; a file changed since (by the
person or another process) is left as it is and said ("changed since; not restored").
"""

from __future__ import annotations

import os
import re
import secrets
from builtins import isinstance, len, list, reversed, sorted  # noqa: UP029 -- bound once: the kernel may patch them
from collections.abc import Callable, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from jupyter_ai_ci.safety.maychange import may_change
from jupyter_ai_ci.safety.copies import restore_saved
from jupyter_ai_ci.safety.transaction import _MISSING, Kept, current_dir, undo_outside
from jupyter_ai_ci.text import human_size

ATTRIBUTE = "_jupyter_ai_ci_undo"  # the shell's attribute holding its stack
# The id a request's attempts are kept under: every executor makes one, the Undo buttons send it back.
REQUEST_ID = re.compile(r"[0-9a-f]{12}")


def new_request_id() -> str:
    return secrets.token_hex(6)


@dataclass(frozen=True)
class Limits:
    """The person's undo settings (``AICISettings.undo_keep``, ``undo_memory``, ``undo_file_cap``)."""

    keep: int = 10
    memory: int = 1 << 30
    file_cap: int = 256 << 20

    @classmethod
    def of(cls, settings: Any) -> Limits:
        """From ``AICISettings`` (or anything with its three traits)."""
        return cls(settings.undo_keep, settings.undo_memory, settings.undo_file_cap)


@dataclass
class Entry:
    """One request's way back."""

    request: str  # the id its executor gave it
    kept: list[Kept] = field(default_factory=list)
    since: int = 0  # the kernel's input history held this many cells when the request ended
    first: int = 0  # ... and when its first attempt began (the panel's and MCP's cells run there)
    session: int | None = None  # the history session those numbers are of (history_session)
    meta: dict[str, Any] = field(default_factory=dict)  # the driver's: the request, its cells, its record

    @property
    def size(self) -> int:
        return sum(k.size for k in self.kept)

    def names(self) -> list[str]:
        return sorted({n for k in self.kept for n in (*k.created, *k.rebound, *k.saved)})

    def drop(self) -> None:
        for k in self.kept:
            k.journal.discard()
        self.kept.clear()


@dataclass
class Undone:
    restored: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    not_undone: list[str] = field(default_factory=list)
    refused: str = ""
    metas: list[dict[str, Any]] = field(default_factory=list)  # of the requests undone, newest first
    # The kernel's history cells that ran the undone requests' code (the panel's and MCP's cells run
    # there; so does a later run of that code): a later request must not be told of them.
    history: list[int] = field(default_factory=list)


@dataclass
class UndoStack:
    keep: int = 10
    memory: int = 1 << 30
    entries: list[Entry] = field(default_factory=list)
    notes: dict[str, str] = field(default_factory=dict)  # request id -> why it was not kept

    def add(self, request: str, kept: Kept | None, history: int, first: int | None = None,
            session: int | None = None) -> None:
        """``history``: the cells in the kernel's history now; ``first``: when the request began;
        ``session``: the history's (``history_session``)."""
        if kept is None:
            return
        entry = self.entries[-1] if self.entries and self.entries[-1].request == request else None
        if entry is None:
            entry = Entry(request, first=history if first is None else max(0, min(first, history)), session=session)
            self.entries.append(entry)
        entry.kept.append(kept)
        entry.since = history
        if kept.journal.notes:  # said at the request's end, not discovered at the undo
            self.notes[request] = f"undo cannot restore: {'; '.join(kept.journal.notes[:3])}"
        if entry.size > self.memory:
            self.notes[request] = (f"undo not kept: {', '.join(entry.names()[:3]) or 'its files'} changed, "
                                   f"{human_size(entry.size)} (over undo_memory, {human_size(self.memory)})")
            entry.drop()
            self.entries.remove(entry)
        while len(self.entries) > max(self.keep, 0) or sum(e.size for e in self.entries) > self.memory:
            self.entries.pop(0).drop()

    def note(self, request: str, meta: dict[str, Any]) -> None:
        """The driver's part of the entry: what to say of it and what else to take back."""
        for entry in self.entries:
            if entry.request == request:
                entry.meta.update(meta)

    def undo(self, n: int, ns: MutableMapping[str, Any], history: Sequence[str],
             busy: bool = False, only: str = "", session: int | None = None) -> Undone:
        """Take the kernel back to before the last ``n`` requests, newest first.  ``only``: that
        request (an Undo button's), refused when a newer one came after it.  ``session``: the
        history's now; the cells that ran the requests' code are named only in the one they ran in."""
        if busy:
            return Undone(refused="a request is running in this kernel; undo when it has ended")
        if only:
            place = next((i for i, e in enumerate(self.entries) if e.request == only), None)
            if place is None:
                return Undone(refused="nothing to undo for that request: it was undone already, dropped "
                                      "(undo_keep, undo_memory), or the kernel restarted since")
            newer = len(self.entries) - 1 - place
            if newer:
                return Undone(refused=f"undo refused: {newer} newer request{'s' if newer > 1 else ''} came after "
                                      f"it; %ask undo {newer + 1} takes {'them' if newer > 1 else 'it'} back too")
            n = 1
        if not self.entries:
            return Undone(refused="nothing to undo in this kernel: no request of this session has been kept "
                                  "(a restart forgets them, and a notebook from elsewhere brings none)")
        n = min(n, len(self.entries))
        chosen = self.entries[-n:]
        ours = {code.strip() for e in chosen for code in (*_codes(e), "\n\n".join(_codes(e))) if code.strip()}
        refusal = _refusal(chosen, ns, history, ours)
        if refusal:
            return Undone(refused=refusal)
        out = Undone()
        if session is not None and all(e.session == session for e in chosen):
            out.history = [number for number in range(min(chosen[0].first, len(history)), len(history))
                           if isinstance(history[number], str) and history[number].strip() in ours]
        for entry in reversed(chosen):
            for kept in reversed(entry.kept):
                _undo_one(kept, ns, out)
            out.metas.append(entry.meta)
        del self.entries[-n:]
        return out


def _refusal(chosen: list[Entry], ns: MutableMapping[str, Any], history: Sequence[str], ours: set[str]) -> str:
    """Why undoing would throw away the person's work (a cell run since changed what the
    requests made), naming the cell; "" when it would not.  ``ours``: the requests' code (one
    block a cell, or the blocks of one cell joined, as a frontend without the panel inserts them)."""
    later = chosen[-1].since
    names = {n for e in chosen for n in e.names()}
    for number in range(later, len(history)):
        code = history[number] or ""
        if code.strip() in ours or code.lstrip().startswith(("%ask", "%%ask", "get_ipython().run_")):
            continue
        touched = sorted(may_change([code]) & names)
        if touched:
            return (f"undo refused: In [{number}] changed {', '.join(touched)} after the request "
                    "(undo never throws away your work; undo that cell's change yourself, or rerun the cells)")
    for kept in (k for e in chosen for k in e.kept):
        for name, value in kept.created.items():
            if ns.get(name, _MISSING) is not value:
                return f"undo refused: {name} was changed after the request (undo never throws away your work)"
        for name, (_, after) in kept.rebound.items():
            if ns.get(name, _MISSING) is not after:
                return f"undo refused: {name} was changed after the request (undo never throws away your work)"
    return ""


def _codes(entry: Entry) -> list[str]:
    codes = entry.meta.get("codes", [])
    return [c for c in codes if isinstance(c, str)]


def _undo_one(kept: Kept, ns: MutableMapping[str, Any], out: Undone) -> None:
    done, failed = restore_saved(kept.saved, ns)
    out.restored += done
    out.not_undone += failed
    for name, (before, _) in kept.rebound.items():
        if before is _MISSING:
            ns.pop(name, None)
        else:
            ns[name] = before
        if name not in out.restored:
            out.restored.append(name)
    for name in kept.created:
        ns.pop(name, None)
        out.dropped.append(name)
    restored, kept_state, kept_files = undo_outside(kept.process, kept.journal, later=True)
    out.restored += restored
    out.not_undone += kept_state + kept_files
    if kept.cwd is not None:
        before, after = kept.cwd
        if current_dir() == after:
            try:
                os.chdir(before)
                out.restored.append("the working directory")
            except OSError as exc:
                out.not_undone.append(f"the working directory ({type(exc).__name__}: {before} is gone)")


def history_session(shell: Any) -> int | None:
    """The number of IPython's history session: a reset that opens a new one numbers cells anew."""
    number = getattr(getattr(shell, "history_manager", None), "session_number", None)
    return number if type(number) is int else None


def history_of(shell: Any) -> list[str]:
    """The cells the kernel has run, by number (IPython's own input history)."""
    hist = getattr(getattr(shell, "history_manager", None), "input_hist_raw", None)
    return hist if isinstance(hist, list) else []


def stack_of(shell: Any, keep: int, memory: int, make: Callable[[], UndoStack] = UndoStack) -> UndoStack:
    """The shell's stack, made on first use, its bounds set from the person's settings now."""
    stack = getattr(shell, ATTRIBUTE, None)
    if not isinstance(stack, UndoStack):
        stack = make()
        setattr(shell, ATTRIBUTE, stack)
    stack.keep, stack.memory = keep, memory
    return stack
