"""The line for the shared local model (model/turns.py): real ticket files in a real runtime folder,
other processes' tickets taken by real processes (one killed with SIGKILL)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jupyter_ai_ci.model import turns

# A process that takes a ticket for the model and holds it until killed.
HOLD = """
import sys, time
from pathlib import Path
from jupyter_ai_ci.model import turns
ticket = turns.Ticket(Path(sys.argv[1]))
print(ticket.path.name, flush=True)
time.sleep(60)
"""


@pytest.fixture
def model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    return tmp_path / "m.gguf"


def holder(model: Path) -> tuple[subprocess.Popen[str], str]:
    """Another process with a ticket (started now: it arrives after every ticket taken before)."""
    process = subprocess.Popen([sys.executable, "-c", HOLD, str(model)], stdout=subprocess.PIPE, text=True,
                               env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert process.stdout is not None
    return process, process.stdout.readline().strip()


def tickets(model: Path) -> list[str]:
    return sorted(p.name for p in turns.line_folder(model).iterdir())


def test_tickets_are_served_in_arrival_order_and_say_how_many_are_ahead(model: Path) -> None:
    first, second, third = turns.Ticket(model), turns.Ticket(model), turns.Ticket(model)
    said: list[str] = []
    assert [first.ahead(), second.ahead(), third.ahead()] == [0, 1, 2]
    assert first.look(said.append) and not third.look(said.append)
    assert said == ["· waiting for the local model: 2 requests ahead\n"]
    assert not third.look(said.append) and len(said) == 1  # said again only when it moves
    first.leave()  # its reply ended
    assert not third.look(said.append) and said[-1] == "· waiting for the local model: 1 request ahead\n"
    second.leave()
    assert third.look(said.append) and said[-1] == f"· {turns.TURN}\n"  # its turn: the drivers drop the line
    assert third.look(said.append) and len(said) == 3  # said once
    third.leave()
    assert tickets(model) == []  # nothing left behind, no temporary either


def test_a_ticket_of_a_process_that_died_is_not_waited_for_and_is_removed(model: Path) -> None:
    process, name = holder(model)
    try:
        mine = turns.Ticket(model)
        assert mine.ahead() == 1 and tickets(model) == sorted([name, mine.path.name])
        process.kill()  # SIGKILL: it removes nothing; the system releases its lock
        process.wait()
        assert mine.ahead() == 0 and tickets(model) == [mine.path.name]
        mine.leave()
    finally:
        process.kill()
        process.wait()


def test_a_live_process_keeps_its_place_whatever_its_pid(model: Path) -> None:
    process, name = holder(model)
    try:
        mine = turns.Ticket(model)
        for _ in range(3):  # looked at again and again: never taken for a dead one's
            assert mine.ahead() == 1
        assert name in tickets(model)
        mine.leave()
    finally:
        process.kill()
        process.wait()


def test_ctrl_c_while_waiting_leaves_the_line_at_once(model: Path) -> None:
    ahead = turns.Ticket(model)
    said: list[str] = []

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 0.3)
    try:
        with pytest.raises(KeyboardInterrupt), turns.Ticket(model) as waiting:
            waiting.wait(said.append)
    finally:
        signal.signal(signal.SIGALRM, previous)
    assert said == ["· waiting for the local model: 1 request ahead\n"]
    assert tickets(model) == [ahead.path.name]
    ahead.leave()


def test_a_cancelled_task_leaves_the_line_and_the_next_one_moves_up(model: Path) -> None:
    async def scenario() -> list[str]:
        said: list[str] = []
        ahead = turns.Ticket(model)

        async def queued() -> None:
            with turns.Ticket(model) as ticket:
                await ticket.await_turn(said.append)

        cancelled = asyncio.create_task(queued())
        await asyncio.sleep(0.2)  # it has taken its ticket and waits
        behind = turns.Ticket(model)
        assert behind.ahead() == 2
        cancelled.cancel()  # Stop in the panel
        with pytest.raises(asyncio.CancelledError):
            await cancelled
        assert behind.ahead() == 1 and len(tickets(model)) == 2
        ahead.leave()
        started = time.monotonic()
        await behind.await_turn(said.append)
        assert time.monotonic() - started < 1
        behind.leave()
        return said

    assert asyncio.run(scenario()) == ["· waiting for the local model: 1 request ahead\n"]
    assert tickets(model) == []


def test_a_request_stuck_at_the_head_is_waited_for_only_so_long(model: Path) -> None:
    process, name = holder(model)  # alive, its ticket held, and never done
    try:
        said: list[str] = []
        with turns.Ticket(model) as mine:
            started = time.monotonic()
            mine.wait(said.append, patience=0.5)
            assert 0.5 <= time.monotonic() - started < 5
            assert tickets(model) == sorted([name, mine.path.name])  # its place is kept: it is still there
        assert said == ["· waiting for the local model: 1 request ahead\n",
                        "· the request ahead has had the local model for 0.5 s; sending this one anyway\n",
                        f"· {turns.TURN}\n"]
    finally:
        process.kill()
        process.wait()


def test_each_driver_shows_the_wait_while_it_holds_and_drops_it_when_the_reply_starts(model: Path) -> None:
    # The line the queue really says, from real tickets, into the magic's view and the panel's notice.
    from jupyter_ai_ci.drivers.magic_view import RichReporter
    from jupyter_ai_ci.drivers.server.protocol import said
    from jupyter_ai_ci.events import CallModel

    first, second = turns.Ticket(model), turns.Ticket(model)
    lines: list[str] = []
    assert not second.look(lines.append) and len(lines) == 1

    class Handle:
        def update(self, bundle: dict[str, str], **kwargs: object) -> None:
            self.bundle = bundle

    handle = Handle()
    reporter = RichReporter("m", lambda bundle, **kwargs: handle.update(bundle) or handle)
    reporter.model_started(CallModel((), "first"))
    reporter.said(lines[0])  # in the head line of the call it holds up, not a line of its own
    head = handle.bundle["text/plain"].splitlines()[0]
    assert head == "… m · writing code · waiting for the local model: 1 request ahead"
    second.look(lines.append)  # still one ahead: nothing new said
    first.leave()
    assert second.look(lines.append) and lines[-1] == f"· {turns.TURN}\n"
    reporter.said(lines[-1])  # its turn: the prompt is being read, no longer waited for
    assert handle.bundle["text/plain"].splitlines()[0] == "… m · writing code"
    assert said(lines[-1])["kind"] == "waiting" and said(lines[-1])["text"] == ""  # the panel drops its line
    # The panel: kind 'waiting' (labextension/src/transcript.ts keeps one such line while it holds).
    assert said(lines[0]) == {"type": "notice", "kind": "waiting", "attempt": 0, "step": 0,
                              "text": "waiting for the local model: 1 request ahead"}
    assert said("· using Qwen2.5-Coder, a small local model\n")["kind"] == "other"
    second.leave()
