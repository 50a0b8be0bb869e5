"""obook.engine.applier: one worker's decoder and books."""

from __future__ import annotations

import os

import numpy as np

import obook

from obook.engine import applier
from obook.engine.applier import Applier, first_order_pages
from obook._kernels import book as K


def test_first_order_pages_from_file_size_clamped(tmp_path):
    small = tmp_path / "small.itch"
    small.write_bytes(b"\0" * 1000)
    assert first_order_pages(str(small)) == 64
    big = tmp_path / "big.itch"
    with open(big, "wb") as f:       # sparse: 1 GiB of address, no disk
        f.truncate(1 << 30)
    assert first_order_pages(str(big)) == applier.MAX_FIRST_PAGES
    mid = tmp_path / "mid.itch"
    with open(mid, "wb") as f:
        f.truncate(1000 * applier.FEED_BYTES_PER_PAGE + 5)
    assert first_order_pages(str(mid)) == 1000


def test_first_order_pages_not_a_regular_file_default(tmp_path):
    assert first_order_pages(str(tmp_path / "missing.itch")) == 64
    assert first_order_pages(str(tmp_path)) == 64
    assert first_order_pages(os.devnull) == 64
    assert first_order_pages("<stdin>") == 64


def test_applier_books_start_with_pages_for_the_feed_same_rows(tmp_path, monkeypatch):
    from obook.gen.itch import write_itch

    feed = tmp_path / "day.itch"
    write_itch(feed, 40_000, 20, seed=5)
    a = Applier("itch", str(feed), 0, 2, "raise")
    want = first_order_pages(str(feed))
    assert want > 64
    assert a.books.pages.shape == (want * K.PAGE,)
    assert a.books.page_live.shape == a.books.page_key.shape == a.books.page_free.shape == (want,)
    assert np.count_nonzero(a.books.pages) == 0
    sized = {w: obook.bbo(feed, workers=w).read_all() for w in (1, 2)}
    monkeypatch.setattr(applier, "first_order_pages", lambda path: 64)
    assert Applier("itch", str(feed), 0, 2, "raise").books.pages.shape == (64 * K.PAGE,)
    for w in (1, 2):     # the books grow from 64 pages to the same rows
        assert obook.bbo(feed, workers=w).read_all().equals(sized[w])


def test_applier_no_memory_for_first_pages_starts_small(tmp_path, monkeypatch):
    from obook.engine import books

    feed = tmp_path / "big.itch"
    with open(feed, "wb") as f:
        f.truncate(1 << 30)
    real = books.BookState.__init__

    def refusing(self, *args, pages=64, **kw):
        if pages > 64:
            raise MemoryError("no room")
        real(self, *args, pages=pages, **kw)

    monkeypatch.setattr(books.BookState, "__init__", refusing)
    a = Applier("itch", str(feed), 0, 1, "raise")
    assert a.books.pages.shape == (64 * K.PAGE,)
