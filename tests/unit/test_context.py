from __future__ import annotations

import numpy as np
import pandas as pd

from jupyter_ai_ci.context.build import CellRecord, build_context, describe, fit_context, user_variables
from jupyter_ai_ci.events import Message
from jupyter_ai_ci.tokens import count_tokens


class Hostile:
    def __repr__(self) -> str:
        raise RuntimeError("no repr for you")

    @property
    def shape(self) -> tuple[int, int]:
        raise RuntimeError("no shape either")


def _tokens(ctx: object) -> int:
    from jupyter_ai_ci.context.build import Context

    assert isinstance(ctx, Context)
    return count_tokens(ctx.text) + sum(count_tokens(m.content) for m in ctx.history)


def test_dataframe_named_in_request_gets_columns_and_dtypes() -> None:
    sales = pd.DataFrame({"region": ["n", "s"], "revenue": [1.5, 2.0]})
    ctx = build_context("plot revenue per region from sales", [("sales", sales)], [], 1000)
    assert "sales: pandas.DataFrame 2 rows × 2 columns [region:" in ctx
    assert "revenue:float64" in ctx


def test_frames_whose_columns_the_request_names_are_described_in_full() -> None:
    sales = pd.DataFrame({"Region": ["n"], "revenue": [1.5]})
    people = pd.DataFrame({"name": ["a"], "age": [3]})
    variables = [("people", people), ("sales", sales)]
    ctx = build_context("average revenue per region", variables, [], 1000)
    others, _, named = ctx.partition("### Variables the request is about")
    assert "sales: pandas.DataFrame 1 rows × 2 columns [Region:" in named and "revenue:float64" in named
    assert "people: pandas.DataFrame 1 rows × 2 columns [name, age]" in others
    # Naming nothing: the newest DataFrame is the likely subject of "plot it".
    assert "people: pandas.DataFrame 1 rows × 2 columns [name:" in build_context("plot it", variables, [], 1000)


def test_descriptions_are_bounded_and_never_fail() -> None:
    assert describe("h", Hostile()).startswith("h:")
    big = np.zeros((10_000, 1_000), dtype=np.float32)
    assert describe("big", big) == "big: numpy.ndarray shape=(10000, 1000) dtype=float32"
    assert len(describe("s", "x" * 1_000_000)) < 200


def test_secrets_are_masked_everywhere() -> None:
    ns = {"api_key": "hunter2-the-key", "msg": "use sk-abcdefghijklmnopqrstuvwxyz123456 here"}
    cells = [CellRecord("api_key = 'hunter2-the-key'\nprint(api_key)", "hunter2-the-key"),
             CellRecord("token = getpass()", "")]
    conversation = [Message("user", "use my key"), Message("assistant", "```python\nprint('hunter2-the-key')\n```")]
    ctx = fit_context("go", user_variables(ns), cells, 1000, conversation=conversation,
                      secrets=("hunter2-the-key",))
    sent = ctx.text + "".join(m.content for m in ctx.history)
    assert "hunter2" not in sent and "sk-abcdefghijklmnop" not in sent
    assert "api_key" in sent and "print(api_key)" in sent and "print('***')" in sent


def test_modules_private_names_skipped_newest_first() -> None:
    import os

    ns = {"os": os, "_hidden": 1, "first": 1, "second": 2, "In": [], "Out": {}}
    assert [n for n, _ in user_variables(ns)] == ["second", "first"]


def test_recency_and_exclude() -> None:
    ns = {"a": 1, "b": 2, "c": 3, "raw_x": 4, "customers": 5}
    order = user_variables(ns, exclude=["raw_*", "customers"], recency={"a": 5, "c": 2})
    assert [n for n, _ in order] == ["a", "c", "b"]


def test_budget_holds_and_recent_cells_are_kept() -> None:
    cells = [CellRecord(f"x{i} = {i}", f"out {i}") for i in range(1000)]
    variables = [(f"v{i}", i) for i in range(500)]
    ctx = fit_context("go", variables, cells, 300)
    assert ctx.tokens <= 300 and _tokens(ctx) <= 300
    assert ctx == fit_context("go", variables, cells, 300)  # deterministic
    # The newest cells are the ones kept, written in the order they ran after a note of the rest.
    assert "x0 = 0" not in ctx.text
    assert ctx.text.index("more not shown") < ctx.text.index("x998 = 998") < ctx.text.index("x999 = 999")


def test_older_cells_are_summarised_by_a_line() -> None:
    long_cell = "\n".join(f"step_{i} = compute({i})" for i in range(60))
    cells = [CellRecord(long_cell, "done " * 300, label=f"In [{i}]") for i in range(1, 30)]
    ctx = fit_context("go", [], cells, 1500)
    assert "[In [29]]\n```python\nstep_0 = compute(0)" in ctx.text  # the newest in full
    assert "[In [10] code] step_0 = compute(0) … (60 lines)" in ctx.text  # older ones a line each
    assert ctx.text.count("… (60 lines)") >= 20


def test_conversation_survives_a_long_notebook_and_is_cut_oldest_first() -> None:
    cells = [CellRecord("y = " + "1 + " * 400 + "1", "2" * 500) for _ in range(300)]
    turns = []
    for i in range(3):
        turns += [Message("user", f"request {i}"), Message("assistant", f"```python\nanswer_{i} = {i}\n" + "#" * 900)]
    for budget in (800, 2000, 3000):
        ctx = fit_context("now plot it", [], cells, budget, conversation=turns)
        assert ctx.history[-2].content == "request 2" and "answer_2 = 2" in ctx.history[-1].content
        assert [m.role for m in ctx.history] == ["user", "assistant"] * (len(ctx.history) // 2)
        assert ctx.tokens <= budget and _tokens(ctx) <= budget
        assert "[cell]" in ctx.text or budget < 1000  # the newest cell in full, when there is room
    small = fit_context("now plot it", [], cells, 800, conversation=turns)
    large = fit_context("now plot it", [], cells, 3000, conversation=turns)
    assert len(small.history) == 2 and "characters cut" in small.history[-1].content
    assert len(large.history) == 6 and "#" * 900 in large.history[-1].content  # the newest exchange whole


def test_previous_answer_names_its_variables_in_full() -> None:
    monthly = pd.DataFrame({"month": [1], "total": [2.0]})
    turns = [Message("user", "total per month"), Message("assistant", "```python\nmonthly = f(sales)\n```")]
    ctx = build_context("now plot it", [("monthly", monthly)], [], 1000, conversation=turns)
    assert "monthly: pandas.DataFrame 1 rows × 2 columns [month:int64, total:float64]" in ctx


def test_environment_is_written_after_the_files_and_taken_last() -> None:
    env = ["Python 3.11.7 on linux", "Imported: pandas 2.2.0"]
    files = [("a.csv (1 KB, 3 rows)\n  columns: x: int64", "a.csv (1 KB)")]
    ctx = fit_context("go", [("a", 1)], [], 500, environment=env, files=files, files_total=1)
    assert "a.csv (1 KB, 3 rows)\n  columns: x: int64\n### Environment\nPython 3.11.7 on linux\nImported: pandas" \
        in ctx.text
    assert ctx.text.index("### Environment") < ctx.text.index("### Other variables")
    # Short of room, it is the piece left out first.
    tight = fit_context("go", [("a", 1)], [], 40, environment=env, files=files, files_total=1)
    assert "columns: x: int64" in tight.text and "Environment" not in tight.text


def test_written_steadiest_first_so_a_model_server_reuses_the_shared_prefix() -> None:
    # Files and cells as a notebook has them; two requests about different files, the second
    # after one more cell ran.  The first request's text up to its variables is a prefix of the
    # second's, whatever the requests name: the server's prompt cache covers it.
    files = [("a.csv (1 KB, 3 rows)\n  columns: x: int64", "a.csv (1 KB)"),
             ("b.csv (1 KB, 3 rows)\n  columns: y: int64", "b.csv (1 KB)")]
    cells = [CellRecord("import pandas as pd", ""), CellRecord("a = pd.read_csv('a.csv')", "")]
    env = ["Python 3.11 on linux"]
    variables = [("a", pd.DataFrame({"x": [1]}))]
    first = fit_context("sum x in a.csv", variables, cells, 3000, files=files, files_total=2, environment=env).text
    named_first = fit_context("sum y in b.csv", variables, cells, 3000, files=list(reversed(files)),
                              files_total=2, environment=env).text
    steady = first.split("### Variables the request is about")[0]
    assert named_first.startswith(steady.split("### Recent cells")[0])
    assert steady.index("a.csv (1 KB, 3 rows)") < steady.index("b.csv (1 KB, 3 rows)")
    later = fit_context("sum x in a.csv", variables, [*cells, CellRecord("a.x.sum()", "6")], 3000, files=files,
                        files_total=2, environment=env).text
    assert later.startswith(first.split("### Variables the request is about")[0].rstrip("\n"))
    # The cells as they ran, oldest first; the request's subject and its error last.
    assert later.index("import pandas as pd") < later.index("a = pd.read_csv") < later.index("a.x.sum()") \
        < later.index("### Variables the request is about")


def test_files_and_no_variable_say_that_nothing_is_loaded() -> None:
    files = [("a.csv (1 KB, 3 rows)\n  columns: x: int64", "a.csv (1 KB)")]
    empty = fit_context("sum x of a.csv", [], [], 3000, files=files, files_total=1).text
    assert empty.endswith("### Variables\nnone: no file above is loaded yet")
    assert "no file above" not in fit_context("sum x", [("a", 1)], [], 3000, files=files, files_total=1).text
    assert fit_context("sum x", [], [], 3000).text == ""  # no files: nothing to say
    # No pandas in the kernel: said last, next to the request; never without files to read.
    bare = fit_context("sum x of a.csv", [("a", 1)], [], 3000, files=files, files_total=1, pandas_bound=False).text
    assert bare.endswith("starts with `import pandas as pd`") and "no file above" not in bare
    assert "import pandas" not in fit_context("sum x", [], [], 3000, pandas_bound=False).text
