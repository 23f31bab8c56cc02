"""One run for every driver: the same scenarios through ``%%ask``, the sidebar and
``jupyter ai-ci run``, against one scripted OpenAI server.

Each scenario asserts that the three drivers sent the model the same things, masked alike
(the same request text, the same error text in the fix), leaked none of the planted
secrets, recorded the same replay record and reported the same usage.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import nbformat

from jupyter_ai_ci.core import prompts
from jupyter_ai_ci.testing import Reply, ScriptedOpenAIServer

from . import three
from .conftest import ENV_SECRETS

# In the notebook: data, and two secrets held in variables (values shaped like nothing known).
SETUP = [
    "import pandas as pd\nsales = pd.DataFrame({'price': [1.5, 2.5, 4.0], 'region': ['north', 'south', 'north']})",
    'aws_secret = "Zk8qW2nR5tY7uI1oP3aS6dF9gH4jK0lX"\napi_token = "tokLive51HxQ2eZvKYlo2C8Nf3Ri"',
    # A key only in a cell's source, passed by position (defined, never run: not in the environment).
    'import os\ndef service():\n    return os.getenv("SERVICE_TOKEN", "svcT0ken9Lq2Wm4Xe7")',
]
TYPED = "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"  # typed into the request by mistake
SECRETS = [*ENV_SECRETS.values(), "Zk8qW2nR5tY7uI1oP3aS6dF9gH4jK0lX", "tokLive51HxQ2eZvKYlo2C8Nf3Ri",
           "svcT0ken9Lq2Wm4Xe7", TYPED]
TOKENS = (100, 20)  # every scripted reply reports this usage, so totals compare across drivers


def py(code: str, **kwargs: Any) -> Reply:
    return Reply(f"Here:\n```python\n{code}\n```", tokens=TOKENS, **kwargs)


async def every_driver(server: ScriptedOpenAIServer, tmp_path: Path, jp: tuple[Any, Any, Any, Path],
                       setup: list[str], request: str, replies: list[Reply],
                       probe: tuple[str, ...] = (), candidates: int = 0, mcp: bool = False) -> list[three.Seen]:
    """``candidates``: asked for as each driver's user would (--candidates K, the panel's field).
    ``mcp``: the MCP server's ``ask`` too (its kernel starts empty: the setup is sent with ``run``)."""
    jp_fetch, jp_ws_fetch, jp_serverapp, root = jp
    flag = f"--candidates {candidates}" if candidates else ""
    seen = [await three.magic(server, tmp_path / "magic", setup, request, replies, probe, options=flag)]
    seen.append(await three.sidebar(server, jp_fetch, jp_ws_fetch, jp_serverapp, root, setup, request, replies,
                                    probe, fields={"candidates": candidates} if candidates else None))
    seen.append(await asyncio.to_thread(three.cli, server, tmp_path / "cli", setup, request, replies,
                                        tuple(flag.split())))
    if mcp:
        seen.append(await three.mcp(server, tmp_path / "mcp", setup, request, replies, probe, candidates))
    return seen


async def every_conversing_driver(server: ScriptedOpenAIServer, tmp_path: Path, jp: tuple[Any, Any, Any, Path],
                                  setup: list[str], asked: list[str], replies: list[Reply]) -> list[three.Seen]:
    """Requests asked one after another in the same notebook, through every driver that keeps a
    conversation: ``%%ask``, the panel, the MCP server (the command line asks one per command)."""
    jp_fetch, jp_ws_fetch, jp_serverapp, root = jp
    return [await three.magic(server, tmp_path / "magic", setup, asked, replies),
            await three.sidebar(server, jp_fetch, jp_ws_fetch, jp_serverapp, root, setup, asked, replies),
            await three.mcp(server, tmp_path / "mcp", setup, asked, replies)]


def request_section(seen: three.Seen) -> str:
    """The request as the model got it (after the context), from the first request."""
    first_user = next(m["content"] for m in seen.requests[0]["messages"] if m["role"] == "user")
    return str(first_user).split("## Request\n", 1)[1]


def same_key_from_the_same_state(seen: list[Any]) -> bool:
    """The panel and the command line key their records on the notebook's name as well (they know
    it for certain); the magic's records are its folder's.  The rest of the key is the run's."""
    keys = {s.driver: s.records[0]["key"] for s in seen}
    return keys["sidebar"] == keys["cli"] == keys.get("mcp", keys["cli"]) != keys["magic"]


async def test_a_retry_that_needs_the_keyerror_text_leaks_no_secret(
        model_server: ScriptedOpenAIServer, tmp_path: Path, jp_fetch: Any, jp_ws_fetch: Any, jp_serverapp: Any,
        jp_root_dir: Path) -> None:
    request = f"Total price of all sales. (My GitHub token is {TYPED}, keep it out of the code.)"
    replies = [py("total = sales['Price'].sum()\ntotal"),
               py("total = sales['price'].sum()\nprint(total)", require="KeyError: 'Price'")]
    seen = await every_driver(model_server, tmp_path, (jp_fetch, jp_ws_fetch, jp_serverapp, jp_root_dir),
                              SETUP, request, replies, mcp=True)
    assert [s.driver for s in seen] == ["magic", "sidebar", "cli", "mcp"]
    for s in seen:
        assert s.status == "success", (s.driver, s.message)
        assert len(s.requests) == 2, s.driver
        everything = json.dumps(s.requests)
        leaked = [secret for secret in SECRETS if secret in everything]
        assert leaked == [], (s.driver, leaked)
        first, fix = s.texts()
        assert "sales: pandas.DataFrame 3 rows × 2 columns" in first, s.driver
        assert "KeyError: 'Price'" in fix and "total = sales['Price'].sum()" in fix, s.driver
        assert s.usage == (2, 200, 40), s.driver
        [record] = s.records
        assert TYPED not in json.dumps(record), s.driver  # not at rest either
        assert (record["requests"], record["prompt_tokens"], record["completion_tokens"]) == (2, 200, 40)
        # The failed attempt's KeyError is not left behind as "the user's last error".
        assert "Price" not in s.last_error, s.driver
    assert len({request_section(s) for s in seen}) == 1  # masked alike
    assert "***" in request_section(seen[0])
    assert same_key_from_the_same_state(seen)
    assert len({json.dumps(s.records[0]["replies"]) for s in seen}) == 1


async def test_fix_the_cell_above_sends_the_users_own_traceback(
        model_server: ScriptedOpenAIServer, tmp_path: Path, jp_fetch: Any, jp_ws_fetch: Any, jp_serverapp: Any,
        jp_root_dir: Path) -> None:
    broken = "by_region = sales.groupby('region')['price'].sum()\nshare = sales['Revenue'] / by_region.sum()"
    replies = [py("share = sales['price'] / sales['price'].sum()\nshare", require="KeyError: 'Revenue'")]
    seen = await every_driver(model_server, tmp_path, (jp_fetch, jp_ws_fetch, jp_serverapp, jp_root_dir),
                              [*SETUP, broken], "fix the cell above", replies)
    for s in seen:
        assert s.status == "success", (s.driver, s.message)
        [first] = s.texts()
        # The traceback of the user's own cell, its failing line, unmasked; no secret.
        assert "Traceback" in first and "KeyError: 'Revenue'" in first, s.driver
        assert "share = sales['Revenue'] / by_region.sum()" in first, s.driver
        assert [x for x in SECRETS if x in first] == [], s.driver
        assert s.usage == (1, 100, 20), s.driver
    assert same_key_from_the_same_state(seen)


async def test_retries_exhausted_leave_nothing_behind_and_count_every_request(
        model_server: ScriptedOpenAIServer, tmp_path: Path, jp_fetch: Any, jp_ws_fetch: Any, jp_serverapp: Any,
        jp_root_dir: Path) -> None:
    replies = [py("a = 1\nb = a / 0"), py("c = undefined_name"), py("d = [1][3]")]
    seen = await every_driver(model_server, tmp_path, (jp_fetch, jp_ws_fetch, jp_serverapp, jp_root_dir),
                              SETUP, "divide things", replies, probe=("a", "b", "c", "d"), mcp=True)
    assert len(seen) == 4
    for s in seen:
        assert s.status == "failed", (s.driver, s.message)
        assert "gave up after 3 attempts" in s.message.lower(), s.driver
        assert "IndexError: list index out of range" in s.message, s.driver
        assert "Rephrase the request, give more detail, or raise " in s.message, s.driver  # what to do, alike
        assert s.usage == (3, 300, 60), s.driver  # failed requests cost tokens too
        assert s.records == [], s.driver  # nothing worth replaying
        assert s.names == [], s.driver  # every failed attempt was undone
        fixes = s.texts()[1:]
        assert "ZeroDivisionError" in fixes[0] and "NameError" in fixes[1], s.driver


async def test_a_fix_answered_in_words_is_asked_again_for_code_within_the_retries(
        model_server: ScriptedOpenAIServer, tmp_path: Path, jp_fetch: Any, jp_ws_fetch: Any, jp_serverapp: Any,
        jp_root_dir: Path) -> None:
    """Issue #37: attempt 1 raises KeyError, the fix comes back in words; asked again (as a first reply
    to a question about data is), the next reply is the fix, and the run ends done, in every driver."""
    replies = [py("total = sales['Price'].sum()\ntotal"),
               Reply("The column is called 'price' in lower case.", tokens=TOKENS, require="KeyError: 'Price'"),
               py("total = sales['price'].sum()\nprint(total)", require=prompts.NEED_CODE)]
    seen = await every_driver(model_server, tmp_path, (jp_fetch, jp_ws_fetch, jp_serverapp, jp_root_dir),
                              SETUP, "total price of sales", replies, probe=("total",), mcp=True)
    assert [s.driver for s in seen] == ["magic", "sidebar", "cli", "mcp"]
    for s in seen:
        assert s.status == "success", (s.driver, s.message)
        assert len(s.requests) == 3 and s.usage == (3, 300, 60), s.driver
        assert s.texts()[2].endswith(prompts.NEED_CODE), s.driver
        # Each shows that it asks again, and what that costs: the panel and the terminal too.
        assert "answered the fix request without code — asking it for code (1 try left)" in s.told, (s.driver, s.told)
        assert s.names == ([] if s.driver == "cli" else ["total"]), s.driver  # the command line's kernel has ended


async def test_fixes_answered_in_words_until_the_retries_are_spent_say_so_in_every_driver(
        model_server: ScriptedOpenAIServer, tmp_path: Path, jp_fetch: Any, jp_ws_fetch: Any, jp_serverapp: Any,
        jp_root_dir: Path) -> None:
    words = Reply("The column is called 'price' in lower case.", tokens=TOKENS)
    replies = [py("total = sales['Price'].sum()\ntotal"), words, words, py("never_run = 1")]
    seen = await every_driver(model_server, tmp_path, (jp_fetch, jp_ws_fetch, jp_serverapp, jp_root_dir),
                              SETUP, "total price of sales", replies, probe=("total", "never_run"))
    for s in seen:
        assert s.status == "failed", (s.driver, s.message)
        assert len(s.requests) == 3 and s.usage == (3, 300, 60), s.driver  # the default --retries 2, spent
        assert "gave up after 1 attempt (the retries are spent; the last fix came back in words, without code)" \
            in s.message.lower(), (s.driver, s.message)
        assert "KeyError: 'Price'" in s.message and s.names == [], s.driver


# A data file in the working directory, not loaded yet: the first request must say what its columns are.
STAFF = ("open('staff.csv', 'w').write('emp_id,dept,salary\\n1,Sales,50000\\n2,Support,42000\\n3,Sales,61000\\n')\n"
         "import pandas as pd")


async def test_data_files_are_described_and_a_keyerror_fix_gets_the_real_columns(
        model_server: ScriptedOpenAIServer, tmp_path: Path, jp_fetch: Any, jp_ws_fetch: Any, jp_serverapp: Any,
        jp_root_dir: Path) -> None:
    guess = "staff = pd.read_csv('staff.csv')\ncounts = staff.groupby('department').size()\nprint(counts)"
    # The fix gets the column right, then trips on a pandas attribute of no variable: the next
    # fix request names the real one, found from the exception in the kernel.
    weekday = "pd.Series(pd.to_datetime(['2024-01-05'])).dt.weekday_name"
    replies = [py(guess),
               py(f"staff = pd.read_csv('staff.csv')\nprint(staff.groupby('dept').size())\n{weekday}",
                  require="Did you mean 'dept'?"),
               py("staff = pd.read_csv('staff.csv')\nprint(staff.groupby('dept').size())",
                  require="Did you mean .day_name?")]
    seen = await every_driver(model_server, tmp_path, (jp_fetch, jp_ws_fetch, jp_serverapp, jp_root_dir),
                              [STAFF], "Headcount per department in staff.csv", replies, probe=("staff",))
    for s in seen:
        assert s.status == "success", (s.driver, s.message)
        first, fix, _ = s.texts()
        # The file's header with dtypes and two sample rows, before any code ran.
        assert "### Data files in the working directory" in first, s.driver
        files = first.split("### Data files in the working directory\n", 1)[1].split("\n###", 1)[0]
        assert files.startswith("staff.csv (") and "columns: emp_id: int64, dept: str, salary: int64" in files
        assert "Support" in files and "61000" not in files, s.driver  # two rows, not the third
        # The fix: the failing line, the exception, no pandas internals, the closest real name, and the
        # DataFrame the failed attempt loaded, described before the rollback removed it.
        assert "counts = staff.groupby('department').size()" in fix and "KeyError: 'department'" in fix, s.driver
        assert "site-packages" not in fix and "frames inside pandas" in fix, s.driver
        assert "'department' is not a column of staff. Did you mean 'dept'?" in fix, s.driver
        assert "staff: pandas.DataFrame 3 rows × 3 columns [emp_id:int64, dept:" in fix, s.driver
        assert s.driver == "cli" or s.names == ["staff"], s.driver  # the last attempt loaded it (the CLI has no probe)
    # From the request on (the notebook's cells above it are listed per driver: kernel history
    # for the magic and the sidebar, the file's cells for the CLI), the same fix up to the traceback.
    fixes = {s.driver: s.texts()[1].split("## Request", 1)[1].split("Traceback", 1)[0] for s in seen}
    assert len(set(fixes.values())) == 1, fixes


async def test_a_question_is_answered_in_words_by_every_driver_and_counted_alike(
        model_server: ScriptedOpenAIServer, tmp_path: Path, jp_fetch: Any, jp_ws_fetch: Any, jp_serverapp: Any,
        jp_root_dir: Path) -> None:
    answer = "North has the highest total price: 5.5."
    replies = [py("totals = sales.groupby('region')['price'].sum()\nprint(totals.idxmax(), totals.max())"),
               Reply(answer, tokens=TOKENS, require="north 5.5")]
    seen = await every_driver(model_server, tmp_path, (jp_fetch, jp_ws_fetch, jp_serverapp, jp_root_dir),
                              SETUP, "Which region has the highest total price?", replies)
    for s in seen:
        assert s.status == "success", (s.driver, s.message)
        assert len(s.requests) == 2, s.driver  # the code, then the answer from its output
        assert "north" in s.texts()[1].split("## Request")[-1] and "in words" in s.texts()[1], s.driver
        assert s.usage == (2, 200, 40), s.driver  # the extra call is counted
        [record] = s.records
        assert record["replies"][-1] == answer and record["requests"] == 2, s.driver  # replayable, no call
    assert "done in 1 attempt" in seen[0].message and "done in 1 attempt" in seen[1].message.lower()
    assert len({json.dumps(s.records[0]["replies"]) for s in seen}) == 1


async def test_a_failed_answer_in_words_keeps_the_code_that_worked_in_every_driver(
        model_server: ScriptedOpenAIServer, tmp_path: Path, jp_fetch: Any, jp_ws_fetch: Any, jp_serverapp: Any,
        jp_root_dir: Path) -> None:
    # Found by hand: a 500 on the answer call discarded the working code (no cell inserted, the
    # CLI's notebook not saved, exit 3) while its variables stayed in the kernel.
    replies = [py("top = sales.groupby('region')['price'].sum().idxmax()\nprint(top)"),
               *[Reply(status=500)] * 4]  # the SDK's three retries fail too
    seen = await every_driver(model_server, tmp_path, (jp_fetch, jp_ws_fetch, jp_serverapp, jp_root_dir),
                              SETUP, "Which region has the highest total price?", replies, probe=("top",))
    for s in seen:
        assert s.status == "success", (s.driver, s.message)
        # Its one line says the answer is missing (folded, the magic's note is out of sight).
        assert re.search(r"(done in|appended after) 1 attempt \(no answer in words\)", s.message.lower()), (
            s.driver, s.message)
        assert len(s.requests) == 5, s.driver
        assert s.usage == (1, 100, 20), s.driver  # the call that gave nothing is not counted
        # The code's work stands: its variable in the kernel, its cell in the saved notebook.
        assert s.names == ["top"] or s.driver == "cli", s.driver
        [record] = s.records  # it replays, and asks the model for the answer then
        assert record["replies"] == [
            "```python\ntop = sales.groupby('region')['price'].sum().idxmax()\nprint(top)\n```"], s.driver
        assert record["unanswered"] is True, s.driver
    cell = nbformat.read(tmp_path / "cli" / "work.ipynb", as_version=4).cells[-1]
    assert "idxmax()" in cell.source and cell.outputs[0]["text"] == "north\n"


async def test_a_data_question_answered_in_words_is_asked_for_code_and_never_a_tick(
        model_server: ScriptedOpenAIServer, tmp_path: Path, jp_fetch: Any, jp_ws_fetch: Any, jp_serverapp: Any,
        jp_root_dir: Path) -> None:
    # A small model answered half of a benchmark's questions about a CSV file with invented numbers.
    replies = [Reply("The mean price is 2.1.", tokens=TOKENS),
               Reply("It is 2.1, trust me.", tokens=TOKENS, require="computes the answer from the data"),
               Reply("2.1.", tokens=TOKENS, require="computes the answer from the data")]
    seen = await every_driver(model_server, tmp_path, (jp_fetch, jp_ws_fetch, jp_serverapp, jp_root_dir),
                              SETUP, "What is the mean price of sales?", replies)
    for s in seen:
        assert s.status == "failed", (s.driver, s.message)
        assert "not answered: the model gave no code for a question about data (asked 3 times)" in s.message.lower(), (
            s.driver, s.message)
        assert "✓" not in s.message and "answered without code" not in s.message, s.driver
        assert s.usage == (3, 300, 60), s.driver
        assert s.records == [], s.driver  # nothing to replay: the next run asks again


async def test_a_missing_pandas_import_costs_no_model_call_and_the_answer_numbers_are_checked(
        model_server: ScriptedOpenAIServer, tmp_path: Path, jp_fetch: Any, jp_ws_fetch: Any, jp_serverapp: Any,
        jp_root_dir: Path) -> None:
    setup = ["prices = [1.5, 2.5, 4.0]"]  # no pandas imported in this kernel
    replies = [py("total = pd.Series(prices).sum()\nprint(total)"),
               Reply("The total is 8.0, about 17 more than last year.", tokens=TOKENS, require="8.0")]
    seen = await every_driver(model_server, tmp_path, (jp_fetch, jp_ws_fetch, jp_serverapp, jp_root_dir),
                              setup, "What is the total of prices?", replies, probe=("total", "pd"))
    for s in seen:
        assert s.status == "success", (s.driver, s.message)
        assert len(s.requests) == 2, s.driver  # the code and the answer: no call for the import
        assert "NameError" not in json.dumps(s.requests), s.driver
        assert s.names == ["pd", "total"] or s.driver == "cli", (s.driver, s.names)
        [record] = s.records  # the replayed code holds the import
        assert record["replies"][0].startswith("```python\nimport pandas as pd\ntotal = "), s.driver
        flag = "⚠ Not checked: this number is not in the output the code printed: 17."
        assert record["replies"][-1].endswith(flag), (s.driver, record["replies"][-1])
        assert "1 number in the answer not in the output" in s.message, (s.driver, s.message)


async def test_an_endpoint_that_drops_mid_stream_is_one_line_and_nothing_is_kept_in_every_driver(
        model_server: ScriptedOpenAIServer, tmp_path: Path, jp_fetch: Any, jp_ws_fetch: Any, jp_serverapp: Any,
        jp_root_dir: Path) -> None:
    # Issue #30, faults: the connection closes after a few bytes of the reply (not retried: part
    # of it may have been shown already).
    replies = [Reply("Here:\n```python\ntotal = sales['price'].sum()\n```", tokens=TOKENS, cut_after=12)]
    seen = await every_driver(model_server, tmp_path, (jp_fetch, jp_ws_fetch, jp_serverapp, jp_root_dir),
                              SETUP, "total price of sales", replies, probe=("total",))
    for s in seen:
        assert s.status != "success", (s.driver, s.message)
        assert "cut off" in s.message and "\n" not in s.message.strip(), (s.driver, s.message)
        assert s.records == [], s.driver  # nothing to replay
        assert s.names == [], s.driver  # nothing ran


async def test_candidates_that_disagree_are_never_a_tick_and_only_the_applied_one_is_kept_in_every_driver(
        model_server: ScriptedOpenAIServer, tmp_path: Path, jp_fetch: Any, jp_ws_fetch: Any, jp_serverapp: Any,
        jp_root_dir: Path) -> None:
    # Issue #28: three candidates, three results; none is confirmed, the first is applied.
    replies = [py("n = 76\nprint(n)"), py("n = 36\nprint(n)"), py("n = 12\nprint(n)")]
    seen = await every_driver(model_server, tmp_path, (jp_fetch, jp_ws_fetch, jp_serverapp, jp_root_dir),
                              SETUP, "count the answers that say yes", replies, probe=("n",), candidates=3)
    for s in seen:
        assert s.status == "success", (s.driver, s.message)
        assert "candidates disagree: 76 (1 of 3) vs 36 vs 12" in s.message.lower(), (s.driver, s.message)
        assert "✓" not in s.message, (s.driver, s.message)
        assert s.usage == (3, 300, 60), s.driver
        assert [r["temperature"] for r in s.requests][1:] == [0.7, 0.7], s.driver  # the others sampled
        [record] = s.records  # the applied candidate alone: a replay never votes
        assert record["replies"] == ["```python\nn = 76\nprint(n)\n```"], s.driver
        assert s.names == ["n"] or s.driver == "cli", s.driver
    panel = seen[1]
    # Each candidate's cell takes the place of the one before; the applied one, run again, the last's.
    assert [e["replace"] for e in panel.executes] == [[], ["gen-1"], ["gen-2"], ["gen-3"]]
    cells = nbformat.read(tmp_path / "cli" / "work.ipynb", as_version=4).cells
    [result] = json.loads((tmp_path / "cli" / "run.json").read_text())  # --json says how sure too
    assert result["agreement"] == "candidates disagree: 76 (1 of 3) vs 36 vs 12" and result["sure"] is False
    # The CLI's notebook: the request's heading, then one cell, the applied candidate's.
    assert [c.source for c in cells[len(SETUP) + 1:]] == ["n = 76\nprint(n)"]


async def test_the_other_candidates_are_asked_for_in_one_request_with_n_in_every_driver(
        model_server: ScriptedOpenAIServer, tmp_path: Path, jp_fetch: Any, jp_ws_fetch: Any, jp_serverapp: Any,
        jp_root_dir: Path) -> None:
    # The scripted server takes n as OpenAI and vLLM do: candidates 2 and 3 are one reply's two choices.
    third = py("n = 12\nprint(n)").text
    replies = [py("n = 76\nprint(n)"), py("n = 36\nprint(n)", alternatives=(third,))]
    seen = await every_driver(model_server, tmp_path, (jp_fetch, jp_ws_fetch, jp_serverapp, jp_root_dir),
                              SETUP, "count the answers that say yes", replies, probe=("n",), candidates=3)
    for s in seen:
        assert s.status == "success", (s.driver, s.message)
        assert "candidates disagree: 76 (1 of 3) vs 36 vs 12" in s.message.lower(), (s.driver, s.message)
        assert [r.get("n") for r in s.requests] == [None, 2], s.driver
        assert s.usage == (2, 200, 40), s.driver  # the second request's usage, once, for both choices
        assert s.names == ["n"] or s.driver == "cli", s.driver
    # Each candidate still has a cell of its own, in the place of the one before.
    assert [e["replace"] for e in seen[1].executes] == [[], ["gen-1"], ["gen-2"], ["gen-3"]]


async def test_two_candidates_that_agree_stop_early_in_every_driver(
        model_server: ScriptedOpenAIServer, tmp_path: Path, jp_fetch: Any, jp_ws_fetch: Any, jp_serverapp: Any,
        jp_root_dir: Path) -> None:
    replies = [py("n = (sales['region'] == 'north').sum()\nprint(n)"),
               py("m = float(len(sales[sales.region == 'north']))\nprint(m)")]
    seen = await every_driver(model_server, tmp_path, (jp_fetch, jp_ws_fetch, jp_serverapp, jp_root_dir),
                              SETUP, "count the sales in the north", replies, probe=("n", "m"), candidates=3)
    for s in seen:
        assert s.status == "success", (s.driver, s.message)
        assert "2 of 2 candidates agree" in s.message, (s.driver, s.message)
        assert s.usage == (2, 200, 40), s.driver  # the third was never asked
        [record] = s.records
        assert "m = float(" in record["replies"][0], s.driver
        assert s.names == ["m"] or s.driver == "cli", (s.driver, s.names)  # the first was rolled back
