from __future__ import annotations

import re

from jupyter_ai_ci.context.privacy import masked_cut
from jupyter_ai_ci.executors.capture import CappedText
from jupyter_ai_ci.text import cut_size, extract_code_blocks, head_tail, python_blocks, strip_ansi


def test_python_blocks_in_order_other_languages_skipped() -> None:
    reply = "First:\n```python\na = 1\n```\nShell:\n```bash\nls\n```\n~~~py\nc = 3\n~~~\n"
    assert python_blocks(reply) == ["a = 1", "c = 3"]
    assert [b.language for b in extract_code_blocks(reply)] == ["python", "bash", "py"]


def test_untagged_blocks_are_output_beside_tagged_code_and_code_alone_if_they_parse() -> None:
    # What SmolLM2 really wrote: the expected output in an untagged fence after the code.
    reply = "```python\nprint(1 + 1)\n```\nOutput:\n```\nTotal revenue per region: 2.5\n```\n"
    assert python_blocks(reply) == ["print(1 + 1)"]
    assert python_blocks("Run this:\n```\nx = 2\nx * 3\n```\n") == ["x = 2\nx * 3"]
    assert python_blocks("It prints:\n```\nTotal revenue per region: 2.5\n```\n") == []


def test_longer_fences_and_nested_backticks() -> None:
    reply = "````python\ns = '''\n```\n'''\n````\n"
    assert python_blocks(reply) == ["s = '''\n```\n'''"]


def test_unterminated_block_still_counts() -> None:
    assert python_blocks("```python\nx = 1\ny = 2") == ["x = 1\ny = 2"]


def test_no_code_and_empty_blocks() -> None:
    assert python_blocks("Just prose, `inline` code.") == []
    assert python_blocks("```python\n\n```") == []


def test_strip_ansi() -> None:
    assert strip_ansi("\x1b[0;31mValueError\x1b[0m: bad\x1b]0;title\x07") == "ValueError: bad"


def test_head_tail_marks_the_cut() -> None:
    text = "A" * 1000 + "B" * 1000
    cut = head_tail(text, 300)
    assert cut.startswith("A") and cut.endswith("B") and "characters cut" in cut
    assert len(cut) <= 300 + 10
    assert head_tail("short", 300) == "short"


def test_a_cut_of_a_cut_text_counts_what_the_first_cut_removed() -> None:
    # Found by hand: the panel sends a 3.3 MB output as 4,000 characters from each end; the
    # server cut that again and told the model "… 1,240 characters cut …", not ~3.3 million.
    original = "".join(f"row {i}: {'x' * 40}\n" for i in range(80_000))
    panel = f"{original[:4000]}\n… {len(original) - 8000} characters cut …\n{original[-4000:]}"  # headTail
    for out in (head_tail(panel, 3000), masked_cut(panel, 300), masked_cut(original, 300)):
        head, mark, tail = re.split(r"\n… (\d+) characters cut …\n", out)
        assert original.startswith(head) and original.endswith(tail)
        assert int(mark) == len(original) - len(head) - len(tail), (int(mark), len(original))
    assert cut_size("\n… 12 characters cut …\n") == 12 and cut_size("abc") == 3


def test_a_second_cut_never_keeps_half_of_the_first_one_s_marker() -> None:
    # Found by a newcomer with max_output_chars = 300: the model read "…line 19\n\n… 8590 ch\n… 85
    # characters cut …\nine 991".
    original = "".join(f"line {i}\n" for i in range(1000))
    first = f"{original[:150]}\n… {len(original) - 300} characters cut …\n{original[-150:]}"
    for limit in range(100, len(first)):
        out = head_tail(first, limit)
        marks = re.findall(r"\n… (\d+) characters cut …\n", out)
        assert len(marks) == 1 and " ch" not in out.replace(" characters cut", ""), (limit, out)
        head, tail = re.split(r"\n… \d+ characters cut …\n", out)
        assert int(marks[0]) == len(original) - len(head) - len(tail), limit


def test_capped_text_keeps_head_and_tail_with_flat_memory() -> None:
    c = CappedText(100)
    for i in range(100_000):
        c.write(f"line {i}\n")
    value = c.getvalue()
    assert value.startswith("line 0\n") and value.endswith("line 99999\n")
    assert "characters cut" in value and len(value) < 200
    assert sum(len(t) for t in c.tail) < 200
