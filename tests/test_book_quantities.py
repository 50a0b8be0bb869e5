"""Quantities above 2**32 are exact in the books (int64 shares on every order), on the book
kernel itself and on every format whose quantities may be that large (Shanghai, Shenzhen
text, binary and vendor CSV); negative quantities are refused where the format forbids them."""

from __future__ import annotations

import re

import numpy as np
import pyarrow.compute as pc
import pytest

import obook
from obook._kernels import replay as K
from obook._kernels.book import PAGED_SHARES, ST_OV_FILL
from obook._kernels.layout import (ACT_CANCEL, ACT_DELETE, ACT_EXEC, ASK, BID, EV_WIDTH, OK, ROW_WIDTH,
                                   WANT_ORDERS, WANT_QUEUE)
from obook.engine.books import BookState, ExtraRows
from obook.gen.sse import generate as sse_generate
from obook.gen.szse import binary_record, generate as szse_generate, text_line

from reference_l2 import bbo_by_ticker, sse_bbo, szse_bbo

#: the issue's example: 2**32 + 100,000 shares (stored modulo 2**32 it reads 100,000)
BIG = 4_295_067_296
#: a scale that puts every generated quantity above 2**32
SCALE = 2**32 + 7

KERNELS = [pytest.param(K.replay_events, id="compiled"), pytest.param(K.replay_events.py_func, id="py_func")]


def _events(*specs):
    ev = np.zeros((len(specs), EV_WIDTH), np.int64)
    for k, (act, side, ref, shares, price) in enumerate(specs):
        ev[k] = (k + 1, k, 0, act | (side << 8), ref, shares, price, 0, 0, 0)
    return ev


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("ref", [7, 2**40])          # the direct index and the overflow table
@pytest.mark.parametrize("big", [BIG, 2**45 + 100_000])   # packed in a page entry, or not
def test_book_quantity_above_2_32_exact_and_leaves_no_phantom(kernel, ref, big):
    from obook._kernels.layout import ACT_ADD
    ev = _events((ACT_ADD, BID, 8, 5, 100), (ACT_ADD, BID, ref, big, 100), (ACT_EXEC, 0, ref, 2**32, 0),
                 (ACT_CANCEL, 0, ref, big - 2**32 - 1, 0), (ACT_DELETE, 0, ref, 0, 0),
                 (ACT_ADD, ASK, 9, 3 * big, 101))
    b = BookState(kernel=kernel)
    x = ExtraRows(WANT_ORDERS | WANT_QUEUE, 16, 3)
    status, _, n = b.apply(ev, len(ev), np.zeros((16, ROW_WIDTH), np.int64), x)
    assert status == OK
    bbo = [(int(r[3]), int(r[4]), int(r[5]), int(r[6]), int(r[7])) for r in b.out_rows[:n]]
    assert bbo == [(100, 5, 1, -1, -1), (100, big + 5, 2, -1, -1), (100, big + 5 - 2**32, 2, -1, -1),
                   (100, 6, 2, -1, -1), (100, 5, 1, -1, -1), (100, 5, 1, 101, 3 * big)]
    orders = x.orders[:x.counts[1]]
    assert [int(v) for v in orders[:, 7]] == [5, big, big - 2**32, 1, 0, 3 * big]   # remaining
    assert int(orders[2, 11]) == 5                                                  # shares ahead
    assert b.live_orders == 2
    assert (b.st[ST_OV_FILL] > 0) == (ref > 2**32 or big >= PAGED_SHARES)   # order 8 set the window


def _scaled_szse(recs):
    out = []
    for r in recs:
        r = dict(r)
        for k in ("OrderQty", "LastQty"):
            if k in r:
                r[k] *= SCALE
        out.append(r)
    return out


@pytest.fixture(scope="module")
def szse_days(tmp_path_factory):
    d = tmp_path_factory.mktemp("szse_big")
    recs = _scaled_szse(szse_generate(4000, securities=4, seed=11))
    text = d / "day.log"
    text.write_text("\n".join(text_line(r) for r in recs) + "\n")
    binary = d / "day.bin"
    binary.write_bytes(b"".join(binary_record(r) for r in recs))
    return recs, text, binary


def test_szse_text_quantities_above_2_32_equal_reference(szse_days):
    recs, text, _ = szse_days
    got = obook.bbo(text, workers=1).read_all()
    assert pc.max(got["bid_qty"]).as_py() > 2**32
    assert bbo_by_ticker(got) == szse_bbo(recs)


@pytest.mark.parametrize("fn", [obook.bbo, obook.orders, obook.trades, obook.depth])
def test_szse_binary_quantities_above_2_32_equal_text(szse_days, fn):
    _, text, binary = szse_days
    assert fn(binary, workers=1).read_all().equals(fn(text, workers=1).read_all())


def test_szse_vendor_csv_quantities_above_2_32_equal_text(szse_days, tmp_path):
    from obook.gen.szse import vendor_order, write_vendor

    ordered = vendor_order(szse_days[0])
    files = write_vendor(tmp_path / "vendor", ordered)
    text = tmp_path / "ordered.log"
    text.write_text("\n".join(text_line(r) for r in ordered) + "\n")
    got = obook.bbo(files, workers=1, format="szse-csv").read_all()
    assert pc.max(got["ask_qty"]).as_py() > 2**32
    assert got.equals(obook.bbo(text, workers=1).read_all())


def test_sse_quantities_above_2_32_equal_reference(tmp_path):
    scale = lambda m: f"{m.group(1)}={int(m.group(2)) * SCALE}"  # noqa: E731
    lines = [re.sub(r"\b(OrderQty|LastQty)=(\d+)", scale, ln) if "MsgType=111" not in ln else ln
             for ln in sse_generate(3000, securities=3, seed=4)]
    p = tmp_path / "day.log"
    p.write_text("\n".join(lines) + "\n")
    got = obook.bbo(p, workers=1).read_all()
    assert pc.min(pc.drop_null(got["bid_qty"])).as_py() > 2**32
    assert bbo_by_ticker(got) == sse_bbo(p.read_text())


def _first_with(recs, key):
    return next(k for k, r in enumerate(recs) if r.get(key, 0) > 0)


@pytest.mark.parametrize("binary", [False, True])
@pytest.mark.parametrize("key", ["OrderQty", "LastQty"])
def test_szse_negative_quantity_strict_error_names_record(tmp_path, binary, key):
    recs = szse_generate(300, securities=2, seed=1)
    k = _first_with(recs, key)
    recs[k] = dict(recs[k], **{key: -5})       # binary: the u64 2**64 - 5
    p = tmp_path / ("day.bin" if binary else "day.log")
    if binary:
        p.write_bytes(b"".join(binary_record(r) for r in recs))
    else:
        p.write_text("\n".join(text_line(r) for r in recs) + "\n")
    with pytest.raises(obook.FeedError, match=rf"{'record' if binary else 'line'} {k + 1}\b.*{key}"):
        obook.bbo(p, workers=1).read_all()
    assert obook.bbo(p, workers=1, on_error="skip").read_all().num_rows > 0


@pytest.mark.parametrize("key", ["Price", "OrderQty", "LastPx", "LastQty"])
def test_sse_negative_price_or_quantity_strict_error_names_line(tmp_path, key):
    lines = sse_generate(200, securities=2, seed=1)
    k = next(i for i, ln in enumerate(lines) if f" {key}=" in ln and "MsgType=111" not in ln)
    lines[k] = re.sub(rf"\b{key}=\d+", f"{key}=-5", lines[k])
    p = tmp_path / "day.log"
    p.write_text("\n".join(lines) + "\n")
    with pytest.raises(obook.FeedError, match=rf"line {k + 1}\b.*{key}"):
        obook.bbo(p, workers=1).read_all()
