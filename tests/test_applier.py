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


def _both(feed, buf):
    """The batch applied with BBO rows and without (WANT_NO_BBO): (applier, result) each."""
    from obook._kernels.layout import EV_WIDTH, ROW_WIDTH, WANT_NO_BBO

    got = []
    for want in (0, WANT_NO_BBO):
        a = Applier("itch", str(feed), 0, 1, "raise", want)
        outs = {"bbo": np.zeros((len(buf), ROW_WIDTH), np.int64), "events": np.zeros((len(buf), EV_WIDTH), np.int64)}
        got.append((a, a.run(buf, 1, outs)))
    return got


def test_applier_no_bbo_writes_no_rows_same_books(tmp_path):
    from obook.gen.itch import write_itch

    feed = tmp_path / "day.itch"
    write_itch(feed, 30_000, 5, seed=9)
    buf = np.fromfile(feed, np.uint8)
    (rows, r_rows), (quiet, r_quiet) = _both(feed, buf)
    assert r_rows.counts["bbo"] > 1000 and r_quiet.counts["bbo"] == 0
    assert r_rows.counts["events"] == r_quiet.counts["events"] > 0
    assert r_rows.error is r_quiet.error is None
    for name in ("lv", "sides", "pool", "pages", "st"):
        assert np.array_equal(getattr(rows.books, name), getattr(quiet.books, name)), name


def test_applier_no_bbo_same_error_at_the_same_record(tmp_path):
    from obook.gen.itch import write_itch

    feed = tmp_path / "day.itch"
    write_itch(feed, 30_000, 5, seed=9)
    buf = np.fromfile(feed, np.uint8)
    at, k = 0, 0                  # the 1,000th record on, the first delete: its order ref made unknown
    while not (k >= 1000 and buf[at + 2] == ord("D")):
        at += 2 + (int(buf[at]) << 8 | int(buf[at + 1]))
        k += 1
    buf[at + 13:at + 21] = np.frombuffer((1 << 60).to_bytes(8, "big"), np.uint8)
    (_, r_rows), (_, r_quiet) = _both(feed, buf)
    assert r_rows.error is not None and r_rows.error == r_quiet.error
    assert r_rows.counts["events"] == r_quiet.counts["events"]
