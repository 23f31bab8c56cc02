"""%%ask and %ask in a real IPython shell against the scripted HTTP model."""

from __future__ import annotations

from pathlib import Path

from typing import Any

import pytest

from jupyter_ai_ci.core import prompts
from jupyter_ai_ci.errors import ModelAuthError, NoEndpoint, NotAnswered, RetriesExhausted
from jupyter_ai_ci.testing import Reply, ScriptedOpenAIServer


def py(code: str) -> str:
    return f"Sure.\n```python\n{code}\n```\n"


def test_buggy_code_is_fixed_from_the_traceback(ip: Any, model_server: ScriptedOpenAIServer,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    ip.run_cell("import pandas as pd\nsales = pd.DataFrame({'region': ['n', 's', 'n'], 'revenue': [1, 2, 3]})",
                store_history=True)
    model_server.script(
        py("totals = sales.groupby('regoin')['revenue'].sum()\ntotals"),
        Reply(py("totals = sales.groupby('region')['revenue'].sum()\nprint(totals.to_dict())"),
              require="KeyError"),
    )
    result = ip.run_cell("%%ask\nTotal revenue per region of sales", store_history=True)
    assert result.success
    assert ip.user_ns["totals"].to_dict() == {"n": 4, "s": 2}
    first, fix = model_server.request_texts()
    assert "sales: pandas.DataFrame 3 rows × 2 columns [region:" in first
    assert "revenue:int64" in first
    assert "Traceback" in fix and "KeyError" in fix and "groupby('regoin')" in fix
    out = capsys.readouterr().out
    assert "✗ attempt 1 failed: KeyError" in out
    assert "{'n': 4, 's': 2}" in out
    assert "✓ done in 2 attempts" in out
    assert "the code is at the next prompt" in out  # a terminal has no cells (it said "a new cell below")
    assert ip.rl_next_input == "totals = sales.groupby('region')['revenue'].sum()\nprint(totals.to_dict())"


def test_gives_up_after_retries_with_one_line_error(ip: Any, model_server: ScriptedOpenAIServer) -> None:
    model_server.script(py("x = 1/0"), py("y = [][1]"), py("z = {}['k']"), py("never = 1"))
    result = ip.run_cell("%%ask --retries 2\ndo something", store_history=True)
    assert not result.success
    error = result.error_in_exec
    assert isinstance(error, RetriesExhausted)
    assert error.attempts == 3
    assert "KeyError" in str(error) and "3 attempts" in str(error)
    assert error._render_traceback_() == [f"RetriesExhausted: {error}"]
    assert len(model_server.requests) == 3


def test_a_fix_answered_in_words_is_asked_again_for_code(ip: Any, model_server: ScriptedOpenAIServer,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """Issue #37: attempt 1 raises KeyError, the fix comes back in words, the next reply is the fix."""
    ip.run_cell("import pandas as pd\nsales = pd.DataFrame({'region': ['n', 's'], 'revenue': [1, 2]})")
    model_server.script(
        py("total = sales['Revenue'].sum()"),
        Reply("The column is named 'revenue' in lower case, not 'Revenue'.", require="KeyError"),
        Reply(py("total = sales['revenue'].sum()"), require=prompts.NEED_CODE),
    )
    result = ip.run_cell("%%ask --retries 2\ntotal revenue of sales", store_history=True)
    assert result.success and ip.user_ns["total"] == 3
    assert len(model_server.requests) == 3 and model_server.misses == []
    out = capsys.readouterr().out
    assert "answered the fix request without code — asking it for code (1 try left)" in out
    assert "✓ done in 2 attempts" in out
    # The fix was asked for once; the next call asked for code, and says so.
    assert out.count(": fixing ──") == 1 and out.count(": asked again for code ──") == 1


def test_a_fix_the_model_says_it_cannot_make_ends_the_run_with_its_words(
        ip: Any, model_server: ScriptedOpenAIServer) -> None:
    model_server.script(py("total = sales['Revenue'].sum()"),
                        "I'm sorry, but I cannot know the column names without the data.", py("never = 1"))
    result = ip.run_cell("%%ask --retries 2\ntotal revenue of sales", store_history=True)
    error = result.error_in_exec
    assert isinstance(error, NotAnswered) and "never" not in ip.user_ns
    assert str(error) == ("the model said it cannot: I'm sorry, but I cannot know the column names "
                          "without the data.")
    assert len(model_server.requests) == 2  # its retries are left: asking again would ask it to pretend


def test_no_run_inserts_without_executing(ip: Any, model_server: ScriptedOpenAIServer) -> None:
    model_server.script(py("marker = 'ran'"))
    assert ip.run_cell("%%ask --no-run\nset a marker").success
    assert "marker" not in ip.user_ns
    assert ip.rl_next_input == "marker = 'ran'"


def test_line_magic_model_option_and_prose_answer(ip: Any, model_server: ScriptedOpenAIServer,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    model_server.script("A table with labelled columns.")
    assert ip.run_cell("%ask --model tiny-model what is a DataFrame?").success
    assert model_server.requests[0]["model"] == "tiny-model"
    assert "what is a DataFrame?" in model_server.request_texts()[0]
    assert "A table with labelled columns." in capsys.readouterr().out


def test_the_request_is_the_rest_of_the_line_as_typed(ip: Any, model_server: ScriptedOpenAIServer,
                                                      tmp_path: Path) -> None:
    """Found by hand: options were read anywhere and by any prefix, so a request ending "use --y"
    ran flagged code with --yes; an option value kept its quotes (sent as the model name)."""
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    model_server.script(py(f"import os\nos.remove({str(victim)!r})"))
    ip.run_cell('%ask --model "tiny:7b" clean up the temp file, use  --y')
    assert victim.exists()  # flagged, and nobody approved it (no stdin here): not run
    assert model_server.requests[0]["model"] == "tiny:7b"
    assert "clean up the temp file, use  --y" in model_server.request_texts()[0]


def test_steps_continue_until_prose(ip: Any, model_server: ScriptedOpenAIServer) -> None:
    model_server.script(py("n = 41\nprint(n)"), Reply(py("n += 1\nprint(n)"), require="41"),
                        Reply("n is now 42.", require="42"))
    assert ip.run_cell("%%ask --steps 3\ncount to 42").success
    assert ip.user_ns["n"] == 42 and len(model_server.requests) == 3


def test_follow_up_carries_the_previous_exchange(ip: Any, model_server: ScriptedOpenAIServer) -> None:
    model_server.script(py("df_total = 10"), "ok")
    ip.run_cell("%%ask\nmake a total")
    ip.run_cell("%%ask\nnow double it")
    second = model_server.requests[1]["messages"]
    assert any(m["role"] == "assistant" and "df_total = 10" in m["content"] for m in second)
    model_server.script("fresh")
    ip.run_cell("%%ask --new\nunrelated")
    assert all("df_total = 10" not in m["content"] for m in model_server.requests[0]["messages"]
               if m["role"] == "assistant")


def test_config_and_environment(ip: Any, model_server: ScriptedOpenAIServer,
                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUPYTER_AI_CI_MODEL", "env-model")
    from jupyter_ai_ci.drivers.magic_entry import AskMagics

    ip.register_magics(AskMagics)  # picks up the environment
    model_server.script("a")
    ip.run_cell("%ask hello")
    assert model_server.requests[-1]["model"] == "env-model"
    ip.run_line_magic("config", "AskMagics.model = 'config-model'")
    ip.run_line_magic("config", "AskMagics.retries = 0")
    model_server.script(py("1/0"), py("never"))
    result = ip.run_cell("%%ask\nfail")
    assert model_server.requests[0]["model"] == "config-model"
    assert isinstance(result.error_in_exec, RetriesExhausted) and result.error_in_exec.attempts == 1


@pytest.mark.parametrize("cell, message", [
    ("%ask", "needs a request"),
    ("%ask --retries -1 go", "--retries must be at least 0"),
    ("%ask --frobnicate go", "unrecognized arguments: --frobnicate"),
    ("%ask --y delete the file", "unrecognized arguments: --y"),  # not --yes: whole names only
    ("%ask_usage --bar", "unrecognized arguments: --bar"),  # was ignored
    ("%ask_replay --clean", "unrecognized arguments: --clean"),
])
def test_user_mistakes_are_usage_errors(ip: Any, cell: str, message: str,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    ip.run_cell(cell)
    captured = capsys.readouterr()
    text = captured.out + captured.err
    assert "UsageError" in text and message in text and "Traceback" not in text


def test_help_is_the_docstring(ip: Any) -> None:
    info = ip.object_inspect_text("%%ask")
    assert "--retries N" in info and "fixes" not in info[:0] and "Run All stops" in info


def test_no_endpoint_and_wrong_key(ip: Any, model_server: ScriptedOpenAIServer,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL")
    ip.run_line_magic("config", "AskMagics.local_fallback = False")  # as without the [local] extra
    error = ip.run_cell("%ask hi").error_in_exec
    assert isinstance(error, NoEndpoint) and "jupyter-ai-ci[local]" in str(error)
    monkeypatch.setenv("OPENAI_BASE_URL", model_server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong")
    model_server.api_key = "sk-right"
    error = ip.run_cell("%ask hi").error_in_exec
    assert isinstance(error, ModelAuthError) and "sk-wrong" not in str(error)


def test_a_request_run_again_replays_though_its_first_run_made_the_variable_it_names(
        ip: Any, model_server: ScriptedOpenAIServer) -> None:
    # Found by a newcomer's check of docs/reproducibility.md: the first run found no `y`; run
    # again, `y` was there (the code made it), its description joined the replay key, and every
    # re-run asked the model again (and ran `y = 8`).
    model_server.script(py("y = 7"), py("y = 8"), py("y = 9"))
    for _ in range(3):
        assert ip.run_cell("%%ask --no-answer\nset y to 7", store_history=True).success
    assert len(model_server.requests) == 1 and ip.user_ns["y"] == 7


def test_a_variable_the_user_made_since_is_new_context_and_asks_the_model(
        ip: Any, model_server: ScriptedOpenAIServer) -> None:
    model_server.script(py("print('no z yet')"), Reply(py("print(z * 2)"), require="z: int = 5"))
    assert ip.run_cell("%%ask --no-answer\nshow z", store_history=True).success
    ip.run_cell("z = 5", store_history=True)  # not made by the recorded code
    assert ip.run_cell("%%ask --no-answer\nshow z", store_history=True).success
    assert len(model_server.requests) == 2 and model_server.misses == []


def test_a_run_that_ends_in_an_error_still_counts_the_calls_it_made(
        ip: Any, model_server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]) -> None:
    # The fix request fails (a 500, after the SDK's retries): the first call's tokens were spent.
    model_server.script(Reply(py("x = 1/0"), tokens=(300, 20)), *[Reply(status=500)] * 4)
    result = ip.run_cell("%%ask\nset x", store_history=True)
    assert type(result.error_in_exec).__name__ == "ModelServerError"
    capsys.readouterr()
    ip.run_line_magic("ask_usage", "")
    session = [line for line in capsys.readouterr().out.splitlines() if line.strip().startswith("session")]
    assert session and session[0].split()[1:4] == ["1", "300", "20"], session


def test_the_shared_config_file_reaches_the_magic_under_its_own_config(
        ip: Any, model_server: ScriptedOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Found by a newcomer: the docs said c.AICISettings reached every driver; `jupyter ai-ci run`
    # read jupyter_ai_ci_config.py, the magic only ipython_config.py.
    folder = tmp_path / "jupyter-config"
    folder.mkdir()
    (folder / "jupyter_ai_ci_config.py").write_text(
        "c.AICISettings.retries = 0\nc.AICISettings.model = 'shared-model'\n")
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(folder))
    ip.run_line_magic("config", "AskMagics.model = 'mine'")  # the magic's own config wins
    model_server.script(py("x = 1/0"), py("x = 1"))
    result = ip.run_cell("%%ask\nset x", store_history=True)
    assert isinstance(result.error_in_exec, RetriesExhausted) and result.error_in_exec.attempts == 1
    assert [r["model"] for r in model_server.requests] == ["mine"]


def test_a_bad_value_in_the_shared_config_file_is_one_line(
        ip: Any, model_server: ScriptedOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "jupyter_ai_ci_config.py").write_text("c.AICISettings.retries = -1\n")
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(tmp_path))
    result = ip.run_cell("%%ask\nset x", store_history=True)
    error = result.error_in_exec
    assert type(error).__name__ == "UsageError" and str(error).startswith("jupyter_ai_ci_config.py: "), error
    assert model_server.requests == []
