"""How long a built page takes to read: its prose words at 230 words a minute.

Why: a chapter's main page is meant to be read through by a DBA in at most :data:`MAIN_PAGE_MINUTES` minutes
(issue 31), and only the built HTML says what a reader actually gets (glued numbers, generated sentences,
tables).  "Prose" is every word in the page's article a reader reads: sentences, headings, captions, table
cells and notes.  Left out: code (cell inputs, code blocks, scripts), the heading anchors, and tokens without a
letter (a bare number is looked up, not read).  Reading speed: 230 words a minute, the figure the issue uses.

    python -m contention_book.harness.reading            # every chapter page of book/_build/html
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

WORDS_PER_MINUTE = 230
MAIN_PAGE_MINUTES = 15
_WORD = re.compile(r"[^\W\d_]")  # a token with at least one letter


def prose_words(html: str) -> int:
    """The number of prose words in a built page's article (the whole page when it has no article)."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html, "html.parser")
    main = soup.select_one("article.bd-article") or soup.select_one("main") or soup
    for el in main.select("script, style, pre, div.cell_input, .headerlink"):
        el.decompose()
    return sum(1 for token in main.get_text(" ").split() if _WORD.search(token))


def reading_minutes(page: Path) -> float:
    return prose_words(page.read_text(encoding="utf-8")) / WORDS_PER_MINUTE


def empty_sections(html: str) -> list[str]:
    """The headings of a built page's sections that hold nothing of their own: a heading followed directly by another
    heading (a subsection) or by nothing at all.  Content is any text, image, figure or table outside the heading and
    the subsections; an empty cell container (a code cell whose output a recording left empty) is not content."""
    from bs4 import BeautifulSoup, NavigableString

    soup = BeautifulSoup(html, "html.parser")
    main = soup.select_one("article.bd-article") or soup.select_one("main") or soup
    empty = []
    for section in main.find_all("section"):
        heading = section.find(re.compile(r"^h[1-6]$"), recursive=False)
        if heading is None:
            continue
        own = [c for c in section.children if c is not heading and getattr(c, "name", None) != "section"]
        filled = any(c.strip() if isinstance(c, NavigableString) else
                     (c.get_text(strip=True) or c.find(["img", "svg", "table", "figure", "iframe"]) is not None
                      or c.name in ("img", "svg", "table", "figure", "iframe")) for c in own)
        if not filled:
            text = heading.get_text(" ", strip=True).removesuffix("#").strip()
            empty.append(text)
    return empty


def chapter_pages(html_dir: Path) -> dict[str, Path]:
    """The chapters' main pages (``chapters/NN-name.html``), details pages left out."""
    return {p.stem: p for p in sorted((html_dir / "chapters").glob("[0-9][0-9]-*.html"))
            if not p.stem.endswith("-details")}


def main(argv: list[str] | None = None) -> int:
    from .recording import repo_root

    html_dir = Path((argv or sys.argv[1:] or [repo_root() / "book" / "_build" / "html"])[0])
    for name, page in chapter_pages(html_dir).items():
        details = page.with_name(f"{name}-details.html")
        extra = f", details page {reading_minutes(details):.1f} min" if details.exists() else ""
        print(f"{name}: {prose_words(page.read_text(encoding='utf-8')):,} words, "
              f"{reading_minutes(page):.1f} min{extra}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
