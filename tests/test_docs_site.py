"""The documentation site builds with warnings as errors, and no internal link of the built
HTML is broken (tests/site_links.py)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from docs_blocks import ROOT
from site_links import broken_links


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-5000:]
    return out


def test_docs_site_builds_strict_every_page_in_nav(site):
    pages = {p.relative_to(site).as_posix() for p in site.rglob("*.html")}
    sources = {p.relative_to(ROOT / "docs").with_suffix(".html").as_posix() for p in (ROOT / "docs").rglob("*.md")}
    assert sources <= pages


def test_docs_site_internal_links_and_anchors_resolve(site):
    broken, internal, _ = broken_links(site)
    assert internal > 100
    assert not broken, "\n".join(broken)


def test_site_links_checker_finds_a_missing_page_and_anchor(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.html").write_text('<h1 id="top">A</h1><a href="b.html">b</a><a href="a.html#nope">x</a>'
                                     '<a href="#top">ok</a><a href="https://example.org/">ext</a>')
    (tmp_path / "sub" / "c.html").write_text('<a href="/a.html#top">root</a><a href="../a.html">up</a>'
                                             '<a href="/sub/missing.html">gone</a>')
    broken, internal, external = broken_links(tmp_path)
    assert sorted(b.split(" (")[0] for b in broken) == ["a.html: a.html#nope", "a.html: b.html",
                                                        "sub/c.html: /sub/missing.html"]
    assert (internal, external) == (6, 1)


def test_readme_relative_links_name_files_of_the_repository():
    import re

    text = (ROOT / "README.md").read_text()
    links = [m for m in re.findall(r"\]\(([^)#\s]+)[^)]*\)", text) if "://" not in m]
    assert links
    missing = [m for m in links if not (ROOT / m).exists()]
    assert not missing


def _named_tests(text: str) -> list[tuple[str, str]]:
    """The (test file, test) pairs a page names: `test_x.py::test_y`, and `::test_z` for the
    test file named last before it."""
    import re

    pairs, current = [], None
    for m in re.finditer(r"`(?:tests/)?(test_\w+\.py)?::(test_\w+)`", text):
        current = m.group(1) or current
        pairs.append((current, m.group(2)))
    return pairs


def test_docs_named_tests_exist_in_the_test_files_they_are_named_with():
    import re

    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    named = [(page.name, f, t) for page in pages for f, t in _named_tests(page.read_text())]
    assert len(named) > 50
    missing = [f"{page}: {f}::{t}" for page, f, t in named
               if f is None or not (ROOT / "tests" / f).exists()
               or not re.search(rf"^def {t}\(", (ROOT / "tests" / f).read_text(), re.M)]
    assert not missing, "\n".join(missing)
