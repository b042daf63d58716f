"""A Sphinx extension: every image in the book gets alt text that says what it shows, never its file name.

Sphinx writes an image's file name as its alt text when nothing else is given, and a glued figure
(``{glue:figure}``) has no way to carry one.  So, when a document is read:

1. an image whose PNG a chapter registered with an alt text (``shared.notebook.show_figure(..., alt=...)``
   writes ``book/chapters/figure-alt/<chapter>.json``, keyed by the PNG's SHA-256, which is also the file
   name myst-nb gives it) gets that text;
2. any other image inside a figure with a caption gets the caption's first sentence (figure numbers and
   glossary links are text by then), so a reader who cannot see the picture still learns what it is of;
3. an explicit ``:alt:`` that is not a file name is kept.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

ALT_DIR = Path("book") / "chapters" / "figure-alt"
FILE_NAME = re.compile(r"(^|/)[^/\s]+\.(png|svg|jpe?g|gif|webp)$", re.IGNORECASE)
MAX_ALT_WORDS = 45


def is_file_name(text: str) -> bool:
    return not str(text).strip() or bool(FILE_NAME.search(str(text).strip()))


def registered_alts(root: Path) -> dict[str, str]:
    """sha256 of a PNG -> its alt text, from every chapter's figure-alt file."""
    out: dict[str, str] = {}
    for path in sorted((root / ALT_DIR).glob("*.json")):
        try:
            out.update(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            continue
    return out


def caption_alt(caption: str) -> str:
    """A caption's first sentence, without a leading figure number, at most :data:`MAX_ALT_WORDS` words."""
    text = re.sub(r"\s+", " ", caption).strip()
    text = re.sub(r"^(Fig\.|Figure)\s*\d+[.:]?\s*", "", text)
    first = re.split(r"(?<=[.!?])\s+(?=[A-Z])", text, maxsplit=1)[0]
    words = first.split()
    return " ".join(words[:MAX_ALT_WORDS]) + (" …" if len(words) > MAX_ALT_WORDS else "")


def _fill(app, doctree) -> None:
    from docutils import nodes

    from .recording import repo_root

    alts = registered_alts(repo_root())
    for image in doctree.findall(nodes.image):
        current = image.get("alt", "")
        if current and not is_file_name(current):
            continue
        stem = Path(str(image.get("uri", ""))).stem
        if stem in alts:
            image["alt"] = alts[stem]
            continue
        figure = image.parent
        while figure is not None and not isinstance(figure, nodes.figure):
            figure = figure.parent
        captions = list(figure.findall(nodes.caption)) if figure is not None else []
        if captions and captions[0].astext().strip():
            image["alt"] = caption_alt(captions[0].astext())


def setup(app):
    app.connect("doctree-read", _fill)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
