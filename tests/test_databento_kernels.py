"""The DBN kernels (obook._kernels.dbn): record layout, framing and MBO decoding,
compiled and as plain Python (``.py_func``)."""

from __future__ import annotations

import databento_dbn as dbn
import numpy as np
import pytest

from obook._kernels import dbn as K
from obook._kernels.layout import ACT_ADD, ACT_CANCEL, ACT_PRINT, EV_WIDTH, NEED_ROOM, TYPE_SHIFT
from obook._kernels import hashtab as H
from obook.gen.databento import MBO_DTYPE

KERNELS = [pytest.param(False, id="compiled"), pytest.param(True, id="py_func")]


def _k(name, py):
    f = getattr(K, name)
    return f.py_func if py else f


def mbo(action="A", side="B", iid=7, oid=1, price=100, size=10, flags=0x80, ts=1000):
    return bytes(dbn.MBOMsg(publisher_id=2, instrument_id=iid, ts_event=ts, order_id=oid, price=price,
                            size=size, action=dbn.Action(action), side=dbn.Side(side), ts_recv=ts + 5,
                            flags=flags, sequence=9))


def test_mbo_offsets_match_databento_dbn_layout():
    dtype = np.dtype([(n, t) for n, t in dbn.MBOMsg._dtypes])
    assert dtype.itemsize == K.MBO_SIZE == MBO_DTYPE.itemsize
    off = {n: dtype.fields[n][1] for n in dtype.names}
    assert (off["publisher_id"], off["instrument_id"], off["ts_event"], off["order_id"], off["price"],
            off["size"], off["flags"], off["channel_id"], off["action"], off["side"], off["ts_recv"],
            off["ts_in_delta"], off["sequence"]) == (
        K.MBO_PUBLISHER, K.MBO_INSTRUMENT, K.MBO_TS_EVENT, K.MBO_ORDER_ID, K.MBO_PRICE,
        K.MBO_SIZE_FIELD, K.MBO_FLAGS, K.MBO_CHANNEL, K.MBO_ACTION, K.MBO_SIDE, K.MBO_TS_RECV,
        K.MBO_TS_IN_DELTA, K.MBO_SEQUENCE)
    assert [(n, MBO_DTYPE.fields[n][1], MBO_DTYPE[n].itemsize) for n in MBO_DTYPE.names] == \
        [(n, dtype.fields[n][1], dtype[n].itemsize) for n in dtype.names]
    assert dbn.MBOMsg(publisher_id=0, instrument_id=0, ts_event=0, order_id=0, price=0, size=0,
                      action=dbn.Action.ADD, side=dbn.Side.BID, ts_recv=0).rtype.value == K.RTYPE_MBO
    assert (dbn.F_LAST, dbn.F_TOB) == (K.F_LAST, K.F_TOB)


def test_known_rtypes_are_databento_dbns():
    assert {r.value for r in dbn.RType.variants()} == set(np.flatnonzero(K.KNOWN_RTYPES).tolist())


def _frame(data: bytes, py, strict=True, max_records=1 << 16):
    buf = np.frombuffer(data, np.uint8)
    rtypes, actions, counts = np.zeros(256, np.int64), np.zeros(256, np.int64), np.zeros(2, np.int64)
    k, n, status = _k("dbn_frame", py)(buf, len(buf), max_records, strict, K.KNOWN_RTYPES, rtypes,
                                       actions, counts)
    return k, n, status, rtypes, actions, counts


@pytest.mark.parametrize("py", KERNELS)
def test_dbn_frame_counts_records_by_rtype_and_action(py):
    status_rec = bytes(dbn.StatusMsg(publisher_id=1, instrument_id=7, ts_event=1, ts_recv=2))
    data = mbo("A") + status_rec + mbo("C") + mbo("A") + mbo("T")[:30]
    k, n, status, rtypes, actions, _ = _frame(data, py)
    assert (k, n, status) == (4, len(data) - 30, K.FRAME_OK)
    assert rtypes[0xA0] == 3 and rtypes[0x12] == 1
    assert actions[ord("A")] == 2 and actions[ord("C")] == 1


@pytest.mark.parametrize("py", KERNELS)
def test_dbn_frame_bad_records_stop_strict_and_count_tolerant(py):
    short = bytes([12, 0xA0]) + bytes(46)          # an MBO record of 48 bytes
    unknown = bytes([4, 0x99]) + bytes(14)
    data = mbo() + short + mbo() + unknown + mbo()
    k, n, status, *_ = _frame(data, py)
    assert (k, n, status) == (1, 56, K.FRAME_SHORT)
    k, n, status, *_ = _frame(data[56 + 48 + 56:], py)
    assert (k, n, status) == (0, 0, K.FRAME_UNKNOWN)
    k, n, status, rtypes, _, counts = _frame(data, py, strict=False)
    assert (k, n, status, rtypes[0xA0], list(counts)) == (5, len(data), K.FRAME_OK, 3, [1, 1])
    k, n, status, *_ = _frame(mbo() + bytes(8), py, strict=False)
    assert (k, n, status) == (1, 56, K.FRAME_ZERO)
    for strict in (True, False):       # the next file's metadata header stops the batch
        k, n, status, *_ = _frame(mbo() + b"DBN\x02" + bytes(60), py, strict=strict)
        assert (k, n, status) == (1, 56, K.FRAME_HEADER)


class _Dec:
    def __init__(self, py, worker=0, n_workers=1, strict=True, table=16):
        self.f = _k("dbn_decode", py)
        self.move = H.ht_move.py_func if py else H.ht_move
        self.w, self.n = worker, n_workers
        self.strict = strict
        self.ins = H.table(table)
        self.open = np.zeros(table // 2, np.int64)
        self.new = np.zeros(64, np.int64)
        self.st = np.zeros(K.ST_WIDTH, np.int64)
        self.skips = np.zeros(4, np.int64)

    def run(self, data: bytes, base_seq=1):
        buf = np.frombuffer(data, np.uint8)
        ev = np.zeros((max(1, len(data) // 56), EV_WIDTH), np.int64)
        books = self.st[K.ST_BOOKS]
        self.st[:] = 0
        self.st[K.ST_BOOKS] = self.st[K.ST_KEYS_LIVE] = self.st[K.ST_KEYS_FILL] = books
        while True:
            status = self.f(buf, base_seq, self.w, self.n, ev, self.ins, self.open, self.new, self.st, self.strict,
                            self.skips, np.zeros((64, 2), np.int64))
            if status != NEED_ROOM:
                break
            ins = H.table(2 * len(self.ins.keys))
            self.move(self.ins, ins)
            self.ins = ins
            op = np.zeros(len(ins.keys) // 2, np.int64)
            op[:len(self.open)] = self.open
            self.open = op
        return status, ev[:self.st[K.ST_NE]], self.new[:self.st[K.ST_NEW]].tolist()


@pytest.mark.parametrize("py", KERNELS)
def test_dbn_decode_maps_actions_sides_and_fields(py):
    d = _Dec(py)
    data = (mbo("A", "A", oid=(1 << 64) - 5, price=2_500_000_000, size=300, ts=11) + mbo("C", "B", size=4)
            + mbo("M", "B", price=7, size=3) + mbo("R", "N") + mbo("T", "A", oid=0) + mbo("F", "B")
            + mbo("N", "N"))
    status, ev, new = d.run(data, base_seq=5)
    assert status == K.DEC_OK and new == [7]
    assert ev[:, 0].tolist() == [5, 6, 7, 8, 9, 10]
    acts = [(int(a) & 0xFF, (int(a) >> 8) & 1, chr((int(a) >> TYPE_SHIFT) & 0xFF)) for a in ev[:, 3]]
    assert acts == [(ACT_ADD, 1, "A"), (ACT_CANCEL, 0, "C"), (K.ACT_MODIFY, 0, "M"), (K.ACT_CLEAR, 1, "R"),
                    (ACT_PRINT, 1, "T"), (ACT_PRINT, 0, "F")]
    assert ev[0, 1] == 11 and ev[0, 2] == 0
    assert ev[0, 4] == np.int64(-5) and ev[0, 5] == 300 and ev[0, 6] == 2_500_000_000


@pytest.mark.parametrize("py", KERNELS)
def test_dbn_decode_defers_records_without_f_last_and_an_n_closes_the_event(py):
    d = _Dec(py)
    data = mbo("A", oid=1, flags=0) + mbo("A", oid=2, flags=0) + mbo("N", "N", flags=0x80)
    status, ev, _ = d.run(data)
    assert [bool(a & K.DEFER) for a in ev[:, 3]] == [True, True, False]
    assert ev[2, 3] & 0xFF == ACT_PRINT and (ev[2, 3] >> TYPE_SHIFT) & 0xFF == ord("N")
    # an event open since an earlier batch: the N closes it too
    status, ev, _ = d.run(mbo("A", oid=3, flags=0))
    assert bool(ev[0, 3] & K.DEFER)
    status, ev, _ = d.run(mbo("N", "N", flags=0) + mbo("N", "N", flags=0x80), base_seq=9)
    assert len(ev) == 1 and ev[0, 0] == 10 and ev[0, 3] & 0xFF == ACT_PRINT and not ev[0, 3] & K.DEFER
    # an N with nothing open gives no event
    assert len(d.run(mbo("N", "N"))[1]) == 0


@pytest.mark.parametrize("py", KERNELS)
def test_dbn_decode_interns_instruments_per_worker(py):
    ids = [5, 4_000_000_000, 17, 5, 99, 17] + list(range(1000, 1040))
    data = b"".join(mbo(iid=i) for i in ids)
    seen = []
    for w in range(3):
        d = _Dec(py, w, 3, table=4)
        status, ev, new = d.run(data)
        assert status == K.DEC_OK
        assert all(K.owner_of(i, 3) == w for i in new)
        assert ev[:, 2].tolist() == [new.index(i) for i in ids if K.owner_of(i, 3) == w]
        seen += new
    assert sorted(seen) == sorted(set(ids))


@pytest.mark.parametrize("py", KERNELS)
def test_dbn_decode_bad_records_stop_strict_and_count_tolerant(py):
    data = mbo("A") + mbo("A", "N") + mbo("C", "N") + mbo("A", flags=0x80 | 0x40) + mbo("A")
    status, ev, _ = _Dec(py).run(data, base_seq=1)
    assert status == K.DEC_BAD_SIDE and len(ev) == 1
    d = _Dec(py, strict=False)
    status, ev, _ = d.run(data)
    assert status == K.DEC_OK and len(ev) == 3          # C with side N is fine
    assert d.skips[K.DEC_BAD_SIDE] == 1 and d.skips[K.DEC_TOB] == 1


@pytest.mark.parametrize("py", KERNELS)
def test_record_offsets_walks_lengths(py):
    status_rec = bytes(dbn.StatusMsg(publisher_id=1, instrument_id=7, ts_event=1, ts_recv=2))
    data = np.frombuffer(mbo() + status_rec + mbo(), np.uint8)
    out = np.zeros(3, np.int64)
    assert _k("record_offsets", py)(data, 3, out) == len(data)
    assert out.tolist() == [0, 56, 56 + len(status_rec)]


@pytest.mark.parametrize("version", [1, 2, 3])
def test_metadata_parse_agrees_with_databento_dbn(version):
    from obook.feeds.databento.metadata import header_length, parse
    from obook.gen.databento import metadata_bytes

    raw = metadata_bytes(version, [7, 4_000_000_000], ["AAPL", "A_LONG_SYMBOL_NAME_XY"])
    theirs = dbn.Metadata.decode(raw, upgrade_policy=dbn.VersionUpgradePolicy.AS_IS)
    ours = parse(raw + mbo())
    assert header_length(raw) == ours.length == len(raw)
    assert (ours.version, ours.dataset, ours.start, ours.end) == (version, theirs.dataset, theirs.start,
                                                                 theirs.end)
    assert {k: [(a, b, s) for a, b, s in v] for k, v in ours.mappings.items()} == {
        k: [(i["start_date"], i["end_date"], i["symbol"]) for i in v] for k, v in theirs.mappings.items()}
    assert ours.tickers() == {7: "AAPL", 4_000_000_000: "A_LONG_SYMBOL_NAME_XY"}


@pytest.mark.parametrize("py", KERNELS)
def test_mbp_rows_carries_levels_to_trades_and_finds_depth(py):
    U = K.UNDEF_PRICE
    # 2 levels a side: per level (px, qty, n), bids then asks
    before = [10, 5, 1, 9, 7, 2, 11, 3, 1, U, 0, 0]
    after = [10, 5, 1, U, 0, 0, 11, 3, 1, 12, 4, 1]       # the bid at 9 went, an ask at 12 came
    lv = np.array([before, after, [0] * 12, [0] * 12], np.int64)
    is_trade = np.array([False, False, True, True])
    book = np.array([0, 0, 0, 1], np.int64)
    side = np.array([0, 0, 0, 1], np.int64)                # the last: an aggressor ask in book 1
    price = np.array([9, 9, 11, 10], np.int64)
    state = np.zeros((2, 12), np.int64)
    state[:, 0::3] = U
    out = np.zeros((4, 12), np.int64)
    depth = np.zeros(4, np.int64)
    _k("mbp_rows", py)(is_trade, book, side, price, lv, state, out, depth)
    assert out[0].tolist() == before and out[1].tolist() == after and out[2].tolist() == after
    assert out[3].tolist() == state[1].tolist() and state[1, 0] == U      # book 1 never shown
    assert depth.tolist() == [1, 1, 0, 0]   # 9: level 1 before it went; the trade at 11 is the best ask
