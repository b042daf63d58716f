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

# The checkout whose built book is checked (CONTENTION_BOOK_ROOT, as for the package itself: a reviewer can
# check a build made elsewhere without rebuilding here).
ROOT = Path(os.environ.get("CONTENTION_BOOK_ROOT") or Path(__file__).resolve().parents[1]).resolve()
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
  // the right-hand contents: one long word in a heading widened it past the window (chapter 4 at 1,400 px)
  const side = document.querySelector('.bd-sidebar-secondary');
  if (side && side.clientWidth && side.scrollWidth > side.clientWidth + 1)
    bad.push('the right-hand contents: ' + side.scrollWidth + ' px of content in ' + side.clientWidth);
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
def read(site):
    """Every page visited once, and all the tests need read from it then: overflow, images, links and a
    screenshot; each page's headings, "In short" box, images and tables; each chapter page's prose.  (Three
    visits per page, one per question, were a minute of the suite on 2 CPUs.)"""
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
            "shape": page.evaluate(PAGE_SHAPE_JS), "images": page.evaluate(IMAGES_JS),
            "tables": page.evaluate(TABLES_JS),
            "prose": page.evaluate(PROSE_JS) if rel.startswith("chapters/") else None,
            "scrolled": (page.evaluate(SCROLLED_JS) if rel.startswith("chapters/") or rel in ("findings.html", "data.html")
                         else []),
        }
        # The whole page at once: a viewport as tall as the page (Playwright's full_page stitching shifts the
        # theme's sticky sidebar), then back to the ordinary viewport for the next page.
        height = min(page.evaluate("() => document.documentElement.scrollHeight"), 30_000)
        page.set_viewport_size({"width": 1400, "height": height})
        page.screenshot(path=str(SHOTS / (rel.replace("/", "__").removesuffix(".html") + ".png")))
        page.set_viewport_size({"width": 1400, "height": 900})
    return out


@pytest.fixture(scope="module")
def visited(read):
    """Overflow, images and links of every page."""
    return {rel: {k: v[k] for k in ("overflow", "broken_images", "links")} for rel, v in read.items()}


def test_every_page_is_visited(visited):
    assert any(k.startswith("chapters/") for k in visited), sorted(visited)
    assert sum(k.endswith("-details.html") for k in visited) == sum(_is_main_chapter(k) for k in visited)
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
    chapters = [rel for rel in visited if _is_main_chapter(rel)]
    assert len(chapters) == 5, chapters
    for rel in chapters:
        details = rel.replace(".html", "-details.html")  # the chapter is its main page and its details page
        links = visited[rel]["links"] + visited.get(details, {}).get("links", [])
        linked = {h.rstrip("/") for h in links if h.startswith("http") and not h.startswith(base)}
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
    """The chapters measure each figure as they draw it (shared.style.record_check): nothing may overlap, and no
    text or legend may run past its canvas (the page would shrink it, and its PNG be drawn twice)."""
    import json

    checks = sorted((ROOT / "book" / "chapters" / "figure-checks").glob("*.json"))
    assert checks, "no figure checks: build the book"
    bad = {f"{c.stem}/{name}": problems for c in checks
           for name, problems in json.loads(c.read_text()).items() if problems}
    assert not bad, bad


# -- issue 23: the finding first, the DBA's section last, alt text, tables a reader can read ----------------------

PAGE_SHAPE_JS = """
() => {
  const main = document.querySelector('article.bd-article') || document.querySelector('main');
  const h2s = [...main.querySelectorAll('h2')];
  const first = h2s[0] || null;
  const inShort = [...main.querySelectorAll('.admonition')].find(
      a => (a.querySelector('.admonition-title')?.textContent || '').trim().toLowerCase().startsWith('in short'));
  const before = !!inShort && (!first || !!(inShort.compareDocumentPosition(first) & Node.DOCUMENT_POSITION_FOLLOWING));
  const words = inShort ? inShort.textContent.trim().split(/\\s+/).length : 0;
  const titles = h2s.map(h => h.textContent.replace(/#$/, '').trim());
  return {inShort: !!inShort, before, words, titles};
}
"""

IMAGES_JS = """
() => [...document.querySelectorAll('article img, main img')].map(i => ({src: i.getAttribute('src') || '',
                                                                       alt: (i.getAttribute('alt') || '').trim()}))
"""

TABLES_JS = """
() => {
  const main = document.querySelector('article.bd-article') || document.querySelector('main');
  return [...main.querySelectorAll('table')].map(t => {
    const head = [...(t.querySelector('thead tr:first-child')?.children || [])].map(c => c.textContent.trim());
    const rows = [...t.querySelectorAll('tbody tr')].map(r => [...r.children].map(c => c.textContent.trim()));
    return {id: t.id || '', caption: (t.querySelector('caption')?.textContent || '').trim(), head, rows,
            verdicts: t.id === 'findings' || t.classList.contains('verdict-table')};
  });
}
"""


@pytest.fixture(scope="module")
def shapes(read):
    """Each page's headings, "In short" box, images and tables, read in the browser."""
    return {rel: {k: v[k] for k in ("shape", "images", "tables")} for rel, v in read.items()}


def _is_main_chapter(rel: str) -> bool:
    """A chapter's main page (chapters/NN-name.html), not its details page."""
    return rel.startswith("chapters/") and not rel.endswith("-details.html")


def _chapters(shapes):
    found = {rel: v for rel, v in shapes.items() if _is_main_chapter(rel)}
    assert found, "no chapter pages"
    return found


def test_every_chapter_opens_with_its_finding_in_short(shapes):
    bad = []
    for rel, v in _chapters(shapes).items():
        s = v["shape"]
        if not s["inShort"]:
            bad.append(f"{rel}: no 'In short' admonition")
        elif not s["before"]:
            bad.append(f"{rel}: the 'In short' admonition comes after the first section ({s['titles'][:1]})")
        elif s["words"] > 190:
            bad.append(f"{rel}: 'In short' runs to {s['words']} words (about 150 at most)")
    assert not bad, "\n".join(bad)


def test_every_chapter_closes_with_what_to_do_on_your_own_server(shapes):
    bad = []
    for rel, v in _chapters(shapes).items():
        titles = v["shape"]["titles"]
        own = [i for i, t in enumerate(titles) if "on your own server" in t.lower()]
        if not own:
            bad.append(f"{rel}: no section titled 'On your own server…' among {titles}")
        elif own[-1] < len(titles) - 3:
            bad.append(f"{rel}: 'On your own server' is section {own[-1] + 1} of {len(titles)}, not among the last")
    assert not bad, "\n".join(bad)


def test_every_image_says_what_it_shows(shapes):
    import re

    file_name = re.compile(r"(^|/)[^/\s]+\.(png|svg|jpe?g|gif|webp)$", re.IGNORECASE)
    bad = [f"{rel}: {img['src'][:80]} alt={img['alt'][:60]!r}" for rel, v in shapes.items() for img in v["images"]
           if not img["alt"] or file_name.search(img["alt"]) or img["alt"] == img["src"]]
    assert not bad, "\n".join(bad[:40])


def test_no_table_column_is_empty_throughout(shapes):
    bad = []
    for rel, v in shapes.items():
        for t in v["tables"]:
            rows = [r for r in t["rows"] if r]
            if not rows:
                continue
            width = max(len(r) for r in rows)
            for col in range(width):
                cells = [r[col] for r in rows if col < len(r)]
                if cells and all(c in ("", "—", "nan", "None") for c in cells):
                    name = t["head"][col] if col < len(t["head"]) else f"column {col + 1}"
                    bad.append(f"{rel}: table {t['id'] or t['caption'][:40]!r}: column {name!r} is empty throughout")
    assert not bad, "\n".join(bad[:40])


def test_every_chapter_table_has_a_caption(shapes):
    bad = [f"{rel}: a table with columns {t['head'][:4]} has no caption" for rel, v in shapes.items()
           if rel.startswith("chapters/") or rel in ("findings.html", "data.html")
           for t in v["tables"] if not t["caption"]]
    assert not bad, "\n".join(bad[:40])


def test_no_verdict_cell_runs_past_forty_words(shapes):
    bad = [f"{rel}: {len(c.split())} words: {c[:80]}…" for rel, v in shapes.items() for t in v["tables"]
           if t["verdicts"] for r in t["rows"] for c in r if len(c.split()) > 40]
    assert not bad, "\n".join(bad[:40])


def test_no_page_shows_a_machine_path(site, visited):
    """No path of the machine that made a recording (``--record-to /tmp/...``) on any page."""
    import re

    from contention_book.harness.provenance import ABSOLUTE_PATH

    bad = []
    for path in pages():
        from bs4 import BeautifulSoup

        soup = BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")
        main = soup.select_one("article.bd-article") or soup
        for code in main.select("div.cell_input, script, style"):
            code.decompose()  # a notebook's own code may name paths of the reader's machine (none do now)
        text = main.get_text(" ")
        for m in ABSOLUTE_PATH.finditer(text):
            if re.match(r"/(tmp|home|root|Users|var|srv|mnt|work)/", m.group(0)):
                bad.append(f"{path.relative_to(HTML)}: {m.group(0)}")
    assert not bad, "\n".join(sorted(set(bad))[:40])


SCROLLED_JS = """
() => {
  const main = document.querySelector('article.bd-article') || document.querySelector('main');
  const bad = [];
  for (const t of main.querySelectorAll('table')) {
    for (let p = t.parentElement; p && p !== main; p = p.parentElement) {
      const cs = getComputedStyle(p);
      if ((cs.overflowX === 'auto' || cs.overflowX === 'scroll') && p.scrollWidth > p.clientWidth + 2) {
        bad.push((t.id || t.querySelector('caption')?.textContent || 'a table').slice(0, 60) + ': ' + p.scrollWidth +
                 ' px in a ' + p.clientWidth + ' px box');
        break;
      }
    }
  }
  return bad;
}
"""


def test_no_table_is_hidden_in_a_scroll_box(read):
    """A table too wide for the column is split or turned on its side (harness.display), never left to scroll."""
    bad = {rel: v["scrolled"] for rel, v in read.items() if v["scrolled"]}
    assert not bad, bad


PROSE_JS = """
() => {
  const main = document.querySelector('article.bd-article') || document.querySelector('main');
  const clone = main.cloneNode(true);
  for (const el of clone.querySelectorAll('code, pre, kbd, .cell_input, script, style, .headerlink, a[href^="http"]'))
    el.remove();
  // stack tables list C functions by their own names (heap_page_prune_opt): names, not ids to translate
  for (const t of clone.querySelectorAll('table'))
    if ((t.querySelector('caption')?.textContent || '').includes('CPU samples') ||
        [...t.querySelectorAll('thead th')].some(th => th.textContent.trim() === 'function')) t.remove();
  return clone.textContent.replace(/\\s+/g, ' ');
}
"""
RAW_ID = r"(?<![\w./-])[a-z][a-z0-9]*(?:_[a-z0-9]+)+(?![\w(])"
ONE_PLURAL = r"\bat 1 (?:sessions|threads|producers|consumers|workers|CPUs|repetitions)\b"
FILE_NAME_IN_PROSE = r"(?<![\w/.-])[\w-]+(?:/[\w-]+)*\.(?:csv|json|gz|folded|py|ipynb)\b"


@pytest.fixture(scope="module")
def prose(read):
    """Each chapter page's words outside code: what a reader reads as sentences, tables and captions."""
    return {rel: v["prose"] for rel, v in read.items() if v["prose"] is not None}


def book_ids() -> set[str]:
    """The book's own code names a reader should never see: every chapter's variant ids (walwriter_alone,
    cannot_retry) and the column ids harness.display renames.  Engine names (backend_xmin, pg_wait_sampling)
    and C functions are real names, not these."""
    from contention_book.chapters import PACKAGES, package
    from contention_book.harness.display import NAMES

    ids = {n for n in NAMES if "_" in n}
    for chapter in PACKAGES:
        spec = package(chapter, "spec").SPEC
        ids |= {v for vs in spec.variants.values() for v in vs if "_" in v} | {v for v in spec.labels if "_" in v}
    return ids


def test_chapters_name_things_in_words_not_code_ids(prose):
    """No variant or column ids (walwriter_alone, cannot_retry) or file names outside code, and no
    "at 1 sessions"."""
    import re

    ids = book_ids()
    bad = []
    for rel, text in prose.items():
        for m in sorted(set(re.findall(RAW_ID, text)) & ids):
            bad.append(f"{rel}: a raw id: {m!r}")
        for pattern, what in ((ONE_PLURAL, "a count of one with a plural"), (FILE_NAME_IN_PROSE, "a file name")):
            for m in sorted(set(re.findall(pattern, text))):
                bad.append(f"{rel}: {what}: {m!r}")
    assert not bad, "\n".join(bad[:60])
