"""Databento MBO feeds end to end: DBN files written with databento-dbn's encoder from
generated MBO flows, every table checked against the plain reference
(tests/reference_databento.py); 1, 2 and 3 workers; zstd and plain; DBN versions 1-3."""

from __future__ import annotations

import databento_dbn as dbn
import pyarrow as pa
import pytest

import obook
import reference_databento as R
from obook.errors import FeedError, TruncatedFeedError
from obook.feeds import detect_format, get_format
from obook.gen.databento import mbo_flow, metadata_bytes, write_dbn

_FLOWS = {}


def flow(records=3000, instruments=4, seed=3):
    key = (records, instruments, seed)
    if key not in _FLOWS:
        _FLOWS[key] = mbo_flow(records, instruments, seed)
    return _FLOWS[key]


def feed(tmp_path, version=3, zstd=False, **kw):
    path = tmp_path / f"mbo_v{version}.dbn{'.zst' if zstd else ''}"
    write_dbn(path, flow(**kw), version=version, zstd=zstd)
    return path


def rows(reader, drop=("timestamp",)):
    t = reader if isinstance(reader, pa.Table) else reader.read_all()
    t = t.drop_columns([c for c in drop if c in t.column_names])
    return [tuple(r.values()) for r in t.to_pylist()]


def test_format_plugin_declares_databento_and_detects_dbn_files(tmp_path):
    fmt = get_format("databento")
    assert (fmt.book_key, fmt.price_scale, fmt.epoch, fmt.tz, fmt.unit) == (
        "instrument_id", 9, True, "UTC", "record")
    plain, packed = feed(tmp_path), feed(tmp_path, zstd=True)
    renamed = tmp_path / "no_suffix"
    renamed.write_bytes(plain.read_bytes())
    assert detect_format(plain) == detect_format(packed) == detect_format(renamed) == "databento"


def test_dbn_name_on_bytes_of_another_format_read_as_that_format_unknown_bytes_no_signature(tmp_path):
    from obook.gen.pitch import write_pitch

    write_pitch(tmp_path / "g.pitch", 300, 3, seed=3)
    named = tmp_path / "day.dbn"            # a PITCH day named as DBN: its bytes say PITCH
    named.write_bytes((tmp_path / "g.pitch").read_bytes())
    assert detect_format(named) == "pitch"
    assert obook.bbo(named).read_all().equals(obook.bbo(tmp_path / "g.pitch").read_all())
    noise = tmp_path / "noise.dbn"          # bytes no format knows: read as DBN, which says why not
    noise.write_bytes(bytes(range(7, 64)))
    assert detect_format(noise) == "databento"
    with pytest.raises(obook.ObookError, match=r"noise\.dbn: feed: not a DBN file \(no 'DBN' signature\)"):
        obook.bbo(noise).read_all()


@pytest.mark.parametrize("version,zstd", [(1, False), (2, True), (3, False), (3, True)])
def test_bbo_versions_and_compression_match_reference(tmp_path, version, zstd):
    path = feed(tmp_path, version, zstd)
    ref, err = R.replay(path)
    assert err is None
    got = rows(obook.bbo(path, workers=1))
    assert got == ref["bbo"]
    assert len(got) > 300


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_every_table_matches_reference_for_each_worker_count(tmp_path, workers):
    path = feed(tmp_path, 3, True, records=4000, instruments=5, seed=workers)
    ref, err = R.replay(path, levels=5)
    assert err is None
    assert rows(obook.bbo(path, workers=workers)) == ref["bbo"]
    assert rows(obook.depth(path, workers=workers, levels=5)) == ref["depth"]
    trades = rows(obook.trades(path, workers=workers))
    assert [t[:9] for t in trades] == ref["trades"]
    kinds_sides = {(t[4], t[7]) for t in trades}
    assert ("T", None) in kinds_sides and ("T", "S") in kinds_sides    # a T of side N has no side
    assert {k for k, _ in kinds_sides} == {"T"}    # each trade once: its F records are not rows
    assert all(t[9] is None for t in trades)       # MBO records carry no match number
    orders = rows(obook.orders(path, workers=workers))
    assert [t[:10] + t[13:] for t in orders] == ref["orders"]
    assert any(t[-1] for t in orders)              # some orders rest behind others
    assert {t[4] for t in orders} == {"A", "C", "M", "R"}


def _snapshot_day(instruments=40, seed=4):
    """A session's start as Databento sends it: per instrument a clear (R) of its still empty
    book, then its resting orders; then a clear of every third (busy) book, and the first
    cleared book's orders added again under the same ids."""
    import numpy as np

    a = mbo_flow(40_000, instruments=instruments, seed=seed, clears=0.0)
    adds = a[a["action"] == b"A"][:6_000]
    adds = adds[np.argsort(adds["instrument_id"], kind="stable")]
    clear = a[a["action"] == b"R"][:1]
    iids, first = np.unique(adds["instrument_id"], return_index=True)
    bounds = list(first) + [len(adds)]
    parts = []
    far = adds[bounds[0]:bounds[0] + 2].copy()        # ids far outside the index's window:
    far["order_id"] = (7, 1 << 40)                       # kept in its overflow table
    for j, iid in enumerate(iids):
        r = clear.copy()
        r["instrument_id"] = iid
        parts += [r, adds[bounds[j]:bounds[j + 1]]] + ([far] if j == 0 else [])
    for iid in iids[::3]:
        r = clear.copy()
        r["instrument_id"] = iid
        parts.append(r)
    parts += [adds[bounds[0]:bounds[1]], far]        # the ids of a cleared book, free again
    recs = np.concatenate(parts)
    recs["ts_event"] = 1_700_000_000_000_000_000 + np.arange(len(recs)) * 1_000
    recs["ts_recv"] = recs["ts_event"] + 1_000
    recs["sequence"] = np.arange(1, len(recs) + 1)
    recs["flags"] = 0x80
    return recs, len(iids)


def _clears_sorted(rows_, names):
    """``rows_`` with the rows of each clear (one seq's R rows) ordered as a clear found in
    the order index writes them: bids then asks, the better price first, then by ref."""
    seq, action, side, price, ref = (names.index(n) for n in ("seq", "action", "side", "price", "ref"))

    def key(t):
        return (t[side] != "B", -t[price] if t[side] == "B" else t[price], t[ref])

    out, i = [], 0
    while i < len(rows_):
        j = i
        while j < len(rows_) and rows_[j][action] == "R" and rows_[j][seq] == rows_[i][seq]:
            j += 1
        if j > i:
            out += sorted(rows_[i:j], key=key)
            i = j
        else:
            out.append(rows_[i])
            i += 1
    return out


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_clears_of_empty_and_busy_books_among_many_match_reference(tmp_path, workers):
    recs, n = _snapshot_day()
    path = tmp_path / "snapshot.dbn"
    write_dbn(path, recs)
    ref, err = R.replay(path)
    assert err is None and n >= 30
    assert rows(obook.bbo(path, workers=workers)) == ref["bbo"]
    # the orders rows of a clear: with the queues (walked) and without (found in the index)
    for queues in (True, False):
        orders = rows(obook.orders(path, workers=workers, queue_positions=queues))
        got = [t[:10] + t[13:] for t in orders]
        if queues:
            assert got == ref["orders"]
        else:       # found in the index: bids then asks, best price first, then by ref
            assert all(t[10:] == (None, None) for t in got)
            names = [n for n in obook.orders(path, workers=1).schema.names if n != "timestamp"]
            assert [t[:10] for t in got] == _clears_sorted([t[:10] for t in ref["orders"]], names)
    assert sum(1 for t in ref["orders"] if t[4] == "R") >= 1_000


def test_time_is_ts_event_epoch_utc_and_prices_are_1e9(tmp_path):
    path = feed(tmp_path)
    t = obook.bbo(path, workers=1).read_all()
    f = flow()
    assert t.schema.field("timestamp").type == pa.timestamp("ns", tz="UTC")
    assert t.column("time").cast(pa.int64()).equals(t.column("timestamp").cast(pa.int64()))
    assert set(t.column("time").to_pylist()) <= set(f["ts_event"].tolist())
    assert t.schema.metadata[b"obook.price_scale"] == b"1000000000"


def test_tickers_come_from_symbol_mappings_else_the_instrument_id(tmp_path):
    f = flow()
    ids = list(dict.fromkeys(f["instrument_id"].tolist()))
    path = tmp_path / "nomap.dbn"
    write_dbn(path, f, mappings=False)
    t = obook.bbo(path, workers=2).read_all()
    assert {(a, str(b)) for a, b in zip(t.column("ticker").to_pylist(), t.column("instrument_id").to_pylist())} \
        == {(str(i), str(i)) for i in ids}
    t = obook.bbo(feed(tmp_path), workers=2).read_all()
    names = dict(zip(t.column("instrument_id").to_pylist(), t.column("ticker").to_pylist()))
    assert names == {i: f"SYM{k}" for k, i in enumerate(ids)}


def test_non_mbo_records_are_skipped_and_counted(tmp_path):
    extra = (bytes(dbn.StatusMsg(publisher_id=1, instrument_id=5, ts_event=1, ts_recv=2))
             + bytes(dbn.SystemMsg(ts_event=5, msg="heartbeat")))
    path = tmp_path / "mixed.dbn"
    write_dbn(path, flow(), extra=extra)
    stats: dict = {}
    got = rows(obook.bbo(path, workers=2, stats=stats))
    ref, err = R.replay(path)
    assert err is None and got == ref["bbo"]
    assert stats["messages_by_type"]["status"] == 1 and stats["messages_by_type"]["system"] == 1
    assert stats["records"] == len(flow()) + 2 and stats["skipped"] == {}


def _raw(tmp_path, body: bytes, name="bad.dbn"):
    path = tmp_path / name
    path.write_bytes(metadata_bytes(3, [7]) + body)
    return path


def _mbo(action="A", side="B", oid=1, size=10, price=100, flags=0x80):
    return bytes(dbn.MBOMsg(publisher_id=1, instrument_id=7, ts_event=10, order_id=oid, price=price,
                            size=size, action=dbn.Action(action), side=dbn.Side(side), ts_recv=11,
                            flags=flags))


def test_truncated_record_raises_after_earlier_rows(tmp_path):
    path = _raw(tmp_path, _mbo() + _mbo(oid=2, price=101)[:40])
    reader = obook.bbo(path, workers=1)
    first = reader.read_next_batch()
    assert first.num_rows == 1
    with pytest.raises(TruncatedFeedError) as e:
        reader.read_next_batch()
    assert e.value.record == 2 and str(path) in str(e.value) and "record 2" in str(e.value)


def test_unknown_rtype_raises_strict_and_is_counted_tolerant(tmp_path):
    path = _raw(tmp_path, _mbo() + bytes([4, 0x99]) + bytes(14) + _mbo(oid=2, price=101))
    with pytest.raises(FeedError, match=r"record 2: unknown rtype 0x99"):
        rows(obook.bbo(path, workers=1))
    stats: dict = {}
    got = rows(obook.bbo(path, workers=2, on_error="skip", stats=stats))
    assert len(got) == 2 and stats["skipped"] == {"unknown rtype": 1}


def test_cancel_of_unknown_order_names_file_record_and_order(tmp_path):
    path = _raw(tmp_path, _mbo() + _mbo("C", oid=99, size=5) + _mbo(oid=2, price=101))
    with pytest.raises(FeedError) as e:
        rows(obook.bbo(path, workers=2))
    assert e.value.record == 2 and "unknown order_id 99 (instrument_id 7)" in str(e.value)
    stats: dict = {}
    assert len(rows(obook.bbo(path, workers=1, on_error="skip", stats=stats))) == 2
    assert stats["skipped"] == {"unknown order ref": 1}


@pytest.mark.parametrize("levels", [1, 10])
def test_mbp_level_size_past_u32_error_names_record_after_rows_not_a_wrapped_size(tmp_path, levels):
    """Databento's mbp sizes are 32-bit: two adds of 2**32 - 1 at one price make a level past it."""
    big = 2**32 - 1
    path = _raw(tmp_path, _mbo(oid=1, size=big) + _mbo(oid=2, size=5, price=99)
                + _mbo(oid=3, size=big) + _mbo(oid=4, size=1, price=98))
    got = []
    with pytest.raises(FeedError) as e:
        for batch in mbp(path, levels):
            got += batch.to_pylist()
    assert e.value.record == 3 and "past 2^32 - 1" in str(e.value) and str(path) in str(e.value)
    assert [(r["seq"], r["bid_sz_00"]) for r in got] == [(1, big), (2, big)][:1 if levels == 1 else 2]


def test_mbp_level_size_past_u32_in_second_file_of_a_feed_error_names_that_file(tmp_path):
    big = 2**32 - 1
    a, b = tmp_path / "a.dbn", tmp_path / "b.dbn"
    a.write_bytes(metadata_bytes(3, [7]) + _mbo(oid=1, size=big) + _mbo(oid=2, size=5, price=99))
    later = bytes(dbn.MBOMsg(publisher_id=1, instrument_id=7, ts_event=20, order_id=3, price=100, size=big,
                             action=dbn.Action("A"), side=dbn.Side("B"), ts_recv=21, flags=0x80))
    b.write_bytes(metadata_bytes(3, [7]) + later)
    with pytest.raises(FeedError) as e:
        obook.mbp10((a, b), workers=1).read_all()
    assert (e.value.path, e.value.record, e.value.feed_record) == (str(b), 1, 3)
    assert f"record 3 of {a}+{b}" in str(e.value)


def test_not_a_dbn_file_and_bad_version_are_feed_errors(tmp_path):
    path = tmp_path / "x.dbn"
    path.write_bytes(b"DBN\x07" + bytes(200))
    with pytest.raises(FeedError, match="unsupported DBN version 7"):
        rows(obook.bbo(path, workers=1, format="databento"))
    path.write_bytes(b"XYZ\x01" + bytes(200))
    with pytest.raises(FeedError, match="not a DBN file"):
        rows(obook.bbo(path, workers=1, format="databento"))


def mbp(path, levels, workers=1):
    return (obook.mbp1 if levels == 1 else obook.mbp10)(path, workers=workers)


@pytest.mark.parametrize("workers", [1, 3])
def test_mbp1_and_mbp10_match_reference(tmp_path, workers):
    path = feed(tmp_path, 2, True, records=4000, instruments=3, seed=11)
    ref, err = R.replay(path)
    assert err is None
    for levels in (1, 10):
        got = rows(mbp(path, levels, workers))
        assert got == ref[f"mbp{levels}"], levels
    assert {r[6] for r in ref["mbp10"]} >= {"A", "C", "M", "T", "R"}
    assert max(r[8] for r in ref["mbp10"]) > 0


def test_mbp_columns_are_databentos(tmp_path):
    from obook.feeds.databento.mbp import mbp_schema

    names = mbp_schema(10).names
    databento = [n for n in dbn.MBP10Msg._ordered_fields]
    assert names[1:-1] == databento and names[0] == "seq" and names[-1] == "symbol"
    assert mbp_schema(1).names[1:-1] == list(dbn.MBP1Msg._ordered_fields)


def test_mbp_of_a_feed_without_them_is_an_error(tmp_path):
    path = tmp_path / "a.csv"
    path.write_text("Time,Ticker,Order,T,Shares,Price\n1,AAA,o1,B,10,100\n")
    with pytest.raises(obook.ObookError, match="no table 'mbp1'"):
        obook.mbp1(path)


@pytest.mark.parametrize("workers", [1, 2])
def test_events_across_small_batches_match_reference(tmp_path, workers):
    from obook.engine.replay import Replay

    path = feed(tmp_path, 3, False, records=3000, instruments=3, seed=5)
    ref, err = R.replay(path, levels=3)
    replay = Replay(path, workers=workers, tables=("bbo", "depth", "trades"), levels=3, block_size=1000)
    got = {"bbo": [], "depth": [], "trades": []}
    for table, batch in replay.table_batches():
        got[table] += rows(pa.Table.from_batches([batch]))
    assert got["bbo"] == ref["bbo"] and got["depth"] == ref["depth"]
    assert [t[:9] for t in got["trades"]] == ref["trades"]


def test_bad_side_and_top_of_book_records_raise_strict_and_count_tolerant(tmp_path):
    path = _raw(tmp_path, _mbo() + _mbo("A", "N", oid=2) + _mbo("A", oid=3, flags=0xC0)
                + _mbo(oid=4, price=101))
    with pytest.raises(FeedError, match="record 2: add or modify without side B or A"):
        rows(obook.bbo(path, workers=1))
    stats: dict = {}
    assert len(rows(obook.bbo(path, workers=2, on_error="skip", stats=stats))) == 2
    assert stats["skipped"] == {"add or modify without side B or A": 1,
                                "top-of-book (F_TOB) record: not supported": 1}


def test_polars_and_duckdb_read_a_dbn_feed_like_bbo(tmp_path):
    path = feed(tmp_path, 3, True)
    want = obook.bbo(path, workers=1).read_all()
    lf = obook.scan_bbo(str(path)).collect()
    assert lf["instrument_id"].to_list() == want.column("instrument_id").to_pylist()
    con = obook.connect()
    got = con.sql(f"SELECT seq, bid_px, ask_px FROM obook_bbo('{path}') ORDER BY seq").fetchall()
    assert got == list(zip(*(want.column(c).to_pylist() for c in ("seq", "bid_px", "ask_px"))))


def test_a_dbn_stream_replays_like_its_file(tmp_path):
    import io

    path = feed(tmp_path)
    want = rows(obook.bbo(path, workers=2))
    assert rows(obook.bbo(io.BytesIO(path.read_bytes()), workers=2, format="databento")) == want


def test_several_dbn_files_form_one_feed(tmp_path):
    f = flow()
    whole, a, b = tmp_path / "whole.dbn", tmp_path / "a.dbn", tmp_path / "b.dbn.zst"
    write_dbn(whole, f)
    write_dbn(a, f[:1234])
    write_dbn(b, f[1234:], zstd=True, symbols=[f"B{i}" for i in range(9)])
    ref, err = R.replay(whole)
    assert err is None
    for workers in (1, 2):
        got = rows(obook.bbo((a, b), workers=workers))
        assert [r[:2] + r[3:] for r in got] == [r[:2] + r[3:] for r in ref["bbo"]]
    assert [r[:10] for r in rows(obook.mbp10((a, b)))] == [r[:10] for r in ref["mbp10"]]


@pytest.mark.parametrize("version", [1, 3])
def test_symbol_mapping_records_name_the_books(tmp_path, version):
    f = flow()
    ids = list(dict.fromkeys(f["instrument_id"].tolist()))
    if version == 1:
        maps = [dbn.SymbolMappingMsgV1(publisher_id=1, instrument_id=i, ts_event=1, stype_in_symbol=f"LIVE{i}",
                                       stype_out_symbol=str(i), start_ts=0, end_ts=1) for i in ids]
    else:
        maps = [dbn.SymbolMappingMsg(publisher_id=1, instrument_id=i, ts_event=1, stype_in=dbn.SType.RAW_SYMBOL,
                                     stype_in_symbol=f"LIVE{i}", stype_out=dbn.SType.INSTRUMENT_ID,
                                     stype_out_symbol=str(i), start_ts=0, end_ts=1) for i in ids]
    path = tmp_path / "live.dbn"
    write_dbn(path, f, version=version, mappings=False, extra=b"".join(bytes(m) for m in maps))
    for workers in (1, 3):
        t = obook.bbo(path, workers=workers).read_all()
        pairs = set(zip(t.column("instrument_id").to_pylist(), t.column("ticker").to_pylist()))
        assert pairs == {(i, f"LIVE{i}") for i in ids}


def test_dbn_date_given_changes_no_row_times_are_instants(tmp_path):
    path = feed(tmp_path)
    plain = obook.bbo(path, workers=1).read_all()
    assert obook.bbo(path, workers=1, date="2001-02-03").read_all().equals(plain)


@pytest.mark.parametrize("on_error", ["raise", "skip"])
@pytest.mark.parametrize("order", ["copy", "reversed"])
def test_several_dbn_files_a_copy_or_out_of_order_error_names_the_file(tmp_path, order, on_error):
    """A file of the feed that starts where an earlier one started, or before (a copy under
    another name, the files out of order), is an error naming it, not a replay of the
    records twice."""
    a, b = tmp_path / "a.dbn", tmp_path / "b.dbn"
    write_dbn(a, flow())
    if order == "copy":
        b.write_bytes(a.read_bytes())
        files = (a, b)
    else:                               # the next day first
        write_dbn(b, mbo_flow(3000, 4, 3, start_ns=flow()["ts_recv"][0] + 86_400 * 10**9))
        files = (b, a)
    with pytest.raises(FeedError, match="not after the start of the file before it") as e:
        obook.bbo(files, workers=2, on_error=on_error).read_all()
    assert (e.value.path, e.value.record) == (str(files[1]), 1)
