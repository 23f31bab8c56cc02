"""Every relative link in the README and docs/ resolves to a file of the repository."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def relative_links(page: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)  # code is not a link
    return [t for t in LINK.findall(text) if not re.match(r"[a-z]+:|#", t)]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_relative_links_resolve(page: Path) -> None:
    broken = [t for t in relative_links(page) if not (page.parent / t.split("#")[0]).exists()]
    assert broken == [], f"{page.relative_to(ROOT)} links to missing files: {broken}"


def test_the_check_sees_links() -> None:
    assert "docs/safety.md" in relative_links(ROOT / "README.md")
