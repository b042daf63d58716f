"""The built book in a real browser: headless Chromium (Debian's package) driven by Playwright.

For every page: no table or figure wider than the content column unless inside a scroll container, every image
loaded, every internal link and anchor resolves; every chapter links its source article; the search finds
LOGCACHE_ACCESS.  Full-page screenshots go to book/_build/screenshots/ for a reviewer.

Needs the book built (``make book``; the test builds it when it is missing) and /usr/bin/chromium (.ci/run
installs it).  Playwright's own browser download is not used.
"""
from __future__ import annotations

import functools
import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from urllib.parse import unquote, urldefrag, urlparse

import pytest

ROOT = Path(__file__).resolve().parents[1]
HTML = ROOT / "book" / "_build" / "html"
SHOTS = ROOT / "book" / "_build" / "screenshots"
CHROMIUM = os.environ.get("CHROMIUM", shutil.which("chromium") or "/usr/bin/chromium")

playwright = pytest.importorskip("playwright.sync_api")
pytestmark = pytest.mark.slow

# What each table/figure may not exceed, and whether something between it and the column scrolls.
OVERFLOW_JS = """
() => {
  const main = document.querySelector('article.bd-article') || document.querySelector('main');
  const col = main.getBoundingClientRect();
  const bad = [];
  for (const el of main.querySelectorAll('table, img, figure')) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.right <= col.right + 1) continue;
    let scrolls = false;
    for (let p = el.parentElement; p && p !== main; p = p.parentElement) {
      const cs = getComputedStyle(p);
      if ((cs.overflowX === 'auto' || cs.overflowX === 'scroll') && p.getBoundingClientRect().right <= col.right + 1) {
        scrolls = true; break;
      }
    }
    if (!scrolls) bad.push(el.tagName + ' ' + (el.id || el.getAttribute('src') || '') + ' right=' + Math.round(r.right) + ' column=' + Math.round(col.right));
  }
  return bad;
}
"""


def pages() -> list[Path]:
    """Every page of the book, without Sphinx's own (index, search) and the redirect index.html."""
    return sorted(p for p in HTML.rglob("*.html") if not {"_static", "_sources", "_images"} & set(p.relative_to(HTML).parts)
                  and p.name not in ("genindex.html", "search.html")
                  and 'http-equiv="Refresh"' not in p.read_text(encoding="utf-8")[:2000])


@pytest.fixture(scope="module")
def site():
    if not (HTML / "index.html").exists():
        subprocess.run([sys.executable, "-m", "contention_book.harness.book", "build"], cwd=ROOT, check=False)
    if not Path(CHROMIUM).exists():
        pytest.fail(f"no Chromium at {CHROMIUM}: install Debian's chromium package (.ci/run does)")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(HTML))
    handler.log_message = lambda *a: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        yield f"http://127.0.0.1:{server.server_address[1]}", page
        browser.close()
    server.shutdown()


@pytest.fixture(scope="module")
def visited(site):
    """Visit every page once: overflow, images, links, screenshot."""
    base, page = site
    shutil.rmtree(SHOTS, ignore_errors=True)
    SHOTS.mkdir(parents=True)
    out = {}
    for path in pages():
        rel = path.relative_to(HTML).as_posix()
        page.goto(f"{base}/{rel}")
        page.wait_for_load_state("load")
        out[rel] = {
            "overflow": page.evaluate(OVERFLOW_JS),
            "broken_images": page.evaluate(
                "() => [...document.images].filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src)"),
            "links": page.evaluate("() => [...document.querySelectorAll('a[href]')].map(a => a.href)"),
        }
        # The whole page at once: a viewport as tall as the page (Playwright's full_page stitching shifts the
        # theme's sticky sidebar), then back to the ordinary viewport for the next page.
        height = min(page.evaluate("() => document.documentElement.scrollHeight"), 30_000)
        page.set_viewport_size({"width": 1400, "height": height})
        page.screenshot(path=str(SHOTS / (rel.replace("/", "__").removesuffix(".html") + ".png")))
        page.set_viewport_size({"width": 1400, "height": 900})
    return out


def test_every_page_is_visited(visited):
    assert any(k.startswith("chapters/") for k in visited), sorted(visited)
    for name in ("intro.html", "findings.html", "glossary.html", "data.html", "references.html"):
        assert name in visited


def test_nothing_overflows_the_column(visited):
    bad = {k: v["overflow"] for k, v in visited.items() if v["overflow"]}
    assert not bad, bad


def test_every_image_loaded(visited):
    bad = {k: v["broken_images"] for k, v in visited.items() if v["broken_images"]}
    assert not bad, bad


def _ids(path: Path) -> set[str]:
    import re

    return set(re.findall(r'\sid="([^"]+)"', path.read_text(encoding="utf-8")))


def test_internal_links_and_anchors_resolve(site, visited):
    base, _ = site
    bad = []
    ids: dict[Path, set[str]] = {}
    for rel, v in visited.items():
        for href in v["links"]:
            if not href.startswith(base):
                continue
            url, frag = urldefrag(href)
            target = HTML / unquote(urlparse(url).path).lstrip("/")
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                bad.append(f"{rel}: {href} (no such file)")
                continue
            if frag and target.suffix == ".html":
                if target not in ids:
                    ids[target] = _ids(target)
                if unquote(frag) not in ids[target]:
                    bad.append(f"{rel}: {href} (no anchor #{frag})")
    assert not bad, "\n".join(sorted(set(bad))[:40])


def _article_urls(chapter: str) -> set[str]:
    """The web addresses the chapter's published recordings cite (their manifests' citation.url)."""
    urls = set()
    for manifest in (ROOT / "data" / chapter).glob("published-*/manifest.json"):
        url = json.loads(manifest.read_text()).get("citation", {}).get("url", "")
        if url.startswith("http"):
            urls.add(url.rstrip("/"))
    return urls


def test_every_chapter_links_its_source_article(site, visited):
    base, _ = site
    chapters = [rel for rel in visited if rel.startswith("chapters/")]
    assert len(chapters) == 5, chapters
    for rel in chapters:
        linked = {h.rstrip("/") for h in visited[rel]["links"] if h.startswith("http") and not h.startswith(base)}
        cited = _article_urls(Path(rel).stem.split("-", 1)[1])
        assert cited, f"{rel}: its published recordings cite no web address"
        assert linked & cited, f"{rel}: links none of its articles {sorted(cited)}"


def test_search_finds_logcache_access(site):
    base, page = site
    page.goto(f"{base}/search.html?q=LOGCACHE_ACCESS")
    page.wait_for_selector("#search-results li", timeout=30_000)
    hits = page.eval_on_selector_all("#search-results li a", "els => els.map(e => e.href)")
    assert any("logcache-spinlock" in h for h in hits), hits


def test_no_drawn_figure_has_a_legend_or_title_over_its_data(site):
    """The chapters measure each figure as they draw it (shared.style.record_check); nothing may overlap."""
    import json

    checks = sorted((ROOT / "book" / "chapters" / "figure-checks").glob("*.json"))
    assert checks, "no figure checks: build the book"
    bad = {f"{c.stem}/{name}": problems for c in checks
           for name, problems in json.loads(c.read_text()).items() if problems}
    assert not bad, bad
