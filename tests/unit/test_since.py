"""What a follow-up is told of the notebook: only what changed since the request before it,
after that request's own conversation (context/since.py)."""

from __future__ import annotations

import pandas as pd

from jupyter_ai_ci.context.build import NOTHING_LOADED, CellRecord, Context, fit_context
from jupyter_ai_ci.context.since import CHANGED, UNCHANGED, changes, follows
from jupyter_ai_ci.config import AICISettings
from jupyter_ai_ci.events import Cell, ExecutionResult, Message, Outcome
from jupyter_ai_ci.run.session import Session

FILES = [("sales.csv", "sales.csv: 40 rows; columns price:float64, region:object")]
LOAD = "import pandas as pd\ndf = pd.read_csv('sales.csv')\nprint(df['price'].mean())"


def first() -> Context:
    return fit_context("Load sales.csv into df and print the mean price", [], [], 3000, files=FILES,
                       environment=["Python 3.11"])


def after_it(output: str = "12.5") -> Context:
    df = pd.DataFrame({"price": [10.0, 15.0], "region": ["n", "s"]})
    return fit_context("Now print the median price of df", [("df", df)], [CellRecord(LOAD, output, label="In [1]")],
                       3000, files=FILES, environment=["Python 3.11", "pandas 2.2"])


def sent(reply: str, *more: Message) -> list[Message]:
    return [Message("system", "rules"), Message("user", first().text + "\n## Request\nLoad …"),
            Message("assistant", reply), *more]


def test_a_context_says_its_pieces_in_the_order_it_writes_them() -> None:
    ctx = after_it()
    assert ctx.pieces and all(text in ctx.text for _, text in ctx.pieces)
    positions = [ctx.text.index(text) for _, text in ctx.pieces]
    assert positions == sorted(positions)
    assert {title for title, _ in ctx.pieces} >= {"### Data files in the working directory", "### Environment"}


def test_only_the_pieces_the_earlier_request_was_not_shown_are_told() -> None:
    told = changes(first(), after_it(), sent(f"```python\n{LOAD}\n```"))
    assert told.startswith(CHANGED)
    assert "sales.csv: 40 rows" not in told and "Python 3.11" not in told  # read already
    assert "### Environment\npandas 2.2" in told  # new, under its section's title
    assert "df: pandas.DataFrame 2 rows × 2 columns" in told and "price:float64" in told
    assert "In [1]" in told  # the cell's output was never shown to the model: it is told


def test_a_cell_whose_code_and_output_the_conversation_holds_is_not_told_again() -> None:
    shown = Message("user", "The code ran without error. Its output:\n```\n12.5\n```")
    told = changes(first(), after_it(), sent(f"```python\n{LOAD}\n```", shown, Message("assistant", "12.5.")))
    assert "In [1]" not in told and "df: pandas.DataFrame" in told
    # The same code with another output than the one shown: told.
    assert "In [1]" in changes(first(), after_it("13.0"), sent(f"```python\n{LOAD}\n```", shown))


def test_nothing_new_says_so() -> None:
    assert changes(first(), first(), sent("no code")) == f"{UNCHANGED}\n{NOTHING_LOADED}"


def test_a_follow_up_over_the_limit_or_without_pieces_is_sent_whole() -> None:
    conversation = sent(f"```python\n{LOAD}\n```")
    assert follows(conversation, first(), after_it(), 3000) is not None
    assert follows(conversation, first(), after_it(), 20) is None  # the limit holds the whole prompt
    bare = Context(first().text, (), 0, 3000, "chars")  # from a kernel that does not say its pieces
    assert follows(conversation, bare, after_it(), 3000) is None
    assert follows(conversation, first(), Context(after_it().text, (), 0, 3000, "chars"), 3000) is None


def test_a_hint_is_said_again_next_to_the_request() -> None:
    # With data files and no pd in the kernel, a full context ends with a hint to import pandas.
    bare = fit_context("total units", [], [], 3000, files=FILES, pandas_bound=False)
    later = fit_context("sum the units", [("units_seen", 1)], [], 3000, files=FILES, pandas_bound=False)
    told = changes(bare, later, [])
    assert "starts with `import pandas as pd`" in bare.text and told.rstrip().endswith(
        "starts with `import pandas as pd`")
    assert "units_seen: int = 1" in told


# ---- the session keeps the last request as it was sent (run/session.py) ----

def outcome(code: str, reply: str, requests: int = 1) -> Outcome:
    messages = (Message("system", "rules"), Message("user", "ctx\n## Request\nload it"), Message("assistant", reply))
    return Outcome("success", cells=(Cell(code, 1, ExecutionResult()),), messages=messages, requests=requests)


def test_a_follow_up_goes_after_the_request_as_it_was_sent_until_the_conversation_is_cleared() -> None:
    session = Session(AICISettings())
    session.remember("nb", "load it", outcome("import pandas as pd\nx = 1", "```python\nx = 1\n```"), first())
    text, history = session.opening("nb", after_it())
    assert [m.role for m in history] == ["user", "assistant"] and history[1].content == "```python\nx = 1\n```"
    assert text.startswith(CHANGED)
    session.conversation("nb").clear()  # New chat, --new
    assert session.opening("nb", after_it()) == (after_it().text, after_it().history)


def test_a_run_whose_code_is_not_in_its_conversation_or_that_asked_nothing_is_not_followed() -> None:
    session = Session(AICISettings())
    session.remember("nb", "load it", outcome("x = 2", "```python\nx = 1\n```"), first())  # a vote's other winner
    assert session.followed("nb") is None
    session.remember("nb", "load it", outcome("x = 1", "```python\nx = 1\n```", requests=0), first())  # replayed
    assert session.followed("nb") is None
    session.remember("nb", "load it", outcome("x = 1", "```python\nx = 1\n```"), first())
    assert session.followed("nb") is not None
    session.forget("nb", "load it")  # undone
    assert session.followed("nb") is None


def test_a_list_that_only_grew_is_told_as_what_it_gained() -> None:
    loaded = "Libraries loaded (a cell must still import what it uses): "
    before = fit_context("a", [], [], 3000, environment=[loaded + "numpy 2.4", "Python 3.11"])
    grown = fit_context("b", [], [], 3000, environment=[loaded + "pandas 3.1, numpy 2.4, pyarrow 26", "Python 3.11"])
    assert f"{loaded[:-2]}, new since the last request: pandas 3.1, pyarrow 26" in changes(before, grown, [])
    other = fit_context("b", [], [], 3000, environment=[loaded + "pandas 3.1", "Python 3.11"])  # numpy is gone
    assert loaded + "pandas 3.1" in changes(before, other, [])


def test_a_cells_full_form_is_read_back_as_it_was_written() -> None:
    from jupyter_ai_ci.context.build import _cell_forms, cell_parts

    assert cell_parts(_cell_forms(CellRecord(LOAD, "12.5\n13", label="In [1]"), ())[0]) == (LOAD, "12.5\n13")
    assert cell_parts(_cell_forms(CellRecord("x = 1", ""), ())[0]) == ("x = 1", "")
    assert cell_parts(_cell_forms(CellRecord("# notes", "", kind="markdown"), ())[0]) is None
