"""A reviewer's look at the built chapters: reading time, and each chapter's first screen as a picture and as text.

    python scripts/page_review.py [--html book/_build/html] [--out docs/review/issue-23/after]

Reading time is the words of a chapter's article body (its prose, tables and captions; not the navigation,
code cells' source or the page's chrome) at 230 words a minute.  The first screen is what a reader sees
at 1400 x 900 px on landing, the size the browser tests use.  Needs the book built and /usr/bin/chromium
for the screenshots (``--no-shots`` gives the reading times alone).
"""
from __future__ import annotations

import argparse
import functools
import http.server
import json
import re
import shutil
import threading
from pathlib import Path

WORDS_PER_MINUTE = 230
ROOT = Path(__file__).resolve().parents[1]


def article_text(html: str) -> str:
    """The words a reader reads in a built page's article body."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html, "html.parser")
    body = soup.select_one("article.bd-article") or soup.select_one("main") or soup
    for junk in body.select("script, style, .headerlink, .cell_input, .prev-next-area, nav"):
        junk.decompose()
    return re.sub(r"\s+", " ", body.get_text(" ")).strip()


def reading_minutes(html: str) -> tuple[int, float]:
    """(words, minutes at :data:`WORDS_PER_MINUTE`) of a built page."""
    words = len(re.findall(r"[\w’'.,%×-]*\w[\w’'.,%×-]*", article_text(html)))
    return words, words / WORDS_PER_MINUTE


def chapter_pages(html_dir: Path) -> list[Path]:
    return sorted((html_dir / "chapters").glob("[0-9][0-9]-*.html"))


def first_screens(html_dir: Path, out: Path) -> dict[str, str]:
    """Screenshot each chapter's first screen into ``out``; return the text visible on it."""
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):  # noqa: D102 - no access log on the terminal
            pass

    handler = functools.partial(Quiet, directory=str(html_dir))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    texts = {}
    visible_js = """() => {
      const main = document.querySelector('article.bd-article') || document.querySelector('main');
      const out = [];
      const walk = document.createTreeWalker(main, NodeFilter.SHOW_TEXT);
      while (walk.nextNode()) {
        const n = walk.currentNode; const r = document.createRange(); r.selectNodeContents(n);
        const b = r.getBoundingClientRect();
        if (n.parentElement.checkVisibility() && !n.parentElement.closest('.headerlink') && b.height > 0 && b.top < window.innerHeight && b.bottom > 0 && n.textContent.trim()) out.push(n.textContent.trim());
      }
      return out.join(' ');
    }"""
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            out.mkdir(parents=True, exist_ok=True)
            for path in chapter_pages(html_dir):
                page.goto(f"http://127.0.0.1:{server.server_address[1]}/chapters/{path.name}")
                page.wait_for_load_state("load")
                page.screenshot(path=str(out / f"{path.stem}.png"))
                texts[path.stem] = re.sub(r"\s+", " ", page.evaluate(visible_js))
            browser.close()
    finally:
        server.shutdown()
    return texts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--html", default=str(ROOT / "book" / "_build" / "html"))
    ap.add_argument("--out", default=None, help="folder for first-screen screenshots and review.json")
    ap.add_argument("--no-shots", action="store_true")
    args = ap.parse_args(argv)
    html_dir = Path(args.html)
    pages = chapter_pages(html_dir)
    if not pages:
        raise SystemExit(f"no chapter pages under {html_dir / 'chapters'}: build the book first")
    review = {}
    for path in pages:
        words, minutes = reading_minutes(path.read_text(encoding="utf-8"))
        review[path.stem] = {"words": words, "minutes": round(minutes, 1)}
        print(f"{path.stem}: {words:,} words, {minutes:.1f} min at {WORDS_PER_MINUTE} wpm")
    if args.out and not args.no_shots:
        for stem, text in first_screens(html_dir, Path(args.out)).items():
            review[stem]["first_screen"] = text
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / "review.json").write_text(json.dumps(review, indent=1, ensure_ascii=False) + "\n",
                                                   encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
