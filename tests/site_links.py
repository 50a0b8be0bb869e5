"""A link checker for a built static site: every internal link and anchor resolves.

    python tests/site_links.py SITE_DIR

Reads every ``.html`` file under SITE_DIR, collects its element ids and its ``href`` /
``src`` values, and reports each link to a file that does not exist or to an anchor
(``#id``) the target page does not have. External links (a scheme or ``//``) are
counted, not fetched (no network here).
"""

from __future__ import annotations

import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit


class _Page(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.links: list[str] = []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if value is None:
                continue
            if name == "id" or (tag == "a" and name == "name"):
                self.ids.add(value)
            elif name in ("href", "src") and not (tag == "link" and dict(attrs).get("rel") == "canonical"):
                self.links.append(value)


def _parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8", errors="replace"))
    return page


def broken_links(site: Path) -> tuple[list[str], int, int]:
    """(broken links as 'page: link (reason)', internal links checked, external links seen)."""
    site = site.resolve()
    parsed = {p: _parse(p) for p in site.rglob("*.html")}
    broken, internal, external = [], 0, 0
    for page, info in sorted(parsed.items()):
        for link in info.links:
            parts = urlsplit(link)
            if parts.scheme or link.startswith("//"):
                external += 1
                continue
            internal += 1
            if not parts.path:
                target = page
            elif parts.path.startswith("/"):            # site-absolute (the 404 page's links)
                target = (site / unquote(parts.path).lstrip("/")).resolve()
            else:
                target = (page.parent / unquote(parts.path)).resolve()
            if target.is_dir():
                target = target / "index.html"
            where = f"{page.relative_to(site)}: {link}"
            if not target.exists():
                broken.append(f"{where} (no file {target})")
                continue
            if parts.fragment and target.suffix == ".html":
                ids = parsed[target].ids if target in parsed else _parse(target).ids
                if unquote(parts.fragment) not in ids:
                    broken.append(f"{where} (no anchor #{parts.fragment})")
    return broken, internal, external


def main(argv: list[str]) -> int:
    broken, internal, external = broken_links(Path(argv[1]))
    for b in broken:
        print(b)
    print(f"{internal} internal links checked, {len(broken)} broken; {external} external links not fetched")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
