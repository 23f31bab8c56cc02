"""Candidates that must agree (#28), in a real IPython shell against the scripted HTTP model.

Each candidate really runs in the shell and is really rolled back: what one changes in place is
not seen by the next, the winner's code is applied once, code with lasting effects runs once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from jupyter_ai_ci.testing import Reply, ScriptedOpenAIServer

SETUP = ("import pandas as pd\nsurvey = pd.DataFrame({'answer': ['yes', 'Yes', 'no', 'YES', 'no'], "
         "'x': [1, 2, 3]  + [4, 5]})\napplied = []")


def py(code: str) -> str:
    return f"Sure.\n```python\n{code}\n```\n"


def ask(ip: Any, request: str, flags: str = "--candidates 3") -> Any:
    flags += " --no-answer"
    ip.run_cell(SETUP, store_history=True)
    return ip.run_cell(f"%%ask {flags}\n{request}", store_history=True)


def test_two_that_agree_stop_early_and_the_second_is_applied_once(
        ip: Any, model_server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]) -> None:
    model_server.script(
        py("applied.append('first')\n(survey['answer'].str.lower() == 'yes').sum()"),
        py("applied.append('second')\nint(survey['answer'].str.lower().eq('yes').sum())"),
    )
    assert ask(ip, "How many answered yes in survey, whatever the case?").success
    out = capsys.readouterr().out
    assert "◆ candidate 1 of 3: 3 — checking…" in out
    assert "◆ candidate 2 of 3: 3 — agrees with 1" in out
    assert "✓ done · 2 of 2 candidates agree" in out
    assert len(model_server.requests) == 2  # stopped early: the third was never asked
    first, second = model_server.requests
    assert first.get("temperature", 0) == 0 and second["temperature"] == 0.7  # the others are sampled
    # The candidate asked anew sees the request, not the first candidate's code.
    assert "applied.append('first')" not in model_server.request_texts()[1]
    # The first was rolled back, the second committed: applied once, nothing ran twice.
    assert ip.user_ns["applied"] == ["second"]
    assert "applied.append('second')" in ip.rl_next_input


def test_candidates_that_disagree_are_shown_never_as_a_tick(
        ip: Any, model_server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]) -> None:
    model_server.script(
        py("applied.append(76)\n76"),
        py("applied.append(36)\n36"),
        py("applied.append(12)\nprint(12)"),
    )
    result = ask(ip, "How many answered yes in survey?")
    assert result.success  # the code ran: the cell does not fail, it says it is not sure
    out = capsys.readouterr().out
    assert "⚠ candidates disagree: 76 (1 of 3) vs 36 vs 12" in out
    assert "✓ done" not in out
    # No majority: the first candidate (asked at the user's temperature) is applied, once, run again.
    assert ip.user_ns["applied"] == [76]
    assert ip.rl_next_input.startswith("applied.append(76)")
    ip.run_line_magic("ask_usage", "")
    usage = capsys.readouterr().out
    assert "candidates" in usage.splitlines()[0] and "disagree 1/3" in usage and "0 of 1 sure" in usage
    outcome = ip.find_magic("ask").__self__.driver().last_outcome
    groups = outcome.consensus.groups
    assert [(g.shown, g.candidates) for g in groups] == [("76", (1,)), ("36", (2,)), ("12", (3,))]
    assert groups[1].code == ("applied.append(36)\n36",)  # what "use this one" would apply


def test_the_majority_wins_and_the_last_candidate_is_committed_when_it_is_of_it(
        ip: Any, model_server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]) -> None:
    model_server.script(py("applied.append(1)\n36"), py("applied.append(2)\n76"), py("applied.append(3)\n76.0"))
    assert ask(ip, "How many answered yes in survey?").success
    out = capsys.readouterr().out
    assert "⚠ candidates disagree: 76.0 (2 of 3) vs 36" in out  # the applied one's result
    assert ip.user_ns["applied"] == [3]  # committed where it stood: not run again
    assert len(model_server.requests) == 3


def test_the_other_candidates_come_in_one_request_with_n_the_prompt_paid_once(
        ip: Any, model_server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]) -> None:
    # The scripted server answers n as OpenAI or vLLM does: the reply's alternatives are choices 1..
    model_server.script(py("applied.append(1)\n76"),
                        Reply(py("applied.append(2)\n36"), alternatives=(py("applied.append(3)\n76.0"),)))
    assert ask(ip, "How many answered yes in survey?").success
    out = capsys.readouterr().out
    assert len(model_server.requests) == 2
    first, second = model_server.requests
    assert "n" not in first and second["n"] == 2 and second["temperature"] == 0.7
    assert "candidate 2 of 3: 36 — differs" in out
    # The second choice, never streamed, is shown before it runs, as a reply would be.
    assert "another candidate, from the same reply ──\nSure.\n```python\napplied.append(3)" in out
    assert "candidate 3 of 3: 76.0 — agrees with 1" in out
    assert "⚠ candidates disagree: 76.0 (2 of 3) vs 36" in out
    assert ip.user_ns["applied"] == [3]  # each candidate rolled back before the next: the last one committed
    outcome = ip.find_magic("ask").__self__.driver().last_outcome
    assert outcome.requests == 2


def test_an_endpoint_that_gives_fewer_choices_than_asked_is_asked_again_for_the_rest(
        ip: Any, model_server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]) -> None:
    # Asked for 2, it gives 1 (an endpoint that ignores n): the third candidate is a request of its own.
    model_server.script(py("applied.append(1)\n76"), py("applied.append(2)\n36"), py("applied.append(3)\n12"))
    assert ask(ip, "How many answered yes in survey?").success
    out = capsys.readouterr().out
    assert [r.get("n") for r in model_server.requests] == [None, 2, None]  # the last asks for the one missing
    assert "candidate 3 of 3: 12 — differs" in out and "from the same reply" not in out
    assert "⚠ candidates disagree: 76 (1 of 3) vs 36 vs 12" in out


def test_an_endpoint_that_refuses_n_is_asked_again_for_one_choice_and_never_sent_n_again(
        ip: Any, model_server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]) -> None:
    from jupyter_ai_ci.model import dialect

    model_server.max_n = 1  # "'n' : number must be at most 1", as Groq answers n = 2
    model_server.script(py("applied.append(1)\n76"), py("applied.append(2)\n36"), py("applied.append(3)\n76.0"))
    try:
        assert ask(ip, "How many answered yes in survey?").success
        out = capsys.readouterr().out
        # The refused request is asked again for one choice, at once; the next candidate never asks n.
        assert [r.get("n") for r in model_server.requests] == [None, 2, None, None]
        assert "must be at most" not in out and "cannot reach" not in out
        assert "⚠ candidates disagree: 76.0 (2 of 3) vs 36" in out
        assert ip.user_ns["applied"] == [3]
        model_server.script(py("applied.append(4)\n5"), py("applied.append(5)\n5"))
        assert ask(ip, "How many rows has survey?", "--candidates 2").success
        assert [r.get("n") for r in model_server.requests] == [None, None]  # remembered for the process
        assert "✓ done · 2 of 2 candidates agree" in capsys.readouterr().out
    finally:
        dialect.forget()  # the shared server's address is asked anew by the next test


def test_a_candidate_that_changes_directory_is_undone_before_the_next(
        ip: Any, model_server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "sub").mkdir()
    for name in ("a.csv", "b.csv"):
        (tmp_path / "sub" / name).write_text("x\n1\n")
    monkeypatch.chdir(tmp_path)  # the test process's own: restored whatever happens
    model_server.script(py("import os\nos.chdir('sub')\nlen(os.listdir('.'))"),
                        py("import os\nlen(os.listdir('sub'))"))  # raises if run from inside sub
    assert ask(ip, "How many files are in sub?", "--candidates 3 --yes").success
    out = capsys.readouterr().out
    assert "candidate 2 of 3: 2 — agrees with 1" in out and "✓ done · 2 of 2 candidates agree" in out
    assert "has side effects" not in out  # a change of directory is undone: the vote goes on
    assert Path.cwd() == tmp_path


def test_a_candidate_that_changes_a_frame_in_place_is_undone_before_the_next(
        ip: Any, model_server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]) -> None:
    doubling = py("survey['x'] = survey['x'] * 2\nsurvey['x'].sum()")
    model_server.script(doubling, doubling)
    assert ask(ip, "Double x in survey and give its total").success
    out = capsys.readouterr().out
    # Had the first stayed, the second would have doubled the doubled column: 60, not 30.
    assert "candidate 2 of 3: 30 — agrees with 1" in out
    assert list(ip.user_ns["survey"]["x"]) == [2, 4, 6, 8, 10]  # doubled once


def test_a_candidate_that_raises_or_gives_no_code_is_not_counted(
        ip: Any, model_server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]) -> None:
    model_server.script(py("3"), py("1/0"), "It is 3.", py("answer = 3"))
    assert ask(ip, "How many answered yes in survey?", "--candidates 4 --retries 0").success
    out = capsys.readouterr().out
    assert "candidate 2 of 4 raised ZeroDivisionError" in out and "not counted" in out
    assert "candidate 3 of 4 gave no code: not counted" in out
    # The last set a variable and showed nothing: its value, read in the kernel, is compared.
    assert "candidate 4 of 4: 3 — agrees with 1" in out
    assert "✓ done · 2 of 2 candidates agree (2 more did not run cleanly)" in out
    assert ip.user_ns["answer"] == 3


def test_a_candidate_that_raises_is_asked_anew_with_its_error_and_counts_once_fixed(
        ip: Any, model_server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]) -> None:
    model_server.script(py("(survey['answer'].str.lower() == 'yes').sum()"), py("survey['Answer'].str.lower()"),
                        Reply(py("int(survey['answer'].str.lower().eq('yes').sum())"), require="KeyError"))
    assert ask(ip, "How many answered yes in survey?").success
    out = capsys.readouterr().out
    assert "candidate 2 of 3 raised KeyError: 'Answer'" in out and "asking it anew (2 tries left)" in out
    assert "candidate 2 of 3: 3 — agrees with 1" in out
    fix = model_server.request_texts()[2]
    # The error in words, its line and the hint taken in the kernel, as the first step's fixes get.
    assert "KeyError" in fix and "Did you mean 'answer'?" in fix
    assert model_server.misses == []


def test_code_with_lasting_effects_runs_once_as_one_candidate(
        ip: Any, model_server: ScriptedOpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "report.txt"
    model_server.script(py(f"open({str(target)!r}, 'a').write('row\\n')\nlen(survey)"))
    assert ask(ip, "Write a report line and count the rows", "--candidates 3 --yes").success
    out = capsys.readouterr().out
    assert "✓ done · 1 candidate (has side effects)" in out
    assert target.read_text() == "row\n"  # once
    assert len(model_server.requests) == 1


def test_a_figure_has_nothing_to_compare_and_is_one_candidate(
        ip: Any, model_server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]) -> None:
    model_server.script(py("import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
                           "_ = plt.plot([1, 2])"))
    assert ask(ip, "Plot x of survey").success
    assert "✓ done · 1 candidate (nothing to compare)" in capsys.readouterr().out
    assert len(model_server.requests) == 1


def test_a_replay_applies_the_winner_and_never_votes_again(
        ip: Any, model_server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]) -> None:
    model_server.script(py("applied.append('a')\n3"), py("applied.append('b')\n3.0"))
    assert ask(ip, "How many answered yes in survey?").success
    assert len(model_server.requests) == 2
    capsys.readouterr()
    model_server.script()  # nothing to serve (and no request recorded): a model call would fail the run
    assert ask(ip, "How many answered yes in survey?").success
    out = capsys.readouterr().out
    assert not model_server.requests  # no new call
    assert "replayed" in out and "candidate" not in out
    assert ip.user_ns["applied"] == ["b"]  # the winner's code, once


def test_candidates_out_of_range_are_a_usage_error(ip: Any, model_server: ScriptedOpenAIServer,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    for flags, said in (("--candidates 0", "at least 1"), ("--candidates 12", "at most 9"),
                        ("--candidates two", "a count of candidates or 'auto', not 'two'")):
        result = ask(ip, "count rows", flags)
        assert not result.success
        assert said in str(result.error_in_exec)
    assert not model_server.requests


def test_auto_on_an_endpoint_asks_once_and_names_no_vote(ip: Any, model_server: ScriptedOpenAIServer,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    # 'auto' (the default) checks a question about data on the managed local model alone: here a
    # second candidate would be a second request to a hosted endpoint (tests/unit/test_run.py).
    model_server.script(py("int((survey['answer'].str.lower() == 'yes').sum())"))
    assert ask(ip, "How many answered yes in survey?", "--candidates auto").success
    out = capsys.readouterr().out
    assert len(model_server.requests) == 1 and "candidate" not in out and "✓ done" in out


def test_use_this_one_applies_another_candidate_once_with_no_model_call_and_replays_it(
        ip: Any, model_server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]) -> None:
    model_server.script(py("n = 76\napplied.append(n)\nn"), py("n = 36\napplied.append(n)\nn"),
                        py("n = 12\nprint(n)"))
    assert ask(ip, "How many answered yes in survey?").success
    out = capsys.readouterr().out
    assert "other result: 36 (1 of 3) — %%ask --use 2 applies it" in out
    assert "other result: 12 (1 of 3) — %%ask --use 3 applies it" in out
    model_server.script()  # no model call from here on
    result = ip.run_cell("%%ask --use 2 --no-answer\nHow many answered yes in survey?", store_history=True)
    assert result.success, result.error_in_exec
    out = capsys.readouterr().out
    assert "✓ done · candidate 2 applied, chosen by you" in out
    assert "other result: 76 (1 of 3) — %%ask --use 1 applies it" in out  # and back again
    assert not model_server.requests
    assert ip.user_ns["n"] == 36 and ip.user_ns["applied"] == [76, 36]  # on the kernel as it was: once
    assert ip.rl_next_input == "n = 36\napplied.append(n)\nn"
    # The choice is what replays: a fresh run of the request applies candidate 2's code.
    ip.run_cell("%%ask --no-answer\nHow many answered yes in survey?", store_history=True)
    assert "replayed" in capsys.readouterr().out and not model_server.requests
    assert ip.user_ns["n"] == 36


def test_a_chosen_candidate_that_fails_leaves_the_applied_one_its_cells_and_its_vote(
        ip: Any, model_server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]) -> None:
    """Candidate 2 ran cleanly in the vote, on the state the request found; chosen, it runs on
    top of the applied candidate and raises: rolled back, and nothing of candidate 1 is lost."""
    model_server.script(py("n = 76\napplied.append(n)\nn"),
                        py("assert 'n' not in globals(), 'n is already set'\nn = 36\napplied.append(n)\nn"),
                        py("n = 12\nprint(n)"))
    assert ask(ip, "How many answered yes in survey?").success
    capsys.readouterr()
    applied_cell = ip.rl_next_input
    model_server.script()
    result = ip.run_cell("%%ask --use 2 --no-answer\nHow many answered yes in survey?", store_history=True)
    assert not result.success
    out = capsys.readouterr().out
    assert "candidate 2 (36) failed when applied: AssertionError: n is already set" in out
    assert "that one's cells stay" in out and "Rephrase the request" not in out
    assert "other result: 12 (1 of 3) — %%ask --use 3 applies it" in out  # still offered
    assert ip.user_ns["n"] == 76 and ip.user_ns["applied"] == [76] and ip.rl_next_input == applied_cell
    assert not model_server.requests
    result = ip.run_cell("%%ask --use 3 --no-answer\nHow many answered yes in survey?", store_history=True)
    assert result.success, result.error_in_exec  # the vote is still there to choose from
    assert ip.user_ns["n"] == 12


def test_use_with_no_vote_or_an_unknown_candidate_is_one_line(
        ip: Any, model_server: ScriptedOpenAIServer) -> None:
    result = ip.run_cell("%%ask --use 2\nHow many answered yes in survey?")
    assert "no candidates of this request to choose from" in str(result.error_in_exec)
    model_server.script(py("76"), py("36"), py("12"))
    assert ask(ip, "How many answered yes in survey?").success
    result = ip.run_cell("%%ask --use 5\nHow many answered yes in survey?")
    assert "candidate 5 is not one this request ran cleanly; choose one of 1 (76), 2 (36), 3 (12)" \
        in str(result.error_in_exec)
    assert len(model_server.requests) == 3


def test_an_endpoint_that_fails_mid_vote_ends_the_asking_not_the_run(
        ip: Any, model_server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]) -> None:
    model_server.script(py("applied.append(1)\n3"))  # the second call finds nothing to serve: an HTTP error
    ip.run_line_magic("config", "AskMagics.max_request_retries = 0")
    result = ask(ip, "How many answered yes in survey?")
    assert result.success, result.error_in_exec
    out = capsys.readouterr().out
    assert "no more candidates:" in out and "the vote goes on with those it has" in out
    assert "⚠ done, not confirmed" in out  # one result, nobody to agree with it: not a plain ✓
    assert ip.user_ns["applied"] == [1]  # rolled back before the call, applied again once
    assert "applied.append(1)" in ip.rl_next_input
