"""The context in a real IPython shell: --show-context, assignment order,
errors, exclusions, follow-ups; the model is the scripted HTTP server."""

from __future__ import annotations

import types
from typing import Any

import pytest

from jupyter_ai_ci.context import tracker as tracker_module
from jupyter_ai_ci.context.tracker import KernelTracker, tracker_for
from jupyter_ai_ci.testing import ScriptedOpenAIServer
from jupyter_ai_ci.tokens import count_tokens


def run(ip: Any, *cells: str) -> None:
    for cell in cells:
        ip.run_cell(cell, store_history=True)


def sent_context(server: ScriptedOpenAIServer, index: int = -1) -> str:
    """The context part of a request's last user message."""
    user = [m for m in server.requests[index]["messages"] if m["role"] == "user"][-1]["content"]
    return str(user).partition("## Request")[0]


def test_show_context_prints_what_would_be_sent_and_sends_nothing(
        ip: Any, model_server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]) -> None:
    run(ip, "import pandas as pd", "sales = pd.DataFrame({'region': ['n'], 'revenue': [1.0]})")
    model_server.script("```python\nprevious = 1\n```")
    run(ip, "%%ask\nfirst request")
    capsys.readouterr()
    run(ip, "%ask --show-context revenue per region")
    out = capsys.readouterr().out
    assert model_server.requests and len(model_server.requests) == 1  # only the first request
    assert "not sent" in out and "── system ──" in out and "── user ──" in out
    assert "sales: pandas.DataFrame 1 rows × 2 columns [region:" in out
    assert "── assistant ──\n```python\nprevious = 1\n```" in out  # the previous exchange
    assert out.rstrip().endswith("## Request\nrevenue per region")
    header = out.splitlines()[0]
    tokens = int(header.split("context: ")[1].split(" of ")[0])
    assert 0 < tokens <= 3000
    # What --show-context printed is what the next request sends.
    model_server.script("```python\nregions = 1\n```")  # code: a request about data needs some
    run(ip, "%ask revenue per region")
    sent = "".join(f"── {m['role']} ──\n{m['content']}\n" for m in model_server.requests[-1]["messages"])
    assert sent.strip() == out.split("\n", 1)[1].strip()
    # A preview with --new forgets nothing.
    run(ip, "%ask --new --show-context anything")
    assert "previous = 1" not in capsys.readouterr().out
    model_server.script("ok")
    run(ip, "%ask again")
    assert any("previous = 1" in m["content"] for m in model_server.requests[-1]["messages"])


def test_most_recently_assigned_first_and_cell_errors(ip: Any, model_server: ScriptedOpenAIServer) -> None:
    run(ip, "alpha = 1", "beta = 2", "gamma = {'a': 1}", "alpha = 3", "gamma['b'] = 2", "1/0")
    model_server.script("ok")
    run(ip, "%ask go")
    context = sent_context(model_server)
    variables = context.split("### Other variables (most recently assigned first)\n")[1].split("###")[0]
    assert variables.splitlines()[:3] == ["gamma: dict len=2 {'a': 1, 'b': 2}", "alpha: int = 3", "beta: int = 2"]
    assert "```python\n1/0\n```\nOutput:\n```\nraised ZeroDivisionError: division by zero\n```" in context


def test_names_bound_out_of_sight_are_dated_and_a_cell_never_reads_the_namespace(
        ip: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A plain cell's hook only notes it; what cells bound is read with the order, so a cell in
    a kernel with a long history stays cheap (issue #18).  Names bound out of sight of the
    cells' code (exec, a cell magic's body, :=, a function's global) are still dated right."""
    tracker = tracker_for(ip)
    run(ip, "older = 1", "def load():\n    global loaded\n    loaded = [1]", "from math import tau",
        "earlier = 2", "exec('hidden = 3')", "load()", "latest = 4", "%%capture\ncaptured = 5",
        "if (found := 6):\n    pass")
    tick = tracker.recency
    # exec, %%capture's body and := are dated by their cells; the global set by load() is found
    # at the read and dated to the first cell since the one before it (load() itself).
    names = ("older", "tau", "earlier", "hidden", "loaded", "latest", "captured", "found")
    assert [tick[n] for n in names] == sorted(tick[n] for n in names)
    assert len({tick[n] for n in names}) == len(names)

    class Watched(dict):  # type: ignore[type-arg]
        reads = 0

        def items(self) -> Any:
            Watched.reads += 1
            return super().items()

    shell = types.SimpleNamespace(user_ns=Watched(ip.user_ns), history_manager=None)
    watched = KernelTracker(shell)
    Watched.reads = 0
    for i in range(5):
        shell.user_ns[f"v{i}"] = i
        watched.post_run_cell(types.SimpleNamespace(info=types.SimpleNamespace(raw_cell=f"v{i} = {i}"),
                                                    error_in_exec=None, error_before_exec=None, execution_count=i))
    assert Watched.reads == 0
    tick = watched.recency
    assert [tick[f"v{i}"] for i in range(5)] == [1, 2, 3, 4, 5] and Watched.reads == 1
    # More cells than are kept between two reads: the oldest count as older than the rest.
    monkeypatch.setattr(tracker_module, "MAX_UNREAD", 3)
    short = KernelTracker(types.SimpleNamespace(user_ns={}, history_manager=None))
    for i in range(6):
        short.shell.user_ns[f"w{i}"] = [i]
        short.post_run_cell(types.SimpleNamespace(info=types.SimpleNamespace(raw_cell=f"w{i} = [{i}]"),
                                                  error_in_exec=None, error_before_exec=None, execution_count=i))
    tick = short.recency
    assert tick["w0"] == tick["w1"] == tick["w2"] < tick["w3"] < tick["w4"] < tick["w5"]


def test_excluded_names_and_secrets_stay_out(ip: Any, model_server: ScriptedOpenAIServer,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_SERVICE_TOKEN", "plain-token-value-42")
    run(ip, "raw_rows = 'customer list'", "kept = 1", "my_password = 'correct horse'",
        "print(my_password)", "import os\nos.environ['MY_SERVICE_TOKEN']")
    ip.run_line_magic("config", "AskMagics.context_exclude = ['raw_*']")
    model_server.script("ok")
    run(ip, "%ask go")
    text = str(model_server.requests[-1])
    assert "kept: int = 1" in text and "raw_rows" not in text and "customer list" not in text
    assert "correct horse" not in text and "plain-token-value-42" not in text
    assert "my_password: str (value hidden: the name looks like a secret)" in text


def test_a_passphrase_inside_a_dict_stays_out_when_the_dict_is_printed_and_in_the_fix(
        ip: Any, model_server: ScriptedOpenAIServer) -> None:
    phrase, token = "correct horse battery staple", "plain-token-value-42"
    run(ip, f"config = {{'db': {{'host': 'h', 'password': {phrase!r}}}, 'accounts': [{{'api_key': {token!r}}}]}}",
        "print(config)")
    # The model's code prints it again and fails: the fix request carries that output too.
    model_server.script("```python\nprint(config)\nraise ValueError('no')\n```", "```python\nx = 1\n```")
    assert ip.run_cell("%%ask --no-answer\nconnect").success
    sent = str(model_server.requests)
    assert len(model_server.requests) == 2 and phrase not in sent and token not in sent
    assert "'host': 'h'" in sent  # the rest of the dict is still there to read


def test_budget_holds_on_a_thousand_cells(ip: Any, model_server: ScriptedOpenAIServer) -> None:
    for i in range(1000):
        ip.run_cell(f"value_{i % 50} = {i} * 2\nvalue_{i % 50}", store_history=True)
    ip.run_line_magic("config", "AskMagics.max_context_tokens = 1000")
    model_server.script("ok")
    run(ip, "%ask summarise")
    context = sent_context(model_server)
    assert count_tokens(context.rstrip()) <= 1000
    assert "value_49 = 999 * 2" in context and "more not shown" in context


def test_a_kernel_without_pandas_is_told_to_import_it_and_a_hostile_pd_costs_nothing(
        ip: Any, model_server: ScriptedOpenAIServer, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "sales.csv").write_text("region,units\nnorth,3\nsouth,4\n")
    monkeypatch.chdir(tmp_path)
    model_server.script(*["```python\nunits_seen = 1\n```"] * 3)  # code: a request about data needs some
    run(ip, "%ask total units")
    assert "starts with `import pandas as pd`" in sent_context(model_server)
    # A pd that is not pandas, and whose attributes raise: still told, and the request goes out.
    run(ip, "class Hostile:\n    def __getattr__(self, name):\n        raise RuntimeError('no')\npd = Hostile()",
        "%ask sum the units")
    assert len(model_server.requests) == 2 and "import pandas as pd`" in sent_context(model_server)
    run(ip, "import pandas as pd", "%ask units per region")
    assert len(model_server.requests) == 3 and "import pandas as pd`" not in sent_context(model_server)


def test_the_kernel_says_which_secrets_it_holds_now(ip: Any) -> None:
    # What the sidebar and the command line ask after each step (review #30, findings 4 and 5).
    from jupyter_ai_ci.context import kernelsecrets

    run(ip, "api_secret = 'vault-horse-battery-staple-42'", "sort_key = 'customer_id'")
    answer = {"status": "ok", "data": {"text/plain": repr(kernelsecrets.kernel_side(""))}}
    found = kernelsecrets.from_reply(answer)
    assert "vault-horse-battery-staple-42" in found and "customer_id" not in found
    # A kernel that cannot answer (jupyter_ai_ci missing there) gives none, never an exception.
    assert kernelsecrets.from_reply({"status": "error", "ename": "ModuleNotFoundError"}) == ()
    assert kernelsecrets.from_reply({"status": "ok", "data": {"text/plain": "'{not json'"}}) == ()


def test_history_records_are_kept_until_their_cell_changes(ip: Any) -> None:
    # A long history costs a look-up per cell: an unchanged cell's record is the same object
    # from one request to the next; a replaced Out entry, a new error or a restarted history
    # (new source at the same number) makes it anew.
    from jupyter_ai_ci.context.kernel_state import gather_context, history_cells

    run(ip, "a = 1", "a + 1", "b = [1]", "1/0")
    tracker = tracker_for(ip)
    first = history_cells(ip, tracker)
    again = history_cells(ip, tracker)
    assert [c.source for c in first][-4:] == ["a = 1", "a + 1", "b = [1]", "1/0"]
    assert all(x is y for x, y in zip(first, again, strict=True))
    number = int(first[-3].label.strip("In []"))
    ip.user_ns["Out"][number] = "replaced"
    changed = history_cells(ip, tracker)
    assert "'replaced'" in changed[-3].output and changed[-4] is first[-4]
    assert changed[-1].output == "raised ZeroDivisionError: division by zero"
    raw = ip.history_manager.input_hist_raw
    raw[number] = "c = 5"  # the history restarted: another cell at that number
    assert history_cells(ip, tracker)[-3].source == "c = 5"
    assert "c = 5" in gather_context(ip, "anything", (), 3000).text


def test_an_undone_attempts_cells_leave_the_history_a_request_is_told(ip: Any) -> None:
    """The panel and MCP run an attempt's cells as the kernel's own (stored in its history); once
    rolled back they are not among the cells a later request is told ran (safety/remote.py).  Only
    an attempt's own cells: not a committed one's, not the person's, not after a stray rollback."""
    import json

    from jupyter_ai_ci.context.kernel_state import history_cells
    from jupyter_ai_ci.safety import remote

    def tx(op: str, **extra: Any) -> dict[str, Any]:
        return dict(json.loads(remote.kernel_side(json.dumps({"op": op, "code": ["x"], "max_bytes": 1 << 20,
                                                             "request": "", **extra}))))

    def told() -> list[str]:
        return [c.source for c in history_cells(ip, tracker_for(ip))]

    run(ip, "mine = 1")
    tx("checkpoint")
    run(ip, "failed_try = 1")  # an attempt that failed: undone
    assert tx("rollback")["supported"]
    tx("checkpoint")
    run(ip, "kept_try = 2")  # one that worked: committed, stays
    tx("commit")
    run(ip, "theirs = 3")
    assert not tx("rollback")["supported"]  # no attempt open: nothing is hidden
    tx("checkpoint")
    run(ip, "held_try = 4")  # a held one (a fix offered), the person's cell, then rejected
    tx("hold")
    run(ip, "after_hold = 5")
    tx("rollback", only_changed=True)
    tx("checkpoint")
    run(ip, "tampered_try = 6", f"get_ipython().{remote._ATTEMPT_CELLS} = [-10**12, None]")
    tx("rollback")  # its own code spoiled the range: nothing is hidden rather than the wrong cells
    shown = told()
    assert "failed_try = 1" not in shown and "held_try = 4" not in shown, shown
    for kept in ("mine = 1", "kept_try = 2", "theirs = 3", "after_hold = 5", "tampered_try = 6"):
        assert kept in shown, (kept, shown)


def test_an_undone_requests_cells_leave_the_history_a_later_request_is_told(ip: Any) -> None:
    """``%ask undo`` (or the panel's Undo) of a request whose cells ran in the kernel's history (the
    panel's, MCP's): they are not among the cells a later request is told ran, nor is a later run of
    the same code; the person's own cells are, even one with the same code before the request."""
    import json

    from jupyter_ai_ci.context.kernel_state import history_cells
    from jupyter_ai_ci.safety import remote

    def tx(op: str, **extra: Any) -> dict[str, Any]:
        return dict(json.loads(remote.kernel_side(json.dumps({"op": op, "code": ["made = 1"], "max_bytes": 1 << 20,
                                                             "request": "r1", **extra}))))

    def told() -> list[str]:
        return [c.source for c in history_cells(ip, tracker_for(ip))]

    run(ip, "made = 1", "mine = 0")  # the person's, before the request, with the same code as it
    tx("checkpoint")
    run(ip, "made = 1")
    tx("commit")
    tx("note", meta={"request": "make it", "codes": ["made = 1"]})
    run(ip, "other = 2", "made = 1")  # the person's own cell, then the request's code run again
    assert told().count("made = 1") == 3
    done = tx("undo", n=1)
    assert not done["refused"] and done["metas"][0]["request"] == "make it", done
    shown = told()
    assert shown.count("made = 1") == 1 and "other = 2" in shown and "mine = 0" in shown, shown
    assert shown.index("made = 1") < shown.index("mine = 0")  # the one left is the person's, before
    # A reset that starts a new history session numbers cells anew: none of them is left out.
    ip.reset(new_session=True)
    fresh = [f"fresh_{i} = {i}" for i in range(8)]
    run(ip, *fresh)
    assert told()[-8:] == fresh

    # What the model's code may leave where the request's start is kept: a checkpoint and a commit
    # still work (a crash there turned every later rollback off), and an undo reaches no further.
    for i, planted in enumerate(((), ("r1",), ("r1", -10**12), ("r1", 10**12), ["r1", 0], ("r1", True))):
        ip.user_ns["planted"] = planted
        run(ip, f"mine_{i} = 1")
        assert tx("checkpoint", code=[f"made_{i} = 1"])["supported"], planted
        run(ip, f"made_{i} = 1", f"get_ipython().{remote._REQUEST_START} = planted")
        tx("commit")
        tx("note", meta={"request": "make it", "codes": [f"made_{i} = 1"]})
        done = tx("undo", n=1)
        assert not done["refused"] and f"made_{i}" in done["dropped"], (planted, done)
        assert f"mine_{i} = 1" in told(), (planted, told())  # where it began is not known: less is hidden
    setattr(ip, remote.ATTRIBUTE, 1)  # not a transaction (the model's code set it): a new one is made
    assert tx("checkpoint")["supported"] and tx("rollback")["supported"]


def test_the_magics_undo_leaves_a_run_of_the_requests_code_out_of_the_next_context(
        ip: Any, model_server: ScriptedOpenAIServer) -> None:
    # The magic runs its attempts unstored; the cell it inserts below, run by the person (or Run
    # All), is stored like any cell. Once the request is undone, that run is not told either.
    model_server.script("```python\ninserted_total = 40 + 2\nprint(inserted_total)\n```",
                        "```python\nprint('next')\n```")
    run(ip, "mine_first = 1", "%%ask --candidates 1\nadd 40 and 2")
    run(ip, "inserted_total = 40 + 2\nprint(inserted_total)", "mine_after = 2", "%ask undo")
    assert "inserted_total" not in ip.user_ns
    run(ip, "%%ask --candidates 1\nprint next")
    told = sent_context(model_server)
    assert "mine_first = 1" in told and "mine_after = 2" in told, told
    assert "inserted_total = 40 + 2" not in told.split("## Earlier")[0], told
