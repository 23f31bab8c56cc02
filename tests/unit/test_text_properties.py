"""Property tests: code extraction and output truncation hold for any input."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from jupyter_ai_ci.executors.capture import CappedText
from jupyter_ai_ci.text import _parses, clean, extract_code_blocks, head_tail, python_blocks

# Code lines that cannot be mistaken for a fence.
code_line = st.text(st.characters(blacklist_characters="`~\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029",
                                  blacklist_categories=("Cs",)), max_size=40)
code = st.lists(code_line, min_size=1, max_size=8).map("\n".join)
prose = st.lists(code_line, max_size=3).map("\n".join)
language = st.sampled_from(["python", "py", "", "bash", "sql", "ipython3"])


@given(st.lists(st.tuples(prose, language, code), max_size=5), prose)
def test_blocks_come_back_verbatim_and_in_order(parts: list[tuple[str, str, str]], tail: str) -> None:
    text = "".join(f"{p}\n```{lang}\n{c}\n```\n" for p, lang, c in parts) + tail
    blocks = extract_code_blocks(text)
    assert [(b.language, b.code) for b in blocks] == [(lang, c) for _, lang, c in parts]
    tagged = [c for _, lang, c in parts if lang in ("python", "py", "ipython3") and c.strip()]
    untagged = [c for _, lang, c in parts if lang == "" and c.strip() and _parses(c)]
    assert python_blocks(text) == (tagged or untagged)


@given(code)
def test_an_unterminated_fence_keeps_its_code(body: str) -> None:
    # A cut reply loses only its trailing newlines.
    assert extract_code_blocks(f"text\n```python\n{body}")[-1].code.rstrip("\n") == body.rstrip("\n")


@given(st.text())
def test_extraction_never_fails(text: str) -> None:
    for block in extract_code_blocks(text):
        assert block.code in text or block.code == ""


@given(st.text(), st.integers(min_value=0, max_value=5000))
def test_head_tail_bounds_and_keeps_both_ends(text: str, limit: int) -> None:
    out = head_tail(text, limit)
    if limit <= 0 or len(text) <= limit:
        assert out == text
        return
    assert len(out) <= max(limit, 62) + len(str(len(text))) and "characters cut" in out
    keep = max(limit - 60, 2)
    assert out.startswith(text[: keep * 2 // 3]) and out.endswith(text[len(text) - (keep - keep * 2 // 3):])


@settings(max_examples=200)
@given(st.lists(st.text(max_size=300), max_size=60), st.integers(min_value=2, max_value=400))
def test_capped_text_is_bounded_and_exact_when_small(chunks: list[str], limit: int) -> None:
    capped = CappedText(limit)
    for chunk in chunks:
        capped.write(chunk)
    whole = "".join(chunks)
    out = capped.getvalue()
    assert capped.total == len(whole)
    half = max(limit // 2, 1)
    if len(whole) <= 2 * half:
        assert out == whole
    elif "characters cut" not in out:
        assert out == whole and len(whole) <= 2 * half + 300  # nothing had to go yet
    else:
        assert out.startswith(whole[:half]) and out.endswith(whole[-half:])
        assert f"{len(whole) - 2 * half} characters cut" in out
        assert len(out) <= 2 * half + 40 + len(str(len(whole)))
    # Memory stays bounded whatever was written.
    assert sum(map(len, capped.head)) <= half and sum(map(len, capped.tail)) <= 2 * half + 300


@given(st.text())
def test_clean_always_gives_sendable_text(text: str) -> None:
    out = clean(text)
    out.encode("utf-8")  # never raises
    if "\x1b" not in text:
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            assert "\\x" in out or "\\u" in out  # the stray bytes are shown, not dropped
        else:
            assert out == text
